"""Setups: lineups, (rank, file) cells, lane distance, lineup against lineup."""

from __future__ import annotations

import polars as pl

from . import views
from .cuts import Cut
from .frames import LIGHT_DIMS, Base, outcome, with_score

LINEUP_KEY = ("board", "variant", "mode", "client_version", "lineup")
# lineup-against-lineup rows need at least this many games to be shown (and tested)
MIN_N_VS = 30
SOURCE = pl.Enum(["chosen", "dealt"])


def source(variant: pl.Expr) -> pl.Expr:
    """Hidden-variant lineups are chosen by the player, not dealt: their rates are not causal."""
    return (
        pl.when(variant == "hidden")
        .then(pl.lit("chosen", SOURCE))
        .otherwise(pl.lit("dealt", SOURCE))
        .alias("lineup_source")
    )


def lineup_cube(b: Base) -> pl.LazyFrame:
    """agg_lineup: each game counted once for each side, from that side."""
    by = b.sides.lazy().group_by("board", "variant_c", "mode_c", "client_version_c", "lineup")
    out = b.dims.decode_codes(by.agg(outcome()), ["variant", "mode", "client_version"])
    return with_score(
        out.select(
            *LINEUP_KEY[:-1], pl.col("lineup").cast(pl.String), "n", "wins", "draws", "losses"
        )  # fmt: skip
    ).with_columns(lineup_source=source(pl.col("variant")))


# counted per (cell, rank, distance) once; agg_pieces sums these over distance
PIECE_ONLY = ("never_moved", "removed", "promoted_turn_sum", "stunned_sum", "moves_sum")


