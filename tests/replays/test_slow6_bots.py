"""The bots: stronger levels beat weaker ones, and simulated traffic uses every power, mode and
platform. (The full self-play table is benchmarks/bot_strength.py.)"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from replays.slow6.simulate import simulate_game, simulate_games
from replays.slow6.verify import replay
from replays.vocabulary import POWERS


def score_rate(strong: int, weak: int, games: int, seed: int) -> float:
    rng = random.Random(seed)
    total = 0.0
    for i in range(games):
        strong_side = i % 2
        levels = (strong, weak) if strong_side == 0 else (weak, strong)
        winner = simulate_game(rng, board=5, levels=levels, first=i % 2)["result"]["winner"]
        total += 0.5 if winner is None else float(winner == strong_side)
    return total / games


def test_level_1_beats_the_random_player_clearly():
    assert score_rate(1, 0, games=20, seed=1) >= 0.9


def test_level_3_beats_level_1_clearly():
    assert score_rate(3, 1, games=24, seed=2) >= 0.65


@pytest.mark.slow
def test_simulated_traffic_uses_every_power_and_the_spread_of_the_format():
    records = list(simulate_games(150, powers=True, seed=5, max_level=1))
    used = Counter()
    for rec in records:
        verdict, facts = replay(rec, collect=True)
        assert verdict.ok, verdict.message
        used.update(power for (_, power) in facts.power_used)
    assert set(used) == set(POWERS), f"never used: {set(POWERS) - set(used)}"
    assert {r["mode"] for r in records} == {"online", "friend", "computer", "challenge", "tutorial"}
    assert {r["client"]["platform"] for r in records} == {"ios", "android", "web", "desktop", "bot"}
    assert len({r["client"]["version"] for r in records}) >= 4
    assert {r["result"]["reason"] for r in records} >= {"home", "wipeout", "points", "resign"}
    assert {r["rules"]["board"] for r in records} == {5, 7}


def test_simulation_is_deterministic_for_a_seed():
    a = list(simulate_games(5, seed=9, max_level=1))
    b = list(simulate_games(5, seed=9, max_level=1))
    c = list(simulate_games(5, seed=10, max_level=1))
    assert a == b
    assert a != c
