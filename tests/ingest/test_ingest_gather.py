"""Small uploads through the gatherer (ingest/server/gather.py): judged in a judge process with
other requests', committed as one group; their verified games' rows rebuilt by the store.
In-process, with a real judge process and a real DuckDB file."""

from __future__ import annotations

import datetime as dt
import os
import signal
import threading

import pytest
from support import SLIDE, SLOW6, dumps, example_records, fresh, query, verdicts

from ingest.server.gather import Gatherer
from ingest.server.pipeline import Judge, settle
from ingest.server.workers import JudgePool
from ingest.storage import QUARANTINED, Store, rows

T0 = dt.datetime(2026, 11, 30, 12, 0, 0)
TABLES = ("raw_records", *rows.ALL_GAME_TABLES)
INVALID = example_records("slow6-invalid") + example_records("slide-invalid")


def mixed_records() -> list[dict]:
    """Verified Slow6 and Slide games, and games that break a rule (quarantined)."""
    return [fresh(r) for r in SLOW6[:12] + SLIDE[:6] + INVALID[:8]]


def dump(store: Store) -> dict[str, list[tuple]]:
    cur = store.reader()
    try:
        return {t: cur.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in TABLES}
    finally:
        cur.close()


@pytest.fixture
def gathered(tmp_path):
    """A store, its judge pool rebuilding rows, and a gatherer: as create_app wires them."""
    judge = Judge()
    store = Store(tmp_path / "g.duckdb", judge=judge)
    pool = JudgePool(1, judge)
    store.rebuild = pool.rows_many
    gather = Gatherer(store, judge)
    yield store, gather
    gather.close()
    pool.close()
    store.close()


def upload(gather: Gatherer, record: dict, received: dt.datetime = T0) -> dict:
    judged, outcomes = gather.judge_and_store([(0, dumps(record))], received)
    (answer,) = settle(judged, outcomes)
    return answer


@pytest.mark.slow
def test_gathered_games_store_the_same_rows_as_games_judged_on_their_own(gathered, tmp_path):
    store, gather = gathered
    records = mixed_records()
    for record in records:
        upload(gather, record)
    judge = Judge()
    with Store(tmp_path / "alone.duckdb") as alone:  # each judged here, with its rows
        for record in records:
            alone.ingest([judge.judge(0, dumps(record), T0).pending])
        want = dump(alone)
    got = dump(store)
    assert len(got["games"]) == 12 and len(got["slide_games"]) == 6
    assert len(got["quarantine"]) == 8
    assert got == want  # every table, every column: the rebuilt rows are the same rows


@pytest.mark.slow
def test_concurrent_uploads_each_get_the_answer_for_their_own_record(gathered):
    store, gather = gathered
    records = mixed_records() * 2  # each record twice: one accepted, one duplicate
    twin = fresh(SLOW6[20], game_id=records[0]["game_id"])  # same id, other content
    bad = b'{"game": "slow6", "game_id": 7}'
    answers: dict[int, list] = {}
    expected = {}
    for i, record in enumerate(records):
        verdict = Judge().judge(0, dumps(record), T0).result
        expected[i] = (record["game_id"], verdict["verdict"], verdict["rule"], verdict["turn"])

    def client(k: int) -> None:
        for i in range(k, len(records), 8):
            judged, outcomes = gather.judge_and_store([(0, dumps(records[i]))], T0)
            answers[i] = settle(judged, outcomes)
        if k == 0:
            answers["twin"] = settle(*gather.judge_and_store([(0, dumps(twin))], T0))
            answers["bad"] = settle(*gather.judge_and_store([(0, bad), (1, bad)], T0))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    half = len(records) // 2
    for i in range(len(records)):
        (answer,) = answers[i]
        got = (answer["game_id"], answer["verdict"], answer["rule"], answer["turn"])
        if answer["verdict"] == "duplicate":
            assert answer["game_id"] == expected[i][0]
        else:
            assert got == expected[i]
    for i in range(half):  # the two uploads of a record: exactly one is stored
        pair = [answers[i][0]["verdict"], answers[i + half][0]["verdict"]]
        assert pair.count("duplicate") == 1, pair
    assert answers["twin"][0]["verdict"] == "conflict"
    assert [a["verdict"] for a in answers["bad"]] == ["rejected", "rejected"]
    assert [a["line"] for a in answers["bad"]] == [0, 1]
    tables = dump(store)
    assert len(tables["raw_records"]) == half
    assert len(tables["games"]) + len(tables["slide_games"]) + len(tables["quarantine"]) == half


