"""Every cut of an additive agg_* table gives the same numbers as filtering the games first and
aggregating after; rates computed on a cut by analysis.views agree too."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from analysis import jobs, load, tables, views
from analysis import synthetic as sy
from analysis.cuts import Cut, latest_version, version_key

pytestmark = pytest.mark.slow  # a 3,000-game synthetic store, every table recomputed per cut


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("cuts") / "store.duckdb"
    con, _ = sy.make_store(path, sy.Plan(n=3000, seed=21), quarantined=200)
    yield con
    con.close()


@pytest.fixture(scope="module")
def full(store):
    out, _ = jobs.compute(load.read(store))
    return out


CUTS = [
    Cut(board=5),
    Cut(board=7, variant="powers"),
    Cut(variant="hidden"),
    Cut(mode=("online", "friend")),
    Cut(mode="computer", ai_level=(3, 4)),
    Cut(platform=("ios", "web")),
    Cut(client_version="3.0.0"),
    Cut(mode="online", client_version=("2.5.3", "3.1.0-beta.2"), board=5),
    Cut(date_from="2026-09-07", date_to="2026-10-18"),  # Monday .. Sunday: whole weeks
    Cut(variant="powers", platform="android", date_from="2026-10-05", date_to="2026-11-29"),
]


def _text(df: pl.DataFrame) -> pl.DataFrame:
    # runs over different games have different dictionaries (Enum types): compare the text
    return df.with_columns(pl.col(pl.Enum, pl.Categorical).cast(pl.String))


def _summed(frame: pl.DataFrame, name: str, keep: list[str]) -> pl.DataFrame:
    dims, keys, counts = tables.ADDITIVE[name]
    by = [*keep, *keys]
    return _text(views.summed(_text(frame), by, counts))


@pytest.mark.parametrize("cut", CUTS, ids=lambda c: c.as_json())
def test_cutting_a_table_equals_filtering_the_games_first(store, full, cut):
    first, _ = jobs.compute(load.read(store, cut))
    checked = 0
    for name, (dims, _, _) in tables.ADDITIVE.items():
        cols = set(tables.columns(name))
        needs = [d for d in cut.restricts() if d != "date"]
        if not set(needs) <= cols or (cut.date_from and not {"week", "day"} & cols):
            with pytest.raises(ValueError):
                cut.apply(full[name])
            continue
        keep = [d for d in ("board", "variant") if d in dims]
        after = _summed(cut.apply(full[name]), name, keep)
        before = _summed(first[name], name, keep)
        assert_frame_equal(after, before, check_dtypes=False)
        checked += 1
    assert checked >= 5  # tables without one of the cut's dimensions must refuse it (above)


@pytest.mark.parametrize("cut", CUTS[:6], ids=lambda c: c.as_json())
def test_rates_on_a_cut_equal_rates_after_filtering_first(store, full, cut):
    first, _ = jobs.compute(load.read(store, cut))
    for name, by, family in [
        ("agg_lineup", ["board", "variant", "lineup"], ["board", "variant"]),
        ("agg_setup_cell", ["board", "variant", "rank", "file"], ["board", "variant"]),
        ("agg_power_vs", ["board", "power", "opp_power"], ["board"]),
    ]:
        if not set(cut.restricts()) <= set(tables.columns(name)):
            continue  # e.g. agg_lineup has no platform column (its key is fixed by design)
        a = views.rates(_text(cut.apply(full[name])), by, family=family)
        b = views.rates(_text(first[name]), by, family=family)
        assert_frame_equal(a, b, check_dtypes=False)
    a = views.power_rates(_text(cut.apply(full["agg_power"])))
    b = views.power_rates(_text(first["agg_power"]))
    assert_frame_equal(a, b, check_dtypes=False)


def test_a_day_cut_on_a_daily_table_is_exact_and_weekly_tables_refuse_it(store, full):
    cut = Cut(date_from="2026-10-01", date_to="2026-10-15")  # a Thursday to a Thursday
    first, _ = jobs.compute(load.read(store, cut))
    for name in ("agg_games_daily", "agg_ingest_status"):
        assert_frame_equal(
            _summed(cut.apply(full[name]), name, []),
            _summed(first[name], name, []),
            check_dtypes=False,
        )
    with pytest.raises(ValueError, match="whole weeks"):
        cut.apply(full["agg_first_move"])
    wide = cut.weekly()
    assert (wide.date_from, wide.date_to) == (dt.date(2026, 9, 28), dt.date(2026, 10, 18))
    assert wide.apply(full["agg_first_move"]).height > 0


def test_a_table_without_a_dimension_cannot_be_cut_by_it(full):
    with pytest.raises(ValueError, match="platform"):
        Cut(platform="ios").apply(full["agg_lineup"])
    with pytest.raises(ValueError, match="board"):
        Cut(board=5).apply(full["agg_ingest_status"])


def test_every_additive_table_has_its_documented_columns(full):
    for name in tables.ADDITIVE:
        assert full[name].columns == tables.columns(name), name


def test_versions_sort_semantically():
    vs = ["2.10.0", "2.9.1", "3.1.0-beta.2", "3.0.0", "3.1.0", "3.1.0-beta.10", "2.4.0"]
    assert sorted(vs, key=version_key) == [
        "2.4.0", "2.9.1", "2.10.0", "3.0.0", "3.1.0-beta.2", "3.1.0-beta.10", "3.1.0",
    ]  # fmt: skip
    assert latest_version(["2.4.0", "3.1.0-beta.2", "3.0.0"]) == "3.1.0-beta.2"
    assert latest_version([]) is None


def test_default_cut_is_human_against_human_on_the_latest_client():
    cut = Cut.default("3.0.0")
    assert cut.mode == ("online", "friend") and cut.client_version == ("3.0.0",)
    assert "mode IN ('online', 'friend')" in cut.sql_where()
    hostile = Cut(platform="ios' OR TRUE --").sql_where()
    assert hostile == "platform IN ('ios'' OR TRUE --')"
