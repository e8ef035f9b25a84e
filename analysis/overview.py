"""Overview: games per day, verified vs quarantined, end reasons, game length, first move."""

from __future__ import annotations

import polars as pl

from . import views
from .cuts import DIMS, Cut
from .frames import LIGHT_DIMS, Base, count, day_date, outcome, with_score

DAY_DIMS = tuple(d for d in DIMS if d != "week")


def cubes(b: Base) -> dict[str, pl.LazyFrame]:
    g = b.games.lazy()
    draw = pl.col("winner").is_null()
    daily = (
        b.decode(
            g.group_by("cell", "day_n").agg(
                pl.len().cast(pl.Int64).alias("games"), count(draw, "draws")
            )
        )
        .with_columns(day_date())
        .select("day", *DAY_DIMS, "games", "draws")
    )
    verified = b.dims.decode_codes(
        g.group_by("mode_c", "platform_c", "client_version_c", "day_n").agg(
            pl.len().cast(pl.Int64).alias("records")
        ),
        ["mode", "platform", "client_version"],
    ).select(
        pl.lit("slow6").alias("game"),
        pl.lit("verified").alias("status"),
        pl.lit(None, pl.String).alias("rule"),
        # plain text: quarantined records bring values the verified games may not have
        pl.col("mode", "platform", "client_version").cast(pl.String),
        day_date(),
        "records",
    )
    quarantined = (
        b.quarantine.lazy()
        .group_by("game", "rule", "mode", "platform", "client_version", "day")
        .agg(pl.len().cast(pl.Int64).alias("records"))
        .select("game", pl.lit("quarantined").alias("status"), "rule", "mode", "platform",
                "client_version", "day", "records")
    )  # fmt: skip
    reasons = g.group_by("cell", "reason_c").agg(
        pl.len().cast(pl.Int64).alias("games"),
        count(draw, "draws"),
        count(pl.col("res_first") == 1, "first_wins"),
    )
    length = g.group_by(b.dims.coarse(), "reason_c", "turns").agg(
        pl.len().cast(pl.Int64).alias("games")
    )
    first = g.group_by("cell").agg(outcome("res_first"))
    return {
        "agg_games_daily": daily,
        "agg_ingest_status": pl.concat([verified, quarantined]),
        "agg_end_reasons": b.dims.decode_codes(b.decode(reasons), ["reason"]),
        "agg_game_length": b.dims.decode_codes(b.decode(length, LIGHT_DIMS), ["reason"]),
        "agg_first_move": with_score(b.decode(first)),
    }


def rate_tables(c: dict[str, pl.DataFrame], b: Base, cut: Cut) -> dict[str, pl.DataFrame]:
    return {"agg_first_move_rates": views.first_move_rates(cut.apply(c["agg_first_move"]))}