@pytest.mark.slow
def test_requests_judged_in_one_chunk_keep_their_own_receive_times(gathered, tmp_path):
    store, gather = gathered
    gate, running = threading.Event(), threading.Event()
    store.submit(lambda con: running.set() or gate.wait(10))  # holds the commit lock
    assert running.wait(10)
    records = [fresh(SLOW6[i]) for i in range(4)]
    times = [T0 + dt.timedelta(seconds=i) for i in range(4)]
    threads = [
        threading.Thread(target=upload, args=(gather, r, at))
        for r, at in zip(records, times, strict=True)
    ]
    # The first is taken, judged and waits for the lock; started once it is taken, the rest
    # queue behind it (one of them may go to the judge process first: the gatherer sends a
    # chunk before it commits the one before) and are taken as one chunk.
    threads[0].start()
    for _ in range(1000):
        if not gather._queue:
            break
        threading.Event().wait(0.01)
    threading.Event().wait(0.5)
    for t in threads[1:]:
        t.start()
    for _ in range(1000):
        if len(gather._queue) >= 2:
            break
        threading.Event().wait(0.01)
    assert len(gather._queue) >= 2
    gate.set()
    for t in threads:
        t.join()
    cur = store.reader()
    got = dict(cur.execute("SELECT game_id::VARCHAR, received_at FROM games").fetchall())
    raw = dict(cur.execute("SELECT game_id::VARCHAR, received_at FROM raw_records").fetchall())
    cur.close()
    want = {r["game_id"]: at for r, at in zip(records, times, strict=True)}
    assert got == want and raw == want


@pytest.mark.slow
def test_a_killed_judge_process_is_replaced_and_no_upload_is_lost(gathered):
    store, gather = gathered
    first = gather._process.pid
    assert upload(gather, fresh(SLOW6[0]))["verdict"] == "accepted"
    os.kill(first, signal.SIGKILL)
    gather._process.join(10)
    records = [fresh(SLOW6[i]) for i in range(1, 6)]
    assert [upload(gather, r)["verdict"] for r in records] == ["accepted"] * 5
    assert gather._process.pid != first and gather._process.is_alive()
    assert len(dump(store)["games"]) == 6


def test_a_game_whose_verdict_changes_when_its_rows_are_rebuilt_is_quarantined(tmp_path):
    store = Store(tmp_path / "v.duckdb")
    judge = Judge()

    def changed(lines, times):  # an engine that no longer verifies these games
        return [(QUARANTINED, None) for _ in lines]

    store.rebuild = changed
    record = fresh(SLOW6[0])
    light = judge.judge(0, dumps(record), T0, with_rows=False)
    assert light.pending.rows is None
    assert store.ingest([light.pending]) == ["accepted"]
    cur = store.reader()
    assert cur.execute("SELECT count(*) FROM games").fetchone() == (0,)
    assert cur.execute("SELECT rule FROM quarantine").fetchall() == [("internal",)]
    assert cur.execute("SELECT status FROM raw_records").fetchall() == [("quarantined",)]
    cur.close()
    store.close()


@pytest.mark.slow
def test_close_answers_what_was_queued_then_refuses(gathered):
    store, gather = gathered
    gate, running = threading.Event(), threading.Event()
    store.submit(lambda con: running.set() or gate.wait(10))  # holds the commit lock
    assert running.wait(10)
    records = [fresh(SLOW6[i]) for i in range(6)]
    answers: list[dict] = []
    threads = [
        threading.Thread(target=lambda r=r: answers.append(upload(gather, r))) for r in records
    ]
    for t in threads:
        t.start()
    for _ in range(500):
        if len(gather._queue) == 5:  # one chunk waits for the lock, the rest queue
            break
        threading.Event().wait(0.01)
    closing = threading.Thread(target=gather.close)
    closing.start()
    closing.join(0.2)
    assert closing.is_alive() and answers == []  # close waits for them
    gate.set()
    closing.join(30)
    for t in threads:
        t.join()
    assert sorted(a["verdict"] for a in answers) == ["accepted"] * 6
    with pytest.raises(RuntimeError):
        upload(gather, fresh(SLOW6[7]))
    assert len(dump(store)["games"]) == 6


