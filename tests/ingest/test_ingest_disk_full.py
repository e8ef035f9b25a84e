"""A full disk: nothing is acknowledged that is not durable, no acknowledged game is lost, a
journal segment lives until every game in it is in DuckDB, uploads are answered 503 with
Retry-After (never 500) while storage fails, /healthz says why, and the server recovers by
itself once space returns, restarts included (docs/ingest.md, "Storage failures").

The first tests inject failures in-process (a write of DuckDB or of the journal that fails);
the others run a real server on a small tmpfs filled by the test. Mounting one needs root:
they skip with the reason where it is not allowed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from support import SLIDE, SLOW6, descendants, dumps, free_bytes, fresh, query, wait_for

from ingest.server.pipeline import Judge, utcnow
from ingest.storage import StorageUnavailable, Store, journal
from ingest.storage import store as store_module

ENOSPC_COMMIT = (
    'TransactionContext Error: Failed to commit: Could not write file "s.duckdb.wal": '
    "No space left on device"
)


def pending(records):
    judge, now = Judge(), utcnow()
    return [judge.judge(i, dumps(r), now).pending for i, r in enumerate(records)]


def count(store, sql) -> int:
    cur = store.reader()
    try:
        return cur.execute(sql).fetchone()[0]
    finally:
        cur.close()


def raw_ids(table_rows: dict) -> set[bytes]:
    """The game ids (16 bytes) of the raw_records rows an insert_tables call holds."""
    data = table_rows.get("raw_records")
    if data is None:
        return set()
    if isinstance(data, pa.Table):
        return {v.bytes if isinstance(v, uuid.UUID) else bytes(v) for v in data[0].to_pylist()}
    return {bytes(row[0]) for row in data}


def fail_inserts_of(monkeypatch, game, when=lambda table_rows: True) -> threading.Event:
    """Make DuckDB inserts holding `game` fail as a full disk does (ENOSPC at the commit),
    while the returned event is set."""
    armed = threading.Event()
    armed.set()
    real = store_module.insert_tables
    key = game.key.to_bytes(16, "big")

    def insert_tables(con, table_rows):
        if armed.is_set() and key in raw_ids(table_rows) and when(table_rows):
            raise duckdb.TransactionException(ENOSPC_COMMIT)
        return real(con, table_rows)

    monkeypatch.setattr(store_module, "insert_tables", insert_tables)
    return armed


def eventually_flushed(store, within: float = 15.0) -> None:
    """Wait until the rows thread has every journaled game in DuckDB (it retries by itself)."""
    deadline = time.monotonic() + within
    while True:
        try:
            store.flush_rows(5)
            return
        except StorageUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def in_segment(path: Path, game) -> bool:
    key = game.key.to_bytes(16, "big")
    return path.exists() and any(row[0] == key for row in journal.entries(path.read_bytes()))


# -- in-process: the rules ---------------------------------------------------------------------


def test_a_segment_whose_games_failed_outlives_a_later_successful_batch(tmp_path, monkeypatch):
    """The segment's "done" mark reaches the rows thread in a later batch, which succeeds;
    the segment must stay until its own failed game is in DuckDB."""
    s = Store(tmp_path / "s.duckdb", rows_interval=60.0, segment_seconds=60.0)
    try:
        warm, a, b = pending([fresh(SLOW6[12]), fresh(SLOW6[0]), fresh(SLOW6[1])])
        assert s.ingest([warm]) == ["accepted"]  # the first group closes its segment at once
        armed = fail_inserts_of(monkeypatch, a)
        assert s.ingest([a]) == ["accepted"]
        first = s._journal.path  # open: its mark comes when it is closed, below
        assert in_segment(first, a)
        with contextlib.suppress(StorageUnavailable):
            s.flush_rows()  # a's batch fails: the disk is full
        with s._commit_lock:
            s._end_segment()  # the segment closes: its mark follows a's failed batch
        with contextlib.suppress(StorageUnavailable):
            s.ingest([b])  # refused (503) while the store cannot write
        with contextlib.suppress(StorageUnavailable):
            s.flush_rows()  # the batch carrying the mark
        assert in_segment(first, a), "the journal segment went while its game is not in DuckDB"
        assert count_raw(s, a) == 0
        assert s.failure.startswith("disk full: DuckDB write failed")
        armed.clear()  # space is back: the rows thread's retry stores it
        eventually_flushed(s)
        assert not first.exists()
        assert s.failure is None
        assert s.ingest([b]) in (["accepted"], ["duplicate"])
        assert count(s, f"SELECT count(*) FROM games WHERE game_id = '{a.gid}'") == 1
        assert count(s, f"SELECT count(*) FROM games WHERE game_id = '{b.gid}'") == 1
    finally:
        s.close()
    assert journal.segments(tmp_path / "s.duckdb") == []


def count_raw(s, game) -> int:
    cur = s._con.cursor()  # no flush: what DuckDB holds now
    try:
        sql = f"SELECT count(*) FROM raw_records WHERE game_id = '{game.gid}'"
        return cur.execute(sql).fetchone()[0]
    finally:
        cur.close()


def test_a_full_disk_never_quarantines_a_game(tmp_path, monkeypatch):
    """The batch's commit fails for lack of space; a smaller write (the raw record alone)
    would fit. The game is retried, never moved to the quarantine as 'internal'."""
    s = Store(tmp_path / "s.duckdb", rows_interval=60.0)
    try:
        good, victim = pending([fresh(SLOW6[2]), fresh(SLIDE[0])])
        armed = fail_inserts_of(monkeypatch, victim, when=lambda t: len(t) > 1)
        assert s.ingest([good, victim]) == ["accepted", "accepted"]
        with contextlib.suppress(StorageUnavailable):
            s.flush_rows()
        armed.clear()
        eventually_flushed(s)
        assert count(s, "SELECT count(*) FROM quarantine") == 0
        st = f"SELECT status FROM raw_records WHERE game_id = '{victim.gid}'"
        assert s.reader().execute(st).fetchall() == [("verified",)]
        assert count(s, f"SELECT count(*) FROM slide_games WHERE game_id = '{victim.gid}'") == 1
        assert count(s, "SELECT count(*) FROM raw_records") == 2
    finally:
        s.close()


def test_uploads_are_refused_while_duckdb_cannot_write_and_accepted_after(tmp_path, monkeypatch):
    s = Store(tmp_path / "s.duckdb", rows_interval=60.0)
    try:
        first, later = pending([fresh(SLOW6[3])]), pending([fresh(SLOW6[4])])
        armed = fail_inserts_of(monkeypatch, first[0])
        assert s.ingest(first) == ["accepted"]
        with pytest.raises(StorageUnavailable) as failed:
            s.flush_rows()
        assert failed.value.reason.startswith("disk full: DuckDB write failed")
        with pytest.raises(StorageUnavailable):
            s.ingest(later)  # nothing acknowledged while failing
        with pytest.raises(StorageUnavailable):
            s.reader()  # a reader would miss an acknowledged game
        health = s.health()
        assert health["failure"] and health["journal_backlog"] == 1
        armed.clear()
        eventually_flushed(s)
        assert s.ingest(later) == ["accepted"]
        assert count(s, "SELECT count(*) FROM games") == 2
    finally:
        s.close()


def test_a_failed_journal_write_acknowledges_nothing_and_nothing_follows_its_bytes(
    tmp_path, monkeypatch
):
    """ENOSPC after half an entry was written: that upload is refused, and the next one (once
    the disk has room) goes to a new segment, not after the torn bytes, where a reader at the
    next start would stop before it."""
    path = tmp_path / "s.duckdb"
    s = Store(path, rows_interval=60.0, segment_seconds=0.2)
    real_write = os.write
    armed = threading.Event()

    def write(fd, data):
        if armed.is_set() and s._journal is not None and fd == s._journal._fd:
            armed.clear()
            real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(journal.os, "write", write)
    try:
        before, torn, after = pending([fresh(SLOW6[5]), fresh(SLOW6[6]), fresh(SLOW6[7])])
        assert s.ingest([before]) == ["accepted"]
        armed.set()
        with pytest.raises(StorageUnavailable) as failed:
            s.ingest([torn])
        assert failed.value.reason == (
            "disk full: journal append failed: [Errno 28] No space left on device"
        )
        assert s.failure == failed.value.reason
        # the calls thread probes the journal with backoff
        wait_for(lambda: s.failure is None, 10, "the journal's failure cleared")
        assert s.ingest([after]) == ["accepted"]
        # what a crash now would leave: every acknowledged game readable in the journal
        on_disk = {
            row[0] for seg in journal.segments(path) for row in journal.entries(seg.read_bytes())
        }
        assert after.key.to_bytes(16, "big") in on_disk
        assert s.ingest([torn]) == ["accepted"]  # it never was acknowledged
        s.flush_rows()
        assert count(s, "SELECT count(*) FROM games") == 3
    finally:
        s.close()
    assert journal.segments(path) == []


def test_a_failed_fdatasync_fails_its_segment(tmp_path, monkeypatch):
    path = tmp_path / "s.duckdb"
    s = Store(path, rows_interval=60.0, segment_seconds=0.2)
    real_sync = os.fdatasync
    armed = threading.Event()

    def fdatasync(fd):
        if armed.is_set():
            armed.clear()
            raise OSError(errno.EIO, "Input/output error")
        return real_sync(fd)

    monkeypatch.setattr(journal.os, "fdatasync", fdatasync)
    try:
        lost, kept = pending([fresh(SLOW6[8]), fresh(SLOW6[9])])
        armed.set()
        with pytest.raises(StorageUnavailable) as failed:
            s.ingest([lost])
        assert failed.value.reason == "journal append failed: OSError: [Errno 5] Input/output error"
        failed_segment = s._journal.path
        assert failed_segment is None  # rotated at once: never appended to again
        wait_for(lambda: s.failure is None, 10, "the failed sync's failure cleared")
        assert s.ingest([kept]) == ["accepted"]
        assert s.ingest([lost]) == ["accepted"]  # the failed sync acknowledged nothing
    finally:
        s.close()


def test_a_commit_that_raises_once_durable_is_not_stored_twice(tmp_path, monkeypatch):
    """DuckDB's autocheckpoint can fail after a commit (FatalException: the commit is durable,
    the database instance invalidated). The rows thread reopens and does not insert again."""
    path = tmp_path / "s.duckdb"
    s = Store(path, rows_interval=60.0)
    real = store_module.transaction
    armed = threading.Event()

    @contextlib.contextmanager
    def transaction(con):
        with real(con):
            yield
        if armed.is_set():
            armed.clear()
            raise duckdb.FatalException(
                "FATAL Error: Transaction COMMIT succeeded and is durable, but the "
                "autocheckpoint failed. Reopen the database instance to recover."
            )

    monkeypatch.setattr(store_module, "transaction", transaction)
    try:
        items = pending([fresh(SLOW6[10]), fresh(SLOW6[11])])
        armed.set()
        assert s.ingest(items) == ["accepted", "accepted"]
        eventually_flushed(s)
        assert count(s, "SELECT count(*) FROM raw_records") == 2
        assert count(s, "SELECT count(*) FROM games") == 2
        assert s.failure is None
    finally:
        s.close()
    assert journal.segments(path) == []


def test_without_the_journal_a_failed_commit_is_refused_then_retried(tmp_path, monkeypatch):
    """BALANCE_DEFER_ROWS=0: the group's DuckDB commit is the durability; one that fails for
    lack of space is a 503, and the next upload (after the backoff) tries again."""
    s = Store(tmp_path / "s.duckdb", defer_rows=False)
    try:
        (game,) = pending([fresh(SLOW6[13])])
        armed = fail_inserts_of(monkeypatch, game)
        with pytest.raises(StorageUnavailable) as failed:
            s.ingest([game])
        assert failed.value.reason.startswith("disk full: DuckDB write failed")
        armed.clear()
        wait_for(lambda: s.failure is None, 10, "the store retries")
        assert s.ingest([game]) == ["accepted"]  # the failed commit stored nothing
        assert count(s, "SELECT count(*) FROM games") == 1
    finally:
        s.close()


def test_without_the_journal_a_commit_that_raised_once_durable_is_a_duplicate(
    tmp_path, monkeypatch
):
    """The commit was durable though DuckDB raised (its autocheckpoint failed): the upload was
    refused (503), and its retry must be answered duplicate, not stored a second time."""
    s = Store(tmp_path / "s.duckdb", defer_rows=False)
    real = store_module.transaction
    armed = threading.Event()

    @contextlib.contextmanager
    def transaction(con):
        with real(con):
            yield
        if armed.is_set():
            armed.clear()
            raise duckdb.FatalException("FATAL Error: the autocheckpoint failed")

    monkeypatch.setattr(store_module, "transaction", transaction)
    try:
        (game,) = pending([fresh(SLOW6[14])])
        armed.set()
        with pytest.raises(StorageUnavailable):
            s.ingest([game])
        wait_for(lambda: s.failure is None, 10, "the connection reopened")
        assert s.ingest([game]) == ["duplicate"]
        assert count(s, "SELECT count(*) FROM raw_records") == 1
    finally:
        s.close()


# -- a real server on a small tmpfs ----------------------------------------------------------


def fill(disk: Path, leave: int = 0) -> Path:
    """Write a filler file until the disk is full (ENOSPC), or until `leave` bytes are left."""
    path = disk / "filler"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 20, 1 << 16, 1 << 12):
            block = b"\0" * size
            while free_bytes(disk) - size >= leave:
                try:
                    os.write(fd, block)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return path


def segments_of(db: Path) -> list[Path]:
    return journal.segments(db)


class Uploads:
    """Clients uploading single records and batches until stopped; what each answer said."""

    def __init__(self, server, seed: int, clients: int = 3):
        self.server = server
        self.rng = random.Random(seed)
        self.acked: set[str] = set()  # answered accepted (or duplicate: stored before)
        self.statuses: Counter = Counter()
        self.bad: list[str] = []  # anything but 200 / 503 with Retry-After
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._client, args=(seed * 100 + i, i == 0), daemon=True)
            for i in range(clients)
        ]

    def __enter__(self) -> Uploads:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(60)

    def accepted_since(self, mark: int) -> int:
        with self.lock:
            return self.statuses[200] - mark

    def _client(self, seed: int, singles: bool) -> None:
        rng = random.Random(seed)
        while not self.stop.is_set():
            n = 1 if singles else rng.choice([2, 5, 20, 60])
            batch = [fresh(rng.choice(SLOW6 if rng.random() < 0.8 else SLIDE)) for _ in range(n)]
            try:
                if n == 1:
                    r = self.server.post("/v1/games", dumps(batch[0]), "application/json")
                else:
                    r = self.server.upload(batch)
            except OSError as exc:
                with self.lock:
                    self.bad.append(f"connection: {exc!r}")
                return
            with self.lock:
                self.statuses[r.status] += 1
                if r.status == 200:
                    for rec, res in zip(batch, r.json()["results"], strict=True):
                        if res["verdict"] in ("accepted", "duplicate"):
                            self.acked.add(rec["game_id"])
                        else:
                            self.bad.append(f"verdict {res['verdict']}")
                elif r.status == 503:
                    body = r.json()
                    if "retry-after" not in r.headers or "storage unavailable" not in body.get(
                        "message", ""
                    ):
                        self.bad.append(f"503 {r.headers} {r.body[:200]!r}")
                else:
                    self.bad.append(f"{r.status} {r.body[:300]!r}")
            if r.status == 503:
                time.sleep(0.05)


def healthz(server):
    r = server.get("/healthz", timeout=10)
    return r.status, r.headers, r.json()


def start_answering(server, timeout: float = 90.0) -> None:
    """server.start(), content with any JSON answer of /healthz (503 while storage fails)."""

    def answering() -> bool:
        if server.proc.poll() is not None:
            code = server.proc.returncode
            raise RuntimeError(f"server exited with {code}:\n{server.output()}")
        return server.get("/healthz", timeout=2).status in (200, 503)

    def wait(limit):
        try:
            wait_for(answering, limit, "/healthz answering", every=0.1, ignore=(OSError,))
        except TimeoutError:
            server.kill()
            raise TimeoutError(f"server not answering after {limit}s:\n{server.output()}") from None

    server.wait_healthy = wait
    server.start(timeout)


def crash(server) -> None:
    """kill -9, and wait for its worker (which holds the DuckDB file) to go with it."""
    processes = descendants(server.proc.pid)
    server.kill()
    wait_for(
        lambda: not any(Path(f"/proc/{pid}").exists() for pid in processes),
        15,
        "the server's processes gone",
    )


def stored_ids(db: Path) -> Counter:
    return Counter(g for (g,) in query(db, "SELECT game_id::VARCHAR FROM raw_records"))


def assert_all_stored(db: Path, acked: set[str]) -> None:
    stored = stored_ids(db)
    missing = acked - set(stored)
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged games lost"
    assert max(stored.values()) == 1
    with_rows = Counter(
        g
        for table in ("games", "slide_games")
        for (g,) in query(db, f"SELECT game_id::VARCHAR FROM {table}")
    )
    assert set(with_rows) == set(stored) and max(with_rows.values()) == 1
    assert query(db, "SELECT count(*) FROM quarantine") == [(0,)]


@pytest.mark.slow
def test_a_real_autocheckpoint_failing_on_a_full_disk(small_disk):
    """In-process on a real tmpfs: room for the next rows batch's WAL but not for the
    checkpoint its commit sets off past checkpoint_threshold. DuckDB raises FatalException and
    invalidates the database (measured: "Failed to create checkpoint ... No space left on
    device"; where the commit was written first, "COMMIT succeeded and is durable, but the
    autocheckpoint failed"). The store reopens, asks DuckDB which games it holds, stores none
    twice, and goes on once space is back."""
    disk = small_disk(16)
    path = disk / "s.duckdb"
    s = Store(path, rows_interval=60.0, checkpoint_threshold="1MB", min_free=0)
    judge, now, rng = Judge(), utcnow(), random.Random(5)

    def games(n):
        return [judge.judge(i, dumps(fresh(rng.choice(SLOW6))), now).pending for i in range(n)]

    acked = set()
    try:
        first = games(300)
        assert set(s.ingest(first)) == {"accepted"}
        acked |= {p.gid for p in first}
        s.flush_rows()
        filler = fill(disk, leave=1024 * 1024)
        second = games(400)
        assert set(s.ingest(second)) == {"accepted"}
        acked |= {p.gid for p in second}
        with pytest.raises(StorageUnavailable):
            s.flush_rows()
        with pytest.raises(StorageUnavailable):
            s.ingest(games(1))
        filler.unlink()
        eventually_flushed(s, within=30)
        third = games(50)
        assert set(s.ingest(third)) == {"accepted"}
        acked |= {p.gid for p in third}
        s.flush_rows()
        assert count(s, "SELECT count(*) FROM raw_records") == len(acked)
        assert count(s, "SELECT count(DISTINCT game_id) FROM games") == len(acked)
        assert count(s, "SELECT count(*) FROM games") == len(acked)
    finally:
        s.close()
    assert journal.segments(path) == []


@pytest.mark.slow
def test_disk_filled_during_uploads_loses_no_acknowledged_game(small_disk, server_factory):
    """(a) The disk fills while clients upload: answers are 200 or 503 + Retry-After, /healthz
    says why, uploads are accepted again once space is freed (no restart), and every game
    answered accepted is in DuckDB, after a kill -9 and a restart too."""
    disk = small_disk(40)
    # no reserve: the journal and DuckDB run into ENOSPC themselves
    server = server_factory(env={"BALANCE_MIN_FREE": "0"}, db=disk / "store.duckdb")
    with Uploads(server, seed=1) as up:
        wait_for(lambda: up.accepted_since(0) >= 20, 30, "uploads accepted")
        filler = fill(disk)
        full_at = up.statuses[200]
        status, headers, body = wait_for(
            lambda: (h := healthz(server))[0] == 503 and h, 20, "/healthz 503 on a full disk"
        )
        assert "retry-after" in headers
        assert body["reason"].startswith("disk full: ")
        assert "No space left on device" in body["reason"]
        wait_for(lambda: up.statuses[503] >= 10, 20, "uploads refused with 503")
        time.sleep(1.0)
        refused = up.statuses[503]
        filler.unlink()  # space is back: no restart
        back_at = up.statuses[200]
        wait_for(lambda: up.accepted_since(back_at) >= 20, 30, "uploads accepted again")
        wait_for(lambda: healthz(server)[0] == 200, 20, "/healthz 200 again")
    assert not up.bad, up.bad[:5]
    assert set(up.statuses) <= {200, 503}
    print(
        f"accepted before full {full_at}, refused (503) {refused}, "
        f"acknowledged games {len(up.acked)}"
    )
    # every acknowledged game is durable: in DuckDB, or in the journal until it is
    crash(server)
    server.start()
    server.stop()
    assert segments_of(server.db) == []
    assert_all_stored(server.db, up.acked)


@pytest.mark.slow
def test_recovers_without_restart_once_space_is_freed(small_disk, server_factory):
    """(b) With the reserve (BALANCE_MIN_FREE) uploads stop before the disk is full; once space
    is freed they are accepted again without a restart, and the journal drains into DuckDB
    while the server runs (its segments are deleted only then)."""
    disk = small_disk(40)
    reserve = 8 * 1024 * 1024
    server = server_factory(env={"BALANCE_MIN_FREE": str(reserve)}, db=disk / "store.duckdb")
    with Uploads(server, seed=2, clients=2) as up:
        wait_for(lambda: up.accepted_since(0) >= 10, 30, "uploads accepted")
        filler = fill(disk, leave=reserve // 2)
        status, headers, body = wait_for(
            lambda: (h := healthz(server))[0] == 503 and h, 20, "/healthz 503 below the reserve"
        )
        assert body["reason"].startswith("disk nearly full: ")
        assert headers["retry-after"] == "5"
        wait_for(lambda: up.statuses[503] >= 5, 20, "uploads refused with 503")
        # the games journaled before are moved into DuckDB meanwhile (room was kept for them)
        wait_for(lambda: not segments_of(server.db), 20, "journal drained below the reserve")
        filler.unlink()
        back_at = up.statuses[200]
        wait_for(lambda: up.accepted_since(back_at) >= 10, 30, "uploads accepted again")
    assert not up.bad, up.bad[:5]
    wait_for(lambda: not segments_of(server.db), 20, "journal drained")
    crash(server)  # the journal is gone: every acknowledged game must be in DuckDB already
    assert_all_stored(server.db, up.acked)


@pytest.mark.slow
def test_restart_on_a_full_disk_serves_and_recovers(small_disk, server_factory):
    """(c) Killed with games only in the journal, restarted on a full disk: the server starts,
    /healthz says why it cannot store, uploads get 503; once space is freed it stores the
    journaled games and accepts uploads again, without another restart."""
    disk = small_disk(40)
    server = server_factory(env={"BALANCE_MIN_FREE": "0"}, db=disk / "store.duckdb")
    records = [fresh(SLOW6[i % len(SLOW6)]) for i in range(200)]
    r = server.upload(records)
    assert r.status == 200
    crash(server)  # at once: the rows thread moves games to DuckDB every second
    journaled = {
        str(uuid.UUID(bytes=row[0]))
        for seg in segments_of(server.db)
        for row in journal.entries(seg.read_bytes())
    } - set(stored_ids(server.db))
    acked = {rec["game_id"] for rec in records}
    filler = fill(disk)
    start_answering(server)  # the old store failed here: loading the journal needs space
    status, headers, body = healthz(server)
    if journaled:  # games only in the journal: storing them needs space
        assert status == 503 and body["reason"].startswith("disk full: "), body
        assert "retry-after" in headers
        late = fresh(SLOW6[3])
        r = server.post("/v1/games", dumps(late), "application/json")
        assert r.status == 503 and "retry-after" in r.headers, r.body
    print(f"journaled at the kill: {len(journaled)} of {len(acked)}; healthz {status} {body}")
    filler.unlink()
    wait_for(lambda: healthz(server)[0] == 200, 30, "/healthz 200 once space is back")
    more = [fresh(SLIDE[i % len(SLIDE)]) for i in range(20)]
    r = server.upload(more)
    assert r.status == 200 and {x["verdict"] for x in r.json()["results"]} == {"accepted"}
    acked |= {rec["game_id"] for rec in more}
    wait_for(lambda: not segments_of(server.db), 20, "journal drained")
    assert server.stop() == 0
    assert_all_stored(server.db, acked)


@pytest.mark.slow
def test_restart_on_a_nearly_full_disk_with_the_reserve(small_disk, server_factory):
    """(c) The default path: below BALANCE_MIN_FREE at start, the server serves /healthz (503,
    why) and refuses uploads, then accepts them once space is freed."""
    disk = small_disk(32)
    reserve = 8 * 1024 * 1024
    server = server_factory(env={"BALANCE_MIN_FREE": str(reserve)}, db=disk / "store.duckdb")
    first = [fresh(SLOW6[i % len(SLOW6)]) for i in range(50)]
    assert server.upload(first).status == 200
    crash(server)
    filler = fill(disk, leave=reserve // 4)
    start_answering(server)
    status, headers, body = wait_for(
        lambda: (h := healthz(server))[0] == 503 and h, 20, "/healthz 503 below the reserve"
    )
    assert body["reason"].startswith("disk nearly full: ")
    r = server.upload([fresh(SLOW6[1])])
    assert r.status == 503 and r.headers["retry-after"] == "5"
    assert json.loads(r.body)["reason"] == body["reason"] or "disk nearly full" in r.body.decode()
    filler.unlink()
    wait_for(lambda: healthz(server)[0] == 200, 30, "/healthz 200 once space is back")
    later = [fresh(SLIDE[0])]
    assert server.upload(later).status == 200
    assert server.stop() == 0
    assert_all_stored(server.db, {x["game_id"] for x in first + later})
