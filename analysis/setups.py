"""Setups: lineups, (rank, file) cells, lane distance, lineup against lineup."""

from __future__ import annotations

import polars as pl

from . import stats as st
from . import views
from .cuts import Cut
from .games_sql import Selection, decoded, lineup_source, outcome, scored, sides
from .tables import LANE_COUNTS, Cube

LINEUP_KEY = ("board", "variant", "mode", "client_version", "ruleset", "lineup")
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


def lineups(sel: Selection) -> str:
    """The shared temporary table `_lineups`: sides counted by (lw, lineup, result), for
    agg_lineup_week and agg_setup_cell (each game counts once for each side, from that side).
    Far fewer rows than sides: 120 lineups on 5x5."""
    return f"""WITH {sides(sel)}
SELECT lw, board, lineup, res, count(*) AS c FROM s GROUP BY ALL"""


def _with_source(sel: Selection, sql: str, col: str) -> str:
    return f"SELECT *, {lineup_source()} AS lineup_source FROM ({decoded(sel, sql, col)})"


def _lineup(sel: Selection) -> str:
    """agg_lineup: each game counted once for each side, from that side. Its key is its four
    dimensions and the lineup, with no child rows to join: one pass over the games' columns,
    as a hand-written query would (benchmarks/analysis_full.py compares the two)."""
    res = "CASE WHEN winner IS NULL THEN 0 WHEN winner = {s} THEN 1 ELSE -1 END"
    side = """SELECT board, variant, mode, client_version, ruleset,
           lineup_{s} AS lineup, {res} AS res
    FROM {games} WHERE game = 'slow6' AND ({where})"""
    both = "\n    UNION ALL\n    ".join(
        side.format(s=s, res=res.format(s=s), games=sel.table("games"), where=sel.where)
        for s in (0, 1)
    )
    # the source is the variant's: named per row of the table, not per side
    return scored(f"""SELECT *, {lineup_source()} AS lineup_source FROM (
SELECT board, variant, mode, client_version, ruleset, lineup, {outcome()}
FROM (
    {both}
) GROUP BY ALL)""")


def _lineup_week(sel: Selection) -> str:
    sql = f"SELECT lw, lineup, {outcome(n='c')} FROM _lineups WHERE board = 5 GROUP BY ALL"
    return scored(decoded(sel, sql, "lw"))


def _lineup_pair(sel: Selection) -> str:
    return scored(
        decoded(
            sel,
            f"""WITH {sides(sel)}
SELECT lcell, lineup, opp_lineup, {outcome()} FROM s WHERE board = 5 GROUP BY ALL""",
            "lcell",
        )
    )


def _setup_cell(sel: Selection) -> str:
    # the rank a side put on file f is the f-th digit of its lineup ('31524': 3 on file a)
    sql = f"""SELECT lw, (ascii(lineup[f::INTEGER + 1]) - 48)::UTINYINT AS rank,
       f::UTINYINT AS file, {outcome(n="c")}
FROM _lineups, range(7) AS t(f) WHERE f < board GROUP BY ALL"""
    return scored(_with_source(sel, sql, "lw"))


def _lane_distance(sel: Selection) -> str:
    cols = ("pieces", "promoted", "crowns_alive", "home_wins", "first_n", "first_wins",
            "first_draws", "first_losses")  # fmt: skip
    sums = ", ".join(f"sum({c})::BIGINT AS {c}" for c in cols)
    lw = sel.known_dicts().light()
    sql = f"SELECT {lw} AS lw, rank, distance, {sums} FROM _lane GROUP BY ALL"
    return decoded(sel, sql, "lw")


CUBES = [
    Cube("agg_lineup", "games", _lineup, week=None),
    Cube("agg_lineup_week", "games", _lineup_week, uses=("_lineups",)),
    Cube("agg_lineup_pair", "games", _lineup_pair, week=None),
    Cube("agg_setup_cell", "games", _setup_cell, uses=("_lineups",)),
    Cube("agg_lane_distance", "games", _lane_distance, uses=("_lane",)),
]


