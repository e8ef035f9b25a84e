"""Simulation speed, games per second, for the random player and each bot level (5x5 and 7x7,
with powers), both sides at the same level.
usage: python -m benchmarks.simulate [--seconds 10]
"""

from __future__ import annotations

import argparse
import random
import time

from replays.slow6.simulate import simulate_game


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--levels", default="0,1,2,3,4")
    args = ap.parse_args()
    for board in (5, 7):
        for level in (int(x) for x in args.levels.split(",")):
            rng = random.Random(level)
            games, start = 0, time.perf_counter()
            while time.perf_counter() - start < args.seconds:
                simulate_game(rng, board=board, powers=True, levels=(level, level))
                games += 1
            rate = games / (time.perf_counter() - start)
            name = "random" if level == 0 else f"level {level}"
            print(f"{board}x{board} powers, {name:8}: {rate:8.1f} games/s ({games} games)")


if __name__ == "__main__":
    main()