def pieces_by_lane(b: Base) -> pl.LazyFrame:
    """One pass over the pieces (the biggest frame): every piece count by (cell, rank, lane
    distance). Conditions are computed first so the group-by only sums columns."""
    p = b.pieces.lazy()
    promoted = pl.col("promoted_turn").is_not_null()
    first, res = pl.col("moved_first"), pl.col("res")
    key = pl.col("cell") * 64 + pl.col("rank").cast(pl.Int64) * 8 + pl.col("distance")
    flags = p.select(
        key.alias("k"),
        promoted.alias("promoted"),
        (promoted & pl.col("alive")).alias("crowns_alive"),
        pl.col("home").alias("home_wins"),
        # both sides share every lane distance (|f0 - f1| = |f1 - f0|), so a side's score by
        # distance is 1/2 by construction: the first mover's result is the informative one
        first.alias("first_n"),
        (first & (res == 1)).alias("first_wins"),
        (first & (res == 0)).alias("first_draws"),
        (first & (res == -1)).alias("first_losses"),
        (pl.col("moves") == 0).alias("never_moved"),
        (~pl.col("alive")).alias("removed"),
        pl.col("promoted_turn").cast(pl.Int64).fill_null(0).alias("promoted_turn_sum"),
        pl.col("stunned").cast(pl.Int64).alias("stunned_sum"),
        pl.col("moves").cast(pl.Int64).alias("moves_sum"),
    )
    sums = [c for c in flags.collect_schema().names() if c != "k"]
    return (
        flags.group_by("k")
        .agg(
            pl.len().cast(pl.Int64).alias("pieces"), *(pl.col(c).sum().cast(pl.Int64) for c in sums)
        )
        .with_columns(
            cell=pl.col("k") // 64,
            rank=(pl.col("k") // 8 % 8).cast(pl.UInt8),
            distance=(pl.col("k") % 8).cast(pl.UInt8),
        )
        .drop("k")
    )


def cubes(b: Base, lane: pl.LazyFrame | None = None) -> dict[str, pl.LazyFrame]:
    s = b.sides.lazy()
    cell = pl.concat(
        [
            s.filter(pl.col("board") > f)
            .group_by(b.dims.coarse(), pl.col(f"r{f}").alias("rank"))
            .agg(outcome())
            .with_columns(pl.lit(f, pl.UInt8).alias("file"))
            for f in range(7)
        ]
    ).select("cell", "rank", "file", "n", "wins", "draws", "losses")
    lane = pieces_by_lane(b) if lane is None else lane
    return {
        "agg_lineup": lineup_cube(b),
        "agg_setup_cell": with_score(b.decode(cell, LIGHT_DIMS)).with_columns(
            lineup_source=source(pl.col("variant"))
        ),
        "agg_lane_distance": b.light(lane.drop(PIECE_ONLY), ["rank", "distance"]),
    }


def rate_tables(c: dict[str, pl.DataFrame], b: Base, cut: Cut) -> dict[str, pl.DataFrame]:
    lineup = views.rates(
        cut.apply(c["agg_lineup"]), ["board", "variant", "lineup"], family=["board", "variant"]
    ).with_columns(lineup_source=source(pl.col("variant")))
    cell = views.rates(
        cut.apply(c["agg_setup_cell"]),
        ["board", "variant", "rank", "file"],
        family=["board", "variant"],
    ).with_columns(lineup_source=source(pl.col("variant")))
    lane = views.summed(
        cut.apply(c["agg_lane_distance"]),
        ["board", "variant", "rank", "distance"],
        ["pieces", "promoted", "crowns_alive", "home_wins", "first_n", "first_wins",
         "first_draws", "first_losses"],
    ).filter(pl.col("pieces") > 0)  # fmt: skip
    lane = views.add_proportion(lane, "promoted", "pieces", "promotion_rate")
    lane = views.add_proportion(lane, "home_wins", "pieces", "home_rate")
    lane = views.add_score_rates(lane, ["board", "variant"], 0.5, prefix="first_", shrink=False)
    return {
        "agg_lineup_rates": lineup,
        "agg_setup_cell_rates": cell,
        "agg_lane_distance_rates": lane,
        "agg_lineup_vs": lineup_vs(b, cut),
    }


def lineup_vs(b: Base, cut: Cut, min_n: int = MIN_N_VS) -> pl.DataFrame:
    """Lineup against lineup in the cut, from the first lineup's side; pairs with n >= min_n."""
    s = b.in_cut(b.sides, cut).lazy()
    vs = s.group_by("board", "variant_c", "lineup", "opp_lineup").agg(outcome())
    vs = b.dims.decode_codes(vs, ["variant"]).with_columns(
        pl.col("lineup", "opp_lineup").cast(pl.String)
    )
    return views.rates(
        vs, ["board", "variant", "lineup", "opp_lineup"], family=["board", "variant"], min_n=min_n
    ).with_columns(lineup_source=source(pl.col("variant")))


LINEUP_SQL = """
SELECT board, enum_code(variant::{variant}) AS variant_c, enum_code(mode::{mode}) AS mode_c,
       enum_code(client_version::{client_version}) AS client_version_c,
       lineup_0::UINTEGER AS lineup_0, lineup_1::UINTEGER AS lineup_1, winner
FROM games g WHERE game = 'slow6' AND {where}
"""


def lineup_table(con, cut: Cut | None = None) -> pl.DataFrame:
    """agg_lineup on its own: read only its columns (DuckDB -> Arrow -> Polars) and aggregate
    lazily. The jobs compute the same table from the frames they read once for every table;
    this is the per-table cost the benchmark compares with one SQL query."""
    from .frames import Dims
    from .load import _enum, _pl

    where = (cut or Cut()).sql_where("g")
    text = ("variant", "mode", "client_version")
    found = con.execute(
        "SELECT "
        + ", ".join(f"list(DISTINCT {k} ORDER BY {k})" for k in text)
        + f" FROM games g WHERE game = 'slow6' AND {where}"
    ).fetchone()
    values = {k: v or ["-"] for k, v in zip(text, found, strict=True)}
    dicts = {"board": [5, 7], "ai_level": [None], "platform": ["-"], "week": [None], **values}
    enums = {k: _enum(values[k]) for k in text}
    games = _pl(con, LINEUP_SQL.format(where=where, **enums)).lazy()
    w = pl.col("winner")
    key = ["board", "variant_c", "mode_c", "client_version_c"]
    sides = pl.concat(
        games.select(
            *key,
            pl.col(f"lineup_{s}").alias("lineup"),
            pl.when(w.is_null()).then(0).when(w == s).then(1).otherwise(-1).alias("res"),
        )
        for s in (0, 1)
    )
    out = Dims(dicts).decode_codes(
        sides.group_by(*key, "lineup").agg(outcome()), ["variant", "mode", "client_version"]
    )
    return (
        with_score(
            out.select(
                *LINEUP_KEY[:-1], pl.col("lineup").cast(pl.String), "n", "wins", "draws", "losses"
            )  # fmt: skip
        )
        .with_columns(lineup_source=source(pl.col("variant")))
        .collect()
    )
