"""Read what the jobs need from the store, in one snapshot, as Polars frames (Arrow hand-off).

SQL here selects, projects and *encodes*; it never counts. Text dimensions arrive as small
integer codes into per-run dictionaries (`enum_code`), a lineup '31524' as the integer 31524, a
power pick list as a 10-bit mask, and each game's UUID as its `games` row id (`gk`) so that
child tables are joined to their game once, here, and Polars never hashes a UUID. Every count,
rate and model is computed in Polars / numpy from these frames.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb
import polars as pl

from replays.vocabulary import POWERS

from .cuts import Cut
from .sql import sql_literal

SLIDE_TABLES = ("slide_games", "slide_seats", "slide_rounds")
EPOCH_MONDAY = dt.date(1970, 1, 5)  # week numbers count Mondays from here
EPOCH_DAY = dt.date(1970, 1, 1)


@dataclass
class Data:
    games: pl.DataFrame  # one row per verified Slow6 game in the cut (codes, see GAMES_SQL)
    dicts: dict[str, list]  # dimension -> its values; a code is an index into this list
    pieces: pl.DataFrame  # game_pieces, keyed by gk
    powers_used: pl.DataFrame  # game_powers rows with a used_turn, keyed by gk
    side_events: pl.DataFrame  # game_turns rows with a stun or a catch, keyed by gk
    quarantine: pl.DataFrame  # quarantined records (overview only, never analysed)
    slide: dict[str, pl.DataFrame]  # Slide games, seats and takes, when the store has them
    fingerprint: dict


def table_exists(con, name: str) -> bool:
    q = "SELECT count(*) FROM information_schema.tables WHERE table_name = ?"
    return con.execute(q, [name]).fetchone()[0] > 0


def fingerprint(con) -> dict:
    """Cheap summary of the inputs: when it is unchanged, so are the agg_* tables."""
    # child tables (turns, pieces, powers, seats, rounds) are written with their game, in the
    # same transaction: the tables with a received_at stand for them
    parts = ["games", "quarantine"] + (["slide_games"] if table_exists(con, "slide_games") else [])
    out = {}
    for t in parts:
        # the xor of the ids' hashes catches a swap that keeps the count and the latest time
        # (balance reverify moving one game out of the quarantine and another in)
        n, last, ids = con.execute(
            f"SELECT count(*), max(received_at), bit_xor(hash(game_id)) FROM {t}"
        ).fetchone()
        out[t] = [int(n), last.isoformat() if last is not None else None, int(ids or 0)]
    return out


def _pl(con, sql: str) -> pl.DataFrame:
    # .pl() is DuckDB's own Arrow hand-off to Polars: faster than fetching Arrow batches and
    # converting them here
    return con.sql(sql).pl()


def _enum(values: list[str]) -> str:
    # a type, not a value: it cannot be a parameter
    return "ENUM(" + ", ".join(sql_literal(v) for v in values) + ")"


DICTS_SQL = """
SELECT list(DISTINCT board ORDER BY board), list(DISTINCT variant ORDER BY variant),
       list(DISTINCT mode ORDER BY mode), list(DISTINCT platform ORDER BY platform),
       list(DISTINCT client_version ORDER BY client_version),
       list(DISTINCT reason ORDER BY reason),
       min(date_trunc('week', ended_at))::DATE, max(date_trunc('week', ended_at))::DATE
FROM games g WHERE game = 'slow6' AND {where}
"""

GAMES_SQL = """
SELECT rowid::UINTEGER AS gk,
       enum_code(board::VARCHAR::{board}) AS board_c,
       board,
       enum_code(variant::{variant}) AS variant_c,
       enum_code(mode::{mode}) AS mode_c,
       coalesce(ai_level, 0)::UTINYINT AS ai_level_c,
       ai_side,
       enum_code(platform::{platform}) AS platform_c,
       enum_code(client_version::{client_version}) AS client_version_c,
       ((date_trunc('week', ended_at)::DATE - DATE '1970-01-05') // 7
        - {week0})::USMALLINT AS week_c,
       (ended_at::DATE - DATE '1970-01-01')::INTEGER AS day_n,
       "first", winner,
       enum_code(reason::{reason}) AS reason_c,
       turns,
       lineup_0::UINTEGER AS lineup_0,
       lineup_1::UINTEGER AS lineup_1,
       list_reduce(list_transform(powers_0, x -> (1::USMALLINT << enum_code(x::{power}))),
                   (a, b) -> a | b) AS mask_0,
       list_reduce(list_transform(powers_1, x -> (1::USMALLINT << enum_code(x::{power}))),
                   (a, b) -> a | b) AS mask_1,
       challenge_id
FROM games g WHERE game = 'slow6' AND {where}
"""

PIECES_SQL = """
SELECT g.rowid::UINTEGER AS gk, p.side, p.rank, p.promoted_turn, p.removed_turn IS NULL AS alive,
       p.revealed_turn, p.moves, p.stunned, p.home
