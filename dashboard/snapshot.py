"""Read-only snapshots of the store for the SQL console and the dashboard.

DuckDB lets one process own the store file, so the console cannot open it a second time; instead
the server's writer thread (`store.submit`) checkpoints the store and copies the file into a fresh
snapshot file (see write_snapshot), and a locked `sqlsafe.Engine` opens that copy read-only. A
lake's snapshot is no copy: its latest version, which the engines attach pinned
(`sqlsafe.lake_source`).

On the server the engines live in SQL worker processes (sqlpool.Pool, SQL_WORKERS of them, 2 by
default): a refresh writes a new file, names it to the pool (idle workers reopen at once, busy
ones on their next query) and deletes the old file (Linux keeps it readable for a query still
running on it). With `workers=0` (tests, `balance sql --db`) one in-process Engine per snapshot
is swapped instead, and queries running on the old one finish there.

Downloads (`write_file`) are the whole result: the engine writes it, batch by batch, into a file
of its own in `<snapshot dir>/downloads` (up to the download byte limit, else nothing), which
the server then streams and deletes; at most SQL_DOWNLOADS (4) of them at a time, and only while
the disk keeps room for the limit plus a reserve.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import shutil
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.sql import sql_identifier, sql_literal
from ingest.storage import livefile

from . import export
from .console.sqlsafe import (
    DEFAULT_LIMIT,
    DEFAULT_MAX_BYTES,
    DEFAULT_TIMEOUT,
    Busy,
    Engine,
    Payload,
    Replaced,
    Result,
    TooBig,
    is_file_source,
    lake_source,
)
from .slots import Shares, client_key

if TYPE_CHECKING:  # the pool module starts processes: imported with the first snapshot
    from ingest.storage.interface import GameStore

    from .console.sqlpool import Context, Pool

DOWNLOAD_RESERVE = 64 * 1024 * 1024  # free bytes a download leaves on the disk, beyond its limit

log = logging.getLogger(__name__)


def write_snapshot(con, path: str) -> None:
    """A consistent copy of the connection's database at `path`. Runs on the writer thread.

    A store in a file is checkpointed (everything committed goes into the file, the WAL empties)
    and the file is copied (livefile.copy: through a descriptor never closed, since closing one
    would drop DuckDB's lock on the store): no commit can happen meanwhile since this runs on
    the only writer, and it takes about a second per 300 MB (a million games) where
    `COPY FROM DATABASE` took 40 s.
    Otherwise (an in-memory store, or a WAL the checkpoint could not empty) every table and view
    is copied with `COPY FROM DATABASE`.
    """
    source, file = con.execute(
        "SELECT database_name, path FROM duckdb_databases() "
        "WHERE database_name = current_database()"
    ).fetchone()
    if file and os.path.isfile(file):
        con.execute("CHECKPOINT")
        wal = file + ".wal"
        if not os.path.exists(wal) or os.path.getsize(wal) == 0:
            livefile.copy(file, path)  # never closes a descriptor of the store: its lock stays
            return
    alias = f"dash_snap_{os.getpid()}_{threading.get_ident()}"
    # ATTACH takes no parameter: the path goes in as a literal
    con.execute(f"ATTACH {sql_literal(path)} AS {sql_identifier(alias)}")
    try:
        con.execute(f"COPY FROM DATABASE {sql_identifier(source)} TO {sql_identifier(alias)}")
    finally:
        con.execute(f"DETACH {sql_identifier(alias)}")


def _udfs(con) -> None:
    """Trusted Python functions analysts may call: raw_json(record, codec) decodes raw records
    (bounded: see sqlfuncs.py)."""
    from .console.sqlfuncs import register

    register(con)


def _setting(name: str):
    """A setting of the app this is created in, else of the environment (settings.py)."""
    from flask import current_app, has_app_context

    from . import setting

    return setting(current_app if has_app_context() else None, name)


class Download:
    """A download's file, open and already unlinked: read it in chunks, then close it (which
    frees its place among the downloads in flight)."""

    CHUNK = 256 * 1024

    def __init__(self, file, size: int, release):
        self.file = file
        self.size = size
        self._release = release
        self._closed = False
        self._close_lock = threading.Lock()

    def __iter__(self):
        while True:
            chunk = self.file.read(self.CHUNK)
            if not chunk:
                return
            yield chunk

    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        try:
            self.file.close()
        finally:
            self._release()


@dataclass(frozen=True)
class Snapshot:
    path: str  # a file, or a lake's pinned version (sqlsafe.lake_source)
    snapshot_at: str
    label: str = ""  # for the log: the file's name unless given

    @property
    def name(self) -> str:
        return self.label or Path(self.path).name


class Snapshots:
    """The current snapshot of one store, refreshed when the store changed, and its engines.

    Settings (arguments, else SQL_* of the current app or BALANCE_SQL_* in the environment):
    workers (SQL_WORKERS, 2; 0 runs queries in this process), memory_limit (SQL_MEMORY_LIMIT,
    1GB a worker), threads (SQL_THREADS, 2 DuckDB threads a worker), kill_margin
    (SQL_KILL_MARGIN, 0.5 s past a query's timeout before its worker is killed); processes, the
    multiprocessing context the workers start from (default: each spawned)."""

    def __init__(
        self,
        store,
        directory: str | Path,
        *,
        max_age: float = 300.0,
        check_every: float = 5.0,
        memory_limit: str | None = None,
        threads: int | None = None,
        workers: int | None = None,
        kill_margin: float | None = None,
        processes: Context | None = None,
    ):
        self.store: GameStore = store
        self.processes = processes  # where SQL workers start (sqlpool.Pool's context)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.max_age = max_age  # a changed store is re-snapshotted at most this often
        self.check_every = check_every
        self.workers = int(workers if workers is not None else _setting("SQL_WORKERS"))
        self.memory_limit = str(memory_limit or _setting("SQL_MEMORY_LIMIT"))
        self.threads = int(threads or _setting("SQL_THREADS"))
        margin = kill_margin if kill_margin is not None else _setting("SQL_KILL_MARGIN")
        self.kill_margin = float(margin)
        self._pool: Pool | None = None  # started with the first snapshot (workers > 0)
        self._current: Snapshot | None = None
        self._engine: Engine | None = None  # workers == 0
        self._taken = 0.0  # monotonic time of the current snapshot
        self._signature = None
        self._checked = 0.0
        self._lock = threading.Lock()  # one refresh at a time
        self._check_lock = threading.Lock()  # one background check at a time
        self._refreshing = False
        for old in self.directory.glob("snapshot-*.duckdb*"):
            old.unlink(missing_ok=True)  # left by an earlier run of the server
        self.downloads_dir = self.directory / "downloads"
        self.downloads_dir.mkdir(exist_ok=True)
        for old in self.downloads_dir.glob("download-*"):
            old.unlink(missing_ok=True)
        self.max_downloads = int(_setting("SQL_DOWNLOADS"))
        # each client address has its share of them (slots.py): one address's downloads
        # that never finish leave the others to everyone else
        self._downloads = Shares(max(1, self.max_downloads), int(_setting("SQL_DOWNLOAD_SHARE")))
        self._download_seq = itertools.count(1)

    @property
    def pool(self) -> Pool | None:
        """The SQL worker pool (None with workers=0 or before the first snapshot)."""
        return self._pool

    def _workers(self) -> Pool:
        """The pool the queries go to (workers > 0), which the current snapshot started."""
        if self._pool is None:
            raise RuntimeError("no SQL worker pool: these snapshots are closed")
        return self._pool

    def _ensure_pool(self) -> Pool | None:
        if self._pool is None and self.workers > 0:
            from .console.sqlpool import Pool

            self._pool = Pool(
                self.workers,
                threads=self.threads,
                memory_limit=self.memory_limit,
                kill_margin=self.kill_margin,
                context=self.processes,
            )
        return self._pool

    # -- taking snapshots -------------------------------------------------------------------
    def refresh(self) -> Snapshot:
        """Take a new snapshot now and make it current (blocks until it is written)."""
        with self._lock:
            pool = self._ensure_pool()  # workers start while the file is written
            sig = self._store_signature()
            pinned = self.store.pinned()
            if pinned is not None:  # a lake's version, attached read-only: nothing copied
                current = Snapshot(
                    lake_source(pinned.catalog, pinned.version),
                    pinned.at,
                    f"lake snapshot {pinned.version}",
                )
            else:
                stamp = datetime.now(UTC)
                path = self.directory / f"snapshot-{stamp.strftime('%Y%m%dT%H%M%S%f')}.duckdb"
                self.store.submit(
                    lambda con: write_snapshot(con, str(path)),
                    transaction=False,  # ATTACH cannot run inside a transaction
                ).result()
                current = Snapshot(str(path), stamp.strftime("%Y-%m-%dT%H:%M:%SZ"))
            old_engine = None
            if pool is None:
                engine = Engine(
                    current.path,
                    snapshot_at=current.snapshot_at,
                    memory_limit=self.memory_limit,
                    threads=self.threads,
                    setup=_udfs,
                )
                old_engine, self._engine = self._engine, engine
            old, self._current = self._current, current
            self._taken = time.monotonic()
            self._signature = sig
            self._checked = self._taken
        if pool is not None:
            pool.reopen_idle(current.path, current.snapshot_at)
        if old_engine is not None:
            old_engine.close()
        if old is not None and is_file_source(old.path):
            # Linux keeps the file readable for queries still running on the old snapshot.
            Path(old.path).unlink(missing_ok=True)
        log.info("snapshot %s taken", current.name)
        return current

    def _store_signature(self):
        return self.store.change_stamp()

    def maybe_refresh(self) -> None:
        """Refresh in the background when the store changed and max_age has passed. The
        request thread never asks the store itself: a lake whose catalog hangs would hold it,
        and then every thread of the server, one check at a time; one background thread at a
        time asks, and pages go on with the current snapshot meanwhile."""
        now = time.monotonic()
        with self._check_lock:
            if self._current is None or self._refreshing or now - self._checked < self.check_every:
                return
            self._checked = now
            if now - self._taken < self.max_age:
                return
            self._refreshing = True
        threading.Thread(target=self._background_refresh, daemon=True).start()

    def _background_refresh(self) -> None:
        try:
            if self._store_signature() != self._signature:
                self.refresh()
        except Exception:  # the store is busy or closing: tried again at the next check
            log.exception("background snapshot failed")
        finally:
            self._refreshing = False

    # -- using them ---------------------------------------------------------------------------
    def current(self) -> Snapshot:
        current = self._current
        if current is None:
            return self.refresh()
        self.maybe_refresh()
        # a refresh in the background may have made a newer one current (None: closed since)
        return self._current or current

    def engine(self) -> Engine:
        """The in-process engine (workers=0)."""
        self.current()
        if self._engine is None:
            raise RuntimeError("no in-process engine: these snapshots run queries in workers")
        return self._engine

    @property
    def snapshot_at(self) -> str | None:
        return self._current.snapshot_at if self._current else None

    def run(
        self,
        sql: str,
        *,
        limit: int = DEFAULT_LIMIT,
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        params: dict | None = None,
    ) -> Result:
        """The result as an Arrow table (the dashboard's own queries, the console page)."""
        if self.workers <= 0:
            return self._retry(
                lambda: self.engine().run(
                    sql, limit=limit, timeout=timeout, max_bytes=max_bytes, params=params
                )
            )
        meta, body = self._retry(
            lambda: self._in_worker(sql, "arrow", limit, timeout, max_bytes, params)
        )
        return Result(
            export.decode_arrow(body),
            list(meta.get("columns") or []),
            list(meta.get("types") or []),
            bool(meta.get("truncated")),
            float(meta.get("elapsed_ms") or 0.0),
            meta.get("snapshot_at"),
        )

    def run_encoded(
        self,
        sql: str,
        fmt: str,
        *,
        limit: int = DEFAULT_LIMIT,
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        params: dict | None = None,
    ) -> Payload:
        """The result as the bytes to send: csv, json, parquet, or "api" (POST /sql/api)."""
        if self.workers <= 0:
            return self._retry(
                lambda: self.engine().run_encoded(
                    sql, fmt, limit=limit, timeout=timeout, max_bytes=max_bytes, params=params
                )
            )
        meta, body = self._retry(
            lambda: self._in_worker(sql, fmt, limit, timeout, max_bytes, params)
        )
        return Payload(meta, body)

    def check(self, sql: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Refused (or BadSQL) unless `sql` passes the console's checks; nothing runs."""
        if self.workers <= 0:
            self._retry(lambda: self.engine().check(sql))
            return
        current = self.current()
        request = {"op": "check", "path": current.path, "snapshot_at": current.snapshot_at}
        self._retry(
            lambda: self._workers().run({**request, "sql": sql}, timeout=timeout, max_bytes=0)
        )

    def write_file(
        self,
        sql: str,
        fmt: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        params: dict | None = None,
        client: str = "",
    ) -> tuple[dict, Download]:
        """The whole result as a file (a download): (its facts, the Download to stream).
        `client`: the address asking (each has its share of the downloads: slots.py).

        Busy when SQL_DOWNLOADS downloads are being written or sent; TooBig when the disk has
        no room for `max_bytes` and the reserve. The caller closes the Download."""
        key = client_key(client)
        why = self._take_download(key, min(timeout, 5.0))
        if why == "share":
            raise Busy(
                "This address already has its share of the downloads being prepared or sent; "
                "try again when one of them is done."
            )
        if why is not None:
            raise Busy(
                f"{self.max_downloads} downloads are being prepared or sent; try again in a "
                f"few seconds."
            )
        release = functools.partial(self._downloads.give, key)
        try:
            free = shutil.disk_usage(self.downloads_dir).free
            if free < max_bytes + DOWNLOAD_RESERVE:
                raise TooBig(
                    f"The server's disk has no room to prepare a download now "
                    f"({free // (1024 * 1024):,} MB free). Try a smaller result later."
                )
            seq = next(self._download_seq)
            path = self.downloads_dir / f"download-{os.getpid()}-{seq}.{fmt}"
            try:
                meta = self._retry(
                    lambda: self._file(sql, fmt, str(path), timeout, max_bytes, params)
                )
                f = open(path, "rb")
            finally:
                # Linux keeps the open file readable; nothing is left behind if the server dies
                path.unlink(missing_ok=True)
        except BaseException:
            release()
            raise
        return meta, Download(f, int(meta.get("bytes") or 0), release)

    def _take_download(self, key: str, wait: float) -> str | None:
        """A download slot for client `key`, waiting up to `wait` seconds for one to free:
        None, or why not (slots.Shares.take)."""
        until = time.monotonic() + wait
        while True:
            why = self._downloads.take(key)
            if why is None or time.monotonic() >= until:
                return why
            time.sleep(0.05)

    def _file(self, sql, fmt, path, timeout, max_bytes, params) -> dict:
        if self.workers <= 0:
            return self.engine().write_file(
                sql, fmt, path, timeout=timeout, max_bytes=max_bytes, params=params
            )
        current = self.current()
        request = {
            "op": "file",
            "path": current.path,
            "snapshot_at": current.snapshot_at,
            "sql": sql,
            "params": params or None,
            "format": fmt,
            "out": path,
        }
        meta, _ = self._workers().run(request, timeout=timeout, max_bytes=int(max_bytes))
        return meta

    def _in_worker(
        self, sql: str, fmt: str, limit: int, timeout: float, max_bytes: int, params=None
    ):
        current = self.current()
        request = {
            "op": "query",
            "path": current.path,
            "snapshot_at": current.snapshot_at,
            "sql": sql,
            "params": params or None,
            "format": fmt,
            "limit": int(limit),
        }
        return self._workers().run(request, timeout=timeout, max_bytes=int(max_bytes))

    @staticmethod
    def _retry(call):
        for _ in range(3):
            try:
                return call()
            except Replaced:
                continue
        return call()

    def close(self) -> None:
        current, self._current = self._current, None
        engine, self._engine = self._engine, None
        pool, self._pool = self._pool, None
        if engine is not None:
            engine.close()
        if pool is not None:
            pool.close()
        if current is not None:
            Path(current.path).unlink(missing_ok=True)
