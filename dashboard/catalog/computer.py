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


def _calibration(df: pl.DataFrame, ctx) -> pl.DataFrame:
    from analysis.ai_calibration import calibration

    out = calibration(df).rename({"score_rate": "rate", "wilson_lo": "lo", "wilson_hi": "hi"})
    return out.with_columns(
        label=pl.concat_str([pl.lit("level "), pl.col("ai_level").cast(pl.String)]),
        board_label=pl.concat_str(
            [board_label(out), pl.col("client_version").cast(pl.String)], separator=" "
        ),
    ).sort("board", "client_version", "ai_level")


calibration = Chart(
    "ai-calibration",
    "Are the levels calibrated? Human score against each level and its target band",
    "agg_vs_ai",
    lambda ctx: sums(
        ctx, "agg_vs_ai", ["board", "client_version", "ai_level"], OUT, override=COMPUTER
    ),
    post=_calibration,
    draw=draw_rate(
        "label", facet="board_label", width=300, reference=None, band=("band_lo", "band_hi")
    ),
    table_rows=24,
    note="Green: the level's target band (BALANCE_AI_TARGETS, default 1: 0.70-0.85, 2: "
    "0.55-0.70, 3: 0.40-0.55, 4: 0.25-0.40). off_target: below or above the band on the "
    "evidence (score test against the band's edge, BH at 5% per board and version). step: this "
    "level's score minus the next easier one's, with its interval; order: ordered (harder, "
    "significantly), reversed (easier: out of order) or unclear. Per board and client version.",
)

PAGE = Page(
    "Computer opponents",
    [calibration, vs_ai, vs_ai_first],
    coverage_override=COMPUTER,
    cut="computer",
    cut_why="computer games (a human against a computer level: the charts here read no other) "
    "on the live client version, {version}",
)
