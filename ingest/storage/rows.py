"""Rows for the store's tables, from a record and what its replay found (facts).

Each table is described once (column names and Arrow types, in schema.sql order); the store
inserts one Arrow table per table (columnar insert, not row by row). A game contributes, per
table, plain tuples or, for its many-row tables (a Slow6 game's turns and pieces), a `Cols`:
its columns as the lists the replay counted them in, with no tuple per row. A judge worker
turns the rows of all the games it judged in one go into a `Block` of Arrow tables: the
server process then unpickles a few buffers instead of thousands of tuples, and converts
nothing.
"""

from __future__ import annotations

import array
import datetime as dt
import struct
import uuid
from collections import defaultdict
from operator import itemgetter
from typing import final

import pyarrow as pa

from replays.slide.facts import SlideFacts
from replays.slow6.facts import Slow6Facts

U8, U16, U64 = pa.uint8(), pa.uint16(), pa.uint64()
STR, BOOL, TS = pa.string(), pa.bool_(), pa.timestamp("us")
UUID = pa.uuid()  # DuckDB reads the arrow.uuid extension type as UUID

# table -> ((column, arrow type), ...) in the exact order of schema.sql (the insert is
# positional); game_id values are the UUID's 16 bytes (or its text, converted on the way).
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
        ("ruleset", STR),
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
        ("ended_at", TS), ("received_at", TS), ("ruleset", STR),
    ),
    "slide_games": (
        ("game_id", UUID), ("players", U8), ("first", U8), ("match_id", STR),
        ("match_game", U16), ("mode", STR), ("platform", STR), ("client_version", STR),
        ("winners", pa.list_(U8)), ("shared", BOOL), ("best_score", U16), ("rounds", U8),
        ("ended_at", TS), ("received_at", TS), ("ruleset", STR),
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


@final  # (so that `type(part) is Cols` tells a type checker what `part` is when it is not)
class Cols:
    """A game's rows of one table as columns: `columns` are the values of every column but
    game_id (each a sequence of `n`), and every row's game_id is `gid` (the UUID's 16 bytes).
    The sequences may be the facts' own lists: read them, do not change them."""

    __slots__ = ("gid", "n", "columns")

    def __init__(self, gid: bytes | str, n: int, columns: list):
        self.gid = gid if isinstance(gid, bytes) else uuid.UUID(gid).bytes
        self.n = n
        self.columns = columns


Rows = dict[str, list[tuple] | Cols]  # a game's rows, per table
_first = itemgetter(0)


def parse_time(text: str) -> dt.datetime:
    """An upload-format timestamp (UTC, 'Z' or '+00:00', any fraction) as a naive UTC datetime."""
    try:
        return dt.datetime.fromisoformat(text).replace(tzinfo=None)  # C speed; UTC by the format
    except ValueError:  # a form fromisoformat does not take: do it by hand
        main, _, frac = text[: -1 if text.endswith("Z") else -6].partition(".")
        stamp = dt.datetime.strptime(main, "%Y-%m-%dT%H:%M:%S")
        return stamp.replace(microsecond=int(frac[:6].ljust(6, "0"))) if frac else stamp


def ruleset_of(record: dict) -> str:
    """The ruleset a record names (rulesets.md RS2.1): what it is judged under, or, for an
    RS5.1 quarantine, the one it asked for."""
    name = record.get("ruleset", "standard")
    return name if isinstance(name, str) else "standard"


def slow6_game_row(gid: bytes | str, record: dict, facts: Slow6Facts, received) -> tuple:
    """The game's row of `games`."""
    rules, client = record["rules"], record["client"]
    ai, challenge, picks = record["ai"], record["challenge"], record["powers"]
    variant = "hidden" if rules["hidden"] else "powers" if rules["powers"] else "classic"
    lineups = ["".join(map(str, lineup)) for lineup in record["lineups"]]
    return (
        gid, "slow6", rules["board"], rules["powers"], rules["hidden"], variant, record["mode"],
        ai["side"] if ai else None, ai["level"] if ai else None,
        challenge["id"] if challenge else None, client["platform"], client["version"],
        record["first"], lineups[0], lineups[1],
        picks[0] if picks else None, picks[1] if picks else None,
        facts.winner, facts.reason, facts.points[0], facts.points[1], len(record["turns"]),
        parse_time(record["ended_at"]), received, ruleset_of(record),
    )  # fmt: skip


def slow6_rows(gid: bytes | str, record: dict, facts: Slow6Facts, received: dt.datetime) -> Rows:
    game = slow6_game_row(gid, record, facts, received)
    picks = record["powers"]
    t, p = facts.turn_columns, facts.piece_columns
    n = len(t.powers)
    moves = t.moves
    # list comprehensions: faster here than map/compress chains (3.11)
    move_1 = list(map(_first, moves)) if all(moves) else [m[0] if m else None for m in moves]
    move_2 = [m[1] if len(m) > 1 else None for m in moves]
    turns = Cols(
        gid, n,
        [range(n), t.sides(), t.powers, move_1, move_2, t.fights, t.removed, t.stuns,
         t.catches, t.promotions, t.trapped],
    )  # fmt: skip
    powers = []
    if picks:
        for side, side_picks in enumerate(picks):
            for power in side_picks:
                powers.append((gid, side, power, facts.power_used.get((side, power))))
    pieces = Cols(
        gid, len(p.side),
        [p.side, p.start, p.rank, p.promoted_turn, p.removed_turn, p.revealed_turn, p.moves,
         p.stunned, p.home],
    )  # fmt: skip
    return {"games": [game], "game_turns": turns, "game_powers": powers, "game_pieces": pieces}


def slide_rows(gid: bytes | str, record: dict, facts: SlideFacts, received: dt.datetime) -> Rows:
    client, match, players = record["client"], record["match"], facts.players
    winners = sorted(facts.winners)
    best = min(s.score for s in facts.seats) if facts.seats else 0
    game = (
        gid, players, facts.first, match["id"] if match else None,
        match["game"] if match else None, record["mode"], client["platform"], client["version"],
        winners, len(winners) > 1, best, len(record["rounds"]),
        parse_time(record["ended_at"]), received, ruleset_of(record),
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
        parse_time(record["ended_at"]), received, ruleset_of(record),
    )  # fmt: skip
    return {"quarantine": [row]}


def to_arrow(table: str, rows: list[tuple]) -> pa.Table:
    """One Arrow table from row tuples (columns in COLUMNS order)."""
    part = _Table(table, 1)
    part.add(0, rows)
    return part.arrow()


def _u16(values: list) -> bytes:
    if len(values) > 50_000:  # struct is faster, but wants them all as arguments
        return array.array("H", values).tobytes()
    return struct.pack(f"={len(values)}H", *values)


def _array(values: list, typ: pa.DataType) -> pa.Array:
    """`pa.array(values, type=typ)`; an integer column without nulls goes straight to its
    Arrow data buffer (native byte order, as Arrow's), 3-4x faster. Any value bytes() or
    struct refuse (a null, out of range) goes through pa.array, which decides as before."""
    if typ is U8 or typ is U16:
        try:
            data = bytes(values) if typ is U8 else _u16(values)
        except (TypeError, ValueError, struct.error):
            pass
        else:
            return pa.Array.from_buffers(typ, len(values), [None, pa.py_buffer(data)])
    return pa.array(values, type=typ)


def _ids(pieces: list[bytes], n: int) -> pa.Array:
    """The game_id column, from the UUIDs' bytes back to back."""
    data = b"".join(pieces)
    if len(data) != 16 * n:
        raise pa.ArrowInvalid("a game_id is not a UUID's 16 bytes")
    storage = pa.Array.from_buffers(pa.binary(16), n, [None, pa.py_buffer(data)])
    return pa.ExtensionArray.from_storage(UUID, storage)


class _Table:
    """One table's rows of several games on their way to Arrow: the games' `Cols`, and their
    tuples (consecutive games' in one list); `ends[i]`: the row game `i`'s rows end at (None:
    none of its rows are in this table)."""

    __slots__ = ("name", "n", "parts", "ends")

    def __init__(self, name: str, games: int):
        self.name = name
        self.n = 0
        self.parts: list[Cols | list[tuple]] = []
        self.ends: list[int | None] = [None] * games

    def add(self, i: int, part: list[tuple] | Cols) -> None:
        if type(part) is Cols:
            if part.n:
                self.parts.append(part)
                self.n += part.n
        elif part:
            parts = self.parts
            if parts and type(parts[-1]) is list:
                parts[-1].extend(part)
            else:
                parts.append(list(part))
            self.n += len(part)
        self.ends[i] = self.n

    def arrow(self) -> pa.Table:
        if not self.n:
            return SCHEMAS[self.name].empty_table()
        spec = COLUMNS[self.name]
        ids, runs = [], []  # the game_id column's bytes; the other columns' values, per part
        for part in self.parts:
            if type(part) is Cols:
                ids.append(part.gid * part.n)
                columns = part.columns
            else:
                columns = list(zip(*part, strict=True))
                gids = columns.pop(0)
                try:
                    ids.append(b"".join(gids))
                except TypeError:  # ids as text (reverify, raw rows)
                    ids.append(b"".join(uuid.UUID(g).bytes if isinstance(g, str) else g
                                        for g in gids))  # fmt: skip
            if len(columns) != len(spec) - 1:
                raise ValueError(f"{self.name}: {len(columns) + 1} columns, not {len(spec)}")
            runs.append(columns)
        arrays = [_ids(ids, self.n)]
        for (_, typ), parts in zip(spec[1:], zip(*runs, strict=True), strict=True):
            values = []
            for part in parts:  # extend: twice as fast as chain.from_iterable
                values.extend(part)
            arrays.append(_array(values, typ))
        return pa.Table.from_arrays(arrays, names=[name for name, _ in spec])


class Block:
    """The rows of several games as one Arrow table per table; game `i`'s rows of a table
    end at row `ends[table][i]` of it (None: it has none there).

    It pickles its tables as Arrow IPC record batches (a judge worker sends it to the
    server): a tenth of the CPU of pickling the Arrow tables themselves, a column at a time,
    and a sixth of it to unpickle (1 µs a game each way)."""

    __slots__ = ("size", "tables", "ends")

    def __init__(self, games: list[Rows]):
        size = len(games)
        merged: dict[str, _Table] = {}
        for i, game in enumerate(games):
            for name, part in game.items():
                table = merged.get(name)
                if table is None:
                    table = merged[name] = _Table(name, size)
                table.add(i, part)
        self.size = size
        self.tables = {name: t.arrow() for name, t in merged.items() if t.n}
        self.ends = {name: merged[name].ends for name in self.tables}

    def take(self, games: list[int]) -> dict[str, pa.Table]:
        """The rows of the games `games` (indexes, ascending)."""
        if len(games) == self.size:
            return self.tables
        out = {}
        for table, whole in self.tables.items():
            starts, at = [], 0  # game i's rows are rows starts[i]:starts[i + 1]
            for end in self.ends[table]:
                starts.append(at)
                at = at if end is None else end
            starts.append(at)
            picked = [r for i in games for r in range(starts[i], starts[i + 1])]
            if picked:
                out[table] = whole.take(picked)
        return out

    def __reduce__(self):
        # each table's one record batch, without its schema (known here: SCHEMAS): a third
        # of the cost of an IPC stream (schema included) for blocks of ~50 games
        tables = {name: _batch_bytes(table) for name, table in self.tables.items()}
        return _unpickle_block, (self.size, tables, self.ends)


SCHEMAS = {table: pa.schema(spec) for table, spec in COLUMNS.items()}


def _batch_bytes(table: pa.Table) -> bytes:
    (batch,) = table.to_batches()  # built from one array a column
    return batch.serialize().to_pybytes()


def _unpickle_block(size: int, tables: dict, ends: dict) -> Block:
    block = Block.__new__(Block)
    block.size, block.ends = size, ends
    block.tables = {
        name: pa.Table.from_batches([pa.ipc.read_record_batch(pa.py_buffer(data), SCHEMAS[name])])
        for name, data in tables.items()
    }
    return block


class Part:
    """A game's rows inside a `Block` (what a judge worker hands back as a game's rows)."""

    __slots__ = ("block", "index")

    def __init__(self, block: Block, index: int):
        self.block = block
        self.index = index

    def __reduce__(self):  # lighter than the default pickling of __slots__ (a dict per part)
        return Part, (self.block, self.index)


def share_block(games: list) -> None:
    """Replace the rows of `games` (objects with `.rows`) by their `Part`s of one new
    `Block` (pickled once with them: the parts share it)."""
    if games:
        block = Block([g.rows for g in games])
        for i, g in enumerate(games):
            g.rows = Part(block, i)


def tables_of(games: list[Rows | Part]) -> dict[str, pa.Table]:
    """One Arrow table per table for the rows of several games, rows or parts of blocks."""
    own: list[Rows] = []
    blocks: dict[int, tuple[Block, list[int]]] = {}
    for game in games:
        if isinstance(game, Part):
            blocks.setdefault(id(game.block), (game.block, []))[1].append(game.index)
        else:
            own.append(game)
    parts: dict[str, list[pa.Table]] = defaultdict(list)
    if own:
        for table, whole in Block(own).tables.items():
            parts[table].append(whole)
    for block, indexes in blocks.values():
        for table, whole in block.take(sorted(indexes)).items():
            parts[table].append(whole)
    return {t: ts[0] if len(ts) == 1 else pa.concat_tables(ts) for t, ts in parts.items()}
