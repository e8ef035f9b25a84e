"""The Findings page: every row the balance tables flag, strongest evidence first
(analysis.findings, the same rows as `balance report`).

One query over the rate and model tables (each row: its effect with its interval, n, test,
p and q, and its family's size) is the chart's SQL; analysis.findings turns it into the list
and the families tested. The tables are on the default balance cut: the page's filters do not
apply to them. Each finding links to the chart it comes from and to its row's SQL.
"""

from __future__ import annotations

import polars as pl

from ..render import Chart, Ctx
from .base import Page, draw_rate


def analysis_findings():
    from analysis import findings

    return findings


def _sql(ctx: Ctx) -> str:
    return analysis_findings().sql(ctx.columns)


def _collected(df: pl.DataFrame, ctx: Ctx):
    if "findings" not in ctx.params:
        fi = analysis_findings()
        missing = sorted({s.table for s in fi.SOURCES if not fi.available(s, ctx.columns(s.table))})
        ctx.params["findings"] = fi.from_rows(df, missing)
    return ctx.params["findings"]


def _summary(df: pl.DataFrame, ctx: Ctx) -> str:
    return _collected(df, ctx).summary()


def _effects(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    t = _collected(df, ctx).table
    label = pl.concat_str(
        pl.col("rank").cast(pl.String), pl.lit(". "), "item", pl.lit(" ("), "family", pl.lit(")")
    )
    return t.select(
        label.alias("label"), "family", "n", "p_value", "q_value",
        rate="effect", lo="lo", hi="hi", flagged=pl.lit(True),
    )  # fmt: skip


effects = Chart(
    "findings-effects",
    "The findings' effects with their 95% intervals (the first 40)",
    "agg_runs",
    _sql,
    post=_effects,
    draw=draw_rate("label", reference=0.0, domain=None, x_title="effect, 95% interval"),
    draw_limit=40,
    empty="Nothing flagged: no row of any balance table passes its family's 5% false "
    "discovery rate.",
)

listing = Chart(
    "findings",
    "What the tables flag, strongest evidence first",
    "agg_runs",
    _sql,
    post=lambda df, ctx: _collected(df, ctx).table,
    summary=_summary,
    table_rows=200,
    note="effect, lo, hi: the size on the score scale (or solve / win rate), with its 95% "
    "interval, against what the finding names; n: the games (sides, attempts) behind it; "
    "p_value, q_value: the test named and its Benjamini–Hochberg q-value within the family "
    "(flagged: q ≤ 0.05). Sorted by q-value, then by the size of the effect. chart: the "
    "dashboard chart the row comes from; sql: the row of its table in the SQL console.",
    empty="Nothing flagged: no row of any balance table passes its family's 5% false "
    "discovery rate.",
    see=(
        "boards",
        "",
        "The Boards page draws the first-move, length and end-reason rates of "
        "any cut, each row tested alone (against ½ or its board's pooled rate)",
    ),  # fmt: skip
)

families = Chart(
    "findings-families",
    "Families tested (Benjamini–Hochberg runs within each)",
    "agg_runs",
    _sql,
    post=lambda df, ctx: _collected(df, ctx).families,
    table_rows=500,
    note="tested: rows with a test in the family; flagged: rows at q ≤ 0.05; shown: how many "
    "of them the list above shows (the strongest ten of a family).",
)

PAGE = Page(
    "Findings",
    [effects, listing, families],
    intro="What the balance tables flag, for Monday morning: each finding with its size, "
    "interval, sample, test and q-value, the chart it comes from and the SQL behind it. "
    "The tables are computed on the default balance cut (computer levels: every client "
    "version), so the filters below do not change this page. `balance report` writes the "
    "same list as one HTML file.",
    coverage_table="",
    selects=(),
    version_select=False,
    dates=False,  # the tables are the default cut's: a date would change nothing here
)
