"""Findings (analysis.findings): what the balance tables flag, in one list by evidence.

On synthetic stores (analysis.synthetic) with no effect the list stays nearly empty: at most
about 5% of the families tested show any flag (each family's flags are at 5% FDR); with
planted effects (first move, one power, one rank-file cell) the planted ones are found and
ranked first, each with its size, interval, n, test, q-value, chart and SQL.
"""

from __future__ import annotations

import itertools
import re

import duckdb
import pytest

from analysis import findings, jobs
from analysis import synthetic as sy

# human score against each computer level inside its default target band (the middle of it):
# no level is off target, so "no effect" holds for the calibration families too
IN_BAND = (-1.24, -0.51, 0.10, 0.73)
ONE_CUT = dict(modes=(("online", 1),), versions=(("3.0.0", 1),), p_board7=0.0, p_hidden=0.0)
# rank 5 on file c (the centre file of 5×5): every lineup holding it is stronger
CELL = {"".join(map(str, p)): 0.3 for p in itertools.permutations(range(1, 6)) if p[2] == 5}


def store(plan: sy.Plan) -> duckdb.DuckDBPyConnection:
    con, _ = sy.make_store(":memory:", plan)
    jobs.run(con, lambda fn: fn(con))
    return con


def collect(con) -> findings.Findings:
    return findings.collect(lambda sql: con.sql(sql).pl())


def planted(row: dict) -> bool:
    """The row is about an effect the plan planted (by its table row: its SQL)."""
    sql = row["sql"]
    return bool(
        "'surge'" in sql
        or "power:surge" in sql
        or "agg_first_move_rates" in sql
        or "'first_move'" in sql
        or re.search(r'"rank" = 5 AND "file" = 2', sql)
        or "centre_rank:5x5:5" in sql
    )


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


def test_planted_effects_are_found_and_ranked_first(planted_findings):
    t = planted_findings.table
    rows = t.to_dicts()
    # every planted effect is found, where its table tests it
    sqls = t["sql"].to_list()
    assert any("agg_adjusted" in s and "power:surge" in s for s in sqls)
    assert any("agg_power_rates" in s and "'surge'" in s for s in sqls)
    assert any("agg_first_move_rates" in s for s in sqls)
    assert any("agg_lineup_model_terms" in s and '"rank" = 5 AND "file" = 2' in s for s in sqls)
    # ... and is ahead of everything else: the first rows are all planted ones
    first_other = next((i for i, r in enumerate(rows) if not planted(r)), len(rows))
    assert first_other >= 6, [r["statement"] for r in rows[: first_other + 1]]
    # strongest evidence first: q never decreases down the list
    q = t["q_value"].to_list()
    assert q == sorted(q) and max(q) <= 0.05
    assert t["rank"].to_list() == list(range(1, t.height + 1))


def test_a_finding_says_its_size_interval_sample_test_chart_and_sql(planted_findings):
    t = planted_findings.table
    (surge,) = t.filter(t["sql"].str.contains("power:surge")).to_dicts()
    assert surge["lo"] < surge["effect"] < surge["hi"] and surge["lo"] > 0
    assert surge["n"] == 12_000 and surge["family"] == "power adjusted power"
    assert surge["chart"] == "powers#power-adjusted"
    assert surge["sql"] == "SELECT * FROM agg_adjusted WHERE \"term\" = 'power:surge'"
    line = surge["statement"]
    assert line.startswith(f"surge scores {surge['effect']:.3f} [{surge['lo']:.3f}, ")
    assert "above the average power" in line and "(n = 12,000)" in line
    (pick,) = t.filter(t["sql"].str.contains("agg_power_rates")).to_dicts()
    assert pick["statement"].startswith("sides picking surge scores ")
    assert "on 5×5" in pick["statement"] and pick["chart"] == "powers#power-pick-effect"
    # the summary counts the families, so the expected false findings can be read off
    fams = planted_findings.families
    assert planted_findings.tested == fams.height > 10
    assert f"of {fams.height} families tested" in planted_findings.summary()
    assert "5% false discovery rate" in planted_findings.summary()


def test_a_family_with_hundreds_of_flags_shows_its_strongest_and_counts_the_rest():
    con = duckdb.connect()
    con.execute(
        """CREATE TABLE agg_lineup_rates AS SELECT 5 AS board, 'classic' AS variant,
        i::VARCHAR AS lineup, 100 AS n, 0.7 AS score_rate, 0.6 AS wilson_lo, 0.8 AS wilson_hi,
        0.001 * i AS p_value, 0.001 * i AS q_value, i <= 30 AS flagged FROM range(1, 121) t(i)"""
    )
    f = collect(con)
    assert f.table.height == findings.PER_FAMILY
    assert f.table["q_value"].to_list() == pytest.approx([0.001 * i for i in range(1, 11)])
    (fam,) = f.families.to_dicts()
    assert (fam["tested"], fam["flagged"], fam["shown"]) == (120, 30, 10)
    assert "lineup 5×5 classic: 30 flagged" in f.summary()
    assert "agg_first_move_rates" in f.summary()  # not in the store: said, not silently left


@pytest.mark.slow
def test_null_data_flags_at_most_about_five_percent_of_families():
    families = with_flag = rows = 0
    for seed in range(5):
        con = store(sy.Plan(n=8_000, seed=seed, first_effect=0.0, ai_level_effects=IN_BAND))
        f = collect(con)
        con.close()
        families += f.tested
        with_flag += int((f.families["flagged"] > 0).sum())
        rows += f.table.height
        assert f.table.height <= 5, f.table["statement"].to_list()
    assert families >= 5 * 60
    assert with_flag <= 0.05 * families, (with_flag, families)
    assert rows <= 10
