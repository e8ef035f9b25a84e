"""A Slow6 game's rows are built column by column (rows.Cols from the replay's own lists, no
tuple per turn or piece) and a judge worker's Block pickles as Arrow IPC: the Arrow tables
must be exactly those of the tuple path they replaced, which is kept here as the reference
(facts with a TurnFacts / PieceFacts per turn and piece, a tuple per row, one pa.array per
column of the transposed tuples)."""

from __future__ import annotations

import copy
import pickle
import uuid
from itertools import compress, count, cycle, repeat
from operator import itemgetter
from types import SimpleNamespace

import pyarrow as pa
import pytest
from support import SLIDE, SLOW6, dumps, example_records, fresh

from ingest.server import workers
from ingest.server.pipeline import Judge, Judged, utcnow
from ingest.storage import Pending, rows
from replays.slide.simulate import simulate_games as simulate_slide
from replays.slow6 import verify
from replays.slow6.facts import PieceFacts, TurnFacts
from replays.slow6.position import Counters
from replays.slow6.simulate import simulate_games

SLOW6_TABLES = rows.GAME_TABLES["slow6"]


# --- the reference: the tuple path as it was --------------------------------------------------


def reference_facts(record: dict):
    """The replay's facts as the tuple path had them: one object per turn and per piece."""
    pos = verify.setup(record)
    turns = record["turns"]
    pos.counters = Counters(len(turns), len(pos.side))
    pos.play_log(turns, verify.play_turn)
    verify.judge_result(pos, record["result"])
    result = record["result"]
    winner = pos.winner if pos.over else result["winner"]
    reason = pos.reason if pos.over else result["reason"]
    powers = list(map(dict.get, turns, repeat("power")))
    moves = map(tuple, map(itemgetter("moves"), turns))
    sides = cycle((record["first"], 1 - record["first"]))
    c = pos.counters
    turn_facts = list(
        map(TurnFacts, sides, powers, moves, c.fights, c.removed, c.stuns, c.catches,
            c.promotions, c.trapped)
    )  # fmt: skip
    used = {}
    for i in compress(count(), powers):
        used[(turn_facts[i].side, powers[i])] = i
    removed = [at if sq < 0 else None for sq, at in zip(pos.pos, pos.removed_at, strict=True)]
    home = [False] * len(removed)
    if pos.home_pid is not None:
        home[pos.home_pid] = True
    pieces = list(
        map(PieceFacts, pos.side, map(verify.SQUARE_NAMES[pos.n].__getitem__, pos.start),
            pos.orig, c.promoted_at, removed, c.revealed_at, c.moved, c.stunned_count, home)
    )  # fmt: skip
    return winner, reason, pos.points(), turn_facts, pieces, used


def reference_rows(gid: bytes, record: dict, received) -> dict[str, list[tuple]]:
    winner, reason, points, turn_facts, piece_facts, used = reference_facts(record)
    # the games row did not change with the columns: the code's own, from the reference facts
    facts = SimpleNamespace(winner=winner, reason=reason, points=points)
    game = rows.slow6_game_row(gid, record, facts, received)
    picks = record["powers"]
    turns = [
        (gid, i, t.side, t.power, t.moves[0] if t.moves else None,
         t.moves[1] if len(t.moves) > 1 else None,
         t.fights, t.removed, t.stuns, t.catches, t.promotions, t.trapped)
        for i, t in enumerate(turn_facts)
    ]  # fmt: skip
    powers = []
    if picks:
        for side, side_picks in enumerate(picks):
            for power in side_picks:
                powers.append((gid, side, power, used.get((side, power))))
    pieces = [
        (gid, p.side, p.start, p.rank, p.promoted_turn, p.removed_turn, p.revealed_turn,
         p.moves, p.stunned, p.home)
        for p in piece_facts
    ]  # fmt: skip
    return {"games": [game], "game_turns": turns, "game_powers": powers, "game_pieces": pieces}


def reference_arrow(table: str, tuples: list[tuple]) -> pa.Table:
    spec = rows.COLUMNS[table]
    columns = list(zip(*tuples, strict=True))
    if isinstance(columns[0][0], str):
        columns[0] = [uuid.UUID(g).bytes for g in columns[0]]
    return pa.table(
        {name: pa.array(col, type=typ) for (name, typ), col in zip(spec, columns, strict=True)}
    )


