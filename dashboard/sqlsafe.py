"""Analyst SQL that cannot hurt the store: a locked, read-only DuckDB over a snapshot file.

Safety is layered so that no single check has to be perfect:
1. the query runs in its own DuckDB instance that opened a *copy* of the store read-only, so even
   a write that slipped through could not reach stored data;
2. that instance has external access off (no files, no network, no ATTACH/COPY/INSTALL), extension
   autoload/autoinstall off, a memory limit, and its configuration locked, so SQL cannot undo it;
3. before anything runs, `duckdb.extract_statements` must find exactly one SELECT-type statement
   whose first keyword reads like a query (PRAGMA is rewritten to SELECT by the parser, so the
   keyword check is what refuses it): analysts get a clear message instead of an engine error;
4. a timer interrupts the query after `timeout` seconds and at most `limit` rows are fetched.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa

DEFAULT_TIMEOUT = 5.0
DEFAULT_LIMIT = 10_000

# First keywords of statements that only read. DESCRIBE/SHOW/SUMMARIZE parse as SELECT too.
QUERY_KEYWORDS = frozenset(
    {"SELECT", "WITH", "FROM", "VALUES", "TABLE", "DESCRIBE", "DESC", "SHOW", "SUMMARIZE"}
)


class QueryError(Exception):
    """A query that was not answered; `kind` says why, the message says it for a person."""

    kind = "error"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class Refused(QueryError):
    """Not allowed here (a write, a setting, a second statement...): nothing was run."""

    kind = "refused"


class BadSQL(QueryError):
    """The SQL does not parse or bind, or failed while running."""

    kind = "error"


class TimedOut(QueryError):
    kind = "timeout"


class Replaced(QueryError):
    """The snapshot was swapped for a newer one while the query waited: run it on the new one."""


@dataclass
class Result:
    table: pa.Table  # at most `limit` rows
    columns: list[str]
    types: list[str]
    truncated: bool
    elapsed_ms: float
    snapshot_at: str | None = None
    meta: dict = field(default_factory=dict)

    @property
    def row_count(self) -> int:
        return self.table.num_rows


_COMMENT = re.compile(r"\s+|--[^\n]*(\n|$)|/\*.*?\*/", re.S)


def first_keyword(sql: str) -> str:
    """The first word of a statement, past blanks, comments and opening parentheses."""
    pos = 0
    while True:
        m = _COMMENT.match(sql, pos)
        if m and m.end() > pos:
            pos = m.end()
        elif pos < len(sql) and sql[pos] == "(":
            pos += 1
        else:
            break
    m = re.match(r"[A-Za-z_]+", sql[pos:])
    return m.group(0).upper() if m else ""


def check_select(sql: str) -> str:
    """The one read-only statement in `sql`, or Refused/BadSQL saying why not."""
    if not sql or not sql.strip():
        raise Refused("The query is empty.")
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise BadSQL(_clean(exc)) from None
    if not statements:
        raise Refused("The query is empty.")
    if len(statements) > 1:
        raise Refused(
            f"One statement at a time, please: this text holds {len(statements)} statements."
        )
    # PRAGMA parses as a SELECT of a pragma function, so the keyword comes from the text as typed.
    kind = statements[0].type.name
    keyword = first_keyword(sql)
    if kind != "SELECT" or keyword not in QUERY_KEYWORDS:
        raise Refused(
            f"Only read-only queries (SELECT, WITH, FROM, DESCRIBE, SHOW, SUMMARIZE) run here, "
            f"and this statement is {keyword or kind}. The console reads a snapshot and cannot "
            f"change data, settings or files."
        )
    return sql.strip()


def _clean(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


# Settings applied when the instance opens and then locked (lock_configuration goes last).
LOCKED_CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
}


class Engine:
    """One read-only, locked DuckDB instance over one snapshot file; a cursor per query."""

    def __init__(
        self,
        path: str,
        *,
        snapshot_at: str | None = None,
        threads: int = 1,
        memory_limit: str = "1GB",
        max_concurrent: int = 2,
        setup=None,
    ):
        config = dict(LOCKED_CONFIG)
        config.update({"threads": threads, "memory_limit": memory_limit})
        config["lock_configuration"] = True
        self.path = path
        self.snapshot_at = snapshot_at
        self._con = duckdb.connect(path, read_only=True, config=config)
        if setup is not None:
            setup(self._con)  # e.g. register trusted Python UDFs (no SQL-visible settings)
        self._slots = threading.BoundedSemaphore(max_concurrent)
        self._lock = threading.Lock()
        self._active = 0
        self._closing = False

    def run(
        self, sql: str, *, limit: int = DEFAULT_LIMIT, timeout: float = DEFAULT_TIMEOUT
    ) -> Result:
        query = check_select(sql)
        if not self._slots.acquire(timeout=timeout):
            raise TimedOut(
                f"The console is busy; try again in a few seconds (waited {timeout:g} s)."
            )
        with self._lock:
            closing = self._closing
            if not closing:
                self._active += 1
        if closing:
            self._slots.release()
            raise Replaced("The snapshot was replaced while the query waited; run it again.")
        try:
            return self._run(query, limit, timeout)
        finally:
            with self._lock:
                self._active -= 1
                done = self._closing and self._active == 0
            self._slots.release()
            if done:
                self._con.close()

    def _run(self, query: str, limit: int, timeout: float) -> Result:
        cur = self._con.cursor()
        fired = threading.Event()

        def stop():
            fired.set()
            cur.interrupt()

        timer = threading.Timer(timeout, stop)
        timer.daemon = True
        start = time.perf_counter()
        timer.start()
        try:
            rel = cur.execute(query)
            columns = [d[0] for d in rel.description or []]
            types = [str(d[1]) for d in rel.description or []]
            batches, rows = [], 0
            reader = rel.to_arrow_reader(min(limit + 1, 100_000) or 1)
            schema = reader.schema
            for batch in reader:
                batches.append(batch)
                rows += batch.num_rows
                if rows > limit:
                    break
            table = pa.Table.from_batches(batches, schema=schema)
        except duckdb.InterruptException:
            raise TimedOut(
                f"The query ran longer than the {timeout:g} s limit and was stopped."
            ) from None
        except duckdb.Error as exc:
            if fired.is_set():
                raise TimedOut(
                    f"The query ran longer than the {timeout:g} s limit and was stopped."
                ) from None
            if isinstance(exc, duckdb.PermissionException):
                raise Refused(
                    "The console has no access to files, the network or extensions: " + _clean(exc)
                ) from None
            raise BadSQL(_clean(exc)) from None
        finally:
            timer.cancel()
            cur.close()
        truncated = table.num_rows > limit
        if truncated:
            table = table.slice(0, limit)
        elapsed = (time.perf_counter() - start) * 1000
        return Result(table, columns, types, truncated, elapsed, self.snapshot_at)

    def close(self) -> None:
        """Close now if idle, else as soon as the last running query ends."""
        with self._lock:
            self._closing = True
            idle = self._active == 0
        if idle:
            self._con.close()
