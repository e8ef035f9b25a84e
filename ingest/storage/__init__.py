"""Storage: the DuckDB store of uploaded games and everything that reads or writes its file.

The public surface, for the server (ingest/), the jobs (analysis/) and the dashboard:

- `GameStore` (interface.py): what every backend offers, its named errors, and `open_store`
  (`Target`: a file or a lake), the one way to make one;
- `Store`: the file backend, the server process's one read-write connection, its group
  commit, journal and rows thread (store.py); `LakeStore` (lake/store.py): several servers on one
  DuckLake; `open_db` for a connection of one's own on a stopped store file;
- `Pending`, the statuses and outcomes: what an upload hands the store and what it answers
  (shared.py, with the schema and transaction helpers both backends use);
- `StorageUnavailable`: the store cannot make writes durable now (a full disk; failures.py);
- `schema_sql()`: the tables (schema.sql, documented in docs/tables.md);
- `codec` (how raw records are compressed), `rows` (the derived rows of a game, as Arrow),
  `Rejudge` (a stored record judged again for its rows).

Nothing here imports the HTTP app, the jobs or the dashboard: storage needs the rules engines
(replays/) only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import codec, journal, registry, rows
    from .failures import RETRY_AFTER, StorageUnavailable
    from .interface import GameStore, Pinned, Target, open_store
    from .rejudge import QUARANTINED, VERIFIED, Rejudge
    from .shared import (
        ACCEPTED,
        CONFLICT,
        DUPLICATE,
        Pending,
        insert_tables,
        schema_sql,
        transaction,
    )
    from .store import Store, open_db

# Where each public name lives, imported at its first use: a module of this package (its
# settings, say) is then had without Arrow, DuckDB and the engines, so that `balance --help`
# and the server's supervisor process start in a fraction of the time.
_HOME = {
    "codec": "codec", "journal": "journal", "registry": "registry", "rows": "rows",
    "RETRY_AFTER": "failures", "StorageUnavailable": "failures",
    "GameStore": "interface", "Pinned": "interface", "Target": "interface",
    "open_store": "interface",
    "QUARANTINED": "rejudge", "VERIFIED": "rejudge", "Rejudge": "rejudge",
    "ACCEPTED": "shared", "CONFLICT": "shared", "DUPLICATE": "shared", "Pending": "shared",
    "insert_tables": "shared", "schema_sql": "shared", "transaction": "shared",
    "Store": "store", "open_db": "store",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{home}")
    value = module if home == name else getattr(module, name)
    globals()[name] = value
    return value


__all__ = [
    "ACCEPTED",
    "CONFLICT",
    "DUPLICATE",
    "GameStore",
    "Pinned",
    "QUARANTINED",
    "RETRY_AFTER",
    "VERIFIED",
    "Pending",
    "Rejudge",
    "StorageUnavailable",
    "Store",
    "Target",
    "codec",
    "insert_tables",
    "journal",
    "open_db",
    "open_store",
    "registry",
    "rows",
    "schema_sql",
    "transaction",
]
