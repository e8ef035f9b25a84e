"""Slide: seats relative to the first player, scores and cards left, groups, which
value is taken when there is a choice, and match results (S3.4, with the consistency checks
S4.4 leaves to analysis).

Cut dimensions of the Slide tables: players, mode, platform, client_version, week.
"""

from __future__ import annotations

import polars as pl

from . import stats as st
from . import views
from .cuts import HUMAN_MODES, Cut, latest_version

SLIDE_DIMS = ("players", "mode", "platform", "client_version", "week")
MATCH_TARGET = 100  # S3.4: a match ends after the game in which a running total reaches 100


def _with_dims(frame: pl.DataFrame, games: pl.DataFrame, extra=()) -> pl.LazyFrame:
    cols = ["gk", *SLIDE_DIMS, *extra]
    return frame.lazy().join(games.lazy().select(cols), on="gk")


def cubes(s: dict[str, pl.DataFrame]) -> dict[str, pl.LazyFrame]:
    g = s["games"].with_columns(n_winners=pl.col("winners").list.len())
    seats = _with_dims(s["seats"], g, ["shared", "n_winners"])
    won = pl.col("won")
    seat = seats.group_by(*SLIDE_DIMS, "seat_from_first").agg(
        pl.len().cast(pl.Int64).alias("seats"),
        won.sum().cast(pl.Int64).alias("wins"),
        (won & pl.col("shared")).sum().cast(pl.Int64).alias("shared_wins"),
        # a shared victory is split between its winners, so credits add up to one per game
        pl.when(won).then(1.0 / pl.col("n_winners")).otherwise(0.0).sum().alias("win_credit"),
        pl.col("score").cast(pl.Int64).sum().alias("score_sum"),
        pl.col("cards_left").cast(pl.Int64).sum().alias("cards_left_sum"),
        pl.col("groups_removed").cast(pl.Int64).sum().alias("groups_sum"),
        (pl.col("groups_removed") > 0).sum().cast(pl.Int64).alias("seats_with_groups"),
    )
    scores = pl.concat(
        [
            seats.group_by(*SLIDE_DIMS, pl.col(m).cast(pl.Int64).alias("value"))
            .agg(pl.len().cast(pl.Int64).alias("seats"), won.sum().cast(pl.Int64).alias("wins"))
            .with_columns(pl.lit(m).alias("measure"))
            for m in ("score", "cards_left")
        ]
    )
    groups = (
        seats.select(*SLIDE_DIMS, "groups")
        .explode("groups")
        .filter(pl.col("groups").is_not_null())
        .unnest("groups")
        .group_by(*SLIDE_DIMS, "value", "size")
        .agg(pl.len().cast(pl.Int64).alias("groups"))
    )
    took = pl.col("took")
    takes = (
        _with_dims(s["takes"], g)
        .with_columns(
            pick=pl.when(took == pl.col("lowest"))
            .then(pl.lit("lowest"))
            .when(took == pl.col("highest"))
            .then(pl.lit("highest"))
            .otherwise(pl.lit("middle"))
        )
        .group_by(*SLIDE_DIMS, "take_order", "choices", "took", "pick")
        .agg(pl.len().cast(pl.Int64).alias("takes"))
    )
    return {
        "agg_slide_seats": seat,
        "agg_slide_scores": scores,
        "agg_slide_groups": groups,
        "agg_slide_takes": takes,
    }


