"""The Boards page: 5×5 and 7×7 side by side (promotion, first move, length, crown stuns)."""

from __future__ import annotations

import polars as pl

from analysis.tables import PIECE_COUNTS

from .. import charts
from ..render import Chart, Ctx
from . import summaries
from .base import OUT, Page, analysis_views, board_label, draw_rate, first_move_rates, scored, sums


def _pieces(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    out = analysis_views().piece_rates(df, by=("board", "rank"))
    out = out.rename(
        {
            "promotion_rate": "rate",
            "promotion_rate_lo": "lo",
            "promotion_rate_hi": "hi",
            "pieces": "n",
        }
    )
    return out.with_columns(
        board_label=board_label(out),
        label=pl.concat_str([pl.lit("rank "), pl.col("rank").cast(pl.String)]),
    )


PIECE_SUMS = ", ".join(f"sum({c}) AS {c}" for c in PIECE_COUNTS)

promotion = Chart(
    "board-promotion",
    "Promotion rate per rank",
    "agg_pieces",
    lambda ctx: sums(ctx, "agg_pieces", ["board", "rank"], PIECE_SUMS),
    post=_pieces,
    draw=draw_rate(
        facet="board_label",
        reference=None,
        x_title="promoted, 95% interval",
        width=300,
    ),
)


def _first_move_by_board(df, ctx):
    out = first_move_rates(df, ctx)
    return out.with_columns(board_label=board_label(out), label=pl.col("variant"))


first_move_boards = Chart(
    "board-first-move",
    "First-move score rate by variant",
    "agg_first_move",
    lambda ctx: sums(ctx, "agg_first_move", ["board", "variant"], OUT),
    post=_first_move_by_board,
    draw=draw_rate(facet="board_label", width=300),
    see=(
        "findings",
        "",
        "The Findings page tests the same rates on the default cut, flagged at "
        "5% FDR among every family of tests rather than against ½ alone",
    ),  # fmt: skip
)

length_boards = Chart(
    "board-length",
    "Game length in turns",
    "agg_game_length",
    lambda ctx: sums(
        ctx,
        "agg_game_length",
        ["board", "reason", "turns"],
        "sum(games) AS games",
        order="board, turns, reason",  # the x axis is ordinal: its order is the rows' order
    ),
    post=lambda df, ctx: df.with_columns(pl.col("reason").cast(pl.String), board=board_label(df)),
    draw=lambda rows, ctx: charts.bars(
        rows, "turns", "games", color="reason", x_type="O", facet="board", width=330
    ),
)


def _events(df, ctx):
    out = scored(df, ["board", "made_stun", "made_catch"], ["board"], p0="family")
    return out.with_columns(
        board_label=board_label(out),
        label=pl.concat_str(
            [
                pl.when(pl.col("made_stun"))
                .then(pl.lit("stunned a crown"))
                .otherwise(pl.lit("no stun")),
                pl.when(pl.col("made_catch")).then(pl.lit(", caught one")).otherwise(pl.lit("")),
            ]
        ),
    )


stuns = Chart(
    "board-stuns",
    "Score of sides that stunned / caught a crown",
    "agg_side_events",
    lambda ctx: sums(
        ctx,
        "agg_side_events",
        ["board", "made_stun", "made_catch"],
        OUT + ", sum(stuns) AS stuns, sum(catches) AS catches",
    ),
    post=_events,
    draw=draw_rate(facet="board_label", width=300),
    note="Tested against the board's pooled rate.",
)

PAGE = Page(
    "Boards: 5×5 and 7×7",
    [
        summaries.length_summary,
        summaries.reasons_summary,
        summaries.first_move_pooled,
        first_move_boards,
        summaries.hidden_vs_open,
        length_boards,
        promotion,
        stuns,
    ],
)
