"""The store: the server's single DuckDB connection, its group commit and its rows thread.

DuckDB allows one writing process per file, and one writer at a time in it: whoever holds the
commit lock. Uploads commit in groups, leader and followers (as LevelDB's writers do): a
request queues its games; the request at the head of the queue leads: it takes everything
queued (up to `commit_max` games), decides duplicate / conflict for each game against every
stored id and the games ahead of it in the group, makes the group's new raw records durable,
answers its followers and hands the head to the next request waiting. Uploads that arrive
during a commit make the next group, so concurrent uploads share commits without anyone
waiting for them. A 2xx is sent after that commit, so an acknowledged game survives a crash.
Each follower is woken once, and nobody else is: on this VM a thread's wake-up costs ~50 µs of
CPU, as much as the rest of a commit (a writer thread woken for each group, which then woke
every request, cost ~250 µs of CPU a single-record upload).

With `defer_rows` (the default) the commit is an append + fdatasync of the upload journal
(ingest/storage/journal.py): a DuckDB commit costs 2-3 ms of CPU whatever its size, and committing
each small group of single-record uploads made it the server's bottleneck. The rows thread
then writes journaled games into DuckDB in batches, each game's raw record and derived rows
(games, game_turns, ..., quarantine) in one transaction. It counts, per journal segment, the
games not yet committed in DuckDB, and deletes a segment once it is closed and that count is
zero. On open, the games of segments left by a crash go the same way (before serving), and
`recover` rebuilds any derived rows missing for a stored raw record. Readers (`reader`) and
writes through `submit` (jobs, reverify: run by the calls thread under the commit lock) first
wait for every journaled game to reach DuckDB. Without `defer_rows`, a group's raw and derived
rows share one DuckDB transaction.

Storage failures (a full disk, an I/O error). Nothing is acknowledged unless it is durable, and
no game is dropped or quarantined for a failed write (a full disk is not a property of the
game). While the store cannot write, `failure` says why and `ingest` raises
`StorageUnavailable` at once (the upload is answered 503 with Retry-After, nothing stored);
each cause clears itself once writes work again, without a restart:

- "journal": an append or its fdatasync failed. That segment is failed (journal.Journal: never
  appended to again); the group is not acknowledged. The calls thread probes with backoff by
  opening a new segment (name and magic line synced).
- "duckdb": a rows batch (or, without the journal, a group) could not be committed. The rows
  thread keeps the batch and retries it with backoff, first asking DuckDB which of its games
  it already holds (a commit can be durable and still raise: DuckDB's autocheckpoint failing
  after it). A failed checkpoint invalidates DuckDB's database instance: the rows thread then
  reopens the connection (DuckDB replays its WAL) under the commit lock.
- "space": less than `min_free` bytes (BALANCE_MIN_FREE, default 64 MiB) free on the store's
  filesystem: uploads stop before the disk is full, so that DuckDB has room for the games
  journaled already and for its checkpoint. Checked at each group commit and each second.

The WAL only shrinks at a checkpoint, and a checkpoint needs room for the blocks it writes:
on a small or nearly full disk the rows thread checkpoints early, once the WAL outgrows a
quarter of the free space (while there is room for it).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as CommitTimeout
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import duckdb
import orjson
import pyarrow as pa

from . import codec, journal, registry, rows
from . import failures as failures_mod
from .failures import Failures, StorageUnavailable
from .interface import Pinned
from .rejudge import QUARANTINED, VERIFIED, Rejudge, rows_judged_again
from .shared import (
    ACCEPTED,
    CONFLICT,
    DUPLICATE,
    STOP,
    Call,
    Pending,
    insert_tables,
    missing_columns,
    rollback,
    schema_sql,
    storage_error,
    transaction,
)
from .sizes import MiB

log = logging.getLogger("ingest.store")

_BACKOFF_FIRST, _BACKOFF_MAX = 0.25, 5.0  # retries of a failed write (seconds)
_RELIEF_MIN = 1 * MiB  # a WAL smaller than this is never checkpointed early


def _invalidated(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.FatalException) or "invalidated" in str(exc).lower()


def _reason(what: str, exc: BaseException) -> str:
    """The failure's reason for clients and /healthz (no path); the log gets it whole."""
    return failures_mod.logged_reason(log, what, exc)


def _held_lock() -> threading.Lock:
    lock = threading.Lock()
    lock.acquire()
    return lock


@dataclass(slots=True, eq=False)
class _Ingest:
    """One request's games in the commit queue. `wake` is released once: when the task is
    done (by the leader that committed it), or when it becomes the head and leads."""

    items: list[Pending]
    deadline: float  # monotonic: the leader waits for the commit lock until then
    wake: threading.Lock = field(default_factory=_held_lock)
    outcomes: list[str] | None = None
    error: BaseException | None = None
    done: bool = False


@dataclass(slots=True, eq=False)
class _Rows:
    """A stored game's raw record row and derived rows, for the rows thread."""

    gid: str
    raw: tuple
    rows: rows.Rows | rows.Part | None
    segment: Path | None = None  # the journal segment that holds it until DuckDB does
    stuck: bool = False  # could not be stored at all (a bug): its segment stays


