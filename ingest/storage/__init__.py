"""Storage: the DuckDB store of uploaded games and everything that reads or writes its file.

The public surface, for the server (ingest/), the jobs (analysis/) and the dashboard:

- `Store`: the server process's one read-write connection, its group commit, journal and
  rows thread (store.py); `open_db` for a connection of one's own on a stopped store;
- `Pending`, the statuses and outcomes: what an upload hands the store and what it answers;
- `StorageUnavailable`: the store cannot make writes durable now (a full disk; failures.py);
- `schema_sql()`: the tables (schema.sql, documented in docs/tables.md);
- `codec` (how raw records are compressed), `rows` (the derived rows of a game, as Arrow),
  `Rejudge` (a stored record judged again for its rows).

Nothing here imports the HTTP app, the jobs or the dashboard: storage needs the rules engines
(replays/) only.
"""

from . import codec, journal, registry, rows
from .failures import RETRY_AFTER, StorageUnavailable
from .rejudge import Rejudge
from .store import (
    ACCEPTED,
    CONFLICT,
    DUPLICATE,
    QUARANTINED,
    VERIFIED,
    Pending,
    Store,
    insert_tables,
    open_db,
    schema_sql,
    transaction,
)

__all__ = [
    "ACCEPTED",
    "CONFLICT",
    "DUPLICATE",
    "QUARANTINED",
    "RETRY_AFTER",
    "VERIFIED",
    "Pending",
    "Rejudge",
    "StorageUnavailable",
    "Store",
    "codec",
    "insert_tables",
    "journal",
    "open_db",
    "registry",
    "rows",
    "schema_sql",
    "transaction",
]
