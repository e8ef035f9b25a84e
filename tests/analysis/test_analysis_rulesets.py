"""Balance tables are computed per ruleset (rulesets.md RS6.1): every agg_* table has a
`ruleset` dimension, the default cut is the live version *and its ruleset*, the rate tables say
which ruleset they cover, and incremental runs stay equal to a full run with games of two
rulesets arriving in between."""

from __future__ import annotations

import json

import polars as pl
import pytest

from analysis import jobs, tables
from analysis import synthetic as sy
from analysis.cuts import Cut
from analysis.live_version import live_cut

pytestmark = pytest.mark.slow  # synthetic stores, full and incremental runs compared

HUMAN = (("online", 3), ("friend", 1), ("computer", 1))


def _write(con):
    return lambda fn: fn(con)


def _batch(n: int, seed: int, version: str, ruleset: str, **kw) -> dict[str, pl.DataFrame]:
    plan = sy.Plan(n=n, seed=seed, modes=HUMAN, versions=((version, 1),), **kw)
    data = sy.generate(plan)
    return {**data, "games": data["games"].with_columns(ruleset=pl.lit(ruleset))}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """3.0.0 under `standard`; 3.1.0 mostly under `fast-freeze`, a few of its games under
    `standard` (clients that named no ruleset): the jobs run once."""
    con, _ = sy.make_store(
        tmp_path_factory.mktemp("rs") / "rs.duckdb",
        sy.Plan(n=1500, seed=3, modes=HUMAN, versions=(("3.0.0", 1),)),
    )
    sy.insert(con, _batch(900, 4, "3.1.0", "fast-freeze", first_effect=0.6), "new")
    sy.insert(con, _batch(80, 5, "3.1.0", "standard"), "old")
    jobs.run(con, _write(con))
    return con


def _human(con, version: str, ruleset: str) -> int:
    return con.execute(
        "SELECT count(*) FROM games WHERE mode IN ('online', 'friend') AND client_version = ? "
        "AND ruleset = ?",
        [version, ruleset],
    ).fetchone()[0]


def test_the_default_cut_is_the_live_version_and_its_ruleset(store):
    cut, why = store.execute(
        "SELECT default_cut, default_why FROM agg_runs ORDER BY run_id DESC LIMIT 1"
    ).fetchone()
    assert json.loads(cut)["client_version"] == ["3.1.0"]
    assert json.loads(cut)["ruleset"] == ["fast-freeze"]
    why = json.loads(why)["slow6"]
    assert "ruleset fast-freeze" in why
    assert f"standard ({_human(store, '3.1.0', 'standard'):,})" in why  # left out, and said
    # the rate tables count the live ruleset's games only, and say so
    n = store.execute("SELECT sum(n) FROM agg_first_move_rates").fetchone()[0]
    assert n == _human(store, "3.1.0", "fast-freeze")
    for t in ("agg_first_move_rates", "agg_power_rates", "agg_lineup_rates", "agg_adjusted"):
        assert store.execute(f"SELECT DISTINCT ruleset FROM {t}").fetchall() == [
            ("fast-freeze",)
        ], t


def test_every_additive_table_keeps_rulesets_apart(store):
    for table in tables.ADDITIVE:
        assert "ruleset" in tables.ADDITIVE[table][0], table
        if table.startswith("agg_slide") or table == "agg_challenge":  # no such games here
            continue
        got = {r for (r,) in store.execute(f"SELECT DISTINCT ruleset FROM {table}").fetchall()}
        assert got == {"standard", "fast-freeze"}, table
    # a cut on a ruleset sums exactly its games' rows
    frame = store.sql("SELECT * FROM agg_first_move").pl()
    for ruleset in ("standard", "fast-freeze"):
        n = Cut(ruleset=ruleset).apply(frame)["n"].sum()
        q = "SELECT count(*) FROM games WHERE ruleset = ?"
        (games,) = store.execute(q, [ruleset]).fetchone()
        assert n == games
    # 3.1.0's two rulesets are two rows of every cell, never one
    rows = store.sql(
        "SELECT board, variant, mode, platform, ai_level, week, count(DISTINCT ruleset) AS k "
        "FROM agg_first_move WHERE client_version = '3.1.0' GROUP BY ALL HAVING k > 1"
    ).fetchall()
    assert rows  # the cells both rulesets played in stayed apart


