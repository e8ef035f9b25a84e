"""The lineup model (agg_lineup_model, agg_lineup_model_terms): rank-in-file effects fitted per
board and variant on the per-lineup counts; a planted rank-file effect is recovered (its interval
covers the truth), and null data raises no more flags than the false discovery rate allows."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pytest

from analysis import jobs, load
from analysis import lineup_model as lm
from analysis import synthetic as sy


def plan(**kw) -> sy.Plan:
    base = dict(modes=(("online", 1),), versions=(("3.0.0", 1),), p_hidden=0.0, p_powers=0.0)
    return sy.Plan(**{**base, **kw})


def planted_cell(size: int, rank: int, file: int, effect: float) -> dict[str, float]:
    """lineup_effects putting `effect` (log-odds) on every lineup with `rank` on `file`."""
    names, ranks = lm.lineups(size)
    return {nm: effect for nm, r in zip(names, ranks, strict=True) if r[file] == rank}


def target_terms(p: sy.Plan, size: int, n: int = 400_000) -> pl.DataFrame:
    """What the model estimates as the games grow: its fit, without prior, on each lineup's
    expected score (no outcome noise) in a large independent sample of the same plan."""
    g = sy.expected_scores(sy.generate(replace(p, n=n, seed=p.seed + 10_000), True)["games"],
                           p.draw_rate)  # fmt: skip
    g = g.filter(pl.col("board") == size)
    side = [g.select(lineup=pl.col(f"lineup_{s}"), e=pl.col(f"e{s}")) for s in (0, 1)]
    sides = pl.concat(side)
    counts = sides.group_by("lineup").agg(n=pl.len(), score=pl.col("e").sum())
    return lm.family_tables(size, counts, prior_sd=1e6)[1]


def model_tables(p: sy.Plan) -> dict[str, pl.DataFrame]:
    con, _ = sy.make_store(":memory:", p)
    out, _ = jobs.compute(load.read(con))
    con.close()
    return out


def test_each_lineups_row_is_the_sum_of_its_cells():
    # the fitted basis and the map to theta agree: a lineup's linear predictor is the sum of
    # theta[rank on f, f] over its files, and theta is double-centred
    for size in (5, 7):
        x, m = lm.design(size)
        _, ranks = lm.lineups(size)
        coef = np.random.default_rng(size).normal(size=x.shape[1])
        coef[0] = 0.0
        theta = (m @ coef).reshape(size, size)
        np.testing.assert_allclose(theta.sum(axis=0), 0, atol=1e-12)
        np.testing.assert_allclose(theta.sum(axis=1), 0, atol=1e-12)
        by_cells = theta[ranks - 1, np.arange(size)].sum(axis=1)
        np.testing.assert_allclose(x @ coef, by_cells, atol=1e-12)
        assert x.shape == (len(ranks), (size - 1) ** 2 + 1)


@pytest.mark.slow
def test_a_planted_rank_file_effect_is_recovered():
    # rank 5 on file c (the centre) is worth 0.3 log-odds on 5x5: 4,000 games, 33 a lineup
    p = plan(n=4000, seed=8, p_board7=0.0, lineup_effects=planted_cell(5, 5, 2, 0.3))
    out = model_tables(p)
    terms = out["agg_lineup_model_terms"].filter(pl.col("board") == 5)
    assert terms.height == 25 and set(terms["variant"]) == {"classic"}
    target = target_terms(p, 5).select("rank", "file", target="estimate")
    got = terms.join(target, on=["rank", "file"])
    cell = got.filter((pl.col("rank") == 5) & (pl.col("file") == 2)).row(0, named=True)
    assert cell["flagged"] and cell["estimate"] > 0
    assert cell["lo"] < cell["target"] < cell["hi"]
    assert cell["target"] > 0.15  # the planted cell is large, not a rounding of zero
    covered = ((got["lo"] < got["target"]) & (got["target"] < got["hi"])).sum()
    assert covered >= 22  # 95% intervals over 25 cells
    # the lineups that hold it are predicted stronger than the ones that do not
    lines = out["agg_lineup_model"].filter(pl.col("board") == 5)
    assert lines.height == 120
    top = lines.sort("strength_rank").head(24)["lineup"]
    assert sum(lu[2] == "5" for lu in top) == 24
    # ... where no lineup's own rate shows it
    assert out["agg_lineup_rates"].filter(pl.col("board") == 5)["flagged"].sum() == 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", [51, 52, 53])
def test_without_effects_the_model_flags_no_more_than_the_fdr(seed):
    out = model_tables(plan(n=4000, seed=seed, p_board7=0.4))
    terms, lines = out["agg_lineup_model_terms"], out["agg_lineup_model"]
    assert set(terms["board"]) == {5, 7} and lines.filter(pl.col("board") == 7).height == 5040
    for (board,), fam in terms.group_by("board"):
        # BH at 5% with every cell null: P(any flag in a family) <= 5%
        assert fam["flagged"].sum() <= 1, (board, fam.filter("flagged"))
    assert lines["flagged"].sum() <= 1
    # every lineup has a prediction with an interval, played or not
    assert lines["predicted"].is_not_null().all()
    assert (lines["predicted_lo"] <= lines["predicted"]).all()
    assert (lines["predicted"] <= lines["predicted_hi"]).all()


def _lone_lineup(sides: int, seed: int, true: float = 0.60) -> pl.DataFrame:
    """One 5×5 family: every lineup even but 21435, which scores `true`; `sides` a lineup."""
    names, _ = lm.lineups(5)
    p = np.where(np.array(names) == "21435", true, 0.5)
    n = np.full(len(names), sides)
    score = np.random.default_rng(seed).binomial(n, p).astype(float)
    lines, _ = lm.family_tables(5, pl.DataFrame({"lineup": names, "n": n, "score": score}))
    return lines


def test_a_lone_lineups_own_strength_shows_in_its_rate_once_its_games_can_tell():
    # the cells cannot see one lineup's quirk: its projection excludes 0.60, its rate does not
    covered = projected = 0
    for seed in range(10):
        lines = _lone_lineup(1000, seed)
        lone = lines.filter(pl.col("lineup") == "21435").row(0, named=True)
        covered += lone["rate_lo"] < 0.60 < lone["rate_hi"]
        projected += lone["predicted_lo"] < 0.60 < lone["predicted_hi"]
        assert lone["set_apart"] > 0.5 and lone["strength_rank"] == 1
        # the even lineups stay at their cells: their rates cover 0.5 (95% intervals)
        rest = lines.filter(pl.col("lineup") != "21435")
        assert ((rest["rate_lo"] < 0.5) & (0.5 < rest["rate_hi"])).mean() >= 0.85
        assert (rest["set_apart"] < 0.5).mean() >= 0.95
    assert covered >= 9 and projected == 0
    # with few games it stays near its cells, its interval wide enough to say so
    lone = _lone_lineup(60, 0).filter(pl.col("lineup") == "21435").row(0, named=True)
    assert lone["rate_lo"] <= lone["rate"] <= lone["rate_hi"]
    assert abs(lone["rate"] - lone["predicted"]) < 0.05


def test_a_lineups_own_effect_is_read_from_its_sides_in_every_variant():
    # 21435 scores 0.60 on 200 sides in each of three variants, every other lineup 0.50: one
    # variant's sides alone cannot set it apart, the board's 600 can, and each variant's row
    # carries that one effect (each on its own variant's projection)
    names, _ = lm.lineups(5)
    p = np.where(np.array(names) == "21435", 0.60, 0.5)
    n = np.full(len(names), 200)
    fam = pl.DataFrame({"lineup": names, "n": n, "score": n * p})
    out = lm.board_tables(5, [fam, fam, fam])
    rows = [ln.filter(pl.col("lineup") == "21435").row(0, named=True) for ln, _ in out]
    assert len({(r["own_effect"], r["set_apart"]) for r in rows}) == 1
    (lone,) = {r["set_apart"] for r in rows}
    alone = lm.family_tables(5, fam)[0].filter(pl.col("lineup") == "21435").row(0, named=True)
    assert lone > 0.9 and alone["set_apart"] < 0.1, (lone, alone["set_apart"])
    for r in rows:
        assert r["rate_lo"] < 0.60 < r["rate_hi"] and r["strength_rank"] == 1
    assert not alone["rate_lo"] < 0.60 < alone["rate_hi"]
    # the even lineups stay with the rest, in every variant
    for ln, _ in out:
        rest = ln.filter(pl.col("lineup") != "21435")
        assert (rest["set_apart"] < 0.5).all()
