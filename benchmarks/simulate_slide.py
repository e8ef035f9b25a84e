"""Slide simulation speed and bot strength.

Prints games simulated per second (CPU time, one core) for random, greedy and mixed tables at 2,
4 and 6 players, then a greedy-vs-random table: two-player head-to-head with seats alternated,
and 4-player tables of two greedy and two random bots.
usage: python -m benchmarks.simulate_slide [--games 40]
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections import Counter

from replays.slide.bots import GreedyBot, RandomBot
from replays.slide.simulate import deal, play, simulate_games


def speed(players: int, policy: str, games: int) -> float:
    start = time.process_time()
    n = sum(1 for _ in simulate_games(games, players, seed=players, policy=policy))
    return n / (time.process_time() - start)


def strength(players: int, games: int, seed: int) -> dict:
    """Half the seats greedy, half random, rotated every game: wins and mean score per bot."""
    rng = random.Random(seed)
    wins: Counter = Counter()
    shared = 0
    scores: dict[str, list[int]] = {"greedy": [], "random": []}
    for n in range(games):
        kinds = ["greedy" if (s + n) % 2 == 0 else "random" for s in range(players)]
        bots = [GreedyBot(rng) if k == "greedy" else RandomBot(rng) for k in kinds]
        _, result = play(deal(rng, players), n % players, bots)
        for s, k in enumerate(kinds):
            scores[k].append(result["scores"][s])
        won = {kinds[s] for s in result["winners"]}
        if len(won) == 1:
            wins[won.pop()] += 1
        else:
            shared += 1
    return {
        "wins": wins,
        "shared": shared,
        "mean": {k: sum(v) / len(v) for k, v in scores.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--games", type=int, default=40)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    print("games simulated per second (one core, CPU time)")
    print(f"{'players':>7} {'random':>8} {'greedy':>8} {'mixed':>8}")
    for players in (2, 4, 6):
        rates = [speed(players, policy, args.games) for policy in ("random", "greedy", "mixed")]
        print(f"{players:>7} " + " ".join(f"{r:>8,.0f}" for r in rates))
    print(f"\ngreedy vs random, {args.games * 2} games per row (seats rotated)")
    print(f"{'players':>7} {'greedy wins':>11} {'random wins':>11} {'shared':>6} "
          f"{'greedy mean':>11} {'random mean':>11}")  # fmt: skip
    for players in (2, 4):
        r = strength(players, args.games * 2, seed=players)
        print(
            f"{players:>7} {r['wins']['greedy']:>11} {r['wins']['random']:>11} {r['shared']:>6} "
            f"{r['mean']['greedy']:>11.1f} {r['mean']['random']:>11.1f}"
        )


if __name__ == "__main__":
    main()