def matches(s: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per match: its games, whether it is complete and consistent, and its winner."""
    g = s["games"].filter(pl.col("match_id").is_not_null())
    seats = s["seats"].join(g.select("gk", "match_id", "match_game"), on="gk")
    # running totals per seat, game by game (S3.4)
    run = seats.sort("match_id", "seat", "match_game").with_columns(
        total=pl.col("score").cast(pl.Int64).cum_sum().over("match_id", "seat"),
        left=pl.col("cards_left").cast(pl.Int64).cum_sum().over("match_id", "seat"),
    )
    per_game = run.group_by("match_id", "match_game").agg(pl.col("total").max().alias("top"))
    reached = (
        per_game.filter(pl.col("top") >= MATCH_TARGET)
        .group_by("match_id")
        .agg(pl.col("match_game").min().alias("reached_at"))
    )
    last = (
        g.sort("match_game")
        .group_by("match_id")
        .agg(
            pl.len().cast(pl.Int64).alias("games"),
            pl.col("match_game").max().alias("last_game"),
            (pl.col("match_game").n_unique() == pl.len()).alias("distinct_numbers"),
            pl.col("match_game").min().alias("first_game"),
            pl.col("players").n_unique().alias("player_counts"),
            *(pl.col(c).last() for c in SLIDE_DIMS),
        )
    )
    final = run.join(last.select("match_id", "last_game"), on="match_id").filter(
        pl.col("match_game") == pl.col("last_game")
    )
    # S3.3 on the totals: lowest total, then fewest cards left, then shared
    m = pl.col("match_id")
    best = (
        final.filter(pl.col("total") == pl.col("total").min().over(m))
        .filter(pl.col("left") == pl.col("left").min().over(m))
        .group_by("match_id")
        .agg(pl.col("seat").sort().alias("winners"), pl.col("total").first().alias("winner_total"))
        .join(
            final.group_by("match_id").agg(pl.col("total").max().alias("max_total")), on="match_id"
        )
    )
    out = last.join(best, on="match_id", how="left").join(reached, on="match_id", how="left")
    problem = (
        pl.when(pl.col("player_counts") > 1)
        .then(pl.lit("player count changes"))
        .when(~pl.col("distinct_numbers") | (pl.col("first_game") != 1)
              | (pl.col("last_game") != pl.col("games")))
        .then(pl.lit("game numbers are not 1..n"))
        .when(pl.col("reached_at").is_not_null() & (pl.col("reached_at") < pl.col("last_game")))
        .then(pl.lit("played on after a total reached 100"))
    )  # fmt: skip
    return out.select(
        "match_id",
        *SLIDE_DIMS,
        "games",
        (pl.col("max_total") >= MATCH_TARGET).alias("complete"),
        problem.is_null().alias("consistent"),
        problem.alias("problem"),
        "winners",
        "winner_total",
        "max_total",
    ).sort("match_id")


def default_cut(games: pl.DataFrame) -> Cut:
    """Slide's balance cut: human tables (online, friend) on Slide's latest client version."""
    return Cut(mode=HUMAN_MODES, client_version=latest_version(games["client_version"].unique()))


def seat_rates(frame, by=("players", "seat_from_first")) -> pl.DataFrame:
    """Win rate of a seat (shared wins split) against the fair share 1/players; BH across the
    seats of one table size."""
    cols = ["seats", "wins", "shared_wins", "win_credit", "score_sum", "cards_left_sum"]
    df = views.summed(frame, list(by), cols).filter(pl.col("seats") > 0)
    k, n = df["win_credit"].to_numpy(), df["seats"].to_numpy()
    fair = 1.0 / df["players"].to_numpy().astype(float)
    lo, hi = st.wilson(k, n)
    p = st.score_test(k, n, fair)
    q, flagged = st.bh_grouped(p, df["players"].to_numpy())
    return df.with_columns(
        pl.Series("win_rate", st.rate(k, n)),
        pl.Series("wilson_lo", lo),
        pl.Series("wilson_hi", hi),
        pl.Series("fair_share", fair),
        pl.Series("p_value", p),
        pl.Series("q_value", q),
        pl.Series("flagged", flagged),
        (pl.col("score_sum") / pl.col("seats")).alias("mean_score"),
        (pl.col("cards_left_sum") / pl.col("seats")).alias("mean_cards_left"),
    )


def match_rates(m: pl.DataFrame, by=("players",)) -> pl.DataFrame:
    return (
        m.group_by(list(by))
        .agg(
            pl.len().cast(pl.Int64).alias("matches"),
            pl.col("complete").sum().cast(pl.Int64).alias("complete"),
            pl.col("consistent").sum().cast(pl.Int64).alias("consistent"),
            pl.col("games").mean().alias("mean_games"),
            pl.col("winner_total").filter(pl.col("complete")).mean().alias("mean_winner_total"),
        )
        .sort(list(by))
    )


def tables(s: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    if not s:
        return {}
    lazy = cubes(s)
    names = list(lazy)
    out = dict(zip(names, pl.collect_all([lazy[n] for n in names]), strict=True))
    from .tables import columns

    out = {n: df.select(columns(n)) for n, df in out.items()}
    m = matches(s)
    cut = default_cut(s["games"]) if s["games"].height else Cut(mode=HUMAN_MODES)
    out["agg_slide_matches"] = m
    out["agg_slide_seat_rates"] = seat_rates(cut.apply(out["agg_slide_seats"]))
    out["agg_slide_match_rates"] = match_rates(cut.apply(m))
    return out
