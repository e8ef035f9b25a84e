"""The Setups page: lineups, rank by file, lane distance, lineup against lineup."""

from __future__ import annotations

import polars as pl

from .. import charts
from ..render import Chart, Ctx
from .base import OUT, Page, draw_rate, label_expr, proportion, scored, sums

MIN_N_VS = 30  # analysis.setups.MIN_N_VS (not imported: it loads scipy; a test holds them equal)
HIDDEN_NOTE = (
    "Hidden-variant lineups are chosen by the players, not dealt: their rates describe choices, "
    "not causes (lineup_source = chosen)."
)

lineups = Chart(
    "lineups",
    "Lineups: score rate of the side that played each lineup (top 40 by lower bound)",
    "agg_lineup",
    lambda ctx: sums(ctx, "agg_lineup", ["board", "variant", "lineup_source", "lineup"], OUT),
    post=lambda df, ctx: scored(
        df,
        ["board", "variant", "lineup_source", "lineup"],
        ["board", "variant"],
        label=["board", "variant", "lineup"],
    ),
    draw=draw_rate(),
    draw_limit=40,
    table_rows=60,
    note="Each game counts once for each side. Sorted by the Wilson lower bound; 'shrunk' is the "
    "empirical-Bayes estimate (a lineup seen 9 times cannot top it). " + HIDDEN_NOTE,
)

setup_cells = Chart(
    "setup-cells",
    "Rank × file: score rate of a side with rank r on file f",
    "agg_setup_cell",
    lambda ctx: sums(ctx, "agg_setup_cell", ["board", "variant", "rank", "file"], OUT),
    post=lambda df, ctx: scored(
        df, ["board", "variant", "rank", "file"], ["board", "variant"], label=["board", "variant"]
    ).with_columns(file=pl.col("file").map_elements(lambda f: "abcdefg"[f], pl.String)),
    draw=lambda rows, ctx: charts.heatmap(rows, "file", "rank", facet="label", domain=(0.4, 0.6)),
    note="Faded cells: fewer than 30 games; red ring: flagged by BH at 5%. " + HIDDEN_NOTE,
)


def _lane(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    df = proportion(df, "promoted", "pieces")
    df = df.rename({"pieces": "n"}).with_columns(label_expr(df, ["board"]).alias("board_label"))
    return df.with_columns(
        label=pl.concat_str(
            [
                pl.col("board_label"),
                pl.lit(" rank "),
                pl.col("rank").cast(pl.String),
                pl.lit(" distance "),
                pl.col("distance").cast(pl.String),
            ]
        )
    ).sort("board", "rank", "distance")


lane_distance = Chart(
    "lane-distance",
    "Promotion rate by lane distance (files between a piece and its promotion lane)",
    "agg_lane_distance",
    lambda ctx: sums(
        ctx,
        "agg_lane_distance",
        ["board", "rank", "distance"],
        "sum(pieces) AS pieces, sum(promoted) AS promoted, sum(home_wins) AS home_wins",
    ),
    post=_lane,
    draw=lambda rows, ctx: charts.heatmap(
        rows, "distance", "rank", value="rate", facet="board_label", domain=None, scheme="blues"
    ),
    note="rate = pieces promoted / pieces (Wilson interval in the tooltip).",
)

lineup_vs = Chart(
    "lineup-vs",
    f"Lineup against lineup (default cut only, pairs with at least {MIN_N_VS} games)",
    "agg_lineup_vs",
    lambda ctx: "SELECT * FROM agg_lineup_vs\nORDER BY wilson_lo DESC\nLIMIT 500",
    table_rows=30,
    note="Computed by the jobs for the default balance cut; the page's filters do not apply.",
    empty=f"No pair of lineups has met {MIN_N_VS} times yet in the default balance cut: the "
    f"jobs keep only pairs with at least {MIN_N_VS} games (a pair of 5×5 lineups is one of "
    "14,400). The page's filters do not change this table.",
)

PAGE = Page("Setups", [lineups, setup_cells, lane_distance, lineup_vs])
