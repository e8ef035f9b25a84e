"""The additive agg_* tables: for each, its cut dimensions, its own key columns and its
additive columns (any cut of it is a GROUP BY of the keys and a SUM of these columns).

docs/agg-tables.md documents every table and column; tests/test_analysis_cuts.py checks that
each table has exactly these columns and that cutting it equals filtering the games first.
"""

from __future__ import annotations

from .cuts import DIMS

OUT = ("n", "wins", "draws", "losses")
SCORE = (*OUT, "score")
NO_WEEK = tuple(d for d in DIMS if d != "week")
# tables with many rows per cell carry no platform and no AI level (see frames.LIGHT_DIMS)
LIGHT = ("board", "variant", "mode", "client_version", "week")
POWER_COUNTS = (
    "sides_n",
    *(f"picked_{c}" for c in OUT),
    *(f"not_{c}" for c in OUT),
    *(f"used_{c}" for c in OUT),
    "used_round_sum",
    *(f"held_{c}" for c in OUT),
)
PIECE_COUNTS = (
    "pieces",
    "promoted",
    "crowns_alive",
    "home_wins",
    "never_moved",
    "removed",
    "promoted_turn_sum",
    "stunned_sum",
    "moves_sum",
)
LANE_COUNTS = (
    "pieces",
    "promoted",
    "crowns_alive",
    "home_wins",
    "first_n",
    "first_wins",
    "first_draws",
    "first_losses",
)

# name -> (cut dimensions it carries, its own keys, additive columns)
ADDITIVE: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "agg_games_daily": (NO_WEEK, ("day",), ("games", "draws")),
    "agg_ingest_status": (
        ("mode", "platform", "client_version"),
        ("game", "status", "rule", "day"),
        ("records",),
    ),
    "agg_end_reasons": (DIMS, ("reason",), ("games", "draws", "first_wins")),
    "agg_game_length": (LIGHT, ("reason", "turns"), ("games",)),
    "agg_first_move": (DIMS, (), SCORE),
    "agg_lineup": (
        ("board", "variant", "mode", "client_version"),
        ("lineup", "lineup_source"),
        SCORE,
    ),
    "agg_setup_cell": (LIGHT, ("rank", "file", "lineup_source"), SCORE),
    "agg_lane_distance": (LIGHT, ("rank", "distance"), LANE_COUNTS),
    "agg_power": (DIMS, ("power",), POWER_COUNTS),
    "agg_power_used_turn": (LIGHT, ("power", "round"), ("uses",)),
    "agg_power_pair": (LIGHT, ("power_a", "power_b"), OUT),
    "agg_power_vs": (LIGHT, ("power", "opp_power"), OUT),
    "agg_pieces": (DIMS, ("rank",), PIECE_COUNTS),
    "agg_side_events": (DIMS, ("made_stun", "made_catch"), (*SCORE, "stuns", "catches")),
    "agg_hidden_reveal": (LIGHT, ("rank", "reveal_round"), ("pieces", "never_moved")),
    "agg_vs_ai": (DIMS, ("human_first",), SCORE),
    "agg_challenge": (DIMS, ("challenge_id",), SCORE),
}


SLIDE = ("players", "mode", "platform", "client_version", "week")
ADDITIVE.update(
    {
        "agg_slide_seats": (
            SLIDE,
            ("seat_from_first",),
            (
                "seats",
                "wins",
                "shared_wins",
                "win_credit",
                "score_sum",
                "cards_left_sum",
                "groups_sum",
                "seats_with_groups",
            ),
        ),  # fmt: skip
        "agg_slide_scores": (SLIDE, ("measure", "value"), ("seats", "wins")),
        "agg_slide_groups": (SLIDE, ("value", "size"), ("groups",)),
        "agg_slide_takes": (SLIDE, ("take_order", "choices", "took", "pick"), ("takes",)),
    }
)


def columns(name: str) -> list[str]:
    dims, keys, counts = ADDITIVE[name]
    return [*dims, *keys, *counts]
