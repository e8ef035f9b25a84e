"""The Findings page: what a designer can act on, strongest evidence first
(analysis.findings, the same rows as `balance report`).

One query over the rate and model tables decides every finding in the store (analysis.decisions:
an always-valid interval wholly beyond its kind's minimum effect, under one error budget for
the whole report); analysis.findings turns it into the list, the families with what each could
have seen, and the descriptive section (outcomes of play, recording conventions: never
findings). The tables are on the default balance cut: the page's filters do not apply to them.
Each finding links to the chart it comes from, to its games and to its row's SQL.
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
        ctx.params["findings"] = fi.from_rows(df, fi.missing_tables(ctx.columns))
    return ctx.params["findings"]


def _summary(df: pl.DataFrame, ctx: Ctx) -> str:
    return _collected(df, ctx).summary()


def _effects(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    t = _collected(df, ctx).table
    label = pl.concat_str(
        pl.col("rank").cast(pl.String), pl.lit(". "), "item", pl.lit(" ("), "family", pl.lit(")")
    )
    return t.select(
        label.alias("label"), "family", "n", "since",
        rate="effect", lo="lo", hi="hi", flagged=pl.lit(True),
    )  # fmt: skip


def _described(t: pl.DataFrame) -> pl.DataFrame:
    """The descriptive rows, drawn as the rate charts are (rate, lo, hi; never flagged)."""
    if not t.height:
        return t
    return t.with_columns(rate=pl.col("value"), flagged=pl.lit(False))


NOTHING = (
    "No finding: no effect's interval lies wholly beyond the minimum that matters for its "
    "kind. Read the families below for what each could have seen: 'too few games to tell' is "
    "not 'fine'."
)

effects = Chart(
    "findings-effects",
    "The findings' effects with their always-valid intervals (the first 40)",
    "agg_runs",
    _sql,
    post=_effects,
    draw=draw_rate("label", reference=0.0, domain=None, x_title="effect, always-valid interval"),
    draw_limit=40,
    empty=NOTHING,
)

listing = Chart(
    "findings",
    "Findings, strongest evidence first",
    "agg_runs",
    _sql,
    post=lambda df, ctx: _collected(df, ctx).table,
    summary=_summary,
    table_rows=200,
    note="effect, lo, hi: the size on the score scale (or solve / win rate) with its "
    "always-valid interval, against what the finding names; beyond: how far the effect "
    "clears its kind's minimum (minimum); n: the games (sides, attempts) that inform it; "
    "since: new this week, or persisting since the run that first flagged it. Sorted by "
    "z_beyond, the standard errors by which the estimate clears the minimum. alpha: the "
    "row's share of the report's error budget. chart: the dashboard chart the row comes "
    "from; games: those games in the explorer; sql: the row of its table in the SQL console.",
    empty=NOTHING,
    see=(
        "boards",
        "",
        "The Boards page draws the first-move, length and end-reason rates of "
        "any cut, each row tested alone (against ½ or its board's pooled rate)",
    ),  # fmt: skip
)

WATCH_EMPTY = (
    "Nothing to watch: no other effect is clear of zero with its estimate beyond the minimum."
)

watch = Chart(
    "findings-watch",
    "Watch: not yet findings (clear of zero, the estimate beyond the minimum)",
    "agg_runs",
    _sql,
    post=lambda df, ctx: _collected(df, ctx).watch,
    table_rows=200,
    note="A row here has its always-valid interval (the same share of the report's error "
    "budget as a finding) clear of zero and its estimate beyond its kind's minimum, but its "
    "interval is not yet wholly beyond the minimum: worth watching, not yet worth acting on. "
    "On data with no effect the findings and this list together show on average at most 0.1 "
    "false entries a report. to_confirm / confirm: how many more games (sides, attempts) "
    "would put its interval wholly beyond the minimum with 80% power if the effect is what it "
    "is estimated now. Sorted by z_zero, the standard errors by which it clears zero.",
    empty=WATCH_EMPTY,
)

families = Chart(
    "findings-families",
    "What each family could have seen",
    "agg_runs",
    _sql,
    post=lambda df, ctx: _collected(df, ctx).families,
    table_rows=500,
    note="rows: the questions the family asks (every lineup, cell, power ...); tested: those "
    "with games; flagged: findings; shown: how many the list above shows (the strongest ten "
    "of a family); watched: on the watch list; minimum: the kind's minimum effect that "
    "matters (BALANCE_MIN_EFFECTS); "
    "detectable_typical / _best: the effect its typical / best-informed row would find with "
    "80% power now; verdict: 'too few games to tell' where even the best-informed row could "
    "not see four times the minimum.",
)

descriptive = Chart(
    "findings-descriptive",
    "Descriptive: outcomes of play and recording conventions (never findings)",
    "agg_runs",
    _sql,
    post=lambda df, ctx: _described(_collected(df, ctx).descriptive),
    draw=draw_rate(
        "statement", reference_field="reference", domain=None, x_title="value, Wilson 95% interval"
    ),
    table_rows=100,
    note="value with its Wilson 95% interval against reference: what happened in games "
    "(sides that stunned a crown score higher because stunning is part of winning) and how "
    "clients record them (side 0). They describe play; they are not levers a designer sets.",
)

PAGE = Page(
    "Findings",
    [listing, effects, watch, families, descriptive],
    intro="What a designer can act on, for Monday morning: the few effects that clear the "
    "minimum that matters, strongest evidence first, each with its size, interval, games, "
    "how long it has persisted, the chart it comes from, its games and the SQL behind it; "
    "then the watch list, effects clear of zero but not yet of the minimum, with the games "
    "that would confirm them. On data with no effect the whole page shows on average at "
    "most 0.1 false entries, however many weeks it is read (docs/agg-tables.md, Findings). "
    "The tables are computed on the default balance cut (computer levels: every client "
    "version), so the filters below do not change this page. `balance report` writes the "
    "same list as one HTML file.",
    coverage_table="",
    selects=(),
    version_select=False,
    dates=False,  # the tables are the default cut's: a date would change nothing here
)
