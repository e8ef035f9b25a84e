"""The Computer opponents page: human score rate against each level."""

from __future__ import annotations

import polars as pl

from ..render import Chart
from .base import OUT, Page, board_label, draw_rate, scored, sums

# the charts are about computer games whatever the mode filter says (the trends page too)
COMPUTER = {"mode": "computer"}

vs_ai = Chart(
    "vs-ai",
    "Human score rate against each computer level",
    "agg_vs_ai",
    lambda ctx: sums(ctx, "agg_vs_ai", ["board", "ai_level"], OUT, override=COMPUTER),
    post=lambda df, ctx: (
        scored(df, ["board", "ai_level"], ["board"], sort="board")
        .with_columns(
            label=pl.concat_str([pl.lit("level "), pl.col("ai_level").cast(pl.String)]),
            board_label=board_label(df),
        )
        .sort("board", "ai_level")
    ),
    draw=draw_rate(facet="board_label", width=300),
    note="Computer games only, whatever the mode filter says. Level 1 careful .. 4 hard.",
)

vs_ai_first = Chart(
    "vs-ai-first",
    "Human score rate by level and who moved first",
    "agg_vs_ai",
    lambda ctx: sums(
        ctx, "agg_vs_ai", ["board", "ai_level", "human_first"], OUT, override=COMPUTER
    ),
    post=lambda df, ctx: (
        scored(df, ["board", "ai_level", "human_first"], ["board"])
        .with_columns(
            label=pl.concat_str(
                [
                    pl.lit("level "),
                    pl.col("ai_level").cast(pl.String),
                    pl.when(pl.col("human_first"))
                    .then(pl.lit(", human first"))
                    .otherwise(pl.lit(", computer first")),
                ]
            ),
            board_label=board_label(df),
        )
        .sort("board", "ai_level", "human_first")
    ),
    draw=draw_rate(facet="board_label", width=300),
)

PAGE = Page("Computer opponents", [vs_ai, vs_ai_first], coverage_override=COMPUTER)
