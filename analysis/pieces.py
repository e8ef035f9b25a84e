"""Pieces: promotion, crown survival, home wins, stuns and catches; hidden-variant reveals."""

from __future__ import annotations

import polars as pl

from . import views
from .cuts import Cut
from .games_sql import Selection, decoded, flag, games, outcome, scored, sides
from .tables import Cube


def lane(sel: Selection) -> str:
    """The shared temporary table `_lane`: one pass over the pieces (the biggest table but
    the turns) for agg_pieces and agg_lane_distance, by (cw, rank, lane distance).

    Every game's part of the join is one integer (its cw, the lane distances of its ranks,
    who moved first and with what result), so that the join's table stays small (ten million
    games in a few hundred MB, no spilling), and the pieces group by one integer too."""
    packed = f"""((g.cw * {1 << 21} + g.dist) * 2 + g."first") * 4 + g.res_first + 1"""
    first = "(p.side = pk // 4 % 2)"
    res_first = "(pk % 4 - 1)"
    distance = "((pk // 8) >> (3 * (p.rank::INTEGER - 1))) % 8"
    key = f"((pk // {1 << 24}) * 8 + p.rank) * 8 + {distance}"
    return f"""WITH {games(sel)},
gp AS (SELECT game_id, {packed} AS pk FROM g)
SELECT k // 64 AS cw, (k // 8 % 8)::UTINYINT AS rank, (k % 8)::UTINYINT AS distance, * EXCLUDE (k)
FROM (
SELECT {key} AS k,
       count(*) AS pieces, count(p.promoted_turn) AS promoted,
       {flag("p.promoted_turn IS NOT NULL AND p.removed_turn IS NULL")} AS crowns_alive,
       {flag("p.home")} AS home_wins,
       -- both sides share every lane distance, so a side's score by distance is 1/2 by
       -- construction: the first mover's result is the informative one
       {flag(first)} AS first_n,
       {flag(f"{first} AND {res_first} = 1")} AS first_wins,
       {flag(f"{first} AND {res_first} = 0")} AS first_draws,
       {flag(f"{first} AND {res_first} = -1")} AS first_losses,
       {flag("p.moves = 0")} AS never_moved, count(p.removed_turn) AS removed,
       coalesce(sum(p.promoted_turn), 0)::BIGINT AS promoted_turn_sum,
       sum(p.stunned)::BIGINT AS stunned_sum, sum(p.moves)::BIGINT AS moves_sum
FROM {sel.table("game_pieces")} p JOIN gp USING (game_id) WHERE {sel.bound("game_pieces", "p")}
GROUP BY k)"""


def _pieces(sel: Selection) -> str:
    cols = ("pieces", "promoted", "crowns_alive", "home_wins", "never_moved", "removed",
            "promoted_turn_sum", "stunned_sum", "moves_sum")  # fmt: skip
    sums = ", ".join(f"sum({c})::BIGINT AS {c}" for c in cols)
    return decoded(sel, f"SELECT cw, rank, {sums} FROM _lane GROUP BY ALL")


def _side_events(sel: Selection) -> str:
    """Sides with the crowns they stunned and caught (summed over their turns)."""
    return scored(
        decoded(
            sel,
            f"""WITH {sides(sel)},
ev AS (
    SELECT t.game_id, t.side, sum(t.stuns)::BIGINT AS stuns, sum(t.catches)::BIGINT AS catches
    FROM {sel.table("game_turns")} t
    WHERE (t.stuns > 0 OR t.catches > 0) AND {sel.bound("game_turns", "t")}
      AND t.game_id IN (SELECT game_id FROM g)
    GROUP BY ALL)
SELECT cw, coalesce(ev.stuns, 0) > 0 AS made_stun, coalesce(ev.catches, 0) > 0 AS made_catch,
       {outcome()}, coalesce(sum(ev.stuns), 0)::BIGINT AS stuns,
       coalesce(sum(ev.catches), 0)::BIGINT AS catches
FROM s LEFT JOIN ev USING (game_id, side) GROUP BY ALL""",
        )
    )


def _hidden(sel: Selection) -> str:
    return decoded(
        sel,
        f"""WITH {games(sel)}
SELECT g.lw, p.rank, (p.revealed_turn // 2 + 1)::USMALLINT AS reveal_round,
       count(*) AS pieces, {flag("p.moves = 0")} AS never_moved
FROM {sel.table("game_pieces")} p JOIN g USING (game_id)
WHERE g.variant = 'hidden' AND {sel.bound("game_pieces", "p")} GROUP BY ALL""",
        "lw",
    )


CUBES = [
    Cube("agg_pieces", "games", _pieces, uses=("_lane",)),
    Cube("agg_side_events", "games", _side_events),
    Cube("agg_hidden_reveal", "games", _hidden),
]


def rate_tables(fetch, cut: Cut) -> dict[str, pl.DataFrame]:
    ev = views.rates(
        fetch("agg_side_events", cut),
        ["board", "variant", "made_stun", "made_catch"],
        family=["board", "variant"],
        p0="family",
        extra=["stuns", "catches"],
    )
    hid = views.summed(
        fetch("agg_hidden_reveal", cut).with_columns(
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
        "agg_pieces_rates": views.piece_rates(fetch("agg_pieces", cut)),
        "agg_side_events_rates": ev,
        "agg_hidden_reveal_rates": hid,
    }