def rate_tables(fetch, cut: Cut) -> dict[str, pl.DataFrame]:
    lineup = views.rates(
        fetch("agg_lineup", cut), ["board", "variant", "lineup"], family=["board", "variant"]
    ).with_columns(lineup_source=source(pl.col("variant")))
    cell = views.rates(
        fetch("agg_setup_cell", cut),
        ["board", "variant", "rank", "file"],
        family=["board", "variant"],
    ).with_columns(lineup_source=source(pl.col("variant")))
    lane = lane_rates(fetch("agg_lane_distance", cut))
    return {
        "agg_lineup_rates": lineup,
        "agg_setup_cell_rates": cell,
        "agg_lane_distance_rates": lane,
        "agg_lineup_vs": lineup_vs(fetch("agg_lineup_pair", cut)),
    }


def lane_rates(frame, family=("board", "variant")) -> pl.DataFrame:
    """Per (board, variant, rank, distance): promotion and home rates, and the first mover's
    score at that distance tested against the board's own first-move rate (same games, same
    cut), not against 1/2: moving first is worth something on every board, and a test against
    1/2 flagged that edge in every row (437 of 500 rows at 20,000 games with no distance effect).

    A game has one lane distance per rank, so the rows of one rank split the board's games:
    the test is the two-proportion test of the games at this distance against the games at the
    other distances of the rank (the same as the score test against the board's rate, with the
    row's own games taken out of it), BH within the family."""
    keys = [*family, "rank", "distance"]
    lane = views.summed(frame, keys, LANE_COUNTS).filter(pl.col("pieces") > 0)
    lane = views.add_proportion(lane, "promoted", "pieces", "promotion_rate")
    lane = views.add_proportion(lane, "home_wins", "pieces", "home_rate")
    lane = views.add_score_rates(lane, family, None, prefix="first_", shrink=False)
    rank = pl.col("first_n").sum().over([*family, "rank"])
    rank_score = pl.col("first_score").sum().over([*family, "rank"])
    lane = lane.with_columns(
        first_tested_against=rank_score / rank,
        _rest_n=rank - pl.col("first_n"),
        _rest_score=rank_score - pl.col("first_score"),
    )
    k1, n1 = lane["first_score"].to_numpy(), lane["first_n"].to_numpy()
    k2, n2 = lane["_rest_score"].to_numpy(), lane["_rest_n"].to_numpy()
    d, lo, hi = st.diff_newcombe(k1, n1, k2, n2)
    p = st.diff_test(k1, n1, k2, n2)
    labels = lane.select(pl.struct(list(family)).rank("dense")).to_series().to_numpy()
    q, flagged = st.bh_grouped(p, labels)
    return lane.drop("_rest_n", "_rest_score").with_columns(
        pl.Series("first_distance_effect", d),
        pl.Series("first_distance_effect_lo", lo),
        pl.Series("first_distance_effect_hi", hi),
        pl.Series("first_p_value", p),
        pl.Series("first_q_value", q),
        pl.Series("first_flagged", flagged),
    )


def lineup_vs(pairs: pl.DataFrame, min_n: int = MIN_N_VS) -> pl.DataFrame:
    """Lineup against lineup (5x5), from the first lineup's side; pairs with n >= min_n."""
    return views.rates(
        pairs,
        ["board", "variant", "lineup", "opp_lineup"],
        family=["board", "variant"],
        min_n=min_n,
    ).with_columns(lineup_source=source(pl.col("variant")))


def lineup_table(con, cut: Cut | None = None) -> pl.DataFrame:
    """agg_lineup on its own, as the jobs compute it: one DuckDB query (the benchmark compares
    it with a hand-written one)."""
    from .sources import games_where

    return con.sql(_lineup(Selection(games_where(cut or Cut())))).pl()
