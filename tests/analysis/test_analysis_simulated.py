"""Planted effects in legal games: the bots play, ingest verifies and stores, the jobs find it.

A side that picks `surge` plays as a level-1 bot with probability Q, every other side plays
uniformly at random (level 0). The true effect on the pick comparison follows from the score s1
of a level-1 bot against a random player, calibrated by a separate run.
"""

from __future__ import annotations

import random

import pytest

from ingest.server import demo
from ingest.server import jobs as ingest_jobs
from ingest.storage import Store
from replays.slow6.simulate import simulate_game
from replays.vocabulary import POWERS

Q = 0.8  # chance that a side picking the power plays well
PI = 3 / len(POWERS)  # chance that a side picks a given power (3 of 10, uniformly)
CLIENT = {"platform": "web", "version": "3.0.0"}


def games(n: int, seed: int, boosted: str | None):
    rng = random.Random(seed)
    for _ in range(n):
        picks = (rng.sample(POWERS, 3), rng.sample(POWERS, 3))
        levels = tuple(
            1 if boosted in picks[s] and rng.random() < Q else 0 for s in (0, 1)
        )  # fmt: skip
        yield simulate_game(
            rng, board=5, powers=True, mode="online", levels=levels, picks=picks, client=CLIENT
        )


def level1_score(n: int, seed: int) -> float:
    """Score of a level-1 bot against a random player (sides and first move alternate)."""
    rng = random.Random(seed)
    total = 0.0
    for i in range(n):
        bot = i % 2
        levels = (1, 0) if bot == 0 else (0, 1)
        r = simulate_game(rng, board=5, mode="online", levels=levels, first=(i // 2) % 2)
        w = r["result"]["winner"]
        total += 0.5 if w is None else float(w == bot)
    return total / n


def true_pick_effect(s1: float) -> float:
    """E[score | picked] - E[score | not picked] when picking sides are boosted w.p. Q."""
    b = PI * Q  # chance that the opponent is boosted
    picked = Q * ((1 - b) * s1 + b * 0.5) + (1 - Q) * (b * (1 - s1) + (1 - b) * 0.5)
    not_picked = b * (1 - s1) + (1 - b) * 0.5
    return picked - not_picked


def stored_rates(tmp_path, records):
    store = Store(tmp_path / "sim.duckdb")
    try:
        counts = demo.load_records(store, records, echo=lambda *_: None)
        assert set(counts) == {"accepted"}  # legal games, all verified
        summary = ingest_jobs.run_once(store)
        assert not summary["skipped"]
        reader = store.reader()
        try:
            powers = reader.execute(
                "SELECT power, pick_effect, pick_effect_lo, pick_effect_hi, flagged "
                "FROM agg_power_rates WHERE board = 5"
            ).fetchall()
            lineups = reader.execute("SELECT count(*) FILTER (flagged), count(*) "
                                     "FROM agg_lineup_rates").fetchone()  # fmt: skip
        finally:
            reader.close()
    finally:
        store.close()
    return {p[0]: p[1:] for p in powers}, lineups


@pytest.mark.slow
def test_a_power_that_makes_its_side_play_better_is_found(tmp_path):
    s1 = level1_score(80, seed=101)
    assert s1 > 0.9  # a level-1 bot all but always beats a random player
    truth = true_pick_effect(s1)
    powers, _ = stored_rates(tmp_path, games(500, seed=102, boosted="surge"))
    effect, lo, hi, flagged = powers["surge"]
    assert flagged and truth > 0.3
    # the table's 95% interval, widened to 99% (z 2.576 / 1.96): the bots change as the game
    # does, and a 1-in-20 miss of a correct interval should not fail the build
    widen = 2.576 / 1.96
    assert effect - (effect - lo) * widen < truth < effect + (hi - effect) * widen


@pytest.mark.slow
def test_random_players_flag_nothing(tmp_path):
    powers, (flagged_lineups, lineups) = stored_rates(tmp_path, games(500, seed=103, boosted=None))
    assert len(powers) == len(POWERS) and lineups == 120
    assert not any(p[3] for p in powers.values())
    assert flagged_lineups == 0
