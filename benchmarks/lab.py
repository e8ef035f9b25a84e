"""The balance lab's speed and the value of its pairing (docs/lab.md).

1. Bot games per second per level, 5x5 with powers, both sides at the level, one process
   (what one core gives the lab).
2. A paired comparison of --pairs pairs (standard against the candidate, the lab's default
   levels 1,2) through the lab's runner with --jobs workers: its wall time, and that time
   extrapolated to the issue's size (2 x 10,000 games: 10,000 pairs), said as extrapolated.
3. Interval widths: each row's paired interval (the comparison above) against the interval of
   two independent runs of the same size (the candidate's games played again from other
   settings and streams, an unpaired bootstrap), and their ratio.

usage: python -m benchmarks.lab [--seconds 10] [--levels 1,2,3,4] [--pairs 200] [--jobs 2]
                                [--candidate FILE]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from analysis.lab import predict
from ingest.lab_runner import LabRun, play
from replays import lab
from replays.rulesets import STANDARD, parse_toml

FREEZE_1 = 'name = "freeze-1"\ngame = "slow6"\n[params]\nfreeze_turns = 1\n'
TARGET_PAIRS = 10_000


def speed(level: int, seconds: float) -> tuple[float, int]:
    games, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or games == 0:
        st = lab.setting(77, games, 5, [level])
        lab.play(st, STANDARD["slow6"], 5, True, 77)
        games += 1
    return games / (time.perf_counter() - start), games


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0, help="per level, for the speed")
    ap.add_argument("--levels", default="1,2,3,4", help="levels whose speed is measured")
    ap.add_argument("--pairs", type=int, default=200, help="size of the paired comparison")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--candidate", help="a ruleset TOML file (default: freeze_turns 1)")
    args = ap.parse_args()

    print("bot games per second, 5x5 with powers, one process (one core):")
    for level in (int(x) for x in args.levels.split(",")):
        rate, games = speed(level, args.seconds)
        print(f"  level {level}: {rate:6.1f} games/s ({games} games)")

    text = Path(args.candidate).read_text() if args.candidate else FREEZE_1
    candidate = parse_toml(text)
    levels = (1, 2)
    run = LabRun(STANDARD["slow6"], candidate, 5, True, levels, seed=11, games=args.pairs)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        pairs = play(run, Path(tmp) / "run.ndjson", jobs=args.jobs)
        wall = time.perf_counter() - start
    rate = 2 * args.pairs / wall
    print(
        f"paired comparison, {candidate.name} vs standard, 5x5 powers, levels 1,2: "
        f"{args.pairs} pairs ({2 * args.pairs} games) in {wall:.1f} s with {args.jobs} "
        f"workers = {rate:.1f} games/s"
    )
    print(
        f"2 x {TARGET_PAIRS:,} games at that rate (extrapolated, not run): "
        f"{2 * TARGET_PAIRS / rate / 60:.1f} min"
    )

    # the candidate's games again from other settings and streams: an independent run
    start = time.perf_counter()
    independent = []
    for i, pair in enumerate(pairs):
        other = lab.play_independent(9_999, i, candidate, 5, True, levels)
        game = {**other["game"], "first": other["first"], "levels": other["levels"],
                "lineups": other["lineups"]}  # fmt: skip
        independent.append({"i": i, "first": pair["first"], "levels": pair["levels"],
                            "independent": True, "base": {**pair["base"],
                            "first": pair["first"], "levels": pair["levels"],
                            "lineups": pair["lineups"]},
                            "candidate": game})  # fmt: skip
    paired_rows = predict(pairs, powers=True, levels=levels)
    indep_rows = predict(independent, powers=True, levels=levels)
    print(f"(the independent run: {args.pairs} more games in {time.perf_counter() - start:.1f} s)")
    print(f"95% interval widths, {args.pairs} games a side: paired vs two independent runs")
    print(f"  {'family':12} {'row':22} {'paired':>8} {'indep.':>8} {'narrower':>9}")
    ratios, zero = [], 0
    for p, q in zip(paired_rows, indep_rows, strict=True):
        if p["lo"] is None or q["lo"] is None or p["family"] == "power_used":
            continue
        wp, wq = p["hi"] - p["lo"], q["hi"] - q["lo"]
        if wp > 0:
            ratios.append(wq / wp)
        else:
            zero += 1
        shown = f"{wq / wp:8.1f}x" if wp > 0 else "  (0 wide)"
        print(f"  {p['family']:12} {p['row']:22} {wp:8.3f} {wq:8.3f} {shown}")
    median = f"{statistics.median(ratios):.1f}x" if ratios else "n/a"
    print(
        f"median over {len(ratios)} rows: the paired interval is {median} narrower "
        f"({zero} more rows 0 wide: none of their games changed)"
    )


if __name__ == "__main__":
    main()
