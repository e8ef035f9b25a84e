"""LakeStore on a real lake (a PostgreSQL cluster of the test's own, Parquet files in tmp):
verdicts, the claims across stores, stale claims (the lake holds the game / it does not), a
stalled writer fenced off, commits of unknown outcome, import, maintenance. Skipped, with
the reason, where PostgreSQL or the ducklake extension cannot be had (lake_cluster.py)."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import threading
import time
import uuid
from pathlib import Path

import duckdb
import orjson
import psycopg
import pytest
from support import examples_dir, free_port, wait_for

from ingest.server.pipeline import Judge, utcnow
from ingest.storage import StorageUnavailable, Store
from ingest.storage.lake import (
    LAKE_SCHEMA_VERSION,
    LakeError,
    LakeStore,
    connect,
    lake_schema_sql,
    parquet_files,
)
from ingest.storage.lake import staging as lake_staging
from ingest.storage.lake import store as lake_store
from ingest.storage.lake.admin import check, import_store, maintain
from ingest.storage.lake.claims import Claims

EXAMPLES = examples_dir()


def _records(name: str) -> list[dict]:
    return [json.loads(x) for x in (EXAMPLES / f"{name}.ndjson").read_text().splitlines() if x]


SLOW6, SLIDE, SLOW6_BAD = (
    _records("slow6-valid"),
    _records("slide-valid"),
    _records("slow6-invalid"),
)
JUDGE = Judge()


def fresh(record: dict) -> dict:
    out = copy.deepcopy(record)
    out["game_id"] = str(uuid.uuid4())
    return out


def altered(record: dict) -> dict:
    out = copy.deepcopy(record)
    out["client"]["version"] = out["client"]["version"] + ".1"
    return out


def pending(record: dict, with_rows: bool = True):
    return JUDGE.judge(0, orjson.dumps(record), utcnow(), with_rows=with_rows).pending


def lake_rows(catalog: str, sql: str, params=None) -> list[tuple]:
    con = connect(catalog, claims=False)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def test_only_our_own_connections_load_the_extensions_unchecked(lake):
    """Our connections (servers, loader, jobs, commands) load the wheels' extension files
    without DuckDB's signature check; a connection for analysts' SQL (the console's) keeps
    the check, and loads the installed copies only."""
    from ingest.storage.lake import attach_read_only, read_only_config

    unchecked = "SELECT current_setting('allow_unsigned_extensions')"
    own = connect(lake, claims=False)
    try:
        assert own.execute(unchecked).fetchone() == (True,)
        assert own.execute("SELECT count(*) FROM raw_records").fetchone() == (0,)
    finally:
        own.close()
    console = duckdb.connect(config=read_only_config())
    try:
        assert console.execute(unchecked).fetchone() == (False,)
        attach_read_only(console, lake, "shown")
        assert console.execute("SELECT count(*) FROM shown.raw_records").fetchone() == (0,)
    finally:
        console.close()


def test_lake_schema_is_the_file_schema(lake, tmp_path):
    """Every table and column of schema.sql, with its type and NOT NULL, is in the lake."""
    file = duckdb.connect(str(tmp_path / "f.duckdb"))
    file.execute(lake_schema_sql())  # the statements the lake got, minus what DuckLake lacks
    native = duckdb.connect(str(tmp_path / "g.duckdb"))
    from ingest.storage import schema_sql

    native.execute(schema_sql())
    sql = (
        "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_catalog = current_database() AND table_schema = 'main' ORDER BY ALL"
    )
    want = native.execute(sql).fetchall()
    assert file.execute(sql).fetchall() == want
    got = lake_rows(lake, sql.replace("current_database()", "'lake'"))
    assert got == want


def test_ingest_verdicts_and_rows(stores, tmp_path):
    store = stores()
    good = [fresh(r) for r in SLOW6[:20]] + [fresh(r) for r in SLIDE[:10]]
    bad = [fresh(r) for r in SLOW6_BAD[:10]]
    out = store.ingest([pending(r) for r in good + bad])
    assert out == ["accepted"] * 30 + ["quarantined"] * 10
    # the same again: duplicate; altered: conflict; both in one request with a new game
    new = fresh(SLOW6[0])
    again = [pending(good[0]), pending(altered(good[1])), pending(new), pending(new)]
    assert store.ingest(again) == ["duplicate", "conflict", "accepted", "duplicate"]
    store.flush_rows()  # the loader has moved them from staging into the lake
    # the lake holds what a file store holds for the same games
    file = Store(tmp_path / "file.duckdb")
    file.ingest([pending(r) for r in good + bad + [new]])
    file.close()
    ref = duckdb.connect(str(tmp_path / "file.duckdb"), read_only=True)
    for table in ("raw_records", "games", "game_turns", "game_pieces", "game_powers",
                  "slide_games", "slide_seats", "slide_rounds", "quarantine"):  # fmt: skip
        cols = "* EXCLUDE (received_at)" if table != "raw_records" else "game_id, content_hash"
        if table in ("game_turns", "game_pieces", "game_powers", "slide_seats", "slide_rounds"):
            cols = "*"
        q = f"SELECT {cols} FROM {table} ORDER BY ALL"
        assert lake_rows(store.catalog, q) == ref.execute(q).fetchall(), table
    ref.close()
    quarantine = lake_rows(
        store.catalog, "SELECT count(*), count(rule), count(turn) FROM quarantine"
    )
    assert quarantine[0][0] == 10 and quarantine[0][1] == 10
    store.flush_rows()
    result = check(store.catalog)
    assert result["ok"] and result["claims"] == {"stored": 41}, result
    assert store.known_count() == 41


def test_rows_built_by_the_store(stores):
    """Verified games that come without their rows (the gatherer's) get them before commit."""
    store = stores()
    records = [fresh(r) for r in SLOW6[:5]]
    assert store.ingest([pending(r, with_rows=False) for r in records]) == ["accepted"] * 5
    store.flush_rows()
    ((games, turns),) = lake_rows(
        store.catalog, "SELECT (SELECT count(*) FROM games), (SELECT count(*) FROM game_turns)"
    )
    assert games == 5 and turns == sum(len(r["turns"]) for r in records)


def test_duplicates_and_conflicts_across_stores(stores):
    a, b = stores(), stores()
    records = [fresh(r) for r in SLOW6[:10]]
    assert a.ingest([pending(r) for r in records]) == ["accepted"] * 10
    assert b.ingest([pending(r) for r in records[:5]]) == ["duplicate"] * 5
    assert b.ingest([pending(altered(r)) for r in records[5:]]) == ["conflict"] * 5
    a.flush_rows()
    assert check(a.catalog)["rows"]["raw_records"] == 10


def test_same_game_ids_at_once_from_two_stores(stores):
    """Two stores (two DuckDB instances) given the same new games at the same moment, in
    requests of various sizes: each game stored once, one accepted and one duplicate."""
    a, b = stores(), stores()
    records = [fresh(SLOW6[i % len(SLOW6)]) for i in range(120)]
    verdicts: dict[str, list[str]] = {r["game_id"]: [] for r in records}
    lock = threading.Lock()
    start = threading.Barrier(4)

    def send(store, chunks):
        start.wait()
        for chunk in chunks:
            out = store.ingest([pending(r) for r in chunk])
            with lock:
                for r, v in zip(chunk, out, strict=True):
                    verdicts[r["game_id"]].append(v)

    chunks, i = [], 0
    while i < len(records):
        n = (1, 3, 10)[len(chunks) % 3]
        chunks.append(records[i : i + n])
        i += n
    # each store gets every chunk once, its two threads taking alternate ones
    threads = [
        threading.Thread(target=send, args=(s, chunks[k::2])) for s in (a, b) for k in (0, 1)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sent = [v for vs in verdicts.values() for v in vs]
    assert sent.count("accepted") == 120
    for vs in verdicts.values():
        assert sorted(vs) == ["accepted", "duplicate"]
    a.flush_rows()
    b.flush_rows()
    result = check(a.catalog)
    assert result["ok"] and result["rows"]["raw_records"] == 120
    assert result["claims"] == {"stored": 120}, result


def test_in_flight_elsewhere_is_retried_then_503(stores, lake):
    """A live pending claim of another server: the request waits, then 503 (nothing stored)."""
    store = stores(in_flight_wait=0.3)
    record = fresh(SLOW6[0])
    item = pending(record)
    con = connect(lake)
    Claims(con, "balance_pg").claim([item.key], [item.content_hash], "other_live", 60)
    con.close()
    other = fresh(SLOW6[1])
    with pytest.raises(StorageUnavailable) as err:
        store.ingest([pending(other), item])
    assert err.value.retry_after == 1
    assert store.ingest([pending(other)]) == ["accepted"]  # its claim was released


def _stall_commits(monkeypatch, gate: threading.Event, entered: threading.Event):
    """Make LakeStore commits wait, inside their lake transaction (inserts done, COMMIT not
    sent), until `gate` is set: a writer stalled mid-commit."""
    real = lake_store.transaction

    @contextlib.contextmanager
    def stalled(con):
        with real(con):
            yield
            entered.set()
            gate.wait(60)

    monkeypatch.setattr(lake_store, "transaction", stalled)


def test_stale_claim_lake_lacks_it_stalled_writer_is_fenced(stores, monkeypatch):
    """A writer stalls past its lease mid-commit. Another store takes the claim over (the
    lake does not hold the game) and stores its own version; the stalled commit then fails
    (its fence was dropped) and its request is answered from the lake: stored once."""
    a = stores(lease=1.0, in_flight_wait=20.0, staging=False)
    # b waits 1 s, not 10, for the commit token the stalled a holds, then goes ahead without
    b = stores(lease=1.0, staging=False, token_wait=1.0)
    record = fresh(SLOW6[0])
    gate, entered = threading.Event(), threading.Event()
    _stall_commits(monkeypatch, gate, entered)
    answer: list = []
    writer = threading.Thread(target=lambda: answer.append(a.ingest([pending(record)])))
    writer.start()
    assert entered.wait(30)
    monkeypatch.undo()  # b commits normally (a's commit is already inside the stalled one)
    time.sleep(1.2)  # a's lease runs out
    assert b.ingest([pending(altered(record))]) == ["accepted"]
    assert b.counters["takeovers"] == 1
    gate.set()
    writer.join(30)
    assert answer == [["conflict"]]  # a's version lost: b's is the stored one
    rows_ = lake_rows(a.catalog, "SELECT count(*) FROM raw_records")
    assert rows_ == [(1,)]
    result = check(a.catalog)
    assert result["ok"], result
    # a goes on under a new owner, with a new fence
    assert a.ingest([pending(fresh(SLOW6[1]))]) == ["accepted"]


def test_stale_claim_lake_holds_it(stores, monkeypatch):
    """A writer commits, then dies before marking its claim stored. After its lease another
    store finds the game in the lake: duplicate (same content) / conflict (altered), the
    claim is marked stored, nothing is stored twice."""
    a = stores(lease=1.0, staging=False)
    b = stores(lease=1.0, staging=False)
    records = [fresh(SLOW6[0]), fresh(SLOW6[1])]

    def dead(*_args, **_kw):
        raise duckdb.IOException("the server died here")

    monkeypatch.setattr(a._house_claims, "mark_stored", dead)  # a dies before marking
    assert a.ingest([pending(r) for r in records]) == ["accepted", "accepted"]
    assert check(a.catalog)["pending_in_lake"] == 2  # not an error: protected by the claims
    time.sleep(1.2)
    out = b.ingest([pending(records[0]), pending(altered(records[1]))])
    assert out == ["duplicate", "conflict"]
    assert b.counters["adopted"] == 2 and b.counters["takeovers"] == 0
    b.flush_rows()
    result = check(b.catalog)
    assert result["ok"] and result["claims"] == {"stored": 2}, result


def test_stale_claims_are_settled_by_a_sweep(stores, monkeypatch, lake):
    """Committed games of a dead server whose claims nobody asks about: a server's sweep (at
    open, then every lease) marks them stored; a stale claim of a game not in the lake is
    dropped, so that its retry is stored."""
    a = stores(lease=1.0, staging=False)
    committed = fresh(SLOW6[0])

    def dead(*_args, **_kw):
        raise duckdb.IOException("the server died here")

    monkeypatch.setattr(a._house_claims, "mark_stored", dead)
    assert a.ingest([pending(committed)]) == ["accepted"]
    never = pending(fresh(SLOW6[1]))
    a._claims.claim([never.key], [never.content_hash], a.owner, 1.0)  # claimed, died
    time.sleep(1.2)
    b = stores(lease=1.0, staging=False)  # its sweep at open settles both
    assert b.counters["adopted"] == 1
    result = check(lake)
    assert result["ok"] and result["claims"] == {"stored": 1}, result
    assert b.ingest([never]) == ["accepted"]


def test_live_pending_claim_of_the_committer_is_waited_for(stores, monkeypatch):
    """The game is committed but its claim not yet marked (a slow mark): another store's
    request waits (in flight) rather than storing it again."""
    a = stores(staging=False)
    b = stores(in_flight_wait=10.0, staging=False)
    record = fresh(SLOW6[0])
    real = a._house_claims.mark_stored
    failures = []

    def slow(*args, **kw):
        if len(failures) < 3:  # the catalog is unreachable for a moment
            failures.append(1)
            raise duckdb.IOException("catalog unreachable for a moment")
        return real(*args, **kw)

    monkeypatch.setattr(a._house_claims, "mark_stored", slow)
    assert a.ingest([pending(record)]) == ["accepted"]
    assert b.ingest([pending(record)]) == ["duplicate"]
    assert b.counters["deferred"] >= 1 and len(failures) == 3
    a.flush_rows()
    assert check(a.catalog)["claims"] == {"stored": 1}


def test_commit_of_unknown_outcome(stores, monkeypatch):
    """A COMMIT that raised after landing is found in the lake (accepted, claims stored);
    one that raised before landing is a 503 whose claims are released (a retry stores)."""
    store = stores(staging=False)
    real = lake_store.transaction

    @contextlib.contextmanager
    def lost_ack(con):
        with real(con):
            yield
        raise duckdb.IOException("connection lost after COMMIT")

    monkeypatch.setattr(lake_store, "transaction", lost_ack)
    records = [fresh(SLOW6[0]), fresh(SLOW6[1])]
    assert store.ingest([pending(r) for r in records]) == ["accepted", "accepted"]

    @contextlib.contextmanager
    def lost(con):
        con.execute("BEGIN TRANSACTION")
        yield
        con.execute("ROLLBACK")
        raise duckdb.IOException("connection lost before COMMIT")

    monkeypatch.setattr(lake_store, "transaction", lost)
    third = fresh(SLOW6[2])
    with pytest.raises(StorageUnavailable):
        store.ingest([pending(third)])
    monkeypatch.undo()
    assert store.failure is None
    assert store.ingest([pending(third)]) == ["accepted"]
    store.flush_rows()
    result = check(store.catalog)
    assert result["ok"] and result["rows"]["raw_records"] == 3, result
    assert result["claims"] == {"stored": 3}, result


def test_unreachable_catalog_is_503_then_recovers(stores, monkeypatch):
    store = stores()

    def unreachable(*_a, **_k):
        raise psycopg.OperationalError("could not connect to server: Connection refused")

    monkeypatch.setattr(lake_staging.Stager, "claim", unreachable)  # (its claims' connection)
    monkeypatch.setattr(lake_staging.Stager, "stage_new", unreachable)  # (a new group's)
    with pytest.raises(StorageUnavailable):
        store.ingest([pending(fresh(SLOW6[0]))])
    assert store.failure is not None and store.health()["failure"]
    with pytest.raises(StorageUnavailable):  # at once, while failing
        store.ingest([pending(fresh(SLOW6[0]))])
    monkeypatch.undo()
    wait_for(lambda: store.failure is None, 15, "the failure cleared", every=0.2)
    assert store.ingest([pending(fresh(SLOW6[0]))]) == ["accepted"]


def test_import_a_file_store(lake, stores, tmp_path):
    db = tmp_path / "file.duckdb"
    games = [fresh(r) for r in SLOW6[:15]] + [fresh(r) for r in SLIDE[:5]]
    bad = [fresh(r) for r in SLOW6_BAD[:5]]
    with Store(db) as file:
        file.ingest([pending(r) for r in games + bad])
    summary = import_store(lake, db, chunk=7, echo=lambda _line: None)
    assert summary["imported"] == 25 and summary["conflicts"] == 0
    assert all(c["file"] == c["lake"] for c in summary["tables"].values())
    assert summary["tables"]["quarantine"]["lake"] == 5
    again = import_store(lake, db, echo=lambda _line: None)
    assert again["imported"] == 0 and again["already"] == 25
    store = stores()
    assert store.ingest([pending(games[0]), pending(altered(games[1]))]) == [
        "duplicate",
        "conflict",
    ]
    assert check(lake)["ok"]


def test_maintain_keeps_the_data_and_refuses_a_short_margin(lake, stores):
    store = stores(staging=False)  # a commit per request: small commits to merge
    for i in range(8):  # small commits: inlined rows and small files
        store.ingest([pending(fresh(SLOW6[(i * 5 + k) % len(SLOW6)])) for k in range(5)])
    before = check(lake)["rows"]
    con = connect(lake, read_only=True, claims=False)
    with pytest.raises(LakeError, match="inlined"):  # small commits' rows are in the catalog
        parquet_files(con, "raw_records")
    con.close()
    with pytest.raises(ValueError, match="at least 1 hour"):
        maintain(lake, older_than="10 minutes", echo=lambda _line: None)
    out = maintain(lake, echo=lambda _line: None)
    assert out["files"]["after"] <= out["files"]["before"]
    after = check(lake)
    assert after["ok"] and after["rows"] == before
    # every row in Parquet now: the catalog's file list gives the table to Polars exactly
    import polars as pl

    con = connect(lake, read_only=True, claims=False)
    files = parquet_files(con, "game_turns")
    ((turns,),) = con.execute("SELECT count(*) FROM game_turns").fetchall()
    con.close()
    assert pl.scan_parquet(files).select(pl.len()).collect().item() == turns
    assert store.ingest([pending(fresh(SLOW6[0]))]) == ["accepted"]  # writers go on


def test_rows_that_do_not_fit_fail_their_request_only(stores):
    """A request whose rows cannot be stored (a bug) gets the error; a request committed in
    the same group is stored; the failed game's claim is released (a fixed retry stores)."""
    store = stores()
    good, bad = fresh(SLOW6[0]), fresh(SLOW6[1])
    broken = pending(bad)
    broken.rows = {"games": [("not", "a", "games", "row")]}
    gate = threading.Event()
    results: dict[str, object] = {}

    def call(name, items):
        gate.wait()
        try:
            results[name] = store.ingest(items)
        except Exception as exc:  # noqa: BLE001 - what the request gets
            results[name] = exc

    threads = [
        threading.Thread(target=call, args=("good", [pending(good)])),
        threading.Thread(target=call, args=("bad", [broken])),
    ]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(60)
    assert results["good"] == ["accepted"]
    assert isinstance(results["bad"], Exception)
    assert not isinstance(results["bad"], StorageUnavailable)
    assert store.failure is None
    assert store.ingest([pending(bad)]) == ["accepted"]
    store.flush_rows()
    assert check(store.catalog)["claims"] == {"stored": 2}


def test_an_interrupted_import_is_resumed(lake, tmp_path, monkeypatch):
    """Run 1 dies after a chunk's commit, before marking its claims; run 2 dies in a chunk's
    commit; run 3 settles both (the lake holds the first chunk, not the second) and ends with
    every game once and the counts equal."""
    from ingest.storage.lake import admin as lake_admin

    db = tmp_path / "file.duckdb"
    games = [fresh(SLOW6[i % len(SLOW6)]) for i in range(25)]
    with Store(db) as file:
        file.ingest([pending(r) for r in games])
    quiet = {"echo": lambda _line: None, "chunk": 7}
    real_mark, real_copy = Claims.mark_stored, lake_admin._copy_chunk
    marks: list[int] = []

    def mark_dies_second_time(self, keys, owner):
        marks.append(1)
        if len(marks) == 2:
            raise duckdb.IOException("the importer died here")
        return real_mark(self, keys, owner)

    monkeypatch.setattr(Claims, "mark_stored", mark_dies_second_time)
    with pytest.raises(duckdb.IOException):
        import_store(lake, db, **quiet)  # chunk 1 stored, chunk 2 committed and not marked
    monkeypatch.setattr(Claims, "mark_stored", real_mark)

    def copy_dies(*_args, **_kw):
        raise duckdb.IOException("the importer died in a commit")

    monkeypatch.setattr(lake_admin, "_copy_chunk", copy_dies)
    with pytest.raises(duckdb.IOException):
        import_store(lake, db, **quiet)  # chunk 3 claimed, its commit failed
    monkeypatch.setattr(lake_admin, "_copy_chunk", real_copy)
    summary = import_store(lake, db, **quiet)
    assert summary["imported"] == 25 - 14 and summary["already"] == 14, summary
    assert all(c["file"] == c["lake"] for c in summary["tables"].values())
    result = check(lake)
    assert result["ok"] and result["claims"] == {"stored": 25}, result


# -- the data path's disk ---------------------------------------------------------------------

from support import free_bytes  # noqa: E402


def test_uploads_stop_at_the_data_paths_reserve_and_resume(stores):
    store = stores(min_free=1 << 62, heartbeat=0.2)  # more than any disk has
    with pytest.raises(StorageUnavailable, match="disk nearly full"):
        store.ingest([pending(fresh(SLOW6[0]))])
    assert "disk nearly full" in store.health()["failure"]
    store.min_free = 0  # room again (as after the operator freed some): the heartbeat sees it
    wait_for(lambda: store.failure is None, 10, "the failure cleared", every=0.1)
    assert store.ingest([pending(fresh(SLOW6[1]))]) == ["accepted"]


@pytest.mark.slow
def test_a_filling_data_path_refuses_uploads_before_it_is_full_and_loses_nothing(
    small_disk, pg_cluster
):
    """A lake whose data path is a real 8 MB disk: batches go in until the reserve is
    reached, then 503; every acknowledged game is in the lake, which stays readable."""
    from ingest.storage.lake.admin import init_lake

    disk = small_disk(8)
    catalog = pg_cluster.create_db(f"full_{os.getpid()}_{time.monotonic_ns() % 10**9}")
    init_lake(catalog, str(disk), inline_rows=0)  # every commit writes Parquet files
    reserve = 4 * 1024 * 1024
    store = LakeStore(catalog, min_free=reserve, heartbeat=0.2)
    acknowledged: list[str] = []
    free: list[int] = []  # after each acknowledged batch, for the failure's message
    refused = 0
    try:
        for _ in range(400):
            batch = [fresh(SLOW6[i % len(SLOW6)]) for i in range(400)]
            try:
                verdicts = store.ingest([pending(r) for r in batch])
            except StorageUnavailable as exc:
                assert "disk nearly full" in exc.reason
                refused += 1
                if refused >= 3:
                    break
                continue
            assert verdicts == ["accepted"] * len(batch)
            acknowledged += [r["game_id"] for r in batch]
            free.append(free_bytes(disk))
        assert refused, f"the disk never reached the reserve: {free}"
        assert free_bytes(disk) > reserve // 2, free  # stopped before the disk was full
    finally:
        store.close()
    stored = {g for (g,) in lake_rows(catalog, "SELECT game_id::VARCHAR FROM raw_records")}
    assert len(acknowledged) > 1000 and set(acknowledged) <= stored
    assert check(catalog)["ok"]


def test_the_commit_gate_holds_new_games_until_it_opens(stores, lake):
    """commits_paused: while inside, a server's new game waits (in flight, asked again after
    a moment) and lands once the gate opens; a duplicate is still answered at once. Claims
    made before the gate closed are waited for (drained) before its body runs."""
    from ingest.storage.lake import commits_paused

    store = stores(in_flight_wait=10.0)
    first = fresh(SLOW6[0])
    assert store.ingest([pending(first)]) == ["accepted"]
    store.flush_rows()
    con = connect(lake)
    answers: list[list[str]] = []
    try:
        with commits_paused(con):
            waiting = threading.Thread(
                target=lambda: answers.append(store.ingest([pending(fresh(SLOW6[1]))]))
            )
            waiting.start()
            assert store.ingest([pending(first)]) == ["duplicate"]  # no new claim needed
            time.sleep(1.0)
            assert answers == []  # held at the gate, nothing stored
            assert lake_rows(lake, "SELECT count(*) FROM raw_records") == [(1,)]
        waiting.join(10)
        assert answers == [["accepted"]]
        other = Claims(con, "balance_pg")
        other.claim([pending(fresh(SLOW6[2])).key], [1], "someone_live", 60)
        began = time.monotonic()
        with commits_paused(con, drain=0.5):  # a live claim nobody commits: drained in vain
            assert time.monotonic() - began >= 0.5
    finally:
        con.close()
    assert store.counters["deferred"] >= 1


def test_the_gate_left_closed_by_a_dead_holder_opens_by_itself(stores, lake):
    store = stores(in_flight_wait=10.0)
    con = connect(lake)
    try:
        Claims(con, "balance_pg").close_gate("gate_dead", 1.0)
    finally:
        con.close()
    began = time.monotonic()
    assert store.ingest([pending(fresh(SLOW6[0]))]) == ["accepted"]
    assert time.monotonic() - began >= 0.5  # it waited for the gate's time to run out


def test_balance_sql_reads_the_lake_read_only_beside_a_writing_server(stores, lake, capsys):
    """`balance sql --lake`: the console's locked engine on the lake's latest snapshot, while
    a server writes it; writes, the claims and the catalog's other tables are refused."""
    from ingest import cli

    store = stores()
    for r in SLOW6[:5]:
        assert store.ingest([pending(fresh(r))]) == ["accepted"]
    # (count(DISTINCT ...) reads the Parquet files; a bare count(*) is answered from statistics)
    count = "SELECT count(DISTINCT game_id) AS n, count(DISTINCT turn) > 1 AS t FROM game_turns"
    assert cli.main(["sql", "--lake", lake, "--csv", count]) == 0
    assert capsys.readouterr().out.splitlines() == ["n,t", "5,true"]
    assert store.ingest([pending(fresh(SLOW6[5]))]) == ["accepted"]
    assert cli.main(["sql", "--lake", lake, "--csv", count]) == 0
    assert capsys.readouterr().out.splitlines() == ["n,t", "6,true"]
    data = lake_rows(lake, "SELECT value FROM __ducklake_metadata_lake.ducklake_metadata "
                     "WHERE key = 'data_path' AND scope IS NULL")[0][0]  # fmt: skip
    for hostile in (
        "DELETE FROM games",
        "SELECT * FROM balance_claims",
        "SELECT * FROM __ducklake_metadata_store.balance_claims",
        "SELECT * FROM postgres_query('__ducklake_metadata_store', 'SELECT 1')",
        "SELECT * FROM read_parquet('/etc/passwd')",
        f"SELECT * FROM read_parquet('{data}**/*.parquet')",
        "SELECT * FROM no_such_table",
    ):
        assert cli.main(["sql", "--lake", lake, hostile]) == 1, hostile
        err = capsys.readouterr().err
        assert err.startswith("balance sql:"), err
        assert data.rstrip("/") not in err and lake not in err, err
    unreachable = "host=127.0.0.1 port=1 dbname=x"
    assert cli.main(["sql", "--lake", unreachable, "SELECT 1"]) == 2
    assert "balance sql:" in capsys.readouterr().err
    for command in (["reverify"], ["jobs", "run"], ["load-demo", "-n", "1"]):
        assert cli.main([*command, "--lake", unreachable]) == 2, command
        assert "cannot reach the catalog" in capsys.readouterr().err, command
    assert lake_rows(lake, "SELECT count(*) FROM games") == [(6,)]


@pytest.mark.parametrize("workers", [0, 1], ids=["in-process", "worker process"])
def test_the_dashboards_snapshot_of_a_lake_is_a_pinned_version_not_a_copy(
    stores, lake, tmp_path, workers
):
    """A lake server's console and charts read the lake at one pinned version: no file is
    copied (however large the lake), every query sees the same games until the next refresh,
    which sees the new ones; the catalog string never shows in an error."""
    from dashboard.snapshot import Snapshots

    store = stores()
    for r in SLOW6[:3]:
        assert store.ingest([pending(fresh(r))]) == ["accepted"]
    snaps = Snapshots(store, tmp_path / "snaps", workers=workers, max_age=3600)
    try:
        count = "SELECT count(DISTINCT game_id) AS n FROM game_turns"  # reads the files
        assert snaps.run(count).table.to_pylist() == [{"n": 3}]
        first = snaps.current()
        assert first.snapshot_at.endswith("Z")
        for r in SLOW6[3:5]:
            assert store.ingest([pending(fresh(r))]) == ["accepted"]
        assert snaps.run(count).table.to_pylist() == [{"n": 3}]  # pinned
        snaps.refresh()
        assert snaps.current().path != first.path
        assert snaps.run(count).table.to_pylist() == [{"n": 5}]
        assert not list((tmp_path / "snaps").glob("snapshot-*"))  # nothing copied
        with pytest.raises(Exception) as err:
            snaps.run("SELECT * FROM no_such_table")
        assert lake not in str(err.value)
    finally:
        snaps.close()


def test_a_forked_sql_worker_reads_the_lake_with_the_servers_environment_not_the_fork_servers(
    stores, tmp_path, monkeypatch
):
    """SQL workers fork from the server's fork server (ingest/server/workers.py), which keeps
    the environment it started with. A worker must read the lake as the server would: here
    the extension directory is named only after the fork server started, and the worker
    installs the extensions there (the console's lake connections do, read_only_config)."""
    import multiprocessing.forkserver

    from dashboard.snapshot import Snapshots
    from ingest.server.workers import process_context

    processes = process_context()
    multiprocessing.forkserver.ensure_running()  # started before the variable below
    store = stores()
    assert store.ingest([pending(fresh(SLOW6[0]))]) == ["accepted"]
    fresh_dir = tmp_path / "extensions"
    monkeypatch.setenv("BALANCE_LAKE_EXTENSIONS", str(fresh_dir))
    snaps = Snapshots(store, tmp_path / "snaps", workers=1, max_age=3600, processes=processes)
    try:
        assert snaps.run("SELECT count(*) AS n FROM games").table.to_pylist() == [{"n": 1}]
        (worker,) = snaps.pool.pids()
        stat = Path(f"/proc/{worker}/stat").read_text()
    finally:
        snaps.close()
    assert int(stat.rsplit(")", 1)[1].split()[1]) != os.getpid()  # the fork server's child
    assert sorted(p.name for p in fresh_dir.glob("v*/*/*.duckdb_extension")), list(
        fresh_dir.rglob("*")
    )


def test_saved_query_slugs_stay_unique_when_two_servers_save_at_once(stores):
    """Saved queries on a lake: two servers saving the same title at the same moment, again
    and again, give distinct slugs, each readable as what its server saved; a slug chosen by
    the client is had by one of them, the other told 409."""
    from dashboard.console.saved import Conflict, SavedQueries, from_body

    def fields(title: str, sql: str) -> dict:
        return from_body({"title": title, "sql": sql}, lambda text: None)

    a, b = SavedQueries(stores()), SavedQueries(stores())
    made: list = []
    errors: list = []

    def save(saved: SavedQueries, sql: str, slug=None) -> None:
        try:
            made.append((sql, saved.create(fields("Win rate", sql), slug)))
        except Conflict as exc:
            errors.append(exc)

    for round_ in range(4):
        barrier = [
            threading.Thread(target=save, args=(side, f"SELECT {round_} AS {name}"))
            for side, name in ((a, "a"), (b, "b"))
        ]
        for t in barrier:
            t.start()
        for t in barrier:
            t.join()
    assert not errors
    slugs = [saved.slug for _, saved in made]
    assert len(slugs) == 8 and len(set(slugs)) == 8, slugs
    for sql, saved in made:
        assert saved.sql == sql
        assert a.get(saved.slug).sql == sql and b.get(saved.slug).sql == sql
    assert sorted(s.slug for s in a.list()[0]) == sorted(slugs)
    threads = [
        threading.Thread(target=save, args=(side, f"SELECT 9 AS {n}", "chosen"))
        for side, n in ((a, "a"), (b, "b"))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 1, errors
    winner = [saved for sql, saved in made if saved.slug == "chosen"]
    assert len(winner) == 1 and a.get("chosen").sql == winner[0].sql
    assert [s.slug for s in b.list()[0]].count("chosen") == 1


def _as_version_1(catalog: str) -> None:
    """Make `catalog`'s lake what version 1 of this code left: no commit gate in the catalog
    (its table and the claim function's check), store_meta saying 1."""
    from ingest.storage.lake.claims import SCHEMA

    con = connect(catalog)
    try:
        claims = Claims(con, "balance_pg")
        claims.execute("DROP TABLE balance_gate")
        old = SCHEMA.split("CREATE OR REPLACE FUNCTION balance_claim(")[1].split("$fn$;")[0]
        old = old.replace(
            "        WHERE NOT EXISTS (SELECT 1 FROM balance_gate WHERE closed_until > now())\n", ""
        )
        claims.execute("CREATE OR REPLACE FUNCTION balance_claim(" + old + "$fn$;")
        con.execute("DELETE FROM store_meta WHERE key = 'lake_schema_version'")
        con.execute("INSERT INTO store_meta VALUES ('lake_schema_version', '1')")
    finally:
        con.close()


def test_an_older_lake_is_refused_by_servers_until_upgraded(lake, stores, capsys):
    """`balance lake upgrade`: a version-1 lake (before the commit gate) is refused by this
    version's servers with the command to run; the upgrade installs the gate, keeps every
    game, says what it did, and a second run has nothing to do. A lake whose tables differ in
    a way no step covers is refused, naming the column."""
    from ingest import cli

    store = stores()
    games = [fresh(r) for r in SLOW6[:4]]
    assert store.ingest([pending(g) for g in games]) == ["accepted"] * 4
    store.close()
    _as_version_1(lake)
    with pytest.raises(LakeError, match="balance lake upgrade"):
        LakeStore(lake)
    assert cli.main(["lake", "upgrade", "--lake", lake]) == 0
    assert f"from schema version 1 to {LAKE_SCHEMA_VERSION}" in capsys.readouterr().out
    assert cli.main(["lake", "upgrade", "--lake", lake]) == 0
    assert f"at schema version {LAKE_SCHEMA_VERSION} already" in capsys.readouterr().out
    store = stores()
    assert store.ingest([pending(g) for g in games]) == ["duplicate"] * 4
    con = connect(lake)
    try:
        Claims(con, "balance_pg").close_gate("gate_test", 0.6)  # the gate works again
    finally:
        con.close()
    began = time.monotonic()
    assert store.ingest([pending(fresh(SLOW6[4]))]) == ["accepted"]
    assert time.monotonic() - began >= 0.3
    assert check(lake)["ok"]
    con = connect(lake, claims=False)
    try:
        con.execute("ALTER TABLE saved_queries DROP COLUMN version")
    finally:
        con.close()
    assert cli.main(["lake", "upgrade", "--lake", lake]) == 1
    assert "saved_queries: missing version" in capsys.readouterr().err


def test_a_store_that_cannot_open_leaves_no_directory_behind(
    lake, pg_cluster, monkeypatch, tmp_path
):
    """A server that cannot open its lake (the catalog refuses it, the lake is older) fails
    with nothing of its own left: each try made a work directory, and a retrying server
    filled the temp directory with them."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(lake_store.tempfile, "tempdir", str(temp))
    store = LakeStore(lake)
    assert [p.name[:13] for p in temp.iterdir()] == ["balance-lake-"]  # its own, while open
    store.close()
    assert list(temp.iterdir()) == []
    no_catalog = lake.replace(f"port={pg_cluster.port}", f"port={free_port()}")
    with pytest.raises(LakeError, match="cannot reach the catalog"):
        LakeStore(no_catalog)
    _as_version_1(lake)
    with pytest.raises(LakeError, match="balance lake upgrade"):
        LakeStore(lake)
    assert list(temp.iterdir()) == []


def test_rejections_roll_up_beside_another_servers_flushes(stores, lake):
    """One server rolls up past days' rejection rows while another keeps flushing its counts
    into the same lake table: every count is kept (a transaction that loses to the other's
    commit fails and is tried again: the flush keeps its counts, the roll-up runs later)."""
    import datetime as dt

    from ingest.server.rejections import INSERT, RejectionTally

    one, two = stores(), stores()
    yesterday = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
    row = (yesterday, "lineups", "invalid value", 1)
    one.submit(lambda con: con.executemany(INSERT, [row] * 20)).result(30)
    roller, flusher = RejectionTally(one, every=0), RejectionTally(two, every=0)
    stop, counted = threading.Event(), [0]

    def flush_all_along():
        while not stop.is_set():
            flusher.count([{"verdict": "rejected", "field": "players", "message": "bad"}] * 3)
            counted[0] += 3
            flusher.flush()

    thread = threading.Thread(target=flush_all_along)
    thread.start()
    try:
        time.sleep(0.3)
        for _ in range(30):
            roller._rolled = None  # as on the next day's first flush, or a restart
            roller.roll_up()
            if lake_rows(lake, "SELECT count(*) FROM rejections WHERE day = ?", [yesterday]) == [
                (1,)
            ]:
                break
    finally:
        stop.set()
        thread.join(30)
    while flusher.pending():
        flusher.flush()
    assert lake_rows(lake, "SELECT records FROM rejections WHERE day = ?", [yesterday]) == [(20,)]
    today = lake_rows(lake, "SELECT sum(records) FROM rejections WHERE field = 'players'")
    assert today == [(counted[0],)] and counted[0] > 0
