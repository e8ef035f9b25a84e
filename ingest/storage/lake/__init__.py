"""The lake: the store's tables in a DuckLake (a PostgreSQL catalog, Parquet files on a shared
data path) that several servers write at once (docs/lake.md). Its modules, bottom first:

- connections.py: the extensions (never downloaded), catalog strings, connections, versions,
  the data path, the tables' DDL;
- claims.py: the idempotency index in PostgreSQL (one claim per game_id);
- token.py: the commit token the servers take turns with;
- staging.py: uploads acknowledged once PostgreSQL holds them, and the loader's election;
- loader.py: the loader's lake commits, the fence tables, the sweep of stale claims, the
  commit gate;
- store.py: `LakeStore`, the server's store on a lake (the write path and fencing argued in
  its docstring);
- admin.py: `balance lake init`, `upgrade`, `import`, `maintain`, `check`.

The names callers use are re-exported here. A test that patches one patches the module that
uses it (`lake.store.transaction`, `lake.loader.load_commit`), not this package.
"""

from .connections import (
    BUILT_FOR,
    DUCKLAKE_BACKOFF,
    DUCKLAKE_RETRIES,
    DUCKLAKE_RETRY_MS,
    EXTENSIONS,
    FENCES,
    LAKE,
    LAKE_SCHEMA_VERSION,
    PG,
    S3_SETTINGS,
    LakeError,
    LakeUnavailable,
    attach_read_only,
    check_version,
    connect,
    conninfo,
    data_path_of,
    extension_dir,
    extension_files,
    install_extensions,
    lake_schema_sql,
    latest_snapshot,
    object_store_secret,
    parquet_files,
    read_only_config,
    stored_version,
)
from .loader import (
    COMMIT_RETRIES,
    DRAIN_WAIT,
    GATE_SECONDS,
    commits_paused,
    drop_fence,
    lake_hashes,
    load_commit,
    make_fence,
    make_loader,
    staged_loaded,
    sweep_stale,
)
from .store import (
    CALL_STALL_AFTER,
    DEGRADED_AFTER,
    IN_FLIGHT_WAIT,
    LEASE,
    LOADER_LATE,
    RETRY_AFTER_IN_FLIGHT,
    STAGERS,
    STALL_AFTER,
    LakeStore,
    lake_error,
)

__all__ = [
    "BUILT_FOR",
    "DUCKLAKE_BACKOFF",
    "DUCKLAKE_RETRIES",
    "DUCKLAKE_RETRY_MS",
    "EXTENSIONS",
    "FENCES",
    "LAKE",
    "LAKE_SCHEMA_VERSION",
    "PG",
    "S3_SETTINGS",
    "attach_read_only",
    "check_version",
    "connect",
    "conninfo",
    "data_path_of",
    "extension_dir",
    "extension_files",
    "install_extensions",
    "lake_schema_sql",
    "LakeError",
    "LakeUnavailable",
    "latest_snapshot",
    "object_store_secret",
    "parquet_files",
    "read_only_config",
    "stored_version",
    "COMMIT_RETRIES",
    "DRAIN_WAIT",
    "GATE_SECONDS",
    "commits_paused",
    "drop_fence",
    "lake_hashes",
    "load_commit",
    "make_fence",
    "make_loader",
    "staged_loaded",
    "sweep_stale",
    "CALL_STALL_AFTER",
    "DEGRADED_AFTER",
    "IN_FLIGHT_WAIT",
    "LEASE",
    "LOADER_LATE",
    "RETRY_AFTER_IN_FLIGHT",
    "STAGERS",
    "STALL_AFTER",
    "lake_error",
    "LakeStore",
]
