"""From a chart definition to what a page shows: SQL text -> table -> (rates) -> Altair spec.

Each chart's data comes from one SQL string over agg_* tables; that string is what runs (on the
snapshot engine), what the chart's console link opens, and what its CSV download re-runs. When
the string yields additive counts, `post` adds rates, intervals, shrinkage and FDR flags with
`analysis.views.rates` (the CSV is the table after that step: exactly what is drawn).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import pyarrow as pa

from analysis.sql import sql_literal

from .console.sqlsafe import QueryError
from .filters import Filters

if TYPE_CHECKING:  # for the annotations only
    import polars as pl

    from .snapshot import Snapshots

CHART_ROW_LIMIT = 20_000
# What a chart may draw or show in its tooltip; wide tables (powers: ~60 columns) are cut to
# these so a page does not ship every column of the CSV to the browser.
DRAWN = frozenset(
    "label board board_label variant lineup lineup_source power opp_power power_a power_b rank "
    "file distance round day week client_version series reason turns status rule kind game "
    "platform challenge_id ai_level human_first made_stun made_catch n wins draws losses "
    "solves rate lo hi shrunk flagged q_value p_value tested_against synergy expected share "
    "uses games records quarantined promoted pieces "
    "panel difficulty mean_turns_to_solve draw_rate loss_rate "  # the Challenges page
    "band_lo band_hi off_target step step_lo step_hi order previous_level "  # AI calibration
    # the models' rows (agg_adjusted's powers, agg_lineup_model*): the panel, the effect
    "kind family end strength_rank estimate score_effect predicted set_apart "
    # Slide
    "players players_label seat_from_first seats shared_wins win_credit fair_share mean_score "
    "mean_cards_left value share win_share size groups groups_per_seat "
    "seats_with_groups take_order took takes lowest highest middle highest_share middle_share "
    "matches complete winner_total "
    # version comparison
    "family measure a_n b_n a_value b_value".split()
)


@dataclass
class Ctx:
    filters: Filters
    snapshots: Snapshots
    params: dict = field(default_factory=dict)
    _results: dict = field(default_factory=dict)

    def run(self, sql: str, limit: int = CHART_ROW_LIMIT, timeout: float = 10):
        """Run on the snapshot, once per request per SQL text (several charts share a query)."""
        key = (sql, limit)
        if key not in self._results:
            self._results[key] = self.snapshots.run(sql, limit=limit, timeout=timeout)
        return self._results[key]

    def columns(self, table: str) -> frozenset[str]:
        """Columns of a table in the current snapshot (empty when it does not exist)."""
        # by the snapshot's file: unique to its store and moment (its time is neither, and is
        # None before the first snapshot: another app of the process would read this one's)
        key = (self.snapshots.current().path, table)
        if key not in _COLUMN_CACHE:
            sql = (
                "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database()"
                f" AND table_name = {sql_literal(table)}"
            )
            try:
                result = self.snapshots.run(sql, limit=1000, timeout=5)
                cols = frozenset(result.table.column(0).to_pylist())
            except QueryError:
                cols = frozenset()
            if len(_COLUMN_CACHE) > 500:
                _COLUMN_CACHE.clear()
            _COLUMN_CACHE[key] = cols
        return _COLUMN_CACHE[key]

    def has(self, table: str) -> bool:
        return bool(self.columns(table))

    def where(self, table: str, date_column: str | None = "week", extra=None, override=None):
        """WHERE clause for `table`; records which filters it could not take."""
        clause, skipped = self.filters.where(self.columns(table), date_column, extra, override)
        self.params.setdefault("_skipped", set()).update(skipped)
        return clause


_COLUMN_CACHE: dict = {}


@dataclass
class Chart:
    id: str
    title: str
    table: str  # the agg_* table it reads (for "no data yet" and the filters it takes)
    sql: Callable[[Ctx], str]
    draw: Callable[[list[dict], Ctx], dict | None] | None = None
    post: Callable[[pl.DataFrame, Ctx], pl.DataFrame] | None = None
    note: str = ""
    table_rows: int = 0  # also show the first N rows as an HTML table
    draw_limit: int = 0  # draw only the first N rows (the table and CSV keep them all)
    wide: bool = False
    empty: str = ""  # what an empty table means, when it is not "nothing under the filters"
    # a line shown above the chart, made from its table (the table may be empty) and the request
    summary: Callable[[pl.DataFrame, Ctx], str] | None = None
    row_limit: int = 0  # rows its SQL may return (0: CHART_ROW_LIMIT); post steps that fit
    # a chart of another page that answers the same question another way: (page, chart id or
    # "", what it does differently), shown as a link under this one
    see: tuple[str, str, str] | None = None


@dataclass
class ChartView:
    chart: Chart
    sql: str = ""
    columns: list[str] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    spec: dict | None = None
    error: str | None = None
    skipped: list[str] = field(default_factory=list)
    truncated: bool = False
    n_rows: int = 0
    ms: float = 0.0
    summary: str = ""
    covers: str = ""  # the ruleset(s) its numbers cover, in words (catalog.covers)
    values: list[dict] = field(default_factory=list)  # the points drawn (the table toggle)
    value_columns: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.chart.id


def frame_of(table: pa.Table) -> pl.DataFrame:
    """Arrow -> Polars; DuckDB's sum() of integers is HUGEINT (Decimal in Arrow): back to ints.
    Unsigned integers (the store's UTINYINT board, turns, ...) become Int64 too: a difference
    of two of them would overflow (`w - first` on UINT8), in the charts' code and in the CSV
    an analyst loads."""
    import polars as pl  # here, as below: Polars loads with the first page, not at start

    unsigned = (pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64)
    if not (table.num_rows or table.num_columns):
        return pl.DataFrame()
    frame = pl.DataFrame(table)
    casts = [
        pl.col(name).cast(pl.Int64 if dtype.scale == 0 else pl.Float64)
        for name, dtype in frame.schema.items()
        if isinstance(dtype, pl.Decimal)
    ]
    casts += [
        pl.col(name).cast(pl.Int64)
        for name, dtype in frame.schema.items()
        if isinstance(dtype, unsigned) or dtype in unsigned
    ]
    return frame.with_columns(casts) if casts else frame


def jsonable_rows(frame: pl.DataFrame) -> list[dict]:
    """Rows for Vega: dates as ISO text, NaN as null, floats rounded for a lighter page."""
    import polars as pl

    out = frame
    exprs = []
    for name, dtype in frame.schema.items():
        if dtype.is_temporal():
            exprs.append(pl.col(name).cast(pl.String))
        elif dtype.is_float():
            exprs.append(pl.col(name).fill_nan(None).round(4))
        elif dtype == pl.Decimal or isinstance(dtype, pl.Decimal):
            exprs.append(pl.col(name).cast(pl.Float64).round(4))
        elif isinstance(dtype, pl.List | pl.Array | pl.Struct):
            exprs.append(pl.col(name).cast(pl.String, strict=False))
    if exprs:
        out = frame.with_columns(exprs)
    return out.to_dicts()


def table_of(chart: Chart, ctx: Ctx) -> tuple[str, pl.DataFrame, bool]:
    """Run the chart's SQL and post step: (sql, the table behind the chart, truncated)."""
    sql = chart.sql(ctx)
    result = ctx.run(sql, limit=chart.row_limit or CHART_ROW_LIMIT)
    frame = frame_of(result.table)
    if chart.post is not None and frame.height:
        frame = chart.post(frame, ctx)
    return sql, frame, result.truncated


def build(chart: Chart, ctx: Ctx) -> ChartView:
    import polars as pl

    view = ChartView(chart)
    start = time.perf_counter()
    ctx.params["_skipped"] = set()
    if not ctx.has(chart.table):
        view.error = (
            f"No data yet: the table {chart.table} is not in the snapshot "
            "(the analysis jobs write it: balance jobs run)."
        )
        return view
    try:
        view.sql, frame, view.truncated = table_of(chart, ctx)
    except QueryError as exc:
        view.error = f"The query failed: {exc.message}"
        return view
    view.skipped = sorted(ctx.params.get("_skipped", ()))
    if chart.summary is not None:
        view.summary = chart.summary(frame, ctx)
    view.columns = frame.columns
    view.n_rows = frame.height
    if chart.table_rows:
        view.rows = jsonable_rows(frame.head(chart.table_rows))
    if chart.draw is not None and frame.height:
        drawn = frame
        if "rate" in drawn.columns:  # rows without a rate (n = 0) stay in the table, not drawn
            rate = pl.col("rate")
            keep = (
                rate.is_not_null() & ~rate.is_nan()
                if drawn["rate"].dtype.is_float()
                else (rate.is_not_null())
            )
            drawn = drawn.filter(keep)
        if len(drawn.columns) > 14:
            drawn = drawn.select([c for c in drawn.columns if c in DRAWN])
        if chart.draw_limit:
            drawn = drawn.head(chart.draw_limit)
        if drawn.height:
            rows = jsonable_rows(drawn)
            # (a finding or a version difference is no set of games: its rows have a family)
            if (
                "rate" in drawn.columns
                and "family" not in drawn.columns
                and ctx.params.get("explorer")
            ):
                drill(rows, ctx)
            view.spec = chart.draw(rows, ctx)
            # what the tooltips show, readable without a mouse: the drawn rows' columns
            view.values = rows
            view.value_columns = [c for c in drawn.columns if not c.startswith("_")]
    view.ms = (time.perf_counter() - start) * 1000
    return view


# a row's columns the game explorer filters on, as it names them
DRILL = ("board", "variant", "ai_level", "platform", "client_version", "lineup", "power", "reason",
         "players", "rule", "status")  # fmt: skip
EXPLORER_KEYS = ("board", "variant", "mode", "ai_level", "platform", "players", "client_version",
                 "date_from", "date_to")  # fmt: skip


def drill(rows: list[dict], ctx: Ctx) -> None:
    """Each row of a rate chart gets `_href`: the game explorer on the page's cut and the row's
    own values (board, variant, lineup, power, level, version, week, ...), so a click on a
    point lists the games behind it. A column the explorer cannot filter on (a seat, a cell
    of the setup grid) leaves the link on the games around it."""
    base = {k: v for k, v in ctx.filters.values.items() if k in EXPLORER_KEYS}
    for r in rows:
        q = dict(base)
        for k in DRILL:
            v = r.get(k)
            if v is not None and not isinstance(v, float | bool):
                q[k] = str(v)
        if "ai_level" in q:
            q["mode"] = "computer"
        elif r.get("challenge_id") is not None:
            q["mode"] = "challenge"
        if "players" in q:
            q["game"] = "slide"
        week = r.get("week")
        if isinstance(week, str) and len(week) >= 10:
            start = date.fromisoformat(week[:10])
            q["date_from"] = start.isoformat()
            q["date_to"] = (start + timedelta(days=6)).isoformat()
        r["_href"] = ctx.params["explorer"] + "?" + urlencode(q)


def console_link(sql: str) -> str:
    return "/sql?" + urlencode({"q": sql})