def test_live_cut_names_the_majority_ruleset_and_refuses_to_pool():
    live = live_cut([("2.0.0", "standard", 500), ("2.1.0", "b", 300), ("2.1.0", "standard", 9)])
    assert (live.version, live.ruleset) == ("2.1.0", "b")
    assert "not pooled" in live.reason and "standard (9)" in live.reason
    # no release: every version, but still one ruleset
    live = live_cut([("3.0.0-beta.1", "x", 50), ("3.0.0-beta.1", "standard", 10)])
    assert live.version is None and live.ruleset == "x"


def test_incremental_runs_equal_a_full_run_across_rulesets(tmp_path):
    con, _ = sy.make_store(
        tmp_path / "inc.duckdb", sy.Plan(n=600, seed=7, modes=HUMAN, versions=(("3.0.0", 1),))
    )
    jobs.run(con, _write(con))
    for i, (version, ruleset) in enumerate(
        [("3.1.0", "r31"), ("3.0.0", "standard"), ("3.1.0", "r31"), ("3.1.0", "standard")]
    ):
        (latest,) = con.execute("SELECT max(received_at) FROM games").fetchone()
        data = sy.arriving(_batch(250, 20 + i, version, ruleset), latest)
        sy.insert(con, data, f"b{i}")
        run = jobs.run(con, _write(con))
        assert run["mode"] == "incremental", run
    names = [n for (n,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    names = sorted(n for n in names if n.startswith("agg_") and n != "agg_runs")
    incremental = {n: con.sql(f"SELECT * FROM {n}").pl() for n in names}
    jobs.run(con, _write(con), full=True)
    full = {n: con.sql(f"SELECT * FROM {n}").pl() for n in names}
    from test_analysis_incremental import assert_same  # (this folder's)

    assert_same(incremental, full)
    assert set(full["agg_power"]["ruleset"]) == {"standard", "r31"}


def test_a_slide_match_ends_at_its_rulesets_target(tmp_path):
    """S3.4 under a ruleset: a match of `long-match` (match_target 200) that played on past
    100 is consistent and not complete until a total reaches 200; under standard the same
    games are 'played on after a total reached 100'."""
    import duckdb

    from analysis.games_sql import Selection
    from analysis.slide import _matches
    from ingest.storage import registry, schema_sql
    from replays import rulesets as R

    con = duckdb.connect(str(tmp_path / "m.duckdb"))
    con.execute(schema_sql())
    toml = 'name = "long-match"\ngame = "slide"\n[params]\nmatch_target = 200\n'
    registry.register(con, [R.parse_toml(toml)])
    for match, ruleset in (("m-std", "standard"), ("m-long", "long-match")):
        for game, score in ((1, 90), (2, 30), (3, 30)):  # seat 0 reaches 120 in game 2
            gid = f"{match}-{game}"
            con.execute(
                "INSERT INTO slide_games VALUES (md5(?)::UUID, 2, 0, ?, ?, 'online', 'web', "
                "'1.0', [1], false, 0, 16, TIMESTAMP '2026-11-02 10:00:00' + to_hours(?::INTEGER), "
                "TIMESTAMP '2026-11-03', ?)",
                [gid, match, game, game, ruleset],
            )
            for seat, points in ((0, score), (1, 0)):
                con.execute(
                    "INSERT INTO slide_seats VALUES (md5(?)::UUID, 2, ?, ?, ?, 0, ?, 0, 0, [])",
                    [gid, seat, seat, points, seat == 1],
                )
    rows = {
        r[0]: r
        for r in con.execute(
            f"SELECT match_id, complete, consistent, problem FROM ({_matches(Selection())})"
        ).fetchall()
    }
    assert rows["m-std"][1:] == (True, False, "played on after a total reached 100")
    assert rows["m-long"][1:] == (False, True, None)
