"""What every backend of the store shares: the tables (schema.sql), what an upload hands a store
(`Pending`) and what it answers (the outcomes), a `submit`ted call, which errors are the
storage's own, and the transaction and insert helpers. The file backend (store.py) and the
lake (lake/store.py) both build on these; the surface they both offer is interface.py's."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING

import pyarrow as pa

from . import rows
from .failures import StorageUnavailable

if TYPE_CHECKING:  # for the annotations: a judge process (Pending, rows) never loads DuckDB
    import duckdb

# What `ingest` answers for each game (besides rejudge's VERIFIED / QUARANTINED)
ACCEPTED, DUPLICATE, CONFLICT = "accepted", "duplicate", "conflict"


_STORAGE_WORDS = (
    "no space left",
    "could not write",
    "could not read",
    "could not open",
    "could not truncate",
    "could not fsync",
    "i/o error",
    "invalidated",
    "failed to commit",
    "checkpoint",
    "write-ahead",
    "disk",
)


def storage_error(exc: BaseException) -> bool:
    """Whether `exc` says the storage failed (a full disk, an I/O error, an invalidated
    database, memory), rather than that some rows did not fit the tables."""
    import duckdb

    storage_types = (
        OSError,
        MemoryError,
        duckdb.IOException,
        duckdb.FatalException,
        duckdb.OutOfMemoryException,
        duckdb.InterruptException,
    )
    if isinstance(exc, (StorageUnavailable, *storage_types)):
        return True
    if isinstance(exc, duckdb.Error):
        text = str(exc).lower()
        return any(word in text for word in _STORAGE_WORDS)
    return False


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

    def raw_row(self) -> tuple:
        """Its row of raw_records (rows.to_arrow), as the journal keeps it too."""
        return (
            self.key.to_bytes(16, "big"),  # the UUID's bytes, as Arrow takes them
            self.game,
            self.status,
            self.content_hash,
            self.blob,
            self.codec,
            self.received,
        )


@dataclass(slots=True)
class Call:
    """A `submit`ted function, run on the store's one writing connection (lake/store.py too)."""

    fn: Callable
    transaction: bool = True
    future: Future = field(default_factory=Future)
    token: bool = False  # on a lake, hold the commit token (LakeStore.submit)

    def run(self, con: duckdb.DuckDBPyConnection) -> object:
        """fn(con), in a transaction of its own unless asked otherwise."""
        if not self.transaction:
            return self.fn(con)
        with transaction(con):
            return self.fn(con)


STOP = object()  # queued last: the thread that takes it ends


def schema_sql() -> str:
    return resources.files(__package__).joinpath("schema.sql").read_text(encoding="utf-8")


# Columns added since the first schema: (table, column, its definition but NOT NULL). They are
# last in schema.sql, so a migrated table has the order of a new one (inserts are positional).
ADDED_COLUMNS = (
    ("games", "ruleset", "VARCHAR DEFAULT 'standard'"),
    ("slide_games", "ruleset", "VARCHAR DEFAULT 'standard'"),
    ("quarantine", "ruleset", "VARCHAR DEFAULT 'standard'"),
)


def missing_columns(con: duckdb.DuckDBPyConnection, database: str | None = None) -> list:
    """The ADDED_COLUMNS a store made by an earlier version lacks (on `database`, default the
    connection's current one)."""
    have = set(
        con.execute(
            "SELECT table_name, column_name FROM duckdb_columns() "
            "WHERE database_name = coalesce(?, current_database()) AND schema_name = 'main'",
            [database],
        ).fetchall()
    )
    return [(t, c, d) for t, c, d in ADDED_COLUMNS if (t, c) not in have]


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


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """BEGIN ... COMMIT around the block; ROLLBACK (and re-raise) if it fails."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        rollback(con)
        raise


def rollback(con: duckdb.DuckDBPyConnection) -> None:
    """ROLLBACK, when a transaction is still open (DuckDB has rolled back a failed commit)."""
    import duckdb

    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        pass  # no transaction was open
