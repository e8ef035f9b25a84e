"""The Store in-process: group commit, acknowledgement after commit, duplicate decisions,
isolation of failures, submit/reader; and the codec that stores raw records."""

from __future__ import annotations

import copy
import os
import threading
import uuid

import duckdb
import pytest
from support import SLIDE, SLOW6, dumps, example_records, fresh

from ingest.server.pipeline import Judge, utcnow
from ingest.storage import Store, codec, journal, rows


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "s.duckdb", on_commit=lambda n, sec: commits.append(n))
    commits.clear()
    yield s
    s.close()


commits: list[int] = []


def hold_writer(store) -> threading.Event:
    """Hold the commit lock (a call that waits) until the returned event is set."""
    gate, running = threading.Event(), threading.Event()

    def block(con):
        running.set()
        return gate.wait(10)

    store.submit(block)
    assert running.wait(10)
    return gate


def wait_queued(store, n: int) -> None:
    for _ in range(2000):
        if len(store._writers) >= n:
            return
        threading.Event().wait(0.005)
    raise AssertionError("requests were not queued")


def pending(records):
    judge, now = Judge(), utcnow()
    return [judge.judge(i, dumps(r), now).pending for i, r in enumerate(records)]


def count(store, sql) -> int:
    cur = store.reader()
    try:
        return cur.execute(sql).fetchone()[0]
    finally:
        cur.close()


