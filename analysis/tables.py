"""The additive agg_* tables: for each, its cut dimensions, its own key columns and its
additive columns (any cut of it is a GROUP BY of the keys and a SUM of these columns), and the
`Cube` type: the SQL that fills a table from one source's games.

docs/agg-tables.md documents every table and column; tests/analysis/test_analysis_cuts.py checks
that each table has exactly these columns and that cutting it equals filtering the games first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .cuts import DIMS

OUT = ("n", "wins", "draws", "losses")
SCORE = (*OUT, "score")
NO_WEEK = tuple(d for d in DIMS if d != "week")
# tables with many rows per cell carry no platform and no AI level (games_sql.LIGHT_DIMS)
LIGHT = ("board", "variant", "mode", "client_version", "ruleset", "week")
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
        ("mode", "platform", "client_version", "ruleset"),
        ("game", "status", "rule", "day"),
        ("records",),
    ),
    "agg_end_reasons": (DIMS, ("reason",), ("games", "draws", "first_wins")),
    "agg_game_length": (LIGHT, ("reason", "turns"), ("games",)),
    "agg_first_move": (DIMS, (), SCORE),
    "agg_lineup": (
        ("board", "variant", "mode", "client_version", "ruleset"),
        ("lineup", "lineup_source"),
        SCORE,
    ),
    # 5x5 only (7x7 has 5,040 lineups and 25 million pairs: a few games each); they feed
    # agg_trends and agg_lineup_vs, so that neither reads games
    "agg_lineup_week": (LIGHT, ("lineup",), SCORE),
    "agg_lineup_pair": (
        ("board", "variant", "mode", "client_version", "ruleset"),
        ("lineup", "opp_lineup"),
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
    # solve_turns_sum: the turns of the attempts that were solved (for a mean)
    "agg_challenge": (DIMS, ("challenge_id",), (*SCORE, "solve_turns_sum")),
}


SLIDE = ("players", "mode", "platform", "client_version", "ruleset", "week")
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


def key_columns(name: str) -> list[str]:
    dims, keys, _ = ADDITIVE[name]
    return [*dims, *keys]


@dataclass(frozen=True)
class Cube:
    """The rows one source's games give an agg_* table: `sql(selection)` returns them in the
    table's column order (analysis.games_sql.Selection says which games).

    source: the table whose games these are (games, quarantine, slide_games).
    selector: which of the table's rows are this cube's (a table two sources fill).
    week: SQL of a row's week (a recomputed week replaces its rows); None: the table has no
        time column, so a recompute rebuilds it whole.
    key: for a table that is not additive, the column a recomputed row replaces by
        (agg_slide_matches: a match's row is rebuilt from all its games).
    uses: the shared temporary tables it reads (analysis.stage builds them once).
    """

    table: str
    source: str
    sql: Callable
    selector: str = "TRUE"
    week: str | None = "week"
    key: str | None = None
    uses: tuple[str, ...] = ()
