"""The Overview page: games and records per day, how games end, game length, first move."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from .. import charts
from ..render import Chart
from .base import OUT, Page, board_label, draw_rate, first_move_rates, sums


def _per_day(
    chart_id: str,
    title: str,
    table: str,
    by: list[str],
    count: str,
    color: str,
    label: Callable[[dict], str],
) -> Chart:
    """Bars of sum(`count`) per day, stacked by the `by` columns: a bar's `color` is its
    row's `label`."""
    return Chart(
        chart_id,
        title,
        table,
        lambda ctx: sums(ctx, table, ["day", *by], f"sum({count}) AS {count}", date="day"),
        draw=lambda rows, ctx: charts.bars(
            [dict(r, **{color: label(r)}) for r in rows],
            "day",
            count,
            color=color,
            x_type="T",
            width=640,
        ),
    )


games_daily = _per_day(
    "games-daily",
    "Verified games per day, by board and variant",
    "agg_games_daily",
    ["board", "variant"],
    "games",
    "board_variant",
    lambda r: f"{r['board']}×{r['board']} {r['variant']}",
)

records_status = _per_day(
    "records-status",
    "Records per day: verified and quarantined",
    "agg_ingest_status",
    ["game", "status"],
    "records",
    "kind",
    lambda r: f"{r['game']} {r['status']}",
)

end_reasons = Chart(
    "end-reasons",
    "How games end (draws apart)",
    "agg_end_reasons",
    lambda ctx: sums(
        ctx, "agg_end_reasons", ["board", "reason"], "sum(games) AS games, sum(draws) AS draws"
    ),
    post=lambda df, ctx: (
        pl.concat(
            [
                df.select(
                    "board",
                    pl.col("reason").cast(pl.String),
                    (pl.col("games") - pl.col("draws")).alias("games"),
                ),
                df.group_by("board").agg(
                    pl.lit("draw").alias("reason"), pl.col("draws").sum().alias("games")
                ),
            ],
            how="vertical_relaxed",
        )
        .filter(pl.col("games") > 0)
        .with_columns(share=pl.col("games") / pl.col("games").sum().over("board"))
        .with_columns(board=board_label(df))
        .sort("board", "reason")
    ),
    draw=lambda rows, ctx: charts.bars(
        rows, "reason", "share", color="reason", facet="board", width=260, y_title="share of games"
    ),
)

game_length = Chart(
    "game-length",
    "Game length in turns",
    "agg_game_length",
    lambda ctx: sums(ctx, "agg_game_length", ["board", "turns"], "sum(games) AS games"),
    post=lambda df, ctx: df.with_columns(board=board_label(df)),
    draw=lambda rows, ctx: charts.bars(
        rows, "turns", "games", x_type="O", facet="board", width=300
    ),
)


first_move = Chart(
    "first-move",
    "First-move advantage: score rate of the side that moved first",
    "agg_first_move",
    lambda ctx: sums(ctx, "agg_first_move", ["board", "variant"], OUT),
    post=first_move_rates,
    draw=draw_rate(),
    note="Tested against ½ (Benjamini-Hochberg over the rows shown).",
)

PAGE = Page(
    "Overview",
    [games_daily, end_reasons, game_length, first_move],
    "Verified Slow6 games only (quarantined records are counted apart and never enter a rate: "
    "the Data quality page shows them, records per day among them).",
)
