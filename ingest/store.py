"""The store: the server's single DuckDB connection and its group-commit writer thread.

DuckDB allows one writing process per file, and one transaction per commit costs a WAL write,
so every write goes through one thread: requests enqueue their games and wait; the writer takes
everything queued (up to `commit_max` games), decides duplicate / conflict for each game against
the database and the games ahead of it in the same group, writes the new ones with one
columnar insert per table in ONE transaction, commits, and only then wakes the waiters. A 2xx is
sent after that commit, so an acknowledged game survives a crash of the process.
"""

from __future__ import annotations

import datetime as dt
import logging
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import duckdb

from . import codec, rows

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
    rows: rows.Rows  # its rows in the game tables (or its quarantine row)
    received: dt.datetime


@dataclass(slots=True)
class _Ingest:
    items: list[Pending]
    future: Future = field(default_factory=Future)


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
    """The single DuckDB connection of the server process and its writer thread."""

    def __init__(
        self,
        path: str | Path,
        *,
        commit_max: int = 5000,
        on_commit: Callable[[int, float], None] | None = None,
        checkpoint_threshold: str = "256MB",
    ):
        self.path = str(path)
        self.commit_max = commit_max
        self._on_commit = on_commit
        self._con = open_db(self.path)
        # Fewer, larger checkpoints: each one rewrites the tables' last row groups, and the
        # blocks it frees stay in the file (about 70 bytes a game at the 16 MB default).
        self._con.execute(f"SET checkpoint_threshold = '{checkpoint_threshold}'")
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._closed = False
        # game_id (as int) -> content hash of every stored record: the writer decides
        # duplicate / conflict from this without a query (a lookup by id in DuckDB is a scan).
        self._known: dict[int, int] = self._load_known()
        self._thread = threading.Thread(target=self._run, name="store-writer", daemon=True)
        self._thread.start()

    # -- public interface -------------------------------------------------------------------

    def ingest(self, items: list[Pending], timeout: float | None = 60.0) -> list[str]:
        """Store `items` (in order); returns accepted/quarantined/duplicate/conflict per item,
        after the transaction that holds them has committed."""
        if not items:
            return []
        task = _Ingest(items)
        self._put(task)
        return task.future.result(timeout)

    def submit(
        self, fn: Callable[[duckdb.DuckDBPyConnection], object], *, transaction: bool = True
    ) -> Future:
        """Run `fn(con)` on the writer thread, inside its own transaction unless `transaction`
        is False (for statements DuckDB runs outside one, e.g. ATTACH); the Future holds its
        result (or exception, after a rollback)."""
        task = _Call(fn, transaction)
        self._put(task)
        return task.future

    def reader(self) -> duckdb.DuckDBPyConnection:
        """A new cursor on the store for trusted read-only queries from another thread.
        The caller closes it; it sees every committed transaction."""
        return self._con.cursor()

    def known_count(self) -> int:
        return len(self._known)

    def close(self, checkpoint: bool = True) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join()
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

    # -- writer thread ----------------------------------------------------------------------

    def _put(self, task) -> None:
        if self._closed:
            raise RuntimeError("store is closed")
        self._queue.put(task)

    def _load_known(self) -> dict[int, int]:
        table = self._con.sql("SELECT game_id::VARCHAR AS g, content_hash AS h FROM raw_records")
        known: dict[int, int] = {}
        for batch in table.to_arrow_reader(100_000):
            ids, hashes = batch.column(0).to_pylist(), batch.column(1).to_pylist()
            known.update(zip((int(g.replace("-", ""), 16) for g in ids), hashes, strict=True))
        return known

    def _run(self) -> None:
        stopping = False
        while not stopping:
            tasks = [self._queue.get()]
            size = len(tasks[0].items) if isinstance(tasks[0], _Ingest) else 0
            while size < self.commit_max:
                try:
                    task = self._queue.get_nowait()
                except queue.Empty:
                    break
                tasks.append(task)
                size += len(task.items) if isinstance(task, _Ingest) else 0
            group: list[_Ingest] = []
            for task in tasks:
                if isinstance(task, _Ingest):
                    group.append(task)
                    continue
                if group:
                    self._commit_group(group)
                    group = []
                if task is _STOP:
                    stopping = True
                else:
                    self._call(task)
            if group:
                self._commit_group(group)

    def _call(self, task: _Call) -> None:
        if not task.future.set_running_or_notify_cancel():
            return
        con = self._con
        try:
            if not task.transaction:
                result = task.fn(con)
            else:
                con.execute("BEGIN TRANSACTION")
                result = task.fn(con)
                con.execute("COMMIT")
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            _rollback(con)
            task.future.set_exception(exc)
        else:
            task.future.set_result(result)

    def _commit_group(self, group: list[_Ingest]) -> None:
        try:
            self._write(group)
        except Exception as exc:
            if len(group) == 1:
                log.error("store write failed: %s", type(exc).__name__)
                group[0].future.set_exception(exc)
                return
            # one bad request must not fail its neighbours: retry each on its own
            for task in group:
                self._commit_group([task])

    def _write(self, group: list[_Ingest]) -> None:
        started = time.perf_counter()
        fresh: dict[int, int] = {}  # stored by this group, ahead of later items
        outcomes: list[list[str]] = []
        raw: list[tuple] = []
        table_rows: dict[str, list[tuple]] = defaultdict(list)
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
                raw.append(
                    (
                        item.gid,
                        item.game,
                        item.status,
                        item.content_hash,
                        item.blob,
                        item.codec,
                        item.received,
                    )
                )
                for table, tuples in item.rows.items():
                    table_rows[table].extend(tuples)
                out.append(ACCEPTED if item.status == VERIFIED else QUARANTINED)
            outcomes.append(out)
        if raw:
            con = self._con
            con.execute("BEGIN TRANSACTION")
            try:
                insert_tables(con, {"raw_records": raw, **table_rows})
                con.execute("COMMIT")
            except BaseException:
                _rollback(con)
                raise
            self._known.update(fresh)
        elapsed = time.perf_counter() - started
        if self._on_commit is not None:
            self._on_commit(sum(len(t.items) for t in group), elapsed)
        for task, out in zip(group, outcomes, strict=True):
            task.future.set_result(out)


def insert_tables(con: duckdb.DuckDBPyConnection, table_rows: dict[str, list[tuple]]) -> None:
    """Insert row tuples into their tables, one Arrow table per table (inside the caller's
    transaction)."""
    for table, tuples in table_rows.items():
        if not tuples:
            continue
        view = f"_ingest_{table}"
        con.register(view, rows.to_arrow(table, tuples))
        try:
            con.execute(rows.insert_sql(table, view))
        finally:
            con.unregister(view)


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        pass  # no transaction was open
