"""The Setups page: lineups, rank by file, lane distance, lineup against lineup."""

from __future__ import annotations

import polars as pl

from .. import charts
from ..render import Chart, Ctx
from .base import OUT, Page, draw_rate, label_expr, proportion, scored, sums

DEFAULT_CUT_NOTE = (
    "Computed by the jobs for the default balance cut; the page's filters do not apply."
)
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
    note=DEFAULT_CUT_NOTE,
    empty=f"No pair of lineups has met {MIN_N_VS} times yet in the default balance cut: the "
    f"jobs keep only pairs with at least {MIN_N_VS} games (a pair of 5×5 lineups is one of "
    "14,400). The page's filters do not change this table.",
)

MODEL_SHOWN = 10  # strongest and weakest lineups drawn per board and variant


def _family_label() -> pl.Expr:
    b = pl.col("board").cast(pl.String)
    return pl.concat_str([b, pl.lit("×"), b, pl.lit(" "), pl.col("variant")])


# the ends of each board and variant's ranking among the lineups played (agg_lineup_model
# holds every lineup; one never played has no games of its own to be "strongest" on)
MODEL_SQL = f"""WITH played AS (
  SELECT *,
    row_number() OVER (PARTITION BY board, variant ORDER BY rate DESC, lineup) AS from_top,
    row_number() OVER (PARTITION BY board, variant ORDER BY rate, lineup) AS from_bottom
  FROM agg_lineup_model WHERE n > 0
)
SELECT * EXCLUDE (from_bottom) FROM played
WHERE from_top <= {MODEL_SHOWN} OR from_bottom <= {MODEL_SHOWN}
ORDER BY board, variant, from_top"""


def _model_lineups(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    out = df.rename({"rate_lo": "lo", "rate_hi": "hi"})
    out = out.with_columns(
        family=_family_label(),
        end=pl.when(pl.col("from_top") <= MODEL_SHOWN)
        .then(pl.lit("highest"))
        .otherwise(pl.lit("lowest")),
    )
    out = out.with_columns(label=pl.concat_str([pl.col("lineup"), pl.lit(" ("), pl.col("end"),
                                                pl.lit(")")]))  # fmt: skip
    return (
        out.select("label", *[c for c in out.columns if c != "label"])
        .sort("board", "variant", "from_top")
        .drop("from_top")
    )


model_lineups = Chart(
    "lineup-model",
    f"Lineup strength from the model (its cells plus its own effect): the {MODEL_SHOWN} "
    "highest and lowest lineups played of each board and variant",
    "agg_lineup_model",
    lambda ctx: MODEL_SQL,
    post=_model_lineups,
    draw=draw_rate(
        "label",
        facet="family",
        domain=None,
        width=300,
        x_title="score rate against the field: cells + own effect, 95% interval",
    ),  # fmt: skip
    note="rate: what the lineup's ranks' places project (predicted: the heat map below, fitted "
    "on all the games of its board and variant) plus the lineup's own effect beyond its cells "
    "(own_effect, a random effect read from its sides in every variant of its board, one a "
    "board, with a two-group prior: a lineup "
    "its games set apart keeps its own strength, set_apart is how sure the model is of that; "
    "one with few games stays near its cells, its interval saying how little it knows). Only "
    "lineups with games are ranked. The Findings page tests each lineup's own score against "
    "its projection. " + DEFAULT_CUT_NOTE + " " + HIDDEN_NOTE,
)


def _model_cells(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    return df.with_columns(
        label=_family_label(),
        file=pl.col("file").map_elements(lambda f: "abcdefg"[f], pl.String),
    )


model_cells = Chart(
    "lineup-model-cells",
    "Rank × file effects of the lineup model (score of an even game, against the average)",
    "agg_lineup_model_terms",
    lambda ctx: "SELECT * FROM agg_lineup_model_terms\nORDER BY board, variant, rank, file",
    post=_model_cells,
    draw=lambda rows, ctx: charts.heatmap(
        rows,
        "file",
        "rank",
        value="score_effect",
        facet="label",
        domain=(-0.08, 0.08),
        text=None,
    ),  # fmt: skip
    note="Each lineup holds every rank once and fills every file once, so only where a rank "
    "stands can matter: a cell is rank r on file f against rank r on an average file and file f "
    "holding an average rank (rows and columns sum to zero; a strong cell puts the rest of its "
    "row and column slightly below). expit(log-odds) − ½; red ring: flagged by BH at 5% across "
    "the cells of a board and variant; interval in the tooltip. " + DEFAULT_CUT_NOTE,
)

PAGE = Page("Setups", [lineups, model_lineups, model_cells, setup_cells, lane_distance, lineup_vs])