def test_queued_requests_share_one_commit(store):
    gate = hold_writer(store)
    items = [pending([fresh(SLOW6[i])]) for i in range(10)]
    answers = [None] * 10

    def send(i):
        answers[i] = store.ingest(items[i])

    threads = [threading.Thread(target=send, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    wait_queued(store, 10)  # all ten wait behind the busy writer
    assert all(a is None for a in answers)  # nobody is answered before the commit
    gate.set()
    for t in threads:
        t.join()
    assert commits == [10]  # one transaction for all ten requests
    assert answers == [["accepted"]] * 10
    assert count(store, "SELECT count(*) FROM raw_records") == 10
    store.flush_rows()  # the derived rows follow in the rows thread's transaction
    assert count(store, "SELECT count(*) FROM games") == 10


def test_answer_comes_after_the_commit(store):
    rec = fresh(SLOW6[0])
    assert store.ingest(pending([rec])) == ["accepted"]
    # another connection sees it at once: it was committed before the answer
    assert count(store, f"SELECT count(*) FROM raw_records WHERE game_id = '{rec['game_id']}'") == 1


def test_duplicates_and_conflicts_within_one_group_and_after_restart(tmp_path):
    a = fresh(SLOW6[1])
    twin = fresh(SLOW6[2], game_id=a["game_id"])  # same id, other content
    with Store(tmp_path / "r.duckdb") as s:
        assert s.ingest(pending([a, a, twin])) == ["accepted", "duplicate", "conflict"]
    with Store(tmp_path / "r.duckdb") as s:  # decisions survive a restart (from the file)
        assert s.ingest(pending([twin, a])) == ["conflict", "duplicate"]
        assert s.known_count() == 1


def test_a_failing_request_does_not_fail_its_group(tmp_path):
    # one transaction for raw and derived rows: a bad row fails its request, not the group
    store = Store(tmp_path / "f.duckdb", defer_rows=False)
    gate = hold_writer(store)
    good, bad = pending([fresh(SLOW6[3])]), pending([fresh(SLOW6[4])])
    bad[0].rows["games"] = [("not", "a", "row")]  # breaks the columnar insert
    out = {}

    def send(name, items):
        try:
            out[name] = store.ingest(items)
        except Exception as exc:
            out[name] = exc

    threads = [threading.Thread(target=send, args=a) for a in (("good", good), ("bad", bad))]
    for t in threads:
        t.start()
    wait_queued(store, 2)
    gate.set()
    for t in threads:
        t.join()
    assert out["good"] == ["accepted"]
    assert isinstance(out["bad"], Exception)
    assert count(store, "SELECT count(*) FROM raw_records") == 1  # the bad one left nothing
    assert store.ingest(good) == ["duplicate"]
    store.close()


def test_deferred_rows_that_do_not_fit_quarantine_their_game_only(store):
    good, bad = pending([fresh(SLOW6[3])]), pending([fresh(SLOW6[4])])
    bad[0].rows["games"] = [("not", "a", "row")]
    assert store.ingest(good + bad) == ["accepted", "accepted"]  # the raw records are safe
    store.flush_rows()
    assert count(store, "SELECT count(*) FROM games") == 1
    q = f"SELECT rule FROM quarantine WHERE game_id = '{bad[0].gid}'"
    assert store.reader().execute(q).fetchall() == [("internal",)]
    st = f"SELECT status FROM raw_records WHERE game_id = '{bad[0].gid}'"
    assert store.reader().execute(st).fetchall() == [("quarantined",)]


def test_rows_lost_in_a_crash_are_rebuilt_when_the_store_opens(tmp_path):
    path = tmp_path / "r.duckdb"
    recs = [fresh(SLOW6[i]) for i in range(3)] + [fresh(SLIDE[0])]
    quarantined = fresh(example_records("slow6-invalid")[0])
    with Store(path) as s:
        assert s.ingest(pending(recs + [quarantined]))[-1] == "quarantined"
    lost = [recs[1]["game_id"], recs[3]["game_id"], quarantined["game_id"]]
    con = duckdb.connect(str(path))  # what a crash between the two commits leaves
    for table in (
        "games",
        "game_turns",
        "game_pieces",
        "game_powers",
        "slide_games",
        "slide_seats",
        "slide_rounds",
        "quarantine",
    ):
        con.execute(f"DELETE FROM {table} WHERE game_id IN (SELECT unnest(?::UUID[]))", [lost])
    con.close()
    with Store(path) as s:
        assert s.recovered == 3
        assert count(s, "SELECT count(*) FROM games") == 3
        assert count(s, "SELECT count(DISTINCT game_id) FROM game_turns") == 3
        assert count(s, "SELECT count(*) FROM game_turns") == sum(len(r["turns"]) for r in recs[:3])
        assert count(s, "SELECT count(*) FROM slide_games") == 1
        assert count(s, "SELECT count(*) FROM quarantine") == 1
    with Store(path) as s:
        assert s.recovered == 0  # nothing is rebuilt twice


def test_submit_runs_in_a_transaction_and_rolls_back_on_error(store):
    def write_then_fail(con):
        con.execute("CREATE TABLE agg_test AS SELECT 1 AS x")
        raise ValueError("boom")

    with pytest.raises(ValueError):
        store.submit(write_then_fail).result()
    assert count(store, "SELECT count(*) FROM duckdb_tables() WHERE table_name='agg_test'") == 0
    assert store.submit(lambda con: con.execute("SELECT 41 + 1").fetchone()[0]).result() == 42


def test_closed_store_refuses_work(tmp_path):
    s = Store(tmp_path / "c.duckdb")
    s.close()
    with pytest.raises(RuntimeError):
        s.ingest(pending([fresh(SLOW6[0])]))


@pytest.mark.parametrize("record", [SLOW6[0], SLOW6[-1], SLIDE[0]])
def test_codec_round_trip_and_saves_space(record):
    text = codec.canonical(record)
    codec_id, blob = codec.encode(text, record["game"])
    assert codec_id == codec.CODEC_FOR_GAME[record["game"]] != codec.PLAIN
    assert codec.decode(codec_id, blob) == text
    assert len(blob) < len(text) / 3


@pytest.mark.parametrize("codec_id", [codec.PLAIN, *codec.DICTIONARIES])
def test_every_codec_ever_shipped_still_decodes(codec_id):
    # rows stored with an older codec must stay readable: dictionaries are frozen
    for record in SLOW6[:5] + SLIDE[:3]:
        text = codec.canonical(record)
        assert codec.decode(codec_id, codec.encode_with(codec_id, text)) == text


def test_token_substitution_is_exactly_reversible():
    pairs = codec.tokens(codec.CODEC_FOR_GAME["slow6"])
    # a string value that contains a token's text is escaped JSON, and is restored as it was
    rec = fresh(SLOW6[0])
    rec["client"]["version"] = '"]},{"moves":["'
    text = codec.canonical(rec)
    assert codec.restore(codec.substitute(text, pairs), pairs) == text
    assert all(code not in text for _, code in pairs)  # canonical JSON has no control bytes


def test_canonical_form_ignores_key_order_and_spacing():
    rec = SLOW6[0]
    shuffled = dict(reversed(list(rec.items())))
    assert codec.canonical(rec) == codec.canonical(shuffled)
    assert codec.content_hash(codec.canonical(rec)) == codec.content_hash(codec.canonical(shuffled))
    assert codec.content_hash(codec.canonical(rec)) != codec.content_hash(codec.canonical(SLOW6[1]))


def test_a_reader_sees_every_acknowledged_game_with_its_rows(store):
    for i in range(5):
        assert store.ingest(pending([fresh(SLOW6[i])])) == ["accepted"]
        # no flush_rows(): a reader opened after the answer must see the derived rows
        assert count(store, "SELECT count(*) FROM games") == i + 1


GAME_TABLES_SQL = {
    table: f"SELECT * FROM {table} ORDER BY ALL"
    for table in ("raw_records", "games", "game_turns", "game_powers", "game_pieces", "quarantine",
                  "slide_games", "slide_seats", "slide_rounds")
}  # fmt: skip


def stored_tables(path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {table: con.execute(sql).fetchall() for table, sql in GAME_TABLES_SQL.items()}
    finally:
        con.close()


def test_rows_handed_over_as_a_workers_block_store_what_their_tuples_store(tmp_path):
    """A judge worker sends a batch's rows as Arrow tables (rows.Block); the games the store
    refuses (duplicate, conflict) must leave their rows out of it, as with tuples."""
    known = fresh(SLOW6[0])
    quarantined = fresh(SLOW6[1], result={"winner": 0, "reason": "resign", "points": None})
    batch = [fresh(SLOW6[2]), known, fresh(SLIDE[0]), quarantined, fresh(SLOW6[3])]
    twin = fresh(SLOW6[4], game_id=batch[0]["game_id"])
    records = [*batch, twin, batch[0]]  # a conflict and a duplicate within the block
    expected = ["accepted", "duplicate", "accepted", "quarantined", "accepted", "conflict",
                "duplicate"]  # fmt: skip
    first, judged = pending([known]), pending(records)  # one judging: the same received_at
    stored = {}
    for name, as_block in (("tuples", False), ("block", True)):
        path = tmp_path / f"{name}.duckdb"
        with Store(path) as s:
            assert s.ingest(copy.deepcopy(first)) == ["accepted"]
            items = copy.deepcopy(judged)
            if as_block:
                rows.share_block(items)
                assert all(isinstance(item.rows, rows.Part) for item in items)
            assert s.ingest(items) == expected
        stored[name] = stored_tables(path)
    assert stored["block"] == stored["tuples"]
    assert len(stored["block"]["games"]) == 3 and len(stored["block"]["quarantine"]) == 1
    assert len(stored["block"]["slide_games"]) == 1
    assert {r[0] for r in stored["block"]["game_turns"]} == {
        uuid.UUID(r["game_id"]) for r in (batch[0], known, batch[4])
    }


def journal_rows(items) -> list[tuple]:
    """The raw_records rows the writer journals for these pending games."""
    return [
        (p.key.to_bytes(16, "big"), p.game, p.status, p.content_hash, p.blob, p.codec, p.received)
        for p in items
    ]


def test_games_left_in_the_journal_by_a_crash_are_stored_when_the_store_opens(tmp_path):
    path = tmp_path / "j.duckdb"
    with Store(path) as s:  # one game already in DuckDB before the crash
        stored = pending([fresh(SLOW6[0])])
        assert s.ingest(stored) == ["accepted"]
    recs = [fresh(SLOW6[1]), fresh(SLOW6[2]), fresh(SLIDE[0])]
    quarantined = fresh(example_records("slow6-invalid")[0])
    items = pending(recs + [quarantined])
    # What a kill leaves: acknowledged games journaled, not yet loaded into DuckDB (one of them
    # was loaded and its segment not yet deleted), and an entry torn in the middle of its write.
    first = journal.Journal(path)
    first.append(journal_rows(stored + items[:2]))
    first.rotate()
    second = journal.Journal(path)
    second.append(journal_rows(items[2:]))
    torn = pending([fresh(SLOW6[3])])
    os.write(second._fd, journal.encode(journal_rows(torn)[0])[:-7])
    second.rotate()
    assert len(journal.segments(path)) == 2
    with Store(path) as s:
        assert s.journaled == 4  # the stored game is not loaded twice; the torn one is not there
        # their derived rows are built from the raw records as they are loaded (nothing left
        # for `recover`), and their segments go once all of them are in DuckDB
        assert s.recovered == 0
        assert journal.segments(path) == []
        assert count(s, "SELECT count(*) FROM raw_records") == 5
        assert count(s, "SELECT count(*) FROM games") == 3
        assert count(s, "SELECT count(*) FROM slide_games") == 1
        assert count(s, "SELECT count(*) FROM quarantine") == 1
        assert s.ingest(items + torn) == ["duplicate"] * 4 + ["accepted"]
    assert journal.segments(path) == []  # loaded, then deleted
    with Store(path) as s:
        assert (s.journaled, s.recovered) == (0, 0)
        assert count(s, "SELECT count(*) FROM raw_records") == 6


def test_an_acknowledged_game_is_in_the_journal_until_duckdb_has_it(tmp_path):
    path = tmp_path / "k.duckdb"
    s = Store(path, rows_interval=60.0)
    gate = threading.Event()
    real = s._write_rows
    s._write_rows = lambda batch: gate.wait(10) and real(batch)  # the loader is slow
    try:
        items = pending([fresh(SLOW6[5]), fresh(SLOW6[6])])
        assert s.ingest(items) == ["accepted", "accepted"]
        on_disk = [
            row for seg in journal.segments(path) for row in journal.entries(seg.read_bytes())
        ]
        assert [str(uuid.UUID(bytes=row[0])) for row in on_disk] == [p.gid for p in items]
        assert [bytes(row[4]) for row in on_disk] == [p.blob for p in items]
        assert [row[6] for row in on_disk] == [p.received for p in items]
    finally:
        gate.set()
        s.close()
    assert journal.segments(path) == []
    with Store(path) as s:
        assert count(s, "SELECT count(*) FROM games") == 2


def test_an_upload_that_waits_out_its_timeout_stores_nothing_and_the_next_one_leads(store):
    gate = hold_writer(store)  # a long call (reverify, jobs) holds the commit lock
    early, late = pending([fresh(SLOW6[7])]), pending([fresh(SLOW6[8])])
    out = {}

    def send(name, items, timeout):
        try:
            out[name] = store.ingest(items, timeout=timeout)
        except TimeoutError as exc:
            out[name] = exc

    first = threading.Thread(target=send, args=("early", early, 0.3))
    first.start()
    wait_queued(store, 1)
    second = threading.Thread(target=send, args=("late", late, 60))
    second.start()
    first.join(10)
    assert isinstance(out["early"], TimeoutError)  # answered 503: retry
    assert "late" not in out  # it took the head and waits for the lock
    gate.set()
    second.join(10)
    assert out["late"] == ["accepted"]
    assert count(store, "SELECT count(*) FROM raw_records") == 1
    assert store.ingest(early) == ["accepted"]  # the retry: nothing was stored the first time


def test_close_commits_the_uploads_queued_before_it(tmp_path):
    store = Store(tmp_path / "c.duckdb")
    gate = hold_writer(store)
    items = [pending([fresh(SLOW6[i])]) for i in range(4)]
    answers = []
    threads = [threading.Thread(target=lambda i=i: answers.append(store.ingest(i))) for i in items]
    for t in threads:
        t.start()
    wait_queued(store, 4)
    closing = threading.Thread(target=store.close)
    closing.start()
    closing.join(0.2)
    assert closing.is_alive() and answers == []
    gate.set()
    closing.join(30)
    for t in threads:
        t.join()
    assert answers == [["accepted"]] * 4
    with pytest.raises(RuntimeError):
        store.ingest(pending([fresh(SLOW6[5])]))
    with Store(tmp_path / "c.duckdb") as again:
        assert count(again, "SELECT count(*) FROM games") == 4