@dataclass(slots=True)
class _SegmentDone:
    """Every game of this journal segment is ahead of this mark in the rows queue."""

    path: Path


@dataclass(slots=True, eq=False)
class _Flush:
    """A waiter in the rows queue: set once every game ahead of it is in DuckDB (`error`
    None), or once the rows thread could not store them (`error`: why)."""

    event: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


def open_db(path: str | Path, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection to the store file, created with its schema when writable."""
    con = duckdb.connect(str(path), read_only=read_only)
    if not read_only:
        con.execute(schema_sql())
        migrate(con)
    codec.register_sql(con)
    return con


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Bring a store file made by an earlier version to this schema: each missing column
    added with its default (every existing game was judged under `standard`), then made NOT
    NULL (DuckDB cannot add a column with a constraint). One transaction; the columns added."""
    missing = missing_columns(con)
    if not missing:
        return []
    with transaction(con):
        for table, column, definition in missing:
            con.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
            con.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET NOT NULL")
    log.info("store migrated: added %s", ", ".join(f"{t}.{c}" for t, c, _ in missing))
    return [f"{t}.{c}" for t, c, _ in missing]


def signature(cur: duckdb.DuckDBPyConnection) -> tuple:
    """Cheap fingerprint of the store's contents: table identities, sizes and the raw row count."""
    tables = cur.execute(
        "SELECT table_name, table_oid, estimated_size FROM duckdb_tables() "
        "WHERE database_name = current_database() ORDER BY table_name"
    ).fetchall()
    try:
        raw = cur.execute("SELECT count(*), max(received_at) FROM raw_records").fetchone()
    except duckdb.Error:  # a store without raw_records yet: the table list alone will do
        raw = None
    return (tuple(tables), raw)


class Store:
    """The single DuckDB connection of the server process, its group commit and rows thread
    (interface.GameStore's file backend)."""

    shared_writers = False  # the file has one writing process: this one
    rows_when_judged = False  # journaled games' rows are built later, in batches

    def __init__(
        self,
        path: str | Path,
        *,
        commit_max: int = 5000,
        on_commit: Callable[[int, float], None] | None = None,
        checkpoint_threshold: str = "256MB",
        defer_rows: bool = True,
        judge=None,
        threads: int = 1,
        rows_interval: float = 1.0,
        segment_seconds: float = 1.0,
        min_free: int | None = None,
    ):
        self.path = str(path)
        self.segment_seconds = segment_seconds
        self.commit_max = commit_max
        self.defer_rows = defer_rows
        self.rows_interval = rows_interval
        # uploads stop below this many free bytes (0: only when a write fails)
        self.min_free = failures_mod.min_free(min_free)
        self._dir = str(Path(self.path).resolve().parent)
        self._on_commit = on_commit
        self._checkpoint_threshold = checkpoint_threshold
        # DuckDB threads of the store's database, its readers' and jobs' too (0: DuckDB's own
        # choice, a thread per core). 1, BALANCE_DB_THREADS's default, for every opener: the
        # commands that load a store (`load-demo`, `serve --demo`, `import`) and the tests'
        # stores ran on 0 and spent 10-20% more CPU on the same work, and took no less time.
        self._threads = threads
        self._con = self._connect()
        self._closed = False
        # The commit queue (its head leads) and the lock of whoever writes: a leader's
        # group, a call, a journal rotation, a reopen of the connection.
        self._writers: deque[_Ingest] = deque()
        self._gate = threading.Lock()  # guards _writers and _closed
        self._commit_lock = threading.Lock()
        # Storage failures: cause ("journal", "duckdb", "space") -> why; see the module doc.
        self._failures = Failures("storage", log)
        self._journal_retry_at, self._journal_backoff = 0.0, _BACKOFF_FIRST
        self._duck_retry_at, self._duck_backoff = 0.0, _BACKOFF_FIRST
        self._relief_retry_at, self._relief_backoff = 0.0, 30.0
        self._invalid = False  # DuckDB invalidated its database (a failed checkpoint): reopen
        self._uncertain: list[int] = []  # keys whose commit raised but may be durable
        self._recover_pending = False
        # game_id (as int) -> content hash of every stored record: the leader decides
        # duplicate / conflict from this without a query (a lookup by id in DuckDB is a scan).
        self._known: dict[int, int] = self._load_known()
        # the registered rulesets (every registration goes through this process: the file
        # has one writer), judged by here and handed to the judge processes
        self.registry = registry.Registry(self._load_rulesets, exclusive=True)
        self.registry.reload()
        if judge is not None:
            judge.registry = self.registry
        self._judge = judge
        # (lines, receive times) -> (status, rows) a line (Judge.rows_of), to build the rows of
        # verified games that came without them; the app sets its judge processes' (None:
        # built on the rows thread)
        self.rebuild: Callable[[list, list], list] | None = None
        left_behind = journal.segments(self.path)
        self._journal = journal.Journal(self.path) if defer_rows else None
        self._segment_started = 0.0
        # The rows thread's own state: games taken from the queue and not yet in DuckDB
        # (oldest first), flush waiters, and per journal segment the games it holds that
        # DuckDB does not (a closed segment with none left is deleted).
        self._rows_queue: queue.SimpleQueue = queue.SimpleQueue()
        self._rows_wake = threading.Event()
        self._pending: list[_Rows] = []
        self._waiters: list[_Flush] = []
        self._outstanding: dict[Path, int] = {}
        self._finished: set[Path] = set()
        self._rows_check = False  # _pending holds games of a failed commit: ask DuckDB first
        self._rows_stop = False
        self._rows_con = self._con.cursor()
        self._rows_thread = threading.Thread(target=self._rows_run, name="store-rows", daemon=True)
        self._rows_thread.start()
        self.journaled = self._load_journal(left_behind, judge)
        if self.journaled:
            try:
                self.flush_rows(None)  # before serving: readers see them
            except StorageUnavailable as exc:  # a nearly full disk: serve (503) and retry
                log.error("journaled games not in DuckDB yet (kept in the journal): %s", exc)
        self.recovered = self._recover_at_open(judge)
        self._check_space()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()  # calls (submit) and STOP
        self._thread = threading.Thread(target=self._run, name="store-calls", daemon=True)
        self._thread.start()

    def _connect(self) -> duckdb.DuckDBPyConnection:
        con = open_db(self.path)
        try:
            # Fewer, larger checkpoints: each one rewrites the tables' last row groups, and
            # the blocks it frees stay in the file (about 70 bytes a game at the 16 MB
            # default).
            con.execute(f"SET checkpoint_threshold = '{self._checkpoint_threshold}'")
            if self._threads > 0:
                # The writer's statements are tiny (a few rows): with more than one DuckDB
                # thread each INSERT/COMMIT also wakes and syncs the pool, ~1.5x their cost
                # (benchmarks/ingest_http.py). The server's readers share the setting.
                con.execute(f"SET threads = {int(self._threads)}")
        except BaseException:
            con.close()
            raise
        return con

    # -- public interface -------------------------------------------------------------------

    @property
    def parallel_groups(self) -> int:
        """One: the one writing connection commits one group at a time."""
        return 1

    @property
    def failure(self) -> str | None:
        """Why the store cannot store uploads now (None: it can); see the module doc."""
        return self._failures.reason

    def health(self) -> dict:
        """The storage state for /healthz: failure (None when ok), for how long, and the
        games acknowledged but not yet in DuckDB."""
        return {
            **self._failures.health(),
            "journal_backlog": len(self._pending) + self._rows_queue.qsize(),
        }

    def ingest(self, items: list[Pending], timeout: float | None = 60.0) -> list[str]:
        """Store `items` (in order); returns accepted/quarantined/duplicate/conflict per item,
        after the commit that holds them. Raises concurrent.futures.TimeoutError when the
        store stayed busy (a long call: reverify, jobs) for `timeout` seconds, and
        StorageUnavailable while the storage fails (see the module doc): nothing of `items`
        was stored then."""
        if not items:
            return []
        self._failures.check()
        wait = 1e9 if timeout is None else timeout
        task = _Ingest(items, time.monotonic() + wait)
        with self._gate:
            if self._closed:
                raise RuntimeError("store is closed")
            self._writers.append(task)
            leads = len(self._writers) == 1
        if not leads:
            task.wake.acquire()  # until a leader committed it, or made it the head
        if not task.done:
            self._lead(task)
        if task.error is not None:
            raise task.error
        if task.outcomes is None:  # (never: `_answer` gives every task outcomes or an error)
            raise RuntimeError("the commit was interrupted; nothing was stored")
        return task.outcomes

    def submit(
        self,
        fn: Callable[[duckdb.DuckDBPyConnection], object],
        *,
        transaction: bool = True,
        token: bool = False,
    ) -> Future:
        """Run `fn(con)` on the calls thread, holding the commit lock (uploads wait), inside
        its own transaction unless `transaction` is False (for statements DuckDB runs outside
        one, e.g. ATTACH); the Future holds its result (or exception, after a rollback).
        `token` (interface.GameStore.submit) asks for what a single writer has already: no
        other process's commit meets this one."""
        task = Call(fn, transaction, token=token)
        with self._gate:  # close puts its stop after every call queued before it
            if self._closed:
                raise RuntimeError("store is closed")
            self._queue.put(task)
        return task.future

    def reader(self) -> duckdb.DuckDBPyConnection:
        """A new cursor on the store for trusted read-only queries from another thread.
        The caller closes it. It sees every game acknowledged before the call, derived rows
        included (it waits for the rows thread first: read-your-writes); raises
        StorageUnavailable if the rows thread cannot store them now."""
        if not self._closed:
            self.flush_rows()
        return self._con.cursor()

    def known_count(self) -> int:
        return len(self._known)

    def stored_records(self) -> int:
        """The raw records in the file (a query: a file cannot hang the way a catalog can);
        raises StorageUnavailable while the rows thread cannot write what was acknowledged."""
        cur = self.reader()
        try:
            row = cur.execute("SELECT count(*) FROM raw_records").fetchone()
        finally:
            cur.close()
        return int(row[0]) if row is not None else 0

    def change_stamp(self) -> object:
        cur = self.reader()
        try:
            return signature(cur)
        finally:
            cur.close()

    def pinned(self) -> Pinned | None:
        return None  # a file keeps no versions: readers get a copy (submit)

    def register_rulesets(self, files: list[tuple[str, str | bytes]]) -> list[dict]:
        """On the calls thread, in one transaction (every registration goes through this
        process: the file has one writer)."""
        parsed = registry.parse_files(files, self.registry.lookup)
        try:
            result = self.submit(lambda con: registry.register(con, parsed)).result()
        finally:
            self.registry.reload()
        return cast(list[dict], result)

    def degraded(self) -> str | None:
        return None  # a file is either writable (failure None) or not

    def gauges(self) -> dict[str, tuple[str, float]]:
        return {}

    @property
    def closed(self) -> bool:
        """Closed: no upload or call is taken any more."""
        return self._closed

    def flush_rows(self, timeout: float | None = 60.0) -> None:
        """Wait until every derived row handed to the rows thread so far is committed; raises
        StorageUnavailable if it could not be (they stay in the journal, retried)."""
        waiter = _Flush()
        self._rows_queue.put(waiter)
        self._rows_wake.set()
        if not waiter.event.wait(timeout):
            raise TimeoutError("derived rows not written in time")
        if waiter.error is not None:
            raise waiter.error

    def close(self, checkpoint: bool = True) -> None:
        with self._gate:
            if self._closed:
                return
            self._closed = True  # no new uploads or calls
        while True:  # the uploads queued before are committed and answered
            with self._commit_lock, self._gate:
                if not self._writers:
                    break
            time.sleep(0.005)
        self._queue.put(STOP)
        self._thread.join()
        with self._commit_lock:
            self._end_segment()
        self._rows_queue.put(STOP)
        self._rows_wake.set()
        self._rows_thread.join()  # one last try: what it could not store stays journaled
        with contextlib.suppress(duckdb.Error):
            self._rows_con.close()
        if checkpoint and not self._invalid:
            try:
                self._con.execute("CHECKPOINT")
            except duckdb.Error as exc:  # the data is safe in the WAL either way
                log.warning("checkpoint at close failed: %s", exc)
        with contextlib.suppress(duckdb.Error):
            self._con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- storage failures ---------------------------------------------------------------------

    def _check_space(self) -> bool:
        """Whether `min_free` bytes are free on the store's filesystem (sets or clears the
        "space" failure)."""
        return failures_mod.check_space(self._failures, self._dir, self.min_free)

    def _journal_failed(self, reason: str) -> None:
        self._journal_retry_at = time.monotonic() + self._journal_backoff
        self._journal_backoff = min(_BACKOFF_MAX, self._journal_backoff * 2)
        self._failures.fail("journal", reason)

    def _probe_journal(self) -> None:
        """Under the commit lock: once its backoff is over, try to open a new segment (its
        name and magic line synced); the journal works again if that succeeds."""
        if self._journal is None or "journal" not in self._failures:
            return
        if time.monotonic() < self._journal_retry_at:
            return
        try:
            self._journal.open_segment()
        except OSError as exc:
            self._journal_failed(_reason("journal append", exc))
            return
        self._journal_backoff = _BACKOFF_FIRST
        self._failures.clear("journal")

    def _duckdb_failed(self, exc: BaseException, uncertain: list[int] | None = None) -> str:
        if _invalidated(exc):
            self._invalid = True
            self._uncertain.extend(uncertain or [])
        self._duck_retry_at = time.monotonic() + self._duck_backoff
        self._duck_backoff = min(_BACKOFF_MAX, self._duck_backoff * 2)
        reason = _reason("DuckDB write", exc)
        self._failures.fail("duckdb", reason)
        return reason

    def report(self, exc: BaseException) -> None:
        """A reader saw `exc`: if DuckDB invalidated the database, the rows thread reopens it."""
        if _invalidated(exc):
            self._duckdb_failed(exc)
            self._rows_wake.set()

    # -- group commit: the leader ------------------------------------------------------------

    def _lead(self, me: _Ingest) -> None:
        """Commit the group at the head of the queue (`me` first), answer it, and hand the
        head on. Run by the request at the head; `me` alone fails if the commit lock stays
        taken (a long call) until its deadline."""
        group = [me]
        try:
            if self._commit_lock.acquire(timeout=max(0.0, me.deadline - time.monotonic())):
                try:
                    with self._gate:  # taken now: what arrived while the lock was busy joins
                        group = self._head_group()
                    self._commit_group(group)
                    if time.monotonic() - self._segment_started > self.segment_seconds:
                        self._end_segment()
                finally:
                    self._commit_lock.release()
            else:
                me.error = CommitTimeout()
        finally:
            self._answer(me, group)

    def _head_group(self) -> list[_Ingest]:
        group: list[_Ingest] = []
        size = 0
        for task in self._writers:
            if group and size + len(task.items) > self.commit_max:
                break
            group.append(task)
            size += len(task.items)
        return group

    def _answer(self, me: _Ingest, group: list[_Ingest]) -> None:
        with self._gate:
            for _ in group:
                self._writers.popleft()
            head = self._writers[0] if self._writers else None
        for task in group:
            if task.outcomes is None and task.error is None:
                task.error = RuntimeError("the commit was interrupted; nothing was stored")
            task.done = True
            if task is not me:
                task.wake.release()
        if head is not None:
            head.wake.release()  # it leads the next group

    def _commit_group(self, group: list[_Ingest]) -> None:
        try:
            self._write(group)
        except Exception as exc:
            if storage_error(exc):  # the same for every request: none of them is stored
                reason = exc.reason if isinstance(exc, StorageUnavailable) else None
                reason = reason or self.failure or _reason("store write", exc)
                for task in group:
                    task.error = StorageUnavailable(reason)
                return
            if len(group) == 1:
                log.error("store write failed: %s", type(exc).__name__)
                group[0].error = exc
                return
            # one bad request must not fail its neighbours: retry each on its own
            for task in group:
                self._commit_group([task])

    def _write(self, group: list[_Ingest]) -> None:
        started = time.perf_counter()
        fresh: dict[int, int] = {}  # stored by this group, ahead of later items
        outcomes: list[list[str]] = []
        raw: list[tuple] = []
        derived: list[_Rows] = []
        for task in group:
            out = []
            for item in task.items:
                seen = fresh.get(item.key)
                if seen is None:
                    seen = self._known.get(item.key)
                if seen is not None:
                    out.append(DUPLICATE if seen == item.content_hash else CONFLICT)
                    continue
                fresh[item.key] = item.content_hash
                row = item.raw_row()
                raw.append(row)
                derived.append(_Rows(item.gid, row, item.rows))
                out.append(ACCEPTED if item.status == VERIFIED else QUARANTINED)
            outcomes.append(out)
        if raw:
            # a group queued before the storage failed, or a disk nearly full: nothing written
            if self._failures or not self._check_space():
                raise StorageUnavailable(self.failure or "storage unavailable")
            if self._journal is not None:
                try:
                    segment = self._journal.append(raw)  # durable from here on (fdatasync)
                except OSError as exc:
                    reason = _reason("journal append", exc)
                    self._end_segment()  # failed: deleted once its earlier games are stored
                    self._journal_failed(reason)
                    raise StorageUnavailable(reason) from exc
                for game in derived:
                    game.segment = segment
                    self._rows_queue.put(game)  # before the answer: read-your-writes
            else:
                try:
                    with transaction(self._con):
                        insert_tables(self._con, _tables(derived))
                except Exception as exc:
                    if not storage_error(exc):
                        raise
                    reason = self._duckdb_failed(exc, uncertain=list(fresh))
                    raise StorageUnavailable(reason) from exc
            self._known.update(fresh)
        elapsed = time.perf_counter() - started
        if self._on_commit is not None:
            self._on_commit(sum(len(t.items) for t in group), elapsed)
        for task, out in zip(group, outcomes, strict=True):
            task.outcomes = out

    def _end_segment(self) -> None:
        """Close the journal's open segment (under the commit lock): once the rows thread has
        its games in DuckDB, it deletes it."""
        if self._journal is not None:
            path = self._journal.rotate()
            if path is not None:
                self._rows_queue.put(_SegmentDone(path))
        self._segment_started = time.monotonic()

    # -- opening: what a crash left ------------------------------------------------------------

    def _load_known(self) -> dict[int, int]:
        table = self._con.sql("SELECT game_id::VARCHAR AS g, content_hash AS h FROM raw_records")
        known: dict[int, int] = {}
        for batch in table.to_arrow_reader(100_000):
            ids, hashes = batch.column(0).to_pylist(), batch.column(1).to_pylist()
            known.update(zip((int(g.replace("-", ""), 16) for g in ids), hashes, strict=True))
        return known

    def _load_journal(self, segments: list[Path], judge) -> int:
        """Hand the games of journal segments left behind (a crash) that DuckDB does not hold
        to the rows thread, their rows rebuilt from their raw records; each segment is deleted
        once they are stored. Returns how many games that is."""
        loaded = 0
        for segment in segments:
            try:
                data = segment.read_bytes()
            except OSError as exc:  # kept for the next start
                log.error("journal segment %s not readable: %s", segment.name, exc)
                continue
            items = []
            for row in journal.entries(data):
                key = int.from_bytes(row[0], "big")
                if key in self._known:  # stored before the crash, or earlier in the journal
                    continue
                self._known[key] = row[3]
                judge = judge or _default_judge(self.registry)
                items.append(_rebuilt(row, judge))
            for item in items:
                item.segment = segment
                self._rows_queue.put(item)
            self._rows_queue.put(_SegmentDone(segment))
            loaded += len(items)
        if loaded:
            log.info("loading %d acknowledged games from the journal", loaded)
            self._rows_wake.set()
        return loaded

    def _recover_at_open(self, judge) -> int:
        with self._commit_lock:
            try:
                return recover(self._con, judge or _default_judge(self.registry))
            except Exception as exc:
                if not storage_error(exc):
                    raise
                log.error("rows not rebuilt at open (retried later): %s", exc)
                self._recover_pending = True
                self._duckdb_failed(exc)
                self._rows_wake.set()
                return 0

    # -- calls thread ------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                task = self._queue.get(timeout=self.segment_seconds)
            except queue.Empty:
                with self._commit_lock:
                    self._end_segment()  # quiet a while: let the rows thread delete it
                    self._probe_journal()
                continue
            if task is STOP:
                return
            with self._commit_lock:
                self._call(task)
                self._probe_journal()

    def _call(self, task: Call) -> None:
        if not task.future.set_running_or_notify_cancel():
            return
        con = self._con
        try:
            self.flush_rows(None)  # fn sees (and may rewrite) every stored game's rows
            result = task.run(con)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            rollback(con)
            if _invalidated(exc):  # a failed checkpoint: the rows thread reopens
                self.report(exc)
            task.future.set_exception(exc)
        else:
            task.future.set_result(result)

    # -- rows thread ------------------------------------------------------------------------

    def _rows_run(self) -> None:
        while True:
            # A derived-rows commit costs ~2 ms a table whatever its row count: gather games
            # for `rows_interval` rather than commit each raw group's few games again (with 8
            # single-record clients that was 2-3 ms of CPU a game; at 50 ms still ~0.7 ms;
            # 1 s instead of 0.2 s took the server's CPU a game from 1,234 to 1,135 us, means
            # of 6 alternating runs). No reader waits for it: a waiter (flush_rows: a reader,
            # a job) or close wakes the thread at once. The leaders' puts wake nobody (a
            # thread blocked on the queue was woken for every game, ~40 us of CPU each).
            self._rows_wake.wait(self._rows_delay())
            self._rows_wake.clear()
            self._drain()
            failing = "duckdb" in self._failures
            if not failing or self._rows_stop or time.monotonic() >= self._duck_retry_at:
                self._rows_step()
            self._delete_finished()
            self._answer_waiters()
            self._check_space()
            if self._rows_stop:
                if self._pending:
                    log.error("%d journaled games not in DuckDB at close", len(self._pending))
                return

    def _rows_delay(self) -> float:
        if "duckdb" in self._failures:
            return min(self.rows_interval, max(0.01, self._duck_retry_at - time.monotonic()))
        return self.rows_interval

    def _drain(self) -> None:
        """Take everything queued for the rows thread."""
        while True:
            try:
                item = self._rows_queue.get_nowait()
            except queue.Empty:
                return
            if item is STOP:
                self._rows_stop = True
            elif isinstance(item, _Flush):
                self._waiters.append(item)
            elif isinstance(item, _SegmentDone):
                self._finished.add(item.path)  # every game of it is counted by now
            else:
                self._pending.append(item)
                if item.segment is not None:
                    self._outstanding[item.segment] = self._outstanding.get(item.segment, 0) + 1

    def _answer_waiters(self, failing: bool = False) -> None:
        waiters, self._waiters = self._waiters, []
        error = None
        if failing or self._pending or self._invalid:
            error = StorageUnavailable(self.failure or "journaled games not in DuckDB yet")
        for waiter in waiters:
            waiter.error = error
            waiter.event.set()

    def _done(self, item: _Rows) -> None:
        """`item` is committed in DuckDB."""
        if item.segment is None or item.stuck:
            return
        left = self._outstanding[item.segment] - 1
        if left:
            self._outstanding[item.segment] = left
        else:
            del self._outstanding[item.segment]

    def _delete_finished(self) -> None:
        """Delete the closed segments none of whose games is missing from DuckDB."""
        for path in [p for p in self._finished if p not in self._outstanding]:
            journal.remove(path)
            self._finished.discard(path)

    def _rows_step(self) -> None:
        """Store the pending games in DuckDB, `commit_max` to a transaction. A storage error
        keeps the games not stored yet for a retry with backoff: nothing is dropped."""
        try:
            if self._invalid:
                self._reopen()
            if self._rows_check and self._pending:
                self._drop_present()
            while self._pending:
                chunk = self._pending[: self.commit_max]
                self._fill_rows(chunk)
                self._store_chunk(chunk)
                del self._pending[: len(chunk)]
                for item in chunk:
                    self._done(item)
            self._rows_check = False
            if self._recover_pending:
                self._lock_commits()
                try:
                    recover(self._con, self._local_judge())
                finally:
                    self._commit_lock.release()
                self._recover_pending = False
            self._relieve_wal()
        except Exception as exc:  # noqa: BLE001 - retried; what failed is kept
            if not storage_error(exc):
                log.error("journaled games not written to DuckDB (retried): %r", exc)
            self._rows_check = True
            self._duckdb_failed(exc)
            return
        if not self._invalid:
            self._duck_backoff = _BACKOFF_FIRST
            self._failures.clear("duckdb")

    def _reopen(self) -> None:
        """Open the DuckDB connection again after DuckDB invalidated its database (a failed
        checkpoint: the transactions committed before it are in its WAL, replayed now)."""
        self._lock_commits()
        try:
            for con in (self._rows_con, self._con):
                with contextlib.suppress(Exception):
                    con.close()
            self._con = self._connect()
            self._rows_con = self._con.cursor()
            self._invalid = False
            log.warning("DuckDB connection reopened")
            if self._uncertain:  # groups whose commit raised: which of them are stored
                keys, self._uncertain = self._uncertain, []
                ids = [str(uuid.UUID(int=k)) for k in keys]
                known = dict(self._con.execute(_PRESENT_HASHES, [ids]).fetchall())
                for key, gid in zip(keys, ids, strict=True):
                    if gid in known:
                        self._known[key] = known[gid]
        finally:
            self._commit_lock.release()

    def _lock_commits(self) -> None:
        """Take the commit lock from the rows thread. A call may hold it while it waits for a
        flush: answer the waiters (failing) meanwhile, so that the call ends."""
        while not self._commit_lock.acquire(timeout=0.05):
            self._drain()
            self._answer_waiters(failing=True)

    def _drop_present(self) -> None:
        """Count as done the pending games DuckDB holds already: a commit that raised after
        it was durable (DuckDB's autocheckpoint failing after the commit), or the games of a
        batch stored one by one before a later one failed."""
        ids = [item.gid for item in self._pending]
        present = {g for (g, _) in self._rows_con.execute(_PRESENT_HASHES, [ids]).fetchall()}
        if not present:
            return
        keep = []
        for item in self._pending:
            if item.gid in present:
                self._done(item)
            else:
                keep.append(item)
        self._pending = keep

    def _relieve_wal(self) -> None:
        """Checkpoint early once the WAL outgrows a quarter of the free space, while there is
        room for the blocks a checkpoint writes: past that, the WAL could fill the disk and
        no checkpoint could shrink it."""
        if time.monotonic() < self._relief_retry_at:
            return
        try:
            wal = os.path.getsize(self.path + ".wal")
            st = os.statvfs(self._dir)
        except OSError:
            return
        free = st.f_bavail * st.f_frsize
        # not yet needed; or hopeless (a checkpoint writes blocks for every table it changed,
        # 256 KiB each at least, as much as the WAL's data at most): a failed one costs a
        # reopen of the database, which replays the WAL
        if wal < _RELIEF_MIN or free >= 4 * wal or free < wal + 4 * MiB:
            return
        try:
            self._rows_con.execute("CHECKPOINT")
        except duckdb.Error as exc:
            self._relief_retry_at = time.monotonic() + self._relief_backoff
            self._relief_backoff = min(600.0, self._relief_backoff * 2)
            if _invalidated(exc):
                raise
            log.info("early checkpoint not done: %s", exc)  # other transactions, likely
            return
        self._relief_backoff = 30.0
        log.info("checkpointed early: the WAL was %d KiB, %d KiB free", wal >> 10, free >> 10)

    def _local_judge(self) -> Rejudge:
        self._judge = self._judge or _default_judge(self.registry)
        return self._judge

    def _load_rulesets(self) -> tuple:
        cur = self._con.cursor()
        try:
            return registry.load_with_times(cur)
        finally:
            cur.close()

    def _fill_rows(self, batch: list[_Rows]) -> None:
        """Build the rows of verified games that came without them (gather.py) from their raw
        records, replayed again in the judge processes, 50 to a chunk. A game whose verdict
        changed gets no rows: `_store_chunk` then quarantines it as 'internal'."""
        missing = [item for item in batch if item.rows is None]
        if not missing:
            return
        lines = [(i, codec.decode(item.raw[5], item.raw[4])) for i, item in enumerate(missing)]
        times = [item.raw[6] for item in missing]
        built = rows_judged_again(lines, times, self.rebuild, self._local_judge)
        for item, (status, game_rows) in zip(missing, built, strict=True):
            if status != item.raw[2] or game_rows is None:
                log.error("game %s: judged again, its verdict changed; rows not built", item.gid)
                continue
            item.rows = game_rows

    def _store_chunk(self, chunk: list[_Rows]) -> None:
        """Commit the chunk's games in DuckDB; a storage error propagates (retried)."""
        built = [item for item in chunk if item.rows is not None]
        if built:
            self._write_rows(built)
        for item in chunk:
            if item.rows is None:
                self._quarantine(item, "judged again, its verdict changed (a bug)")

    def _write_rows(self, batch: list[_Rows]) -> None:
        """Commit the batch's raw records and derived rows in one transaction. Rows that do
        not fit the tables (a bug) put their game in the quarantine, found by storing the
        games one by one. A storage error propagates: it is never the game's fault."""
        con = self._rows_con
        try:
            with transaction(con):
                insert_tables(con, _tables(batch))
            return
        except Exception as exc:
            if storage_error(exc):
                raise
            failed = exc
        if len(batch) > 1:  # find the game at fault; the others go in
            for one in batch:
                self._write_rows([one])
            return
        log.error("rows of game %s failed: %s", batch[0].gid, type(failed).__name__)
        self._quarantine(batch[0], f"its rows could not be stored: {failed}")

    def _quarantine(self, item: _Rows, message: str) -> None:
        """Store the game's raw record in the quarantine with rule 'internal' (its upload was
        acknowledged: it is kept, out of the analysis), in one transaction. A storage error
        propagates; any other leaves the game in the journal, for the next start."""
        con = self._rows_con
        raw = (*item.raw[:2], QUARANTINED, *item.raw[3:])
        try:
            record = orjson.loads(codec.decode(item.raw[5], item.raw[4]))
            fault = SimpleNamespace(rule="internal", turn=None, seat=None, message=message)
            with transaction(con):
                insert_tables(con, {"raw_records": [raw]})
                insert_tables(con, rows.quarantine_row(item.gid, record, fault, item.raw[6]))
        except Exception as exc:
            if storage_error(exc):
                raise
            log.error("game %s not stored (kept in the journal): %r", item.gid, exc)
            item.stuck = True


_PRESENT_HASHES = (
    "SELECT game_id::VARCHAR, content_hash FROM raw_records "
    "WHERE game_id IN (SELECT unnest(?::UUID[]))"
)


def _rebuilt(row: tuple, judge) -> _Rows:
    """A journaled raw_records row with its rows judged again from the raw record; a verdict
    that changed since (an engine fix) is stored as it is now, as `recover` does."""
    key, game, status, content_hash, blob, codec_id, received = row
    gid = str(uuid.UUID(bytes=bytes(key)))
    now, game_rows = judge.stored_rows(codec.decode(codec_id, blob), received)
    if now is None:  # no longer well-formed: leave it to `balance reverify`
        log.warning("game %s: not well-formed any more; run balance reverify", gid)
        return _Rows(gid, row, {})
    if now != status:
        row = (key, game, now, content_hash, blob, codec_id, received)
    return _Rows(gid, row, game_rows)


def _tables(items: list[_Rows]) -> dict[str, pa.Table]:
    """The raw records and derived rows of `items` as one Arrow table per table. Their rows
    are built: a game comes with its rows, or the rows thread builds them (`_fill_rows`) and
    stores only the games it could."""
    raw = rows.to_arrow("raw_records", [item.raw for item in items])
    games: list[rows.Rows | rows.Part] = []
    for item in items:
        if item.rows is None:
            raise ValueError(f"game {item.gid}: its rows were never built")
        games.append(item.rows)
    return {"raw_records": raw, **rows.tables_of(games)}


_MISSING_ROWS = """
SELECT r.game_id::VARCHAR, r.status, r.codec, r.record, r.received_at FROM raw_records r
WHERE (r.status = 'verified' AND r.game = 'slow6' AND r.game_id NOT IN (SELECT game_id FROM games))
   OR (r.status = 'verified' AND r.game = 'slide'
       AND r.game_id NOT IN (SELECT game_id FROM slide_games))
   OR (r.status = 'quarantined' AND r.game_id NOT IN (SELECT game_id FROM quarantine))
"""


def recover(con: duckdb.DuckDBPyConnection, judge=None, chunk: int = 1000) -> int:
    """Rebuild the derived rows of raw records that have none (a crash between the commit of
    a raw record and of its rows, in an older store); returns how many games were rebuilt.
    `chunk` games to a transaction, so that a nearly full disk stops it between two (what is
    left is found again next time)."""
    missing = con.execute(_MISSING_ROWS).fetchall()
    if not missing:
        return 0
    if judge is None:  # judged by the store's own rulesets
        judge = _default_judge(registry.Registry(lambda: registry.load(con)))
        judge.registry.reload()
    for start in range(0, len(missing), chunk):
        games, moved = [], []
        for gid, status, codec_id, blob, received in missing[start : start + chunk]:
            now, game_rows = judge.stored_rows(codec.decode(codec_id, blob), received)
            if now is None:  # no longer well-formed: leave it to `balance reverify`
                log.warning("game %s: not well-formed any more; run balance reverify", gid)
                continue
            if now != status:
                moved.append((gid, now))
            games.append(game_rows)
        with transaction(con):
            insert_tables(con, rows.tables_of(games))
            for gid, status in moved:
                con.execute("UPDATE raw_records SET status = ? WHERE game_id = ?", [status, gid])
    log.info("rebuilt the rows of %d stored games", len(missing))
    return len(missing)


def _default_judge(rulesets: registry.Registry | None = None) -> Rejudge:
    return Rejudge(registry=rulesets)
