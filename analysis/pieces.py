"""Pieces: promotion, crown survival, home wins, stuns and catches; hidden-variant reveals."""

from __future__ import annotations

import numpy as np
import polars as pl

from . import views
from .cuts import Cut
from .frames import LIGHT_DIMS, Base, _gather_index, count, outcome, with_score


def _side_events(b: Base) -> pl.DataFrame:
    """Sides with the crowns they stunned and caught (summed over their turns)."""
    n = b.games.height
    at = _gather_index(b.games["gk"].to_numpy(), b.events["gk"].to_numpy())
    # sides holds every game's side 0, then every game's side 1, in games order
    row = at + n * b.events["side"].to_numpy().astype(np.int64)
    stuns = np.bincount(row, weights=b.events["stuns"].to_numpy(), minlength=2 * n)
    catches = np.bincount(row, weights=b.events["catches"].to_numpy(), minlength=2 * n)
    return b.sides.select("cell", "res").with_columns(
        pl.Series("stuns", stuns.astype(np.int64)), pl.Series("catches", catches.astype(np.int64))
    )


def cubes(b: Base, lane: pl.LazyFrame | None = None) -> dict[str, pl.LazyFrame]:
    """`lane`: setups.pieces_by_lane(b), the one pass over the pieces both areas share."""
    from .setups import pieces_by_lane

    lane = pieces_by_lane(b) if lane is None else lane
    p = b.pieces.lazy()
    cols = ("pieces", "promoted", "crowns_alive", "home_wins", "never_moved", "removed",
            "promoted_turn_sum", "stunned_sum", "moves_sum")  # fmt: skip
    pieces = lane.group_by("cell", "rank").agg(pl.col(c).sum() for c in cols)
    events = (
        _side_events(b)
        .lazy()
        .group_by(
            "cell",
            (pl.col("stuns") > 0).alias("made_stun"),
            (pl.col("catches") > 0).alias("made_catch"),
        )
        .agg(*outcome(), pl.col("stuns").sum(), pl.col("catches").sum())
    )
    variants = b.dims.values["variant"]
    hidden_c = variants.index("hidden") if "hidden" in variants else -1
    hidden = (
        p.filter(b.dims.code("variant") == hidden_c)
        .with_columns(
            reveal_round=(pl.col("revealed_turn").cast(pl.Int32) // 2 + 1).cast(pl.UInt16)
        )
        .group_by(b.dims.coarse(), "rank", "reveal_round")
        .agg(pl.len().cast(pl.Int64).alias("pieces"), count(pl.col("moves") == 0, "never_moved"))
    )
    return {
        "agg_pieces": b.decode(pieces),
        "agg_side_events": with_score(b.decode(events)),
        "agg_hidden_reveal": b.decode(hidden, LIGHT_DIMS),
    }


def rate_tables(c: dict[str, pl.DataFrame], b: Base, cut: Cut) -> dict[str, pl.DataFrame]:
    ev = views.rates(
        cut.apply(c["agg_side_events"]),
        ["board", "variant", "made_stun", "made_catch"],
        family=["board", "variant"],
        p0="family",
        extra=["stuns", "catches"],
    )
    hid = views.summed(
        cut.apply(c["agg_hidden_reveal"]).with_columns(
            never_revealed=pl.when(pl.col("reveal_round").is_null()).then(pl.col("pieces"))
            .otherwise(0),
            round_sum=pl.col("reveal_round").cast(pl.Int64).fill_null(0) * pl.col("pieces"),
        ),
        ["board", "rank"],
        ["pieces", "never_moved", "never_revealed", "round_sum"],
    ).filter(pl.col("pieces") > 0)  # fmt: skip
    hid = views.add_proportion(hid, "never_moved", "pieces", "never_moved_rate")
    hid = views.add_proportion(hid, "never_revealed", "pieces", "never_revealed_rate")
    hid = hid.with_columns(
        mean_reveal_round=pl.col("round_sum") / (pl.col("pieces") - pl.col("never_revealed"))
    ).drop("round_sum")
    return {
        "agg_pieces_rates": views.piece_rates(cut.apply(c["agg_pieces"])),
        "agg_side_events_rates": ev,
        "agg_hidden_reveal_rates": hid,
    }
