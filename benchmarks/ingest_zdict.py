"""Preset dictionaries for raw-record compression: build one and print what it saves.

    python benchmarks/ingest_zdict.py [--games 600] [--write NEW_FILE.json]

Prints, per game, the mean canonical record size and its deflated size without a dictionary,
with the shipped dictionary and with a freshly built one (plus microseconds per record).
A dictionary is the tail of concatenated canonical records of simulated games (what beat
frequent-substring dictionaries here). Shipped dictionaries are frozen: --write makes a new
file for a NEW codec id in ingest/codec.py, never a replacement.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import zlib
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ingest import codec  # noqa: E402

SIZE = 16 * 1024


def records(game: str, n: int, seed: int) -> list[bytes]:
    if game == "slow6":
        from replays.slow6.simulate import simulate_games

        recs = simulate_games(n, seed=seed, max_level=1)
    else:
        from replays.slide.simulate import simulate_games

        recs = (r for p in range(2, 7) for r in simulate_games(n // 5, p, seed + p))
    return [codec.canonical(r) for r in recs]


def build(train: list[bytes], size: int = SIZE) -> bytes:
    rng = random.Random(0)
    sample = train[:]
    rng.shuffle(sample)
    out = b""
    for c in sample:
        if len(out) >= size:
            break
        out += c
    return out[-size:]


def measure(zdict: bytes | None, test: list[bytes]) -> tuple[float, float]:
    total, start = 0, time.perf_counter()
    for c in test:
        args = (6, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY) + ((zdict,) if zdict else ())
        comp = zlib.compressobj(*args)
        total += len(comp.compress(c) + comp.flush())
    return total / len(test), (time.perf_counter() - start) / len(test) * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=600)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--write", metavar="FILE", help="write a new dictionary file (slow6 or slide")
    ap.add_argument("--game", choices=("slow6", "slide"), default=None)
    args = ap.parse_args()
    for game in [args.game] if args.game else ["slow6", "slide"]:
        data = records(game, args.games, args.seed)
        train, test = data[: len(data) // 2], data[len(data) // 2 :]
        fresh = build(train)
        mean = sum(map(len, test)) / len(test)
        print(f"{game}: {len(test)} test records, canonical JSON {mean:.0f} B")
        for name, zd in (("no dictionary", None), ("shipped", codec.dictionary(
                codec.CODEC_FOR_GAME[game])), ("fresh 16 KiB", fresh)):  # fmt: skip
            size, us = measure(zd, test)
            print(f"  {name:14s} {size:7.1f} B/record ({size / mean:.0%})  {us:6.1f} us/record")
        if args.write:
            built = f"simulated games, seed {args.seed}: last {SIZE} bytes of shuffled records"
            doc = {"game": game, "built_from": built, "zdict": fresh.decode()}
            Path(args.write).write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
            print(f"  wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
