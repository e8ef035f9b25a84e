"""The models' charts, drawn from the jobs' tables: on the Powers page each power's
effect from agg_adjusted, against the average power, beside the raw difference of the same games;
on the Setups page the lineup model's strongest and weakest lineups and its rank x file map."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.special import expit
from support import Snapshots

from analysis import jobs
from analysis import synthetic as sy
from analysis.frames import POWERS
from dashboard import render
from dashboard.catalog import powers, setups
from dashboard.filters import Filters


@pytest.fixture(scope="module")
def store():
    p = sy.Plan(n=3000, seed=12, modes=(("online", 1),), versions=(("3.0.0", 1),),
                p_hidden=0.0, p_powers=1.0, power_effects={"swap": 0.4})  # fmt: skip
    con, _ = sy.make_store(":memory:", p)
    jobs.run(con, lambda fn: fn(con))
    yield con
    con.close()


def test_adjusted_effects_are_drawn_beside_the_raw_difference(store):
    ctx = render.Ctx(Filters(), Snapshots(store))
    view = render.build(powers.adjusted_effect, ctx)
    assert view.error is None and view.spec is not None
    _, table, _ = render.table_of(powers.adjusted_effect, render.Ctx(Filters(), Snapshots(store)))
    assert table.height == 2 * len(POWERS)
    adj = table.filter(pl.col("kind") == powers.ADJUSTED)
    raw = table.filter(pl.col("kind") == powers.RAW)
    # the model's rows, on the score scale of an even game, strongest first
    model = store.sql("FROM agg_adjusted WHERE family = 'power' ORDER BY estimate DESC").pl()
    assert adj["power"].to_list() == [t.removeprefix("power:") for t in model["term"]]
    np.testing.assert_allclose(adj["rate"], expit(model["estimate"].to_numpy()) - 0.5)
    np.testing.assert_allclose(adj["lo"], expit(model["lo"].to_numpy()) - 0.5)
    assert adj["flagged"].to_list() == model["flagged"].to_list()
    assert adj["power"][0] == "swap" and adj["flagged"][0]
    assert adj["rate"].sum() == pytest.approx(0, abs=0.01)  # contrasts: about zero-sum
    # the raw difference of the same (default-cut) games, summed over both boards, same order
    assert raw["power"].to_list() == adj["power"].to_list()
    counts = store.sql(
        "SELECT power, sum(picked_n) AS n, sum(picked_wins + picked_draws / 2) / sum(picked_n) "
        "- sum(not_wins + not_draws / 2) / sum(not_n) AS d FROM agg_power_rates GROUP BY power"
    ).pl()
    want = dict(zip(counts["power"], counts["d"], strict=True))
    np.testing.assert_allclose(raw["rate"], [want[p] for p in raw["power"]])
    assert set(store.sql("SELECT board FROM agg_power_rates").pl()["board"]) == {5, 7}
    # the chart says what the effects are against and why the two differ
    assert "average power" in powers.adjusted_effect.note
    assert "sum to zero" in powers.adjusted_effect.note
    assert "Why the two differ" in powers.adjusted_effect.note


def test_the_chart_is_on_the_powers_page():
    assert powers.adjusted_effect in powers.PAGE.charts


def test_each_kind_is_a_panel_of_its_own(store):
    view = render.build(powers.adjusted_effect, render.Ctx(Filters(), Snapshots(store)))
    kinds = {r["kind"] for r in view.spec["data"]["values"]}
    assert kinds == {powers.ADJUSTED, powers.RAW}
    assert view.spec["facet"]["field"] == "kind"


def test_the_lineup_model_draws_the_strongest_and_weakest_lineups_and_its_cells(store):
    ctx = render.Ctx(Filters(), Snapshots(store))
    view = render.build(setups.model_lineups, ctx)
    assert view.error is None and view.spec["facet"]["field"] == "family"
    _, table, _ = render.table_of(setups.model_lineups, render.Ctx(Filters(), Snapshots(store)))
    model = store.sql("FROM agg_lineup_model").pl()
    for (board, variant), fam in table.group_by("board", "variant"):
        whole = model.filter((pl.col("board") == board) & (pl.col("variant") == variant))
        played = whole.filter(pl.col("n") > 0)  # a lineup never played ranks nowhere
        assert fam.height == min(2 * setups.MODEL_SHOWN, played.height)
        assert (fam["n"] > 0).all()
        # ranked by the lineup's rate (its cells plus its own effect), not the projection
        best = played.sort("rate", descending=True)["lineup"].head(setups.MODEL_SHOWN)
        worst = played.sort("rate")["lineup"].head(setups.MODEL_SHOWN)
        assert set(fam.filter(pl.col("end") == "highest")["lineup"]) == set(best)
        assert set(fam.filter(pl.col("end") == "lowest")["lineup"]) <= set(worst)
        assert (fam["lo"] <= fam["rate"]).all() and (fam["rate"] <= fam["hi"]).all()
    assert set(model.filter(pl.col("board") == 7)["variant"]) == {"powers"}
    assert model.filter(pl.col("board") == 7).height == 5040  # every lineup, played or not
    # 7×7: most of its 5,040 lineups have no games; none of them is charted
    unplayed = set(model.filter((pl.col("board") == 7) & (pl.col("n") == 0))["lineup"])
    assert len(unplayed) > 3000
    assert not unplayed & set(table.filter(pl.col("board") == 7)["lineup"])
    cells = render.build(setups.model_cells, render.Ctx(Filters(), Snapshots(store)))
    values = cells.spec["data"]["values"]
    assert len(values) == store.sql("SELECT count(*) FROM agg_lineup_model_terms").fetchone()[0]
    assert {v["file"] for v in values} == set("abcdefg")
    assert all("score_effect" in v for v in values)
    assert setups.model_lineups in setups.PAGE.charts and setups.model_cells in setups.PAGE.charts
