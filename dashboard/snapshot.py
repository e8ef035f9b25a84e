"""Read-only snapshots of the store for the SQL console and the dashboard.

DuckDB lets one process own the store file, so the console cannot open it a second time; instead
the server's writer thread (`store.submit`) checkpoints the store and copies the file into a fresh
snapshot file (see write_snapshot), and a locked `sqlsafe.Engine` opens that copy read-only.
A refresh writes a new file and swaps engines;
queries running on the old one finish there.
"""

from __future__ import annotations

import inspect
import logging
import os
import shutil
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from .sqlsafe import DEFAULT_LIMIT, DEFAULT_TIMEOUT, Engine, Replaced, Result

log = logging.getLogger(__name__)


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def write_snapshot(con, path: str) -> None:
    """A consistent copy of the connection's database at `path`. Runs on the writer thread.

    A store in a file is checkpointed (everything committed goes into the file, the WAL empties)
    and the file is copied: no commit can happen meanwhile since this runs on the only writer,
    and it takes about a second per 300 MB (a million games) where `COPY FROM DATABASE` took 40 s.
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
            shutil.copyfile(file, path)
            return
    alias = f"dash_snap_{os.getpid()}_{threading.get_ident()}"
    con.execute(f"ATTACH {_quote_str(path)} AS {_quote_ident(alias)}")
    try:
        con.execute(f"COPY FROM DATABASE {_quote_ident(source)} TO {_quote_ident(alias)}")
    finally:
        con.execute(f"DETACH {_quote_ident(alias)}")


def _udfs(con) -> None:
    """Trusted Python functions analysts may call: raw_json(record, codec) decodes raw records."""
    try:
        from ingest.codec import register_sql
    except ImportError:
        return
    register_sql(con)


def signature(cur) -> tuple:
    """Cheap fingerprint of the store's contents: table identities, sizes and the raw row count."""
    tables = cur.execute(
        "SELECT table_name, table_oid, estimated_size FROM duckdb_tables() "
        "WHERE database_name = current_database() ORDER BY table_name"
    ).fetchall()
    try:
        raw = cur.execute("SELECT count(*), max(received_at) FROM raw_records").fetchone()
    except Exception:  # a store without raw_records yet: the table list alone will do
        raw = None
    return (tuple(tables), raw)


class Snapshots:
    """The current snapshot engine of one store, refreshed when the store changed."""

    def __init__(
        self,
        store,
        directory: str | Path,
        *,
        max_age: float = 300.0,
        check_every: float = 5.0,
        memory_limit: str = "1GB",
        threads: int = 2,
    ):
        self.store = store
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.max_age = max_age  # a changed store is re-snapshotted at most this often
        self.check_every = check_every
        self._engine_args = {"memory_limit": memory_limit, "threads": threads, "setup": _udfs}
        # ATTACH cannot run inside a transaction: stores that wrap submit() in one let us opt out.
        try:
            params = inspect.signature(store.submit).parameters
        except (TypeError, ValueError):
            params = {}
        self._submit_args = {"transaction": False} if "transaction" in params else {}
        self._engine: Engine | None = None
        self._taken = 0.0  # monotonic time of the current snapshot
        self._signature = None
        self._checked = 0.0
        self._lock = threading.Lock()  # one refresh at a time
        self._refreshing = False
        for old in self.directory.glob("snapshot-*.duckdb*"):
            old.unlink(missing_ok=True)  # left by an earlier run of the server

    # -- taking snapshots -------------------------------------------------------------------
    def refresh(self) -> Engine:
        """Take a new snapshot now and make it current (blocks until it is written)."""
        with self._lock:
            sig = self._store_signature()
            stamp = datetime.now(UTC)
            path = self.directory / f"snapshot-{stamp.strftime('%Y%m%dT%H%M%S%f')}.duckdb"
            self.store.submit(
                lambda con: write_snapshot(con, str(path)), **self._submit_args
            ).result()
            engine = Engine(
                str(path),
                snapshot_at=stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
                **self._engine_args,
            )
            old, self._engine = self._engine, engine
            self._taken = time.monotonic()
            self._signature = sig
            self._checked = self._taken
        if old is not None:
            old.close()
            # Linux keeps the file readable for queries still running on the old engine.
            Path(old.path).unlink(missing_ok=True)
        log.info("snapshot %s taken", path.name)
        return engine

    def _store_signature(self):
        cur = self.store.reader()
        try:
            return signature(cur)
        finally:
            close = getattr(cur, "close", None)
            if close:
                close()

    def maybe_refresh(self) -> None:
        """Refresh in the background when the store changed and max_age has passed."""
        now = time.monotonic()
        if self._engine is None or self._refreshing or now - self._checked < self.check_every:
            return
        self._checked = now
        if now - self._taken < self.max_age:
            return
        try:
            changed = self._store_signature() != self._signature
        except Exception:  # the store is busy or closing: try again at the next check
            log.exception("snapshot signature failed")
            return
        if changed:
            self._refreshing = True
            threading.Thread(target=self._background_refresh, daemon=True).start()

    def _background_refresh(self) -> None:
        try:
            self.refresh()
        except Exception:
            log.exception("background snapshot failed")
        finally:
            self._refreshing = False

    # -- using them ---------------------------------------------------------------------------
    def engine(self) -> Engine:
        engine = self._engine
        if engine is None:
            engine = self.refresh()
        else:
            self.maybe_refresh()
        return engine

    @property
    def snapshot_at(self) -> str | None:
        return self._engine.snapshot_at if self._engine else None

    def run(
        self, sql: str, *, limit: int = DEFAULT_LIMIT, timeout: float = DEFAULT_TIMEOUT
    ) -> Result:
        for _ in range(3):
            try:
                return self.engine().run(sql, limit=limit, timeout=timeout)
            except Replaced:
                continue
        return self.engine().run(sql, limit=limit, timeout=timeout)

    def close(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.close()
            Path(engine.path).unlink(missing_ok=True)
