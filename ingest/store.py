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
(ingest/journal.py): a DuckDB commit costs 2-3 ms of CPU whatever its size, and committing
each small group of single-record uploads made it the server's bottleneck. The rows thread
then writes journaled games into DuckDB in batches, each game's raw record and derived rows
(games, game_turns, ..., quarantine) in one transaction, and deletes a journal segment once
all its games are there. On open, segments left by a crash are loaded first, and `recover`
rebuilds any derived rows missing for a stored raw record. Readers (`reader`) and writes
through `submit` (jobs, reverify: run by the calls thread under the commit lock) first wait
for every journaled game to reach DuckDB. Without `defer_rows`, a group's raw and derived
rows share one DuckDB transaction.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as CommitTimeout
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import SimpleNamespace

import duckdb
import orjson
import pyarrow as pa

from . import codec, journal, rows

log = logging.getLogger("ingest.store")

VERIFIED, QUARANTINED = "verified", "quarantined"
ACCEPTED, DUPLICATE, CONFLICT = "accepted", "duplicate", "conflict"


@dataclass(slots=True)
class Pending:
    """One well-formed, replayed game waiting to be stored."""

    gid: str  # canonical lowercase UUID text
    key: int  # the UUID as an int: the idempotency key
    game: str
    content_hash: int
    codec: int
    blob: bytes
    status: str  # VERIFIED | QUARANTINED
    # its rows in the game tables, or its quarantine row; None: a verified game's rows are
    # built by the store (gather.py)
    rows: rows.Rows | rows.Part | None
    received: dt.datetime


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


@dataclass(slots=True)
class _Rows:
    """A stored game's raw record row and derived rows, for the rows thread."""

    gid: str
    raw: tuple
    rows: rows.Rows | rows.Part | None


@dataclass(slots=True)
class _SegmentDone:
    """Every game of this journal segment is ahead of this mark in the rows queue."""

    path: Path


@dataclass(slots=True)
class _Call:
    fn: Callable
    transaction: bool = True
    future: Future = field(default_factory=Future)


_STOP = object()


def schema_sql() -> str:
    return resources.files("ingest").joinpath("schema.sql").read_text(encoding="utf-8")