def reference_tables(games: list[dict[str, list[tuple]]]) -> dict[str, pa.Table]:
    merged: dict[str, list[tuple]] = {}
    for game in games:
        for table, tuples in game.items():
            merged.setdefault(table, []).extend(tuples)
    return {t: reference_arrow(t, tuples) for t, tuples in merged.items() if tuples}


def assert_same(got: dict[str, pa.Table], want: dict[str, pa.Table]) -> None:
    assert sorted(got) == sorted(want)
    for table, expected in want.items():
        assert got[table].schema == expected.schema, table
        assert got[table].equals(expected), table


# --- the games -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def games():
    """Judged lines (the new path) and each one's reference rows (the tuple path)."""
    records = list(simulate_games(36, powers=True, seed=3, max_level=1))
    records += simulate_games(8, board=7, hidden=True, seed=4, max_level=1)
    records += simulate_games(8, board=5, hidden=True, powers=False, seed=6, max_level=1)
    records += [fresh(r) for r in SLOW6]
    records += [r for p in (2, 4) for r in simulate_slide(3, p, seed=p)] + [fresh(SLIDE[0])]
    records += [fresh(r) for r in example_records("slow6-invalid")[:4]]  # quarantined
    judge, received = Judge(), utcnow()
    judged = [judge.judge(i, dumps(r), received) for i, r in enumerate(records)]
    assert all(j.pending is not None for j in judged)
    references = []
    for record, j in zip(records, judged, strict=True):
        p = j.pending
        if record["game"] == "slow6" and p.status == "verified":
            assert set(p.rows) == set(SLOW6_TABLES)
            references.append(reference_rows(uuid.UUID(p.gid).bytes, record, received))
        else:  # slide and quarantine rows are tuples on both paths
            assert all(type(v) is list for v in p.rows.values())
            references.append(copy.deepcopy(p.rows))
    verified = [r for r, j in zip(records, judged, strict=True) if j.pending.status == "verified"]
    slow6 = [r for r in verified if r["game"] == "slow6"]
    turns = [t for r in slow6 for t in r["turns"]]
    # what the columns have to get right is there: passes, doubles, powers, both boards,
    # hidden and challenge games, removed, promoted, home pieces, Slide and quarantine rows
    assert any(not t["moves"] for t in turns) and any(len(t["moves"]) == 2 for t in turns)
    assert {r["rules"]["board"] for r in slow6} == {5, 7}
    assert any(r["rules"]["hidden"] for r in slow6) and any(r["challenge"] for r in slow6)
    assert any(r["game"] == "slide" for r in verified)
    assert any(j.pending.status == "quarantined" for j in judged)
    pieces = reference_tables(references)["game_pieces"]
    for column in ("promoted_turn", "removed_turn", "revealed_turn"):
        assert pieces[column].null_count < len(pieces)
    assert pieces["home"].to_pylist().count(True) >= 1
    return judged, references


def test_facts_per_turn_and_piece_are_still_there_for_whoever_wants_objects():
    for record in [*simulate_games(6, powers=True, seed=8, max_level=1), *SLOW6]:
        verdict, facts = verify.replay(record, collect=True)
        assert verdict.ok
        winner, reason, points, turn_facts, piece_facts, used = reference_facts(record)
        assert (facts.winner, facts.reason, facts.points) == (winner, reason, points)
        assert facts.turns == turn_facts and facts.pieces == piece_facts
        assert facts.power_used == used


@pytest.mark.slow
def test_a_block_holds_the_tables_the_tuples_made(games):
    judged, references = games
    items = [j.pending for j in judged]
    block = rows.Block([p.rows for p in items])
    assert_same(block.tables, reference_tables(references))
    # and one game at a time, as the single-record path builds them (tables_of)
    for p, ref in zip(items, references, strict=True):
        assert_same(rows.tables_of([p.rows]), reference_tables([ref]))


@pytest.mark.slow
@pytest.mark.parametrize(
    "pick",
    [
        lambda n: [0],
        lambda n: [n - 1],
        lambda n: list(range(0, n, 3)),
        lambda n: list(range(1, n - 1)),
        lambda n: [i for i in range(n) if i % 7 in (2, 3)],
    ],
)
def test_a_blocks_games_taken_alone_have_the_rows_their_tuples_made(games, pick):
    judged, references = games
    block = rows.Block([j.pending.rows for j in judged])
    indexes = pick(len(judged))
    want = reference_tables([references[i] for i in indexes])
    assert_same(block.take(indexes), want)
    # the same once the block has crossed a process boundary (what the pool does)
    assert_same(pickle.loads(pickle.dumps(block)).take(indexes), want)


