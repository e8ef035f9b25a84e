"""AI calibration (agg_ai_calibration): human score against each computer level with its
interval, the levels' order tested level against level, and a target band per level from the
configuration, with a flag when a level is outside it. Planted effects are found at a stated
size, equal levels and levels inside their bands are not flagged beyond the false discovery
rate, and the intervals cover the truth.

The counts are simulated straight into agg_vs_ai's shape: games per level with a known human
win probability.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from analysis import ai_calibration as ac

DRAWS = 0.05


def vs_ai(rng, human: dict[int, float], games: int, version: str = "3.0.0", board: int = 5):
    """agg_vs_ai rows: `games` games against each level, the human scoring human[level] on
    average (draws 5%), split by who moved first as the table is."""
    rows = []
    for level, score in human.items():
        for first in (True, False):
            n = games // 2
            u = rng.random(n)
            wins = int((u < score - DRAWS / 2).sum())
            draws = int(((u >= score - DRAWS / 2) & (u < score + DRAWS / 2)).sum())
            rows.append(
                {"board": board, "client_version": version, "ai_level": level,
                 "human_first": first, "n": n, "wins": wins, "draws": draws,
                 "losses": n - wins - draws}
            )  # fmt: skip
    return pl.DataFrame(rows).with_columns(pl.col("ai_level").cast(pl.UInt8))


CENTRES = {lvl: (lo + hi) / 2 for lvl, (lo, hi) in ac.DEFAULT_TARGETS.items()}


def test_bands_come_from_the_configuration(monkeypatch):
    assert ac.targets("") == ac.DEFAULT_TARGETS
    monkeypatch.setenv(ac.ENV, "2=0.50-0.60, 4=0.1-0.2")
    bands = ac.targets()
    assert bands[2] == (0.5, 0.6) and bands[4] == (0.1, 0.2) and bands[1] == (0.70, 0.85)
    for bad in ("2=0.6", "x=0.1-0.2", "3=0.7-0.2", "1=0.5-1.5"):
        with pytest.raises(ValueError, match=ac.ENV):
            ac.targets(bad)
    # the table uses what the configuration says when it is computed
    rng = np.random.default_rng(0)
    out = ac.calibration(vs_ai(rng, {2: 0.62}, 2000))
    assert (out["band_lo"][0], out["band_hi"][0]) == (0.5, 0.6)


def test_well_spaced_levels_are_ordered_and_the_step_is_measured():
    # 0.775, 0.625, 0.475, 0.325: steps of 0.15 at 600 games a level
    found = covered = rate_covered = 0
    for seed in range(10):
        out = ac.calibration(vs_ai(np.random.default_rng(seed), CENTRES, 600))
        steps = out.filter(pl.col("previous_level").is_not_null())
        assert steps["previous_level"].to_list() == [1, 2, 3]
        found += (steps["order"] == "ordered").sum()
        covered += ((steps["step_lo"] < -0.15) & (-0.15 < steps["step_hi"])).sum()
        assert out.filter(pl.col("ai_level") == 1)["order"][0] is None
        truth = out["ai_level"].replace_strict(CENTRES, return_dtype=pl.Float64)
        rate_covered += ((out["wilson_lo"] < truth) & (truth < out["wilson_hi"])).sum()
    assert found == 30  # z about 5.5 for each step
    assert covered >= 27  # 95% intervals of the step
    assert rate_covered >= 36  # and of each level's score, 40 of them


def test_a_reversed_pair_is_found_and_equal_levels_are_not_flagged():
    # level 3 is easier than level 2 by 0.08 (at 2,000 games each: z about 5); level 4 = 3
    human = {1: 0.75, 2: 0.55, 3: 0.63, 4: 0.63}
    reversed_found = equal_flagged = covered = 0
    for seed in range(10):
        out = ac.calibration(vs_ai(np.random.default_rng(seed), human, 2000)).sort("ai_level")
        reversed_found += out["order"][2] == "reversed"
        equal_flagged += out["order"][3] != "unclear"
        covered += out["step_lo"][2] < 0.08 < out["step_hi"][2]
    assert reversed_found >= 9
    assert covered >= 8
    assert equal_flagged <= 1  # 10 tests of a true null at 5% (with BH)


def test_a_level_outside_its_band_is_flagged_and_levels_inside_are_not():
    # level 1 plays too well: the human scores 0.62 against a band of 0.70-0.85
    human = {**CENTRES, 1: 0.62}
    below = inside_flagged = 0
    for seed in range(10):
        out = ac.calibration(vs_ai(np.random.default_rng(seed), human, 1000)).sort("ai_level")
        below += out["off_target"][0] == "below"
        inside_flagged += out["off_target"][1:].is_not_null().sum()
    assert below >= 9  # 0.08 below the band's edge at 1,000 games: z about 5
    assert inside_flagged == 0  # the others sit at their band's centre


def test_per_board_and_version():
    rng = np.random.default_rng(5)
    frame = pl.concat(
        [
            vs_ai(rng, CENTRES, 1000, "3.0.0"),
            vs_ai(rng, {**CENTRES, 4: 0.55}, 1000, "3.1.0"),  # level 4 went soft in 3.1.0
            vs_ai(rng, CENTRES, 1000, "3.1.0", board=7),
        ]
    )
    out = ac.calibration(frame)
    assert out.height == 12
    soft = out.filter((pl.col("client_version") == "3.1.0") & (pl.col("board") == 5))
    soft = soft.sort("ai_level")
    assert soft["off_target"][3] == "above"
    others = out.filter((pl.col("client_version") != "3.1.0") | (pl.col("board") != 5))
    assert others["off_target"].is_null().all()
    # steps compare levels of the same board and version only
    assert out.filter(pl.col("ai_level") == 1)["previous_level"].is_null().all()


@pytest.mark.slow  # a synthetic store and every job
def test_the_jobs_compute_it_from_the_store():
    from analysis import jobs, load
    from analysis import synthetic as sy

    # the computer's side effects in log-odds: level 3 plays worse than level 2
    plan = sy.Plan(
        n=9000, seed=3, modes=(("online", 1), ("computer", 8)), versions=(("3.0.0", 1),),
        p_board7=0.0, ai_level_effects=(-1.0, 0.0, -0.35, 1.0),
    )  # fmt: skip
    con, _ = sy.make_store(":memory:", plan)
    out = jobs.compute(load.read(con))[0]["agg_ai_calibration"].sort("ai_level")
    (games,) = con.execute("SELECT count(*) FROM games WHERE mode = 'computer'").fetchone()
    con.close()
    assert out["ai_level"].to_list() == [1, 2, 3, 4] and (out["board"] == 5).all()
    assert out["n"].sum() == games
    assert out["order"].to_list() == [None, "ordered", "reversed", "ordered"]
    assert out["off_target"][1] == "below"  # 0.50 against a band of 0.55-0.70
    assert out["step_lo"][2] > 0
