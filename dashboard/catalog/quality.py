"""The Data quality page: quarantined records by rule, client version and platform, and the
rejected uploads by field (counted by the server, never stored: ingest/server/rejections.py)."""

from __future__ import annotations

import polars as pl

from .. import charts
from ..render import Chart, Ctx
from .base import Page, draw_rate, proportion, sums
from .overview import records_status

q_by_rule = Chart(
    "quarantine-rules",
    "Quarantined records by rule and client version",
    "agg_ingest_status",
    lambda ctx: sums(
        ctx,
        "agg_ingest_status",
        ["game", "rule", "client_version"],
        "sum(records) AS records",
        date="day",
        extra=["status = 'quarantined'"],
        order="records DESC",
    ),
    draw=lambda rows, ctx: charts.bars(rows, "rule", "records", color="client_version", width=560),
)


def _q_share(df, ctx):
    out = proportion(df, "quarantined", "records")
    return (
        out.rename({"records": "n"})
        .with_columns(
            label=pl.concat_str([pl.col("game"), pl.col("client_version")], separator=" ")
        )
        .select("label", *[c for c in out.columns if c != "records"], "n")
        .sort("lo", descending=True)
    )


q_share = Chart(
    "quarantine-share",
    "Share of records quarantined, per game and client version",
    "agg_ingest_status",
    # per game: each share's records (below the line) are that game's verified and quarantined
    # ones, the same records its quarantined count (above the line) comes from
    lambda ctx: sums(
        ctx,
        "agg_ingest_status",
        ["game", "client_version"],
        "sum(records) AS records, "
        "sum(records) FILTER (WHERE status = 'quarantined') AS quarantined",
        date="day",
    ),
    post=lambda df, ctx: _q_share(df.with_columns(pl.col("quarantined").fill_null(0)), ctx),
    draw=draw_rate(reference=None, domain=None, x_title="quarantined share, 95% interval"),
    note="Records of a game and client version that broke a rule, over all its stored records "
    "(verified and quarantined; rejected uploads are never stored).",
)


q_platform = Chart(
    "quarantine-platform",
    "Quarantined records by rule and platform",
    "agg_ingest_status",
    lambda ctx: sums(
        ctx,
        "agg_ingest_status",
        ["rule", "platform"],
        "sum(records) AS records",
        date="day",
        extra=["status = 'quarantined'"],
    ),
    draw=lambda rows, ctx: charts.heatmap(
        rows,
        "platform",
        "rule",
        value="records",
        domain=None,
        scheme="oranges",
        text="records",
        n_field="records",
        min_n=0,
    ),
)


def examples_sql(ctx: Ctx) -> str:
    where = ctx.where("quarantine", "ended_at")
    return (
        "SELECT rule, game_id, game, client_version, platform, turn, message, ended_at\n"
        f"FROM quarantine\n{where + chr(10) if where else ''}"
        "QUALIFY row_number() OVER (PARTITION BY rule ORDER BY received_at DESC) <= 3\n"
        "ORDER BY rule, received_at DESC"
    )


q_examples = Chart(
    "quarantine-examples",
    "Examples: the latest three quarantined records of each rule",
    "quarantine",
    examples_sql,
    table_rows=60,
    note="Each game id opens the game in the viewer, at the turn (or round) that broke the rule.",
)

q_rejected = Chart(
    "rejected-fields",
    "Rejected uploads by field and problem",
    "rejections",
    lambda ctx: sums(
        ctx,
        "rejections",
        ["field", "problem"],
        "sum(records) AS records",
        date="day",
        order="records DESC",
    ),
    draw=lambda rows, ctx: charts.bars(rows, "field", "records", color="problem", width=560),
    table_rows=20,
    note="Records the upload endpoint answered `rejected` (not the upload format: the client "
    "must fix them). None of them is stored; the server counts them per day, field and kind of "
    "problem, and the counts reach this page within about a minute.",
    empty="No upload was rejected (under these dates).",
)

# -- clock skew: verified games whose ended_at (the client's clock) is far from their receipt --


def skew_sql(ctx: Ctx) -> str:
    """Per game and client version: verified games, and those whose client clock was more than
    a day ahead of the server's at receipt, more than a year behind it, or outside 1970-9999."""
    branches = []
    for game, table in (("slow6", "games"), ("slide", "slide_games")):
        # every mode: a clock is the client's whatever was played (the page's default cut is
        # human games); the dates filter the receipt
        where, skipped = ctx.filters.where(frozenset(ctx.columns(table)) - {"mode"}, "received_at")
        ctx.params.setdefault("_skipped", set()).update(skipped)
        branches.append(
            f"SELECT '{game}' AS game, client_version, ended_at, received_at FROM {table}"
            + (f" {where}" if where else "")
        )
    union = "\n  UNION ALL\n  ".join(branches)
    return f"""WITH g AS (
  {union}
), counted AS (
  SELECT game, client_version, count(*) AS games,
    count(*) FILTER (WHERE ended_at > received_at + INTERVAL 1 DAY) AS ahead_over_a_day,
    count(*) FILTER (WHERE ended_at < received_at - INTERVAL 365 DAY) AS behind_over_a_year,
    count(*) FILTER (WHERE ended_at < TIMESTAMP '1970-01-01'
                        OR ended_at >= TIMESTAMP '9999-01-01') AS outside_1970_9999
  FROM g GROUP BY ALL
)
SELECT * FROM counted WHERE ahead_over_a_day + behind_over_a_year > 0
ORDER BY ahead_over_a_day + behind_over_a_year DESC, game, client_version"""


def _skew_summary(df: pl.DataFrame, ctx: Ctx) -> str:
    if not df.height:
        return "No verified game has a clock-skewed end time (under these filters)."
    ahead, behind = int(df["ahead_over_a_day"].sum()), int(df["behind_over_a_year"].sum())
    outside = int(df["outside_1970_9999"].sum())
    return (
        f"{ahead + behind:,} verified games have a clock-skewed end time: {ahead:,} more than a "
        f"day ahead of their receipt, {behind:,} more than a year behind it ({outside:,} of "
        "them outside 1970-9999)."
    )


q_skew = Chart(
    "clock-skew",
    "Verified games with a clock-skewed end time, per client version",
    "games",
    skew_sql,
    table_rows=30,
    summary=_skew_summary,
    note="`ended_at` is the client's clock, `received_at` the server's. Every verified game is "
    "kept and exported whatever its clock said (balance export); the pages bucket games by "
    "`ended_at`, so these games count in the week their client claimed. Here the dates "
    "filter the receipt, and every mode is counted.",
)

PAGE = Page(
    "Data quality",
    [records_status, q_by_rule, q_share, q_platform, q_examples, q_rejected, q_skew],
    coverage_table="",
    cut="records",
    cut_why="every stored record, of every mode, client version and ruleset: quarantines come "
    "mostly from pre-releases and test builds (and RS5.1 from rulesets not registered yet), "
    "which the balance cut leaves out",
)