def open_db(path: str | Path, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection to the store file, created with its schema when writable."""
    con = duckdb.connect(str(path), read_only=read_only)
    if not read_only:
        con.execute(schema_sql())
    codec.register_sql(con)
    return con


class Store:
    """The single DuckDB connection of the server process, its group commit and rows thread."""

    def __init__(
        self,
        path: str | Path,
        *,
        commit_max: int = 5000,
        on_commit: Callable[[int, float], None] | None = None,
        checkpoint_threshold: str = "256MB",
        defer_rows: bool = True,
        judge=None,
        threads: int = 0,
        rows_interval: float = 1.0,
        segment_seconds: float = 1.0,
    ):
        self.path = str(path)
        self.segment_seconds = segment_seconds
        self.commit_max = commit_max
        self.defer_rows = defer_rows
        self.rows_interval = rows_interval
        self._on_commit = on_commit
        self._con = open_db(self.path)
        # Fewer, larger checkpoints: each one rewrites the tables' last row groups, and the
        # blocks it frees stay in the file (about 70 bytes a game at the 16 MB default).
        self._con.execute(f"SET checkpoint_threshold = '{checkpoint_threshold}'")
        # A transaction that fills a row group has DuckDB write it to the file before the
        # commit ("optimistic write"); the next checkpoint then merges the partial row groups
        # such transactions leave and frees their blocks, holes in the middle of the file:
        # 503-653 bytes a game at 100,000 games (rows batches of 1-5 s) instead of 482
        # (benchmarks/ingest_size.py). Kept in memory until the commit instead, a transaction's
        # rows are written once, compressed, at a checkpoint.
        self._con.execute("SET GLOBAL enable_optimistic_write = false")
        if threads > 0:
            # The writer's statements are tiny (a few rows): with more than one DuckDB thread
            # each INSERT/COMMIT also wakes and syncs the pool, ~1.5x their cost
            # (benchmarks/ingest_http.py). The server's readers share the setting.
            self._con.execute(f"SET threads = {int(threads)}")
        self._closed = False
        # The commit queue (its head leads) and the lock of whoever writes: a leader's
        # group, a call, a journal rotation.
        self._writers: deque[_Ingest] = deque()
        self._gate = threading.Lock()  # guards _writers and _closed
        self._commit_lock = threading.Lock()
        # game_id (as int) -> content hash of every stored record: the leader decides
        # duplicate / conflict from this without a query (a lookup by id in DuckDB is a scan).
        self._known: dict[int, int] = self._load_known()
        self._judge = judge
        # (lines, receive times) -> (status, rows) a line (Judge.rows_of), to build the rows of
        # verified games that came without them; the app sets its judge processes' (None:
        # built on the rows thread)
        self.rebuild: Callable[[list, list], list] | None = None
        self.journaled = load_journal(self._con, self.path, self._known)
        self.recovered = recover(self._con, judge)
        self._journal = journal.Journal(self.path) if defer_rows else None
        self._segment_started = 0.0
        self._rows_queue: queue.SimpleQueue = queue.SimpleQueue()
        self._rows_wake = threading.Event()
        self._rows_con = self._con.cursor()
        self._rows_thread = threading.Thread(target=self._rows_run, name="store-rows", daemon=True)
        self._rows_thread.start()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()  # calls (submit) and _STOP
        self._thread = threading.Thread(target=self._run, name="store-calls", daemon=True)
        self._thread.start()

    # -- public interface -------------------------------------------------------------------

    def ingest(self, items: list[Pending], timeout: float | None = 60.0) -> list[str]:
        """Store `items` (in order); returns accepted/quarantined/duplicate/conflict per item,
        after the commit that holds them. Raises concurrent.futures.TimeoutError when the
        store stayed busy (a long call: reverify, jobs) for `timeout` seconds: nothing of
        `items` was stored then."""
        if not items:
            return []
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
        return task.outcomes

    def submit(
        self, fn: Callable[[duckdb.DuckDBPyConnection], object], *, transaction: bool = True
    ) -> Future:
        """Run `fn(con)` on the calls thread, holding the commit lock (uploads wait), inside
        its own transaction unless `transaction` is False (for statements DuckDB runs outside
        one, e.g. ATTACH); the Future holds its result (or exception, after a rollback)."""
        task = _Call(fn, transaction)
        with self._gate:  # close puts its stop after every call queued before it
            if self._closed:
                raise RuntimeError("store is closed")
            self._queue.put(task)
        return task.future

    def reader(self) -> duckdb.DuckDBPyConnection:
        """A new cursor on the store for trusted read-only queries from another thread.
        The caller closes it. It sees every game acknowledged before the call, derived rows
        included (it waits for the rows thread first: read-your-writes)."""
        if not self._closed:
            self.flush_rows()
        return self._con.cursor()

    def known_count(self) -> int:
        return len(self._known)

    def flush_rows(self, timeout: float | None = 60.0) -> None:
        """Wait until every derived row handed to the rows thread so far is committed."""
        done = threading.Event()
        self._rows_queue.put(done)
        self._rows_wake.set()
        if not done.wait(timeout):
            raise TimeoutError("derived rows not written in time")

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
        self._queue.put(_STOP)
        self._thread.join()
        with self._commit_lock:
            self._end_segment()
        self._rows_queue.put(_STOP)
        self._rows_wake.set()
        self._rows_thread.join()
        self._rows_con.close()
        if checkpoint:
            try:
                self._con.execute("CHECKPOINT")
            except duckdb.Error as exc:  # the data is safe in the WAL either way
                log.warning("checkpoint at close failed: %s", exc)
        self._con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

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
        group, size = [], 0
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
                row = (
                    item.key.to_bytes(16, "big"),  # the UUID's bytes, as Arrow takes them
                    item.game,
                    item.status,
                    item.content_hash,
                    item.blob,
                    item.codec,
                    item.received,
                )
                raw.append(row)
                derived.append(_Rows(item.gid, row, item.rows))
                out.append(ACCEPTED if item.status == VERIFIED else QUARANTINED)
            outcomes.append(out)
        if raw:
            if self._journal is not None:
                self._journal.append(raw)  # durable from here on (fdatasync)
                for item in derived:
                    self._rows_queue.put(item)  # before the answer: read-your-writes
            else:
                with transaction(self._con):
                    insert_tables(self._con, _tables(derived))
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

    # -- calls thread ------------------------------------------------------------------------

    def _load_known(self) -> dict[int, int]:
        table = self._con.sql("SELECT game_id::VARCHAR AS g, content_hash AS h FROM raw_records")
        known: dict[int, int] = {}
        for batch in table.to_arrow_reader(100_000):
            ids, hashes = batch.column(0).to_pylist(), batch.column(1).to_pylist()
            known.update(zip((int(g.replace("-", ""), 16) for g in ids), hashes, strict=True))
        return known

    def _run(self) -> None:
        while True:
            try:
                task = self._queue.get(timeout=self.segment_seconds)
            except queue.Empty:
                with self._commit_lock:
                    self._end_segment()  # quiet a while: let the rows thread delete it
                continue
            if task is _STOP:
                return
            with self._commit_lock:
                self._call(task)

    def _call(self, task: _Call) -> None:
        if not task.future.set_running_or_notify_cancel():
            return
        con = self._con
        try:
            self.flush_rows(None)  # fn sees (and may rewrite) every stored game's rows
            if not task.transaction:
                result = task.fn(con)
            else:
                with transaction(con):
                    result = task.fn(con)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            _rollback(con)
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
            self._rows_wake.wait(self.rows_interval)
            self._rows_wake.clear()
            batch, waiters, done, stop = [], [], [], False
            while not stop:
                try:
                    item = self._rows_queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stop = True
                elif isinstance(item, threading.Event):
                    waiters.append(item)
                elif isinstance(item, _SegmentDone):
                    done.append(item.path)
                else:
                    batch.append(item)
            stored = True
            for start in range(0, len(batch), self.commit_max):
                try:
                    chunk = batch[start : start + self.commit_max]
                    self._fill_rows(chunk)
                    stored = self._write_rows(chunk) and stored
                except Exception as exc:  # keep serving; the journal keeps them for next open
                    log.error("journaled games not written to DuckDB: %s", exc)
                    stored = False
            if stored:
                for path in done:  # each of its games is in DuckDB now
                    journal.remove(path)
            for event in waiters:
                event.set()
            if stop:
                return

    def _fill_rows(self, batch: list[_Rows]) -> None:
        """Build the rows of verified games that came without them (gather.py) from their raw
        records, replayed again in the judge processes, 50 to a chunk. A game whose verdict
        changed gets no rows: `_write_rows` then quarantines it as 'internal'."""
        missing = [item for item in batch if item.rows is None]
        if not missing:
            return
        lines = [(i, codec.decode(item.raw[5], item.raw[4])) for i, item in enumerate(missing)]
        times = [item.raw[6] for item in missing]
        built = None
        if self.rebuild is not None:
            try:
                built = self.rebuild(lines, times)
            except Exception as exc:  # the judge processes stopping (close): built here
                log.warning("rows built here: the judge processes failed (%s)", exc)
        if built is None:
            self._judge = self._judge or _default_judge()
            built = self._judge.rows_many(lines, times)
        for item, (status, game_rows) in zip(missing, built, strict=True):
            if status != item.raw[2] or game_rows is None:
                log.error("game %s: judged again, its verdict changed; rows not built", item.gid)
                continue
            item.rows = game_rows

    def _write_rows(self, batch: list[_Rows]) -> bool:
        """Commit the batch's raw records and derived rows; False if a raw record could not
        be stored (it stays in the journal)."""
        con = self._rows_con
        try:
            with transaction(con):
                insert_tables(con, _tables(batch))
            return True
        except Exception as exc:
            if len(batch) > 1:  # find the game at fault; the others go in
                return all([self._write_rows([one]) for one in batch])
            failed = exc
        # rows that do not fit the tables: keep the game, out of the analysis
        one = batch[0]
        log.error("rows of game %s failed: %s", one.gid, type(failed).__name__)
        try:
            insert_tables(con, {"raw_records": [one.raw]})
        except Exception as exc:
            log.error("game %s not written to DuckDB (kept in the journal): %s", one.gid, exc)
            return False
        try:
            quarantine_internal(con, one.gid, f"its rows could not be stored: {failed}")
        except Exception as exc:
            log.error("could not quarantine game %s: %s", one.gid, exc)
        return True


def insert_tables(
    con: duckdb.DuckDBPyConnection, table_rows: dict[str, list[tuple] | pa.Table]
) -> None:
    """Insert rows (tuples, or an Arrow table) into their tables, one Arrow table per table
    (inside the caller's transaction). The relation insert skips SQL parsing and casts: an
    INSERT's cost grows with its column count, and a group commit pays it for every table."""
    for table, data in table_rows.items():
        if len(data):
            arrow = data if isinstance(data, pa.Table) else rows.to_arrow(table, data)
            con.from_arrow(arrow).insert_into(table)


def _tables(items: list[_Rows]) -> dict[str, pa.Table]:
    """The raw records and derived rows of `items` as one Arrow table per table."""
    raw = rows.to_arrow("raw_records", [item.raw for item in items])
    return {"raw_records": raw, **rows.tables_of([item.rows for item in items])}


def quarantine_internal(con: duckdb.DuckDBPyConnection, gid: str, message: str) -> None:
    """Move a stored game to the quarantine with rule 'internal' (its own transaction)."""
    blob, codec_id, received = con.execute(
        "SELECT record, codec, received_at FROM raw_records WHERE game_id = ?", [gid]
    ).fetchone()
    record = orjson.loads(codec.decode(codec_id, blob))
    fault = SimpleNamespace(rule="internal", turn=None, seat=None, message=message)
    with transaction(con):
        for table in rows.ALL_GAME_TABLES:
            con.execute(f"DELETE FROM {table} WHERE game_id = ?", [gid])
        con.execute("UPDATE raw_records SET status = 'quarantined' WHERE game_id = ?", [gid])
        insert_tables(con, rows.quarantine_row(gid, record, fault, received))


_MISSING_ROWS = """
SELECT r.game_id::VARCHAR, r.status, r.codec, r.record, r.received_at FROM raw_records r
WHERE (r.status = 'verified' AND r.game = 'slow6' AND r.game_id NOT IN (SELECT game_id FROM games))
   OR (r.status = 'verified' AND r.game = 'slide'
       AND r.game_id NOT IN (SELECT game_id FROM slide_games))
   OR (r.status = 'quarantined' AND r.game_id NOT IN (SELECT game_id FROM quarantine))
"""


def load_journal(con: duckdb.DuckDBPyConnection, path: str, known: dict[int, int]) -> int:
    """Store the raw records of journal segments left behind (after a crash), those not
    stored yet, then delete the segments; `recover` then builds their derived rows. Returns
    how many games were loaded."""
    segments = journal.segments(path)
    fresh = []
    for segment in segments:
        for row in journal.entries(segment.read_bytes()):
            key = int.from_bytes(row[0], "big")
            if key not in known:
                known[key] = row[3]
                fresh.append(row)
    if fresh:
        with transaction(con):
            insert_tables(con, {"raw_records": fresh})
        log.info("loaded %d acknowledged games from the journal", len(fresh))
    for segment in segments:
        journal.remove(segment)
    return len(fresh)


def recover(con: duckdb.DuckDBPyConnection, judge=None) -> int:
    """Rebuild the derived rows of raw records that have none (a crash between the commit of
    a raw record and of its rows); returns how many games were rebuilt."""
    missing = con.execute(_MISSING_ROWS).fetchall()
    if not missing:
        return 0
    judge = judge or _default_judge()
    games, moved = [], []
    for gid, status, codec_id, blob, received in missing:
        judged = judge.judge(0, codec.decode(codec_id, blob), received)
        pending = judged.pending
        if pending is None:  # no longer well-formed: leave it to `balance reverify`
            log.warning("game %s: not well-formed any more; run balance reverify", gid)
            continue
        if pending.status != status:
            moved.append((gid, pending.status))
        games.append(pending.rows)
    with transaction(con):
        insert_tables(con, rows.tables_of(games))
        for gid, status in moved:
            con.execute("UPDATE raw_records SET status = ? WHERE game_id = ?", [status, gid])
    log.info("rebuilt the rows of %d stored games", len(missing))
    return len(missing)


def _default_judge():
    from .pipeline import Judge  # pipeline imports this module

    return Judge()


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """BEGIN ... COMMIT around the block; ROLLBACK (and re-raise) if it fails."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        _rollback(con)
        raise


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        pass  # no transaction was open
