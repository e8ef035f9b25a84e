"""The Data quality page: quarantined records by rule, client version and platform, and the
rejected uploads by field (counted by the server, never stored: ingest/rejections.py)."""

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

PAGE = Page(
    "Data quality",
    [records_status, q_by_rule, q_share, q_platform, q_examples, q_rejected],
    coverage_table="",
    cut="records",
    cut_why="every stored record, of every mode and client version: quarantines come mostly "
    "from pre-releases and test builds, which the balance cut leaves out",
)