def test_rows_of_gives_a_verified_games_rows_and_nothing_for_one_that_breaks_a_rule():
    judge = Judge()
    for record in (fresh(SLOW6[3]), fresh(SLIDE[2])):
        status, built = judge.rows_of(dumps(record), T0)
        full = judge.judge(0, dumps(record), T0).pending
        assert status == full.status == "verified"
        want, got = rows.tables_of([full.rows]), rows.tables_of([built])
        assert want.keys() == got.keys() and all(got[t].equals(want[t]) for t in want)
    assert judge.rows_of(dumps(fresh(INVALID[0])), T0) == (QUARANTINED, None)
    assert judge.rows_of(b'{"game": "slow6"}', T0) == (None, None)


class _Breaks(Judge):
    """A judge that raises on one game id (an engine bug), as the judge process would too."""

    def __init__(self, bad_id: str):
        super().__init__()
        self.bad_id = bad_id.encode()

    def judge(self, number, text, received, with_rows=True):
        if self.bad_id in text:
            raise ZeroDivisionError("an engine bug")
        return super().judge(number, text, received, with_rows)


@pytest.mark.slow
def test_a_record_that_breaks_the_judge_fails_alone_and_the_gatherer_goes_on(tmp_path):
    store = Store(tmp_path / "b.duckdb")
    bad = fresh(SLOW6[0])
    gather = Gatherer(store, _Breaks(bad["game_id"]))
    try:
        os.kill(gather._process.pid, signal.SIGKILL)  # the next chunk is judged here
        gather._process.join(10)
        with pytest.raises(ZeroDivisionError):
            upload(gather, bad)
        good = [fresh(SLOW6[i]) for i in range(1, 4)]
        assert [upload(gather, r)["verdict"] for r in good] == ["accepted"] * 3
        assert gather._thread.is_alive()
    finally:
        gather.close()
        store.close()


@pytest.mark.slow
def test_a_failure_inside_the_gatherer_answers_its_requests_and_the_next_ones_are_stored(
    gathered, monkeypatch
):
    store, gather = gathered
    real = gather._store_and_answer
    calls = []

    def fails_once(requests, judged):
        calls.append(len(requests))
        if len(calls) == 1:
            raise KeyError("a bug in the gatherer")
        return real(requests, judged)

    monkeypatch.setattr(gather, "_store_and_answer", fails_once)
    with pytest.raises(KeyError):
        upload(gather, fresh(SLOW6[0]))
    records = [fresh(SLOW6[i]) for i in range(1, 4)]
    assert [upload(gather, r)["verdict"] for r in records] == ["accepted"] * 3
    assert gather._thread.is_alive() and gather._process.is_alive()
    assert len(dump(store)["games"]) == 3


@pytest.mark.slow
def test_a_stuck_judge_process_is_replaced_and_its_chunk_judged_here(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    gather = Gatherer(store, Judge(), judge_timeout=1.0)
    stuck = gather._process
    try:
        os.kill(stuck.pid, signal.SIGSTOP)  # alive, never answers
        assert upload(gather, fresh(SLOW6[0]))["verdict"] == "accepted"
        stuck.join(10)  # killed, then replaced (after the answer)
        for _ in range(500):
            if gather._process is not stuck:
                break
            threading.Event().wait(0.02)
        assert gather._process is not stuck and gather._process.is_alive()
        assert not stuck.is_alive()
        assert upload(gather, fresh(SLOW6[1]))["verdict"] == "accepted"
        assert len(dump(store)["games"]) == 2
    finally:
        gather.close()
        store.close()


@pytest.mark.slow
def test_without_the_journal_small_uploads_are_judged_with_their_rows(app_factory):
    """BALANCE_DEFER_ROWS=0: no journal, so no gatherer (its games come without rows). The app
    has its judge processes, as on a server: with them, the journal alone decides."""
    server = app_factory(env={"BALANCE_DEFER_ROWS": "0", "BALANCE_WORKERS": "2"})
    assert server.app.extensions["ingest"].gather is None
    one, two, three = (fresh(SLOW6[i]) for i in range(3))
    single = server.post("/v1/games", dumps(one), "application/json")
    assert single.status == 200 and verdicts(single) == ["accepted"]
    assert verdicts(server.upload([two, three])) == ["accepted", "accepted"]
    assert verdicts(server.upload([INVALID[0]])) == ["quarantined"]
    server.stop()
    ids = {g for (g,) in query(server.db, "SELECT game_id::VARCHAR FROM games")}
    assert ids == {one["game_id"], two["game_id"], three["game_id"]}
    assert query(server.db, "SELECT count(*) FROM quarantine") == [(1,)]
