"""Computer opponents (human score by AI level) and challenges (solve rate per challenge)."""

from __future__ import annotations

import polars as pl

from . import stats as st
from . import views
from .cuts import Cut
from .frames import Base, outcome, with_score


def _code(b: Base, dim: str, value: str) -> int:
    values = b.dims.values[dim]
    return values.index(value) if value in values else -1


def cubes(b: Base) -> dict[str, pl.LazyFrame]:
    g = b.games.lazy()
    ai = (
        g.filter(
            (pl.col("mode_c") == _code(b, "mode", "computer")) & pl.col("ai_side").is_not_null()
        )
        .with_columns(
            # the human plays the side the computer does not
            res=pl.when(pl.col("ai_side") == 0).then(-pl.col("res0")).otherwise(pl.col("res0")),
            human_first=pl.col("first") != pl.col("ai_side"),
        )
        .group_by("cell", "human_first")
        .agg(outcome())
    )
    # Challenge games have no computer side in the record; the player is the side to move in
    # the set position, which R9.2 makes `first`. A solve is a win of that side.
    ch = (
        g.filter(
            (pl.col("mode_c") == _code(b, "mode", "challenge"))
            & pl.col("challenge_id").is_not_null()
        )
        .group_by("cell", "challenge_id")
        .agg(outcome("res_first"))
    )
    return {"agg_vs_ai": with_score(b.decode(ai)), "agg_challenge": with_score(b.decode(ch))}


def rate_tables(c: dict[str, pl.DataFrame], b: Base, cut: Cut) -> dict[str, pl.DataFrame]:
    ai = views.rates(
        cut.with_modes("computer").apply(c["agg_vs_ai"]),
        ["board", "ai_level"],
        family=["board"],
        p0=0.5,
    )
    ch = challenge_rates(cut.with_modes("challenge").apply(c["agg_challenge"]))
    return {"agg_vs_ai_rates": ai, "agg_challenge_rates": ch}


def challenge_rates(frame, by=("board", "challenge_id")) -> pl.DataFrame:
    """Solve rate (wins of the player / attempts) with Wilson interval, and shrunk towards the
    board's pooled solve rate (a challenge tried 5 times does not top the chart)."""
    df = views.summed(frame, list(by), ["n", "wins", "draws", "losses"]).filter(pl.col("n") > 0)
    df = df.rename({"n": "attempts", "wins": "solves"})
    df = views.add_proportion(df, "solves", "attempts", "solve_rate")
    labels = df.select(pl.struct(list(by)[:-1]).rank("dense")).to_series().to_numpy()
    shrunk = st.shrink_grouped(df["solves"].to_numpy(), df["attempts"].to_numpy(), labels)
    return df.with_columns(pl.Series("solve_shrunk", shrunk))
