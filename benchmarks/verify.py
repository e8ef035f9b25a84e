"""Games verified per second on one core, from NDJSON text to verdict.

The corpus is simulated (realistic players, levels 0-2 mixed with stronger bots) and cached in
benchmarks/out/. Each record goes through the whole path a server runs: parse, well-formedness,
replay. Target (issue 2): at least 10,000 games/s per core on 5x5 with powers.
usage: python benchmarks/verify.py [--games 2000] [--seconds 5]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import orjson

from replays.slow6.simulate import simulate_games
from replays.verifier import check_text

OUT = Path(__file__).resolve().parent / "out"


def corpus(board: int, games: int) -> list[bytes]:
    OUT.mkdir(exist_ok=True)
    path = OUT / f"verify-{board}x{board}-powers-{games}.ndjson"
    if not path.exists():
        with open(path, "wb") as f:
            for rec in simulate_games(games, board=board, powers=True, hidden=False, seed=board,
                                      max_level=2):  # fmt: skip
                f.write(orjson.dumps(rec) + b"\n")
    return path.read_bytes().splitlines()


def measure(lines: list[bytes], seconds: float) -> tuple[float, float]:
    """Games per second of wall time and of this process's CPU time (the fair figure when
    other work shares the machine)."""
    done, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        for line in lines:
            _, verdict = check_text(line)
            if not verdict.ok:
                raise SystemExit(f"simulated game did not verify: {verdict}")
        done += len(lines)
    return done / (time.perf_counter() - start), done / (time.process_time() - cpu)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--games", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    for board in (5, 7):
        lines = corpus(board, args.games)
        turns = sum(len(orjson.loads(x)["turns"]) for x in lines) / len(lines)
        size = sum(len(x) for x in lines) / len(lines)
        wall, cpu = measure(lines, args.seconds)
        print(f"{board}x{board} with powers: {wall:,.0f} games/s on one core "
              f"({cpu:,.0f} per CPU-second) "
              f"({len(lines)} games, {turns:.1f} turns and {size:.0f} bytes a game)")  # fmt: skip


if __name__ == "__main__":
    main()
