"""Findings (analysis.findings): what a designer can act on, decided for the whole report.

On synthetic stores (analysis.synthetic) with planted effects, each planted cause gives one
finding, not one per table that can see it (a power once, not also as its raw pick effect; a
rank-file cell once, not also as every lineup holding it); mirror pairs are listed once; side
events and side 0 are descriptive, never findings; on data with no effect the report stays
empty; a family without the data to tell says so instead of "0 flagged".
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import duckdb
import polars as pl
import pytest

from analysis import decisions, findings, jobs
from analysis import synthetic as sy

# human score against each computer level inside its default target band (the middle of it):
# no level is off target, so "no effect" holds for the calibration families too
IN_BAND = (-1.24, -0.51, 0.10, 0.73)
ONE_CUT = dict(modes=(("online", 1),), versions=(("3.0.0", 1),), p_board7=0.0, p_hidden=0.0)
# rank 5 on file c (the centre file of 5×5): every lineup holding it is stronger
CELL = {"".join(map(str, p)): 0.5 for p in itertools.permutations(range(1, 6)) if p[2] == 5}


def store(plan: sy.Plan) -> duckdb.DuckDBPyConnection:
    con, _ = sy.make_store(":memory:", plan)
    jobs.run(con, lambda fn: fn(con))
    return con


def collect(con) -> findings.Findings:
    return findings.collect(lambda sql: con.sql(sql).pl())


@pytest.fixture(scope="module")
def planted_findings() -> findings.Findings:
    plan = sy.Plan(
        n=12_000, seed=0, first_effect=0.25, power_effects={"surge": 0.4},
        lineup_effects=CELL, ai_level_effects=IN_BAND, **ONE_CUT,
    )  # fmt: skip
    con = store(plan)
    try:
        return collect(con)
    finally:
        con.close()


def test_each_planted_cause_gives_one_finding(planted_findings):
    t = planted_findings.table
    kinds = t["kind"].to_list()
    statements = t["statement"].to_list()
    # the power once, from the adjusted model: not again as its raw pick effect, pairs or vs
    assert [s for s in statements if "surge" in s] == [
        s for s in statements if s.startswith("surge scores")
    ]
    assert kinds.count("power") == 1
    # the cell once for its board (the variants it is planted in pooled), never as its lineups
    cells = t.filter(t["kind"] == "lineup_cell")
    assert cells["item"].to_list() == ["rank 5 on file c"]
    assert cells["family"].to_list() == ["lineup cell 5×5"]
    assert "lineup" not in kinds and "lineup_vs" not in kinds
    # the first move once for its board (classic and powers pooled), from its own comparison
    assert t.filter(t["kind"] == "first_move")["family"].to_list() == ["first move 5×5"]
    # nothing else: each planted cause is all there is
    assert set(kinds) == {"power", "lineup_cell", "first_move"}, statements
    # strongest evidence first
    z = t["z_beyond"].to_list()
    assert z == sorted(z, reverse=True) and min(z) > 0
    assert t["rank"].to_list() == list(range(1, t.height + 1))


def test_a_finding_says_its_size_beyond_the_minimum_interval_games_and_links(planted_findings):
    t = planted_findings.table
    (surge,) = t.filter(t["kind"] == "power").to_dicts()
    minimum = decisions.MIN_EFFECTS["power"]
    # the whole interval is beyond the minimum, and the effect is measured against the median
    assert surge["lo"] > surge["minimum"] == pytest.approx(minimum, abs=1e-9)
    assert surge["beyond"] == pytest.approx(surge["effect"] - minimum, abs=1e-9)
    assert "above the median power" in surge["statement"]
    # n: the games played with powers (those that inform a power), not every game
    assert 0.4 * 12_000 < surge["n"] < 0.7 * 12_000
    assert f"n = {surge['n']:,}" in surge["statement"]
    assert surge["chart"] == "powers#power-adjusted"
    assert surge["games"] == "games?mode=human&power=surge"
    assert surge["sql"] == "SELECT * FROM agg_adjusted WHERE \"term\" = 'power:surge'"
    assert surge["since"] == "new this week"
    summary = planted_findings.summary()
    assert f"{t.height} findings in {planted_findings.tested} families" in summary
    assert "at most 0.1 false findings" in summary


def test_families_say_what_they_could_have_seen(planted_findings):
    fams = {r["family"]: r for r in planted_findings.families.iter_rows(named=True)}
    # 120 lineups of 5×5 with about 200 sides each: nothing could be seen, and it says so
    assert fams["lineup 5×5"]["verdict"] == findings.TOO_FEW
    assert fams["lineup 5×5"]["rows"] == 120
    # a family that could see something and found nothing says how large it could see
    quiet = [r for r in fams.values() if r["verdict"].startswith("none found")]
    assert quiet, fams
    for r in quiet:
        assert r["minimum"] < r["detectable_best"] <= findings.dc.TOO_FEW_FACTOR * r["minimum"]
        assert r["detectable_best"] <= r["detectable_typical"]
    assert fams["power"]["verdict"] == "1 found"


# the adjusted model with no power effect (a power-vs matchup is measured against it)
NO_POWER_EFFECTS = """SELECT * FROM (VALUES ('power:p01', true, 0.0))
    t(term, estimable, estimate)"""


def _table(con, name: str, sql: str) -> None:
    con.execute(f"CREATE TABLE {name} AS {sql}")


def test_mirror_pairs_are_listed_once_and_outcomes_are_not_findings():
    con = duckdb.connect()
    # surge against freeze and freeze against surge: one fact, seen from either side
    _table(
        con,
        "agg_power_vs_rates",
        """SELECT 5 AS board, * FROM (VALUES
        ('surge', 'freeze', 4000, 0.6), ('freeze', 'surge', 4000, 0.4))
        t(power, opp_power, n, score_rate)""",
    )
    # two-player Slide: the second seat's loss is the first seat's win
    _table(
        con,
        "agg_slide_seat_rates",
        """SELECT 2 AS players, * FROM (VALUES
        (0, 6000, 0.6, 0.5), (1, 6000, 0.4, 0.5))
        t(seat_from_first, seats, win_rate, fair_share)""",
    )
    # sides that stunned a crown win more; side 0 wins more: outcomes and conventions
    _table(
        con,
        "agg_side_events_rates",
        """SELECT 5 AS board, 'classic' AS variant, * FROM
        (VALUES (true, false, 5000, 0.7, 0.68, 0.72, 0.5), (false, false, 5000, 0.45, 0.43, 0.47,
        0.5)) t(made_stun, made_catch, n, score_rate, wilson_lo, wilson_hi, tested_against)""",
    )
    _table(
        con,
        "agg_adjusted",
        """SELECT * FROM (VALUES
        ('side_0', 'side_0', true, 0.8, 0.02, 0.76, 0.84, 0.69, 20000))
        t(term, family, estimable, estimate, se, lo, hi, p_at_even, n_games)""",
    )
    f = collect(con)
    assert f.table.height == 2, f.table["statement"].to_list()
    assert sorted(f.table["kind"]) == ["power_vs", "slide_seat"]
    vs = f.table.filter(f.table["kind"] == "power_vs").to_dicts()[0]
    assert vs["item"] == "freeze against surge" and vs["effect"] == pytest.approx(-0.1)
    seat = f.table.filter(f.table["kind"] == "slide_seat").to_dicts()[0]
    assert seat["item"] == "seat 0 from the first"
    # side events and side 0: in the descriptive section, with their intervals
    assert sorted(f.descriptive["kind"]) == ["side_0", "side_events", "side_events"]
    assert not f.table.filter(f.table["kind"].is_in(["side_events", "side_0"])).height


def test_a_family_with_many_findings_shows_its_strongest_and_counts_the_rest():
    con = duckdb.connect()
    _table(
        con,
        "agg_power_vs_rates",
        """SELECT 5 AS board, 'p' || lpad(i::VARCHAR, 2, '0')
        AS power, 'q' || lpad(i::VARCHAR, 2, '0') AS opp_power, 2000 + 100 * i AS n,
        0.7 AS score_rate FROM range(1, 31) t(i)""",
    )
    _table(con, "agg_adjusted", NO_POWER_EFFECTS)
    f = collect(con)
    assert f.table.height == findings.PER_FAMILY
    # the best-informed first: the same effect on more games clears the minimum by more
    assert f.table["n"].to_list() == [2000 + 100 * i for i in range(30, 20, -1)]
    (fam,) = f.families.to_dicts()
    assert (fam["rows"], fam["tested"], fam["flagged"], fam["shown"]) == (30, 30, 30, 10)
    assert "power vs 5×5: 30" in f.summary()
    assert "agg_first_move_rates" in f.summary()  # not in the store: said, not silently left


def test_an_effect_inside_the_minimum_is_no_finding_however_many_games():
    con = duckdb.connect()
    # 5×5: the first mover scores 0.515 on two million games (its variants pooled): real, and
    # smaller than what matters; 7×7: 0.53, beyond it
    _table(
        con,
        "agg_first_move_rates",
        """SELECT * FROM (VALUES (5, 'classic', 1000000, 0.51), (5, 'powers', 1000000, 0.52),
        (7, 'classic', 1000000, 0.53)) t(board, variant, n, score_rate)""",
    )
    f = collect(con)
    assert f.table["family"].to_list() == ["first move 7×7"]
    (row,) = f.table.to_dicts()
    assert row["lo"] > 0.02 and row["beyond"] == pytest.approx(0.01)
    assert row["sql"] == 'SELECT * FROM agg_first_move_rates WHERE "board" = 7'
    assert not f.watch.height  # 5×5 is clear of zero, but its estimate is inside the minimum


def _first_move(con, rows: str) -> findings.Findings:
    con.execute("DROP TABLE IF EXISTS agg_first_move_rates")
    _table(
        con,
        "agg_first_move_rates",
        f"SELECT * FROM (VALUES {rows}) t(board, variant, n, score_rate)",
    )
    return collect(con)


def test_an_effect_clear_of_zero_but_not_of_the_minimum_is_on_the_watch_list():
    con = duckdb.connect()
    # 7×7: 0.535 on 3,000 games, its interval clear of zero but not of 0.02: watch, with the
    # games it needs; 5×5: 0.525 on 400 games, its interval across zero: neither tier
    f = _first_move(con, "(7, 'classic', 3000, 0.535), (5, 'classic', 400, 0.525)")
    assert not f.table.height
    (w,) = f.watch.to_dicts()
    assert w["family"] == "first move 7×7" and w["kind"] == "first_move"
    assert 0 < w["lo"] < w["minimum"] < w["effect"] == pytest.approx(0.035)
    assert "clear of zero but not yet of the minimum" in w["statement"]
    assert w["to_confirm"] > 0 and w["confirm"].startswith("about ")
    fams = {r["family"]: r for r in f.families.iter_rows(named=True)}
    assert fams["first move 7×7"]["verdict"] == "none found yet; 1 to watch"
    assert fams["first move 7×7"]["watched"] == 1
    assert "Watch, not yet findings: 1 effect" in f.summary()
    # with the games it said it needs, the same effect is a finding (the estimate held)
    more = 3000 + w["to_confirm"]
    f = _first_move(con, f"(7, 'classic', {more}, 0.535)")
    (row,) = f.table.to_dicts()
    assert row["lo"] > row["minimum"] and not f.watch.height
    # and an estimate inside the minimum never enters the watch list, however clear of zero
    f = _first_move(con, "(7, 'classic', 3000000, 0.515)")
    assert not f.table.height and not f.watch.height


@pytest.mark.slow
def test_null_data_gives_an_empty_report():
    found = families = 0
    for seed in range(4):
        con = store(sy.Plan(n=8_000, seed=seed, first_effect=0.0, ai_level_effects=IN_BAND))
        f = collect(con)
        con.close()
        found += f.table.height + f.watch.height  # neither tier: the same budget vs zero
        families += f.tested
    assert families >= 4 * 30  # boards, client versions, player counts: ~39 a report
    assert found == 0


def test_computer_levels_out_of_order_are_one_sided():
    con = duckdb.connect()
    # level 2 leaves the human 0.15 less than level 1 (as it should); level 3 leaves 0.15 more
    _table(
        con,
        "agg_ai_calibration",
        """SELECT 5 AS board, '3.0.0' AS client_version, * FROM
        (VALUES (2, 1, 5000, -0.15, -0.17, -0.13), (3, 2, 5000, 0.15, 0.13, 0.17))
        t(ai_level, previous_level, n, step, step_lo, step_hi)""",
    )
    f = collect(con)
    assert f.table["item"].to_list() == ["the human against level 3"]
    assert "above the human against the easier level 2" in f.table["statement"][0]


def test_a_finding_keeps_its_first_date_across_runs_and_a_gone_one_is_dropped():
    plan = sy.Plan(
        n=6_000, seed=2, first_effect=0.0, power_effects={"surge": 0.8},
        ai_level_effects=IN_BAND, **ONE_CUT,
    )  # fmt: skip
    con = store(plan)
    try:
        (key,) = con.sql("SELECT keys FROM jobs_findings WHERE kind = 'power'").fetchone()
        assert key == '{"term":"power:surge"}'
        # as if first flagged three weeks ago: the next run keeps that date
        con.execute("UPDATE jobs_findings SET first_flagged = first_flagged - INTERVAL 21 DAY")
        first = con.sql("SELECT first_flagged FROM jobs_findings").fetchone()[0]
        con.execute("INSERT INTO jobs_findings VALUES ('power', '{\"term\":\"power:gone\"}', "
                    "'gone', now()::TIMESTAMP, now()::TIMESTAMP, 1, 1)")  # fmt: skip
        more = sy.generate(sy.Plan(n=300, seed=3, **ONE_CUT))
        last = con.execute("SELECT max(received_at) FROM games").fetchone()[0]
        sy.insert(con, sy.arriving(more, last), tag="more")
        assert jobs.run(con, lambda fn: fn(con))["mode"] == "incremental"
        rows = con.sql("SELECT keys, first_flagged, last_run FROM jobs_findings").fetchall()
        assert rows == [('{"term":"power:surge"}', first, 2)]  # the gone one is dropped
        (surge,) = collect(con).table.filter(pl.col("kind") == "power").to_dicts()
        assert surge["since"] == f"persisting since {first.date().isoformat()}"
    finally:
        con.close()


@pytest.mark.parametrize("alpha", [0.0125, 1.5e-3, 2e-5])
def test_the_mixture_is_tuned_to_be_tightest_where_it_starts_to_see_the_minimum(alpha):
    m = 0.02
    tau = decisions.scale(alpha, m)
    # the standard error at which the half-width is the minimum (a doubling search)
    lo, hi = 1e-6, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if decisions.half_width(mid, alpha, tau) < m else (lo, mid)
    se = (lo + hi) / 2
    assert float(decisions.half_width(se, alpha, tau)) == pytest.approx(m, rel=1e-6)
    # no other scale gives a narrower sequence there
    for other in (0.5 * tau, 0.8 * tau, 1.25 * tau, 2 * tau):
        assert decisions.half_width(se, alpha, other) > decisions.half_width(se, alpha, tau)
    # and the SQL gives the same scale
    (sql_tau,) = duckdb.sql(f"SELECT {decisions.scale_sql(repr(alpha), m)}").fetchone()
    assert float(sql_tau) == pytest.approx(float(tau), rel=1e-12)
    # also from the columns the findings' query keeps big and u in: the same number
    big, u = decisions.big_sql(repr(alpha)), decisions.u_sql("big")
    (in_steps,) = duckdb.sql(
        f"SELECT {decisions.scale_sql(repr(alpha), m, 'big', 'u')} "
        f"FROM (SELECT *, {u} AS u FROM (SELECT {big} AS big))"
    ).fetchone()
    assert in_steps == sql_tau


def _lineups(con, planted: float, sides: int) -> findings.Findings:
    """agg_lineup_model of 5×5 over three variants: every lineup even and at its cells, most
    with 30 sides a variant; 21435 and four others with `sides` a variant, 21435 at
    `planted`."""
    con.execute("DROP TABLE IF EXISTS agg_lineup_model")
    names = _names()
    busy = set(names[:5])
    rows = []
    for v in ("classic", "powers", "hidden"):
        for lu in names:
            n = sides if lu in busy else 30
            rate = planted if lu == "21435" else 0.5
            rows.append(f"(5, '{v}', '{lu}', {n}, {rate * n}, {rate}, 0.5, 0.49, 0.51)")
    _table(
        con,
        "agg_lineup_model",
        f"""SELECT * FROM (VALUES {", ".join(rows)}) t(board, variant, lineup, n, score,
        score_rate, predicted, predicted_lo, predicted_hi)""",
    )
    return collect(con)


def _names() -> list[str]:
    """The 120 lineups of 5×5, 21435 first."""
    every = ["".join(map(str, p)) for p in itertools.permutations(range(1, 6))]
    return ["21435", *(n for n in every if n != "21435")]


def test_a_lone_lineup_is_one_finding_for_its_board_once_its_sides_can_tell():
    con = duckdb.connect()
    # 21435 scores 0.60 where its cells say 0.50, on 700 sides in each of three variants: one
    # finding for 5×5 (its variants pooled), not one a variant (700 sides alone cannot tell)
    f = _lineups(con, 0.60, 700)
    (row,) = f.table.to_dicts()
    assert row["kind"] == "lineup" and row["item"] == "lineup 21435"
    assert row["family"] == "lineup 5×5" and row["n"] == 2100
    assert row["lo"] > row["minimum"] == pytest.approx(0.05)
    assert row["sql"] == ('SELECT * FROM agg_lineup_model WHERE "board" = 5 AND '
                          "\"lineup\" = '21435'")  # fmt: skip
    # only the five lineups with the sides to clear the minimum are tested, and they share
    # the kind's budget: 115 lineups of 90 sides could not clear it, whatever their outcome
    fam = f.families.filter(pl.col("kind") == "lineup").row(0, named=True)
    assert (fam["rows"], fam["tested"], fam["flagged"]) == (120, 5, 1)
    share = decisions.REPORT_ALPHA * decisions.WEIGHTS["lineup"]
    assert row["alpha"] == pytest.approx(share / 5)
    # split over all 120 lineups instead, the same lineup is only on the watch list
    unscreened = replace(findings.KINDS["lineup"], screen=False)
    frame = con.sql(findings.source_sql(unscreened)).pl()
    (old,) = frame.filter(pl.col("keys").str.contains("21435")).to_dicts()
    assert old["watch"] and not old["flagged"] and old["alpha_row"] == pytest.approx(share / 120)
    # the same store with 21435 even: nothing found, nothing to watch
    f = _lineups(con, 0.50, 700)
    assert not f.table.height and not f.watch.height
    # and with 90 sides a variant no lineup can tell: none tested, said so
    f = _lineups(con, 0.60, 30)
    fam = f.families.filter(pl.col("kind") == "lineup").row(0, named=True)
    assert fam["tested"] == 0 and fam["verdict"] == findings.TOO_FEW
    assert not f.table.height and not f.watch.height
