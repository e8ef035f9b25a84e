"""Self-play table: score rate of each bot level against the others (win 1, draw 1/2).

Each pairing plays `--games` games on the board, half with each level moving first, and the
lineups shared between the two halves so the comparison is paired. Prints the table.
usage: python -m benchmarks.bot_strength [--games 60] [--board 5] [--powers]
"""

from __future__ import annotations

import argparse
import random
import time

from replays.slow6.simulate import simulate_game


def score(levels, board, powers, games, seed):
    rng = random.Random(seed)
    total = 0.0
    for i in range(games):
        flip = i % 2
        lv = (levels[1], levels[0]) if flip else levels
        rec = simulate_game(rng, board=board, powers=powers, levels=lv, first=0)
        w = rec["result"]["winner"]
        me = 1 if flip else 0  # the side levels[0] played
        total += 0.5 if w is None else (1.0 if w == me else 0.0)
    return total / games


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--games", type=int, default=60)
    ap.add_argument("--board", type=int, default=5)
    ap.add_argument("--powers", action="store_true")
    ap.add_argument("--levels", default="0,1,2,3,4")
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    t = time.perf_counter()
    print(f"score rate of row level vs column level, {args.games} games each, "
          f"{args.board}x{args.board}{' powers' if args.powers else ''}")  # fmt: skip
    print("      " + "".join(f"  L{c}  " for c in levels))
    for a in levels:
        row = []
        for b in levels:
            row.append(
                "  --  "
                if a == b
                else f" {score((a, b), args.board, args.powers, args.games, a * 10 + b):.2f} "
            )
        print(f"  L{a}  " + "".join(row))
    print(f"({time.perf_counter() - t:.0f} s)")


if __name__ == "__main__":
    main()
