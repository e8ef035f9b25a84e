"""The Trends page: first-move, power and computer-level rates by week and client version."""

from __future__ import annotations

import polars as pl

from .. import charts
from ..render import Chart
from .base import OUT, Page, analysis_views, board_label, label_expr, scored, sums
from .computer import COMPUTER
from .powers import POWER_SUMS


def _trend(df, ctx, key):
    out = analysis_views().first_move_rates(df, by=("board", "variant", key))
    out = out.rename({"score_rate": "rate", "wilson_lo": "lo", "wilson_hi": "hi"})
    return out.with_columns(series=label_expr(out, ["board", "variant"])).sort(key)


trend_week = Chart(
    "trend-first-week",
    "First-move score rate by week",
    "agg_first_move",
    lambda ctx: sums(ctx, "agg_first_move", ["board", "variant", "week"], OUT),
    post=lambda df, ctx: _trend(df, ctx, "week"),
    draw=lambda rows, ctx: charts.trend(
        rows, "week", facet="series", width=300, height=150, columns=3
    ),
)

trend_version = Chart(
    "trend-first-version",
    "First-move score rate by client version",
    "agg_first_move",
    lambda ctx: sums(ctx, "agg_first_move", ["board", "variant", "client_version"], OUT),
    post=lambda df, ctx: _trend(df, ctx, "client_version").sort(
        pl.col("client_version").map_elements(_version_rank, pl.Int64)
    ),
    draw=lambda rows, ctx: charts.trend(
        rows, "client_version", x_type="O", facet="series", width=300, height=150, columns=3
    ),
)


def _power_trend(df, ctx):
    out = analysis_views().power_rates(
        df.with_columns(pl.col("power").cast(pl.String)),
        by=("board", "power", "week"),
        family=("board", "week"),
    )
    out = out.rename(
        {"picked_score_rate": "rate", "picked_wilson_lo": "lo", "picked_wilson_hi": "hi"}
    ).with_columns(n=pl.col("picked_n"))
    return out.with_columns(board_label=board_label(out)).sort("week")


trend_power = Chart(
    "trend-power-week",
    "Score rate of sides that picked each power, by week",
    "agg_power",
    lambda ctx: sums(ctx, "agg_power", ["board", "power", "week"], POWER_SUMS),
    post=_power_trend,
    draw=lambda rows, ctx: charts.trend(
        rows, "week", color="board_label", facet="power", width=300, height=150, columns=3
    ),
)

trend_ai = Chart(
    "trend-ai-version",
    "Human score rate against the computer, by client version and level",
    "agg_vs_ai",
    lambda ctx: sums(
        ctx, "agg_vs_ai", ["board", "ai_level", "client_version"], OUT, override=COMPUTER
    ),
    post=lambda df, ctx: (
        scored(df, ["board", "ai_level", "client_version"], ["board"])
        .with_columns(
            series=pl.concat_str(
                [board_label(df), pl.lit(" level "), pl.col("ai_level").cast(pl.String)]
            )
        )
        .sort(pl.col("client_version").map_elements(_version_rank, pl.Int64))
    ),
    draw=lambda rows, ctx: charts.trend(
        rows, "client_version", x_type="O", facet="series", width=300, height=150, columns=4
    ),
)

_VERSION_ORDER: dict[str, int] = {}


def _version_rank(v: str) -> int:
    if v not in _VERSION_ORDER:
        from analysis.cuts import version_key

        ordered = sorted({*_VERSION_ORDER, v}, key=version_key)
        _VERSION_ORDER.clear()
        _VERSION_ORDER.update({x: i for i, x in enumerate(ordered)})
    return _VERSION_ORDER[v]


PAGE = Page(
    "Trends",
    [trend_week, trend_version, trend_power, trend_ai],
    cut="human",
    cut_why="human against human (online + friend) on every client version: a trend compares "
    "weeks and versions, so none is left out",
)
