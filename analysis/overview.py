"""Overview: games per day, verified vs quarantined, end reasons, game length, first move."""

from __future__ import annotations

from . import views
from .cuts import Cut
from .games_sql import Selection, decoded, flag, games, outcome, scored
from .tables import Cube

DAY = "date_trunc('week', day)::DATE"


def _daily(sel: Selection) -> str:
    return decoded(
        sel,
        f"""WITH {games(sel)}
SELECT cell, day, count(*) AS games, {flag("winner IS NULL")} AS draws FROM g GROUP BY ALL""",
        "cell",
    )


def _verified(sel: Selection) -> str:
    return f"""WITH {games(sel)}
SELECT mode, platform, client_version, ruleset,
       'slow6' AS game, 'verified' AS status, NULL::VARCHAR AS rule,
       day, count(*) AS records
FROM g GROUP BY ALL"""


def _slide_verified(sel: Selection) -> str:
    # verified Slide games belong here as much as quarantined Slide records do: a share of
    # records quarantined per game and version needs both sides of its line
    return f"""SELECT mode, platform, client_version, ruleset, 'slide' AS game,
       'verified' AS status, NULL::VARCHAR AS rule, ended_at::DATE AS day, count(*) AS records
FROM {sel.table("slide_games")} WHERE {sel.where} GROUP BY ALL"""


def _quarantined(sel: Selection) -> str:
    # quarantined records are counted, never analysed: this is all the jobs read of them
    return f"""SELECT mode, platform, client_version, ruleset, game, 'quarantined' AS status, rule,
       ended_at::DATE AS day, count(*) AS records
FROM {sel.table("quarantine")} WHERE {sel.where} GROUP BY ALL"""


def _reasons(sel: Selection) -> str:
    return decoded(
        sel,
        f"""WITH {games(sel)}
SELECT cw, reason, count(*) AS games, {flag("winner IS NULL")} AS draws,
       {flag("res_first = 1")} AS first_wins
FROM g GROUP BY ALL""",
    )


def _length(sel: Selection) -> str:
    return decoded(
        sel,
        f"""WITH {games(sel)}
SELECT lw, reason, turns, count(*) AS games FROM g GROUP BY ALL""",
        "lw",
    )


def _first(sel: Selection) -> str:
    sql = f"WITH {games(sel)} SELECT cw, {outcome('res_first')} FROM g GROUP BY ALL"
    return scored(decoded(sel, sql))


CUBES = [
    Cube("agg_games_daily", "games", _daily, week=DAY),
    Cube(
        "agg_ingest_status",
        "games",
        _verified,
        selector="status = 'verified' AND game = 'slow6'",
        week=DAY,
    ),
    Cube(
        "agg_ingest_status",
        "slide_games",
        _slide_verified,
        selector="status = 'verified' AND game = 'slide'",
        week=DAY,
    ),
    Cube("agg_ingest_status", "quarantine", _quarantined, "status = 'quarantined'", DAY),
    Cube("agg_end_reasons", "games", _reasons),
    Cube("agg_game_length", "games", _length),
    Cube("agg_first_move", "games", _first),
]


def rate_tables(fetch, cut: Cut) -> dict:
    return {"agg_first_move_rates": views.first_move_rates(fetch("agg_first_move", cut))}
