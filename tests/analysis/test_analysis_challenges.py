"""Challenge difficulty (agg_challenge_rates): a solve is a win, a planted hard or easy
challenge is found at its size, a board of equally hard challenges flags none beyond the false
discovery rate, the intervals cover the true solve rates, and shrinking beats the raw rates.

The counts are simulated straight into agg_challenge's shape: attempts per challenge, each
solved, drawn or lost with known probabilities.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from analysis.opponents import challenge_rates


def challenge_frame(rng, solve: np.ndarray, attempts: np.ndarray, draw: float = 0.1, board=5):
    """agg_challenge rows: challenge i attempted attempts[i] times, solved with probability
    solve[i], drawn with probability `draw`; a solved attempt takes 9 to 15 turns."""
    rows = []
    for i, (p, n) in enumerate(zip(solve, attempts, strict=True)):
        u = rng.random(int(n))
        wins = int((u < p).sum())
        draws = int(((u >= p) & (u < p + draw)).sum())
        rows.append(
            {
                "board": board,
                "challenge_id": f"set-{i:03d}",
                "n": int(n),
                "wins": wins,
                "draws": draws,
                "losses": int(n) - wins - draws,
                "solve_turns_sum": int(rng.integers(9, 16, wins).sum()),
            }
        )
    return pl.DataFrame(rows)


def test_a_solve_is_a_win_and_the_counts_are_kept_apart():
    frame = pl.DataFrame(
        {
            "board": [5, 5, 5, 5],
            "challenge_id": ["a", "a", "b", "c"],  # two rows of one challenge (two weeks) add up
            "n": [3, 1, 4, 2],
            "wins": [1, 1, 0, 2],
            "draws": [2, 0, 3, 0],
            "losses": [0, 0, 1, 0],
            "solve_turns_sum": [11, 9, 0, 24],
        }
    )
    out = {r["challenge_id"]: r for r in challenge_rates(frame).iter_rows(named=True)}
    a = out["a"]
    assert (a["attempts"], a["solves"], a["draws"], a["losses"]) == (4, 2, 2, 0)
    assert a["solve_rate"] == 0.5  # a score rate would say 0.75
    assert a["draw_rate"] == 0.5 and a["loss_rate"] == 0.0
    assert a["mean_turns_to_solve"] == 10.0
    assert out["b"]["solve_rate"] == 0.0 and out["b"]["mean_turns_to_solve"] is None
    assert out["c"]["mean_turns_to_solve"] == 12.0
    assert out["a"]["tested_against"] == pytest.approx(4 / 10)
    for r in out.values():
        assert r["solve_rate_lo"] <= r["solve_rate"] <= r["solve_rate_hi"]
        assert 0 < r["solve_shrunk"] < 1


def test_a_board_where_nothing_is_solved_yet_is_not_pinned_at_zero():
    frame = challenge_frame(np.random.default_rng(0), np.zeros(5), np.array([1, 2, 5, 10, 40]))
    out = challenge_rates(frame)
    assert (out["solve_shrunk"] > 0).all() and (out["solve_shrunk"] < 0.02).all()
    assert not out["flagged"].any()


@pytest.mark.parametrize("seed", range(5))
def test_equally_hard_challenges_flag_nothing_beyond_the_fdr(seed):
    # 40 challenges, every one solved 35% of the time, 20 to 300 attempts each
    rng = np.random.default_rng(seed)
    attempts = rng.integers(20, 300, 40)
    out = challenge_rates(challenge_frame(rng, np.full(40, 0.35), attempts))
    assert out["flagged"].sum() <= 1
    covered = ((out["solve_rate_lo"] < 0.35) & (0.35 < out["solve_rate_hi"])).mean()
    assert covered >= 0.85  # 95% intervals: a few misses among 40


def test_a_planted_hard_and_easy_challenge_are_found_at_their_size():
    # among 40 challenges solved 35% of the time, one at 20% and one at 50%, 400 attempts each
    found = covered = 0
    for seed in range(10):
        rng = np.random.default_rng(100 + seed)
        solve = np.full(40, 0.35)
        solve[[7, 21]] = 0.20, 0.50
        attempts = rng.integers(100, 400, 40)
        attempts[[7, 21]] = 400
        out = challenge_rates(challenge_frame(rng, solve, attempts)).sort("challenge_id")
        found += out["flagged"][7] + out["flagged"][21]
        for i in (7, 21):
            covered += out["solve_rate_lo"][i] < solve[i] < out["solve_rate_hi"][i]
        others = out.filter(~pl.col("challenge_id").is_in(["set-007", "set-021"]))
        assert others["flagged"].sum() <= 1
        # the hardest and the easiest by the shrunk rate are the planted ones
        ranked = out.sort("solve_shrunk")["challenge_id"]
        assert ranked[0] == "set-007" and ranked[-1] == "set-021"
    assert found >= 19  # a 15-point difference at 400 attempts: z about 6
    assert covered >= 18


def test_shrinking_brings_the_solve_rates_closer_to_the_truth():
    # 60 challenges of varied difficulty (Beta(6, 10): 0.375 on average, sd 0.12), most tried
    # a handful of times
    rng = np.random.default_rng(7)
    err_raw = err_shrunk = 0.0
    for _ in range(20):
        solve = rng.beta(6, 10, 60)
        out = challenge_rates(challenge_frame(rng, solve, rng.integers(3, 40, 60), draw=0.0))
        truth = solve[[int(c[4:]) for c in out["challenge_id"]]]
        err_raw += float(((out["solve_rate"].to_numpy() - truth) ** 2).sum())
        err_shrunk += float(((out["solve_shrunk"].to_numpy() - truth) ** 2).sum())
    assert err_shrunk < 0.7 * err_raw


def test_the_page_shows_the_hardest_and_easiest_of_each_board():
    from dashboard.catalog import challenges

    rng = np.random.default_rng(3)
    solve = np.linspace(0.1, 0.7, 30)
    frame = pl.concat(
        [
            challenge_frame(rng, solve, np.full(30, 300)),
            challenge_frame(rng, solve[:5], np.full(5, 300), board=7),
        ]
    )
    out = challenges._ranked(frame, None)
    five = out.filter(pl.col("board") == 5)
    hardest = five.filter(pl.col("difficulty") == "hardest")
    easiest = five.filter(pl.col("difficulty") == "easiest")
    # the five truly hardest (easiest) are among the ten shown, hardest (easiest) first
    assert {f"set-{i:03d}" for i in range(5)} <= set(hardest["challenge_id"])
    assert {f"set-{i:03d}" for i in range(25, 30)} <= set(easiest["challenge_id"])
    assert hardest["shrunk"].is_sorted() and easiest["shrunk"].is_sorted(descending=True)
    assert five.height == 2 * challenges.RANKED
    # a board with fewer challenges: split in halves, none in both
    seven = out.filter(pl.col("board") == 7)
    assert seven.height == 5 and seven["challenge_id"].n_unique() == 5
    assert seven.filter(pl.col("difficulty") == "hardest").height == 3
    assert set(out["panel"]) == {"5×5 hardest", "5×5 easiest", "7×7 hardest", "7×7 easiest"}


def test_the_page_says_no_challenge_differs_on_equal_challenges():
    """Every challenge of a synthetic store is equally hard: the page ranks none of them (a
    ranking of equal shrunk rates would be noise) and says so; a board with a real spread
    (the test above) is ranked."""
    from support import Snapshots

    from analysis import jobs
    from analysis import synthetic as sy
    from dashboard import render
    from dashboard.catalog import challenges
    from dashboard.filters import Filters

    p = sy.Plan(n=4000, seed=5, modes=(("online", 1), ("challenge", 1)), versions=(("3.0.0", 1),))
    con, _ = sy.make_store(":memory:", p)
    try:
        jobs.run(con, lambda fn: fn(con))
        view = render.build(challenges.ranked, render.Ctx(Filters(), Snapshots(con)))
    finally:
        con.close()
    assert view.error is None
    assert "5×5: no challenge differs from the others" in view.summary
    assert "7×7: no challenge differs from the others" in view.summary
    assert view.n_rows == 0 or not view.rows
    # and with a spread, the board is ranked (its summary says so)
    rng = np.random.default_rng(3)
    frame = challenge_frame(rng, np.linspace(0.1, 0.7, 30), np.full(30, 300))
    verdict = challenges_differ_of(frame)
    assert verdict["differ"].to_list() == [True] and verdict["p_value"][0] < 1e-6


def challenges_differ_of(frame: pl.DataFrame) -> pl.DataFrame:
    from analysis.opponents import challenges_differ

    return challenges_differ(challenge_rates(frame))