PENDING_FIELDS = ("gid", "key", "game", "content_hash", "codec", "blob", "status", "received")


def assert_arrived(back: list, sent: list) -> None:
    assert type(back) is list and len(back) == len(sent)
    for got, j in zip(back, sent, strict=True):
        assert isinstance(got, Judged)
        assert (got.result, got.json_ok) == (j.result, j.json_ok)
        if j.pending is None:
            assert got.pending is None
            continue
        assert isinstance(got.pending, Pending)
        assert [getattr(got.pending, f) for f in PENDING_FIELDS] == [
            getattr(j.pending, f) for f in PENDING_FIELDS
        ]


@pytest.mark.slow
def test_what_a_worker_sends_arrives_whole_and_stores_the_same_tables(games):
    judged, references = games
    chunk = copy.deepcopy(judged)
    rejected = Judge().judge(99, b'{"game": "slow6"', utcnow())  # no pending: not stored
    chunk.insert(5, rejected)
    rows.share_block([j.pending for j in chunk if j.pending is not None])
    back = pickle.loads(pickle.dumps(workers._Chunk(chunk), pickle.HIGHEST_PROTOCOL))
    assert_arrived(back, chunk)
    assert back[5].pending is None and not back[5].json_ok
    del back[5]
    assert all(isinstance(j.pending.rows, rows.Part) for j in back)
    assert len({id(j.pending.rows.block) for j in back}) == 1  # one block, pickled once
    assert [j.pending.rows.index for j in back] == list(range(len(back)))
    # the store's mix: some games of the block (a duplicate left out), then rows of its own
    alone = [judged[3].pending.rows, judged[-1].pending.rows]
    parts = [j.pending.rows for i, j in enumerate(back) if i % 5 != 1]
    want = reference_tables(
        [references[3], references[-1]] + [r for i, r in enumerate(references) if i % 5 != 1]
    )
    assert_same(rows.tables_of(parts + alone), want)


@pytest.mark.slow
def test_a_chunk_whose_rows_are_not_one_blocks_parts_still_pickles_whole(games):
    judged, references = games
    plain = copy.deepcopy(judged[:6])  # rows as the games made them (Cols, tuples)
    back = pickle.loads(pickle.dumps(workers._Chunk(plain), pickle.HIGHEST_PROTOCOL))
    assert_arrived(back, plain)
    assert_same(rows.tables_of([j.pending.rows for j in back]), reference_tables(references[:6]))
    mixed = copy.deepcopy(judged[:6])
    rows.share_block([j.pending for j in mixed[2:]])  # two of their own, four of a block
    back = pickle.loads(pickle.dumps(workers._Chunk(mixed), pickle.HIGHEST_PROTOCOL))
    assert_arrived(back, mixed)
    assert_same(rows.tables_of([j.pending.rows for j in back]), reference_tables(references[:6]))
    assert pickle.loads(pickle.dumps(workers._Chunk([]))) == []


@pytest.mark.slow
def test_rows_that_do_not_fit_the_tables_still_fail_their_insert(games):
    judged, _ = games
    game = copy.copy(judged[0].pending.rows)
    for bad in (
        [("not", "a", "row")],  # a text game_id that is no UUID
        [(b"short", 1, 0, None, "a1-a2", None, 0, 0, 0, 0, 0, 0)],  # not 16 bytes
        [(b"\0" * 16, 1, 0)],  # too few columns
        [(b"\0" * 16, 70000, 0, None, "a1-a2", None, 0, 0, 0, 0, 0, 0)],  # turn over uint16
        [(b"\0" * 16, 1, -1, None, "a1-a2", None, 0, 0, 0, 0, 0, 0)],  # side under uint8
    ):
        with pytest.raises((ValueError, TypeError, OverflowError, pa.ArrowException)):
            rows.tables_of([{**game, "game_turns": bad}])
    nulls = [(b"\0" * 16, None, 0, None, "a1-a2", None, 0, None, 0, 0, 0, 0)]  # nulls are rows
    assert rows.tables_of([{"game_turns": nulls}])["game_turns"].equals(
        reference_arrow("game_turns", nulls)
    )