FROM game_pieces p JOIN games g USING (game_id) WHERE g.game = 'slow6' AND {where}
"""

POWERS_SQL = """
SELECT g.rowid::UINTEGER AS gk, w.side, enum_code(w.power::{power}) AS power_c, w.used_turn
FROM game_powers w JOIN games g USING (game_id)
WHERE w.used_turn IS NOT NULL AND g.game = 'slow6' AND {where}
"""

EVENTS_SQL = """
SELECT g.rowid::UINTEGER AS gk, t.side, t.stuns, t.catches
FROM game_turns t JOIN games g USING (game_id)
WHERE (t.stuns > 0 OR t.catches > 0) AND g.game = 'slow6' AND {where}
"""

QUARANTINE_SQL = """
SELECT game, rule, mode, platform, client_version, CAST(ended_at AS DATE) AS day
FROM quarantine q WHERE {where}
"""


SLIDE_GAMES_SQL = """
SELECT rowid::UINTEGER AS gk, players, "first", match_id, match_game, mode, platform,
       client_version, winners, shared, best_score,
       CAST(date_trunc('week', ended_at) AS DATE) AS week, ended_at
FROM slide_games q WHERE {where}
"""

SLIDE_SEATS_SQL = """
SELECT q.rowid::UINTEGER AS gk, s.seat, s.seat_from_first, s.score, s.cards_left, s.won,
       s.groups_removed, s.groups
FROM slide_seats s JOIN slide_games q USING (game_id) WHERE {where}
"""

SLIDE_TAKES_SQL = """
SELECT q.rowid::UINTEGER AS gk, r.take_order, r.took, list_min(r.available) AS lowest,
       list_max(r.available) AS highest, len(list_distinct(r.available)) AS choices
FROM slide_rounds r JOIN slide_games q USING (game_id) WHERE r.had_choice AND {where}
"""


def _slide_where(cut: Cut) -> str:
    """Slide games have no board, variant or AI level: a cut on those selects Slow6 only."""
    if cut.board is not None or cut.variant is not None or cut.ai_level is not None:
        return "FALSE"
    return _quarantine_where(cut)


def read_slide(con, cut: Cut) -> dict[str, pl.DataFrame]:
    if not all(table_exists(con, t) for t in SLIDE_TABLES):
        return {}
    where = _slide_where(cut)
    return {
        "games": _pl(con, SLIDE_GAMES_SQL.format(where=where)),
        "seats": _pl(con, SLIDE_SEATS_SQL.format(where=where)),
        "takes": _pl(con, SLIDE_TAKES_SQL.format(where=where)),
    }


def _quarantine_where(cut: Cut) -> str:
    # quarantined records have no board, variant or AI level: only these dimensions apply
    sub = Cut(
        mode=cut.mode,
        platform=cut.platform,
        client_version=cut.client_version,
        date_from=cut.date_from,
        date_to=cut.date_to,
    )
    return sub.sql_where("q")


def read_dicts(con, where: str) -> dict[str, list]:
    row = con.execute(DICTS_SQL.format(where=where)).fetchone()
    boards, variants, modes, platforms, versions, reasons, w0, w1 = row
    if w0 is None:  # no games
        boards, variants, modes, platforms, versions, reasons = [5], [], [], [], [], []
        w0 = w1 = EPOCH_MONDAY
    weeks = [w0 + dt.timedelta(days=7 * i) for i in range((w1 - w0).days // 7 + 1)]
    return {
        "board": [int(b) for b in boards],
        "variant": variants or ["classic"],
        "mode": modes or ["online"],
        "ai_level": [None, 1, 2, 3, 4],
        "platform": platforms or ["web"],
        "client_version": versions or ["0"],
        "week": weeks,
        "reason": reasons or ["points"],
    }


def read(con: duckdb.DuckDBPyConnection, cut: Cut | None = None, *, only_games=False) -> Data:
    """Everything the jobs read, inside one read transaction (one consistent snapshot).
    only_games: read the games and leave the other frames empty (for benchmarks)."""
    cut = cut or Cut()
    where = cut.sql_where("g")
    rest = "FALSE" if only_games else where
    began = _begin(con)
    try:
        fp = fingerprint(con)
        dicts = read_dicts(con, where)
        enums = {k: _enum([str(x) for x in v]) for k, v in dicts.items() if k not in ("week",)}
        enums["power"] = _enum(list(POWERS))
        week0 = (dicts["week"][0] - EPOCH_MONDAY).days // 7
        games = _pl(con, GAMES_SQL.format(where=where, week0=week0, **enums))
        pieces = _pl(con, PIECES_SQL.format(where=rest))
        powers_used = _pl(con, POWERS_SQL.format(where=rest, power=enums["power"]))
        events = _pl(con, EVENTS_SQL.format(where=rest))
        q_where = "FALSE" if only_games else _quarantine_where(cut)
        quarantine = _pl(con, QUARANTINE_SQL.format(where=q_where))
        slide = {} if only_games else read_slide(con, cut)
    finally:
        if began:
            con.commit()
    return Data(games, dicts, pieces, powers_used, events, quarantine, slide, fp)


def _begin(con) -> bool:
    try:
        con.begin()
        return True
    except duckdb.TransactionException:
        return False  # the caller already holds a transaction: read inside it
