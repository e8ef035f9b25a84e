"""Rows for the store's tables, from a record and what its replay found (facts).

Each table is described once (column names and Arrow types, in schema.sql order); a game
contributes plain tuples, and the store inserts one Arrow table per table (columnar insert,
not row by row). A judge worker turns the tuples of all the games it judged in one go into
a `Block` of Arrow tables: the server process then unpickles a few buffers instead of
thousands of tuples, and converts nothing.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections import defaultdict

import pyarrow as pa

from replays.slide.facts import SlideFacts
from replays.slow6.facts import Slow6Facts

U8, U16, U64 = pa.uint8(), pa.uint16(), pa.uint64()
STR, BOOL, TS = pa.string(), pa.bool_(), pa.timestamp("us")
UUID = pa.uuid()  # DuckDB reads the arrow.uuid extension type as UUID

# table -> ((column, arrow type), ...) in the exact order of ingest/schema.sql (the insert is
# positional); game_id values are the UUID's 16 bytes (or its text, converted in to_arrow).
COLUMNS: dict[str, tuple[tuple[str, pa.DataType], ...]] = {
    "raw_records": (
        ("game_id", UUID), ("game", STR), ("status", STR), ("content_hash", U64),
        ("record", pa.binary()), ("codec", U8), ("received_at", TS),
    ),
    "games": (
        ("game_id", UUID), ("game", STR), ("board", U8), ("powers", BOOL), ("hidden", BOOL),
        ("variant", STR), ("mode", STR), ("ai_side", U8), ("ai_level", U8),
        ("challenge_id", STR), ("platform", STR), ("client_version", STR), ("first", U8),
        ("lineup_0", STR), ("lineup_1", STR), ("powers_0", pa.list_(STR)),
        ("powers_1", pa.list_(STR)), ("winner", U8), ("reason", STR), ("points_0", U16),
        ("points_1", U16), ("turns", U16), ("ended_at", TS), ("received_at", TS),
    ),
    "game_turns": (
        ("game_id", UUID), ("turn", U16), ("side", U8), ("power", STR), ("move_1", STR),
        ("move_2", STR), ("fights", U8), ("removed", U8), ("stuns", U8), ("catches", U8),
        ("promotions", U8), ("trapped", U8),
    ),
    "game_powers": (("game_id", UUID), ("side", U8), ("power", STR), ("used_turn", U16)),
    "game_pieces": (
        ("game_id", UUID), ("side", U8), ("start", STR), ("rank", U8), ("promoted_turn", U16),
        ("removed_turn", U16), ("revealed_turn", U16), ("moves", U16), ("stunned", U8),
        ("home", BOOL),
    ),
    "quarantine": (
        ("game_id", UUID), ("game", STR), ("rule", STR), ("turn", U16), ("seat", U8),
        ("message", STR), ("platform", STR), ("client_version", STR), ("mode", STR),
        ("ended_at", TS), ("received_at", TS),
    ),
    "slide_games": (
        ("game_id", UUID), ("players", U8), ("first", U8), ("match_id", STR),
        ("match_game", U16), ("mode", STR), ("platform", STR), ("client_version", STR),
        ("winners", pa.list_(U8)), ("shared", BOOL), ("best_score", U16), ("rounds", U8),
        ("ended_at", TS), ("received_at", TS),
    ),
    "slide_seats": (
        ("game_id", UUID), ("players", U8), ("seat", U8), ("seat_from_first", U8),
        ("score", U16), ("cards_left", U8), ("won", BOOL), ("groups_removed", U8),
        ("cards_removed", U8),
        ("groups", pa.list_(pa.struct([("value", U8), ("size", U8)]))),
    ),
    "slide_rounds": (
        ("game_id", UUID), ("round", U8), ("seat", U8), ("take_order", U8), ("revealed", U8),
        ("reveal_row", U8), ("reveal_col", U8), ("took", U8), ("had_choice", BOOL),
        ("available", pa.list_(U8)), ("side", STR),
    ),
}  # fmt: skip

# the tables a verified game of each kind has rows in (raw_records aside)
GAME_TABLES = {
    "slow6": ("games", "game_turns", "game_powers", "game_pieces"),
    "slide": ("slide_games", "slide_seats", "slide_rounds"),
}
ALL_GAME_TABLES = GAME_TABLES["slow6"] + GAME_TABLES["slide"] + ("quarantine",)

Rows = dict[str, list[tuple]]


def parse_time(text: str) -> dt.datetime:
    """An upload-format timestamp (UTC, 'Z' or '+00:00', any fraction) as a naive UTC datetime."""
    try:
        return dt.datetime.fromisoformat(text).replace(tzinfo=None)  # C speed; UTC by the format
    except ValueError:  # a form fromisoformat does not take: do it by hand
        main, _, frac = text[: -1 if text.endswith("Z") else -6].partition(".")
        stamp = dt.datetime.strptime(main, "%Y-%m-%dT%H:%M:%S")
        return stamp.replace(microsecond=int(frac[:6].ljust(6, "0"))) if frac else stamp


def slow6_rows(gid: bytes | str, record: dict, facts: Slow6Facts, received: dt.datetime) -> Rows:
    rules, client = record["rules"], record["client"]
    ai, challenge, picks = record["ai"], record["challenge"], record["powers"]
    variant = "hidden" if rules["hidden"] else "powers" if rules["powers"] else "classic"
    lineups = ["".join(map(str, lineup)) for lineup in record["lineups"]]
    game = (
        gid, "slow6", rules["board"], rules["powers"], rules["hidden"], variant, record["mode"],
        ai["side"] if ai else None, ai["level"] if ai else None,
        challenge["id"] if challenge else None, client["platform"], client["version"],
        record["first"], lineups[0], lineups[1],
        picks[0] if picks else None, picks[1] if picks else None,
        facts.winner, facts.reason, facts.points[0], facts.points[1], len(record["turns"]),
        parse_time(record["ended_at"]), received,
    )  # fmt: skip
    turns = [
        (gid, i, t.side, t.power, t.moves[0] if t.moves else None,
         t.moves[1] if len(t.moves) > 1 else None,
         t.fights, t.removed, t.stuns, t.catches, t.promotions, t.trapped)
        for i, t in enumerate(facts.turns)
    ]  # fmt: skip
    powers = []
    if picks:
        for side, side_picks in enumerate(picks):
            for power in side_picks:
                powers.append((gid, side, power, facts.power_used.get((side, power))))
    pieces = [
        (gid, p.side, p.start, p.rank, p.promoted_turn, p.removed_turn, p.revealed_turn,
         p.moves, p.stunned, p.home)
        for p in facts.pieces
    ]  # fmt: skip
    return {"games": [game], "game_turns": turns, "game_powers": powers, "game_pieces": pieces}


def slide_rows(gid: bytes | str, record: dict, facts: SlideFacts, received: dt.datetime) -> Rows:
    client, match, players = record["client"], record["match"], facts.players
    winners = sorted(facts.winners)
    best = min(s.score for s in facts.seats) if facts.seats else 0
    game = (
        gid, players, facts.first, match["id"] if match else None,
        match["game"] if match else None, record["mode"], client["platform"], client["version"],
        winners, len(winners) > 1, best, len(record["rounds"]),
        parse_time(record["ended_at"]), received,
    )  # fmt: skip
    won = set(winners)
    seats = [
        (gid, players, s.seat, (s.seat - facts.first) % players, s.score, s.cards_left,
         s.seat in won, len(s.groups), sum(size for _, size in s.groups),
         [{"value": v, "size": n} for v, n in s.groups])
        for s in facts.seats
    ]  # fmt: skip
    rounds = [
        (gid, t.round, t.seat, t.order, t.revealed, t.reveal_pos[0], t.reveal_pos[1], t.took,
         t.choice, list(t.available), t.side)
        for t in facts.takes
    ]  # fmt: skip
    return {"slide_games": [game], "slide_seats": seats, "slide_rounds": rounds}


def game_rows(gid: bytes | str, record: dict, facts, received: dt.datetime) -> Rows:
    if record["game"] == "slow6":
        return slow6_rows(gid, record, facts, received)
    return slide_rows(gid, record, facts, received)


def quarantine_row(gid: bytes | str, record: dict, verdict, received: dt.datetime) -> Rows:
    client = record["client"]
    row = (
        gid, record["game"], verdict.rule or "format", verdict.turn, verdict.seat,
        verdict.message or "", client["platform"], client["version"], record["mode"],
        parse_time(record["ended_at"]), received,
    )  # fmt: skip
    return {"quarantine": [row]}


def to_arrow(table: str, rows: list[tuple]) -> pa.Table:
    """One Arrow table from row tuples (columns in COLUMNS order)."""
    spec = COLUMNS[table]
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(spec)
    if columns[0] and isinstance(columns[0][0], str):  # ids as text (reverify, raw rows)
        columns[0] = [uuid.UUID(g).bytes for g in columns[0]]
    return pa.table(
        {name: pa.array(col, type=typ) for (name, typ), col in zip(spec, columns, strict=True)}
    )


class Block:
    """The rows of several games as one Arrow table per table; game `i`'s rows of a table
    are rows `spans[table][i]` = (start, stop) of it."""

    __slots__ = ("size", "tables", "spans")

    def __init__(self, games: list[Rows]):
        merged: dict[str, list[tuple]] = defaultdict(list)
        spans: dict[str, list[tuple[int, int]]] = {}
        for i, game in enumerate(games):
            for table, tuples in game.items():
                rows = merged[table]
                if table not in spans:
                    spans[table] = [(0, 0)] * len(games)
                spans[table][i] = (len(rows), len(rows) + len(tuples))
                rows.extend(tuples)
        self.size = len(games)
        self.tables = {table: to_arrow(table, rows) for table, rows in merged.items() if rows}
        self.spans = spans

    def take(self, games: list[int]) -> dict[str, pa.Table]:
        """The rows of the games `games` (indexes, ascending)."""
        if len(games) == self.size:
            return self.tables
        out = {}
        for table, whole in self.tables.items():
            spans = self.spans[table]
            picked = [r for i in games for r in range(*spans[i])]
            if picked:
                out[table] = whole.take(picked)
        return out


class Part:
    """A game's rows inside a `Block` (what a judge worker hands back as a game's rows)."""

    __slots__ = ("block", "index")

    def __init__(self, block: Block, index: int):
        self.block = block
        self.index = index


def share_block(games: list) -> None:
    """Replace the row tuples of `games` (objects with `.rows`) by their `Part`s of one new
    `Block` (pickled once with them: the parts share it)."""
    if games:
        block = Block([g.rows for g in games])
        for i, g in enumerate(games):
            g.rows = Part(block, i)


def tables_of(games: list[Rows | Part]) -> dict[str, pa.Table]:
    """One Arrow table per table for the rows of several games, tuples or parts of blocks."""
    tuples: dict[str, list[tuple]] = defaultdict(list)
    blocks: dict[int, tuple[Block, list[int]]] = {}
    for game in games:
        if isinstance(game, Part):
            blocks.setdefault(id(game.block), (game.block, []))[1].append(game.index)
        else:
            for table, rows in game.items():
                tuples[table].extend(rows)
    parts: dict[str, list[pa.Table]] = defaultdict(list)
    for table, rows in tuples.items():
        if rows:
            parts[table].append(to_arrow(table, rows))
    for block, indexes in blocks.values():
        for table, whole in block.take(sorted(indexes)).items():
            parts[table].append(whole)
    return {t: ts[0] if len(ts) == 1 else pa.concat_tables(ts) for t, ts in parts.items()}
