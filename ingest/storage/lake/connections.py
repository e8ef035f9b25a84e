"""The lake's extensions and connections: the catalog strings, the DuckDB connections to a
lake (read-write and read-only), its versions and data path, and the store's tables' DDL as
DuckLake takes it.

Extensions. They are never downloaded: DuckDB opens with `extension_directory` set to a
directory of ours and autoinstall/autoload off, the `ducklake` and `postgres_scanner` binaries
come from their wheels (duckdb-extension-ducklake, duckdb-extension-postgres-scanner, built for
one DuckDB version each) and are FORCE INSTALLed from those files once (`install_extensions`).
The connections that run only this code's SQL load the wheels' files themselves, unsigned
(`_own_config`); those that run an analyst's SQL load the installed copies, signature checked.
`LakeUnavailable` says why they cannot load (a wheel missing, another DuckDB version).
"""

from __future__ import annotations

import fcntl
import importlib.util
import logging
import os
import re
import time
from pathlib import Path

import duckdb

from .. import codec, settings
from ..failures import without_passwords
from ..shared import schema_sql

log = logging.getLogger("ingest.lake")

# The version of what this code keeps in a lake's catalog besides DuckLake's own tables: the
# store's tables (schema.sql) and the claims' tables and functions (claims.SCHEMA).
# Raise it with every change there, and give admin.UPGRADES the step from the one before.
LAKE_SCHEMA_VERSION = "3"
LAKE = "lake"  # the lake's name in every connection made here
PG = "balance_pg"  # the catalog's database, attached as a postgres database (the claims)
FENCES = "balance_fence"  # the lake schema of the servers' fence tables
EXTENSIONS = {  # extension -> the wheel's package
    "ducklake": "duckdb_extension_ducklake",
    "postgres_scanner": "duckdb_extension_postgres_scanner",
    "httpfs": "duckdb_extension_httpfs",  # a data path on object storage (s3://)
}
# A data path on S3-compatible object storage: the credentials from the standard AWS_*
# variables, the endpoint and its details from BALANCE_S3_* (docs/lake.md, "The data path").
S3_SETTINGS = {  # DuckDB S3 secret key -> environment variable
    "KEY_ID": "AWS_ACCESS_KEY_ID",
    "SECRET": "AWS_SECRET_ACCESS_KEY",
    "SESSION_TOKEN": "AWS_SESSION_TOKEN",
    "REGION": "AWS_REGION",
    "ENDPOINT": "BALANCE_S3_ENDPOINT",
    "URL_STYLE": "BALANCE_S3_URL_STYLE",
}
BUILT_FOR = "1.5.5"  # the DuckDB the extension wheels are pinned to (pyproject.toml)
# DuckLake retries a commit that lost the race for the next snapshot id itself; with several
# writers its default (10 tries, 100 ms, x1.5) ran out: more, shorter waits.
DUCKLAKE_RETRIES, DUCKLAKE_RETRY_MS, DUCKLAKE_BACKOFF = 60, 20, 1.2


class LakeUnavailable(RuntimeError):
    """The ducklake / postgres extensions cannot be loaded here (the reason says why)."""


class LakeError(RuntimeError):
    """The lake is not usable as asked (no lake in that catalog, a wrong data path)."""


def extension_files() -> dict[str, Path]:
    """The extension binaries the wheels carry for this DuckDB version; LakeUnavailable
    (with the reason) when a wheel is missing or built for another version."""
    out = {}
    for name, package in EXTENSIONS.items():
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            wheel = package.replace("_", "-")
            raise LakeUnavailable(
                f"{wheel} is not installed (the lake is built on duckdb=={BUILT_FOR} with "
                f"duckdb-extension-ducklake, -postgres-scanner and -httpfs {BUILT_FOR}; "
                f"this is duckdb {_version()})"
            )
        root = Path(list(spec.submodule_search_locations)[0]) / "extensions"
        path = root / f"v{_version()}" / f"{name}.duckdb_extension"
        if not path.is_file():
            built = sorted(p.name for p in root.glob("v*")) if root.is_dir() else []
            raise LakeUnavailable(
                f"{package} carries {name} for DuckDB {', '.join(built) or 'no version'}, "
                f"this is DuckDB {_version()}: install the matching duckdb and extension wheels"
            )
        out[name] = path
    return out


def _version() -> str:
    return duckdb.__version__


def extension_dir() -> Path:
    """Where the extensions are installed: $BALANCE_LAKE_EXTENSIONS, else a directory of
    ours in the user's cache (never DuckDB's shared ~/.duckdb)."""
    explicit = (settings.value("LAKE_EXTENSIONS") or "").strip()
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "slow6-balance" / "duckdb-extensions"


def install_extensions(directory: Path | None = None) -> Path:
    """FORCE INSTALL the wheels' extension files into `directory` unless the same files are
    there already (under a lock: servers start at once). Returns the directory."""
    directory = Path(directory or extension_dir())
    files = extension_files()
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        con = None
        try:
            for name, source in files.items():
                installed = next(
                    iter(directory.glob(f"v{_version()}/*/{name}.duckdb_extension")), None
                )
                if installed is not None and installed.stat().st_size == source.stat().st_size:
                    continue
                if con is None:
                    con = duckdb.connect(config=_config(directory))
                con.execute(f"FORCE INSTALL {_literal(str(source))}")
        except duckdb.Error as exc:
            raise LakeUnavailable(f"cannot install the DuckDB extensions: {exc}") from exc
        finally:
            if con is not None:
                con.close()
    return directory


def _load(con: duckdb.DuckDBPyConnection, name: str, files: dict[str, Path] | None) -> None:
    """LOAD extension `name`: the installed one, its signature checked (`files` None), or the
    wheel's own file (on a connection opened with `_own_config`)."""
    con.execute(f"LOAD {_literal(str(files[name])) if files else name}")


def object_store_secret(
    con: duckdb.DuckDBPyConnection, files: dict[str, Path] | None = None
) -> None:
    """httpfs loaded (`files`: as `_load`), and an S3 secret for this connection from the
    environment (S3_SETTINGS) when any of it is set: the lake's files on object storage are
    then readable and writable. Nothing is written to disk (a TEMPORARY secret)."""
    _load(con, "httpfs", files)
    given = {key: _setting(var) for key, var in S3_SETTINGS.items()}
    given = {key: value for key, value in given.items() if value}
    if not given:
        return
    options = [f"{key} {_literal(value)}" for key, value in given.items()]
    ssl = settings.value("S3_USE_SSL")
    if ssl is not None:
        options.append(f"USE_SSL {'true' if ssl else 'false'}")
    con.execute(f"CREATE OR REPLACE TEMPORARY SECRET balance_s3 (TYPE s3, {', '.join(options)})")


def _setting(variable: str) -> str:
    """An S3_SETTINGS variable: BALANCE_* through the storage table, AWS_* as DuckDB's own."""
    if variable.startswith(settings.PREFIX):
        return (settings.value(variable.removeprefix(settings.PREFIX)) or "").strip()
    return os.environ.get(variable, "").strip()


def _config(directory: Path) -> dict:
    return {
        "extension_directory": str(directory),
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "false",
    }


def _own_config(directory: Path) -> dict:
    """The settings of a connection that runs only this code's SQL (never an analyst's): it
    loads the wheels' files themselves, without DuckDB's signature check, which hashes every
    binary whole at every connection (most of what opening one cost: docs/lake.md); the
    wheels' files are installed with this code and as trusted as it. A connection that runs
    an analyst's SQL (the console's, `read_only_config`) loads the installed copies, checked."""
    return {**_config(directory), "allow_unsigned_extensions": "true"}


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def conninfo(catalog: str) -> str:
    """The PostgreSQL connection string of a CATALOG argument: a libpq string
    ('host=... dbname=...') or URI ('postgresql://...'), with or without 'ducklake:' and
    'postgres:' in front."""
    text = catalog.strip()
    for prefix in ("ducklake:", "postgres:"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if not text:
        raise LakeError("no catalog: give a PostgreSQL connection string (--lake)")
    return text


def connect(
    catalog: str,
    data_path: str | None = None,
    *,
    read_only: bool = False,
    create: bool = False,
    claims: bool = True,
    threads: int = 0,
    extensions: Path | None = None,
    migrate: bool = False,
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the lake attached as `lake` (and USEd), the catalog's
    database as `balance_pg` when `claims`, raw_json() registered. Without `create` the lake
    must exist (`balance lake init`). `data_path` is needed only to create one; given for an
    existing lake, it must be the lake's."""
    # the wheels' files themselves: nothing to install (the console's connections install
    # the copies they load, `read_only_config`)
    files = extension_files()
    con = duckdb.connect(config=_own_config(Path(extensions or extension_dir())))
    try:
        _load(con, "ducklake", files)
        _load(con, "postgres_scanner", files)
        object_store_secret(con, files)
        if threads > 0:
            con.execute(f"SET threads = {int(threads)}")
        con.execute(f"SET GLOBAL ducklake_max_retry_count = {DUCKLAKE_RETRIES}")
        con.execute(f"SET GLOBAL ducklake_retry_wait_ms = {DUCKLAKE_RETRY_MS}")
        con.execute(f"SET GLOBAL ducklake_retry_backoff = {DUCKLAKE_BACKOFF}")
        pg = conninfo(catalog)
        if claims or not create:
            ro = ", READ_ONLY" if read_only and not claims else ""
            try:
                con.execute(f"ATTACH {_literal(pg)} AS {PG} (TYPE postgres{ro})")
            except duckdb.IOException as exc:  # every command says so, with no traceback
                first = without_passwords(str(exc).splitlines()[0])
                raise LakeError(f"cannot reach the catalog: {first}") from exc
            if not create and not _has_lake(con):
                raise LakeError(
                    "no lake in this catalog yet: run `balance lake init --lake CATALOG "
                    "--data-path DIR` first"
                )
            if not claims:
                con.execute(f"DETACH {PG}")
        options = []
        if data_path:
            options.append(f"DATA_PATH {_literal(_data_path(data_path))}")
        if read_only:
            options.append("READ_ONLY")
        if migrate:  # DuckLake's own catalog format, to this extension's (`balance lake upgrade`)
            options.append("AUTOMATIC_MIGRATION TRUE")
        opts = f" ({', '.join(options)})" if options else ""
        try:
            con.execute(f"ATTACH {_literal('ducklake:postgres:' + pg)} AS {LAKE}{opts}")
        except duckdb.Error as exc:
            if "does not match existing data path" in str(exc):
                first = str(exc).splitlines()[0]  # (not DuckDB's OVERRIDE_DATA_PATH hint)
                raise LakeError(f"--data-path is not this lake's: {first}") from exc
            raise
        con.execute(f"USE {LAKE}")
        codec.register_sql(con)
    except BaseException:
        con.close()
        raise
    return con


def read_only_config() -> dict:
    """The settings a connection of one's own needs to attach the lake (`attach_read_only`):
    the extension directory, nothing autoloaded."""
    return _config(install_extensions())


def attach_read_only(
    con: duckdb.DuckDBPyConnection, catalog: str, alias: str, snapshot: int | None = None
) -> str:
    """Attach the lake READ_ONLY as `alias` on `con` (opened with `read_only_config()`), at
    its latest snapshot or at `snapshot` (a version: what every query then sees, however many
    commits land meanwhile), and nothing else of the catalog: the claims are not reachable
    through it. Returns the lake's data path."""
    _load(con, "ducklake", None)
    _load(con, "postgres", None)
    object_store_secret(con)
    pg = conninfo(catalog)
    pin = "" if snapshot is None else f", SNAPSHOT_VERSION {int(snapshot)}"
    try:
        con.execute(f"ATTACH {_literal('ducklake:postgres:' + pg)} AS {alias} (READ_ONLY{pin})")
    except duckdb.Error as exc:
        if "ducklake" in str(exc).lower() and "metadata" in str(exc).lower():
            raise LakeError(f"no lake in this catalog: {without_passwords(str(exc))}") from exc
        raise
    # The lake's Parquet files stay readable once the caller turns external access off (the
    # SQL console does): that directory only, and only through the lake's tables.
    path = data_path_of(con, alias)
    con.execute(f"SET allowed_directories = [{_literal(path.rstrip('/') + '/')}]")
    return path


def latest_snapshot(con: duckdb.DuckDBPyConnection) -> tuple[int, str]:
    """The lake's latest snapshot on `con` (a lake connection): its version and its time
    (ISO 8601, UTC, to the second)."""
    ((version, at),) = con.execute(
        f"SELECT s.snapshot_id, epoch(s.snapshot_time) FROM ducklake_snapshots('{LAKE}') s "
        f"WHERE s.snapshot_id = (SELECT id FROM {LAKE}.current_snapshot())"
    ).fetchall()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(at)))
    return int(version), stamp


def stored_version(con: duckdb.DuckDBPyConnection) -> str | None:
    """The lake's schema version (store_meta), None for a lake made before it was kept."""
    found = con.execute(
        "SELECT max(value::INTEGER)::VARCHAR FROM store_meta WHERE key = 'lake_schema_version'"
    ).fetchall()
    return found[0][0] if found else None


def check_version(con: duckdb.DuckDBPyConnection) -> None:
    """LakeError unless the lake's schema is this code's: a server never writes a lake whose
    tables or claim functions are another version's."""
    found = stored_version(con) or "1"
    if found != LAKE_SCHEMA_VERSION:
        raise LakeError(
            f"the lake's schema is version {found}, this server's is {LAKE_SCHEMA_VERSION}: "
            + (
                "stop the servers and run `balance lake upgrade --lake CATALOG`"
                if int(found) < int(LAKE_SCHEMA_VERSION)
                else "run this version's servers on it (the lake is newer)"
            )
        )


def data_path_of(con: duckdb.DuckDBPyConnection, alias: str = LAKE) -> str:
    """The data path the lake's catalog records (DuckLake writes it with the catalog)."""
    row = con.execute(
        f"SELECT value FROM __ducklake_metadata_{alias}.ducklake_metadata "
        "WHERE key = 'data_path' AND scope IS NULL"
    ).fetchone()
    if row is None:  # (never: DuckLake writes it with the catalog)
        raise RuntimeError("the lake's catalog has no data_path")
    return row[0]


def _local_data_path(con: duckdb.DuckDBPyConnection) -> str | None:
    """The lake's data path when it is a local directory (None for a URL: object storage)."""
    path = data_path_of(con)
    return None if "://" in path else path


def _data_path(path: str) -> str:
    """A local data path as an absolute directory with its trailing slash (DuckLake stores
    it as given, and every server and analyst must resolve it the same way); URLs as given."""
    if "://" in path:
        return path if path.endswith("/") else path + "/"
    return str(Path(path).resolve()) + "/"


def _has_lake(con: duckdb.DuckDBPyConnection) -> bool:
    ((found,),) = con.execute(
        f"SELECT * FROM postgres_query('{PG}', "
        "'SELECT to_regclass(''ducklake_metadata'') IS NOT NULL')"
    ).fetchall()
    return bool(found)


def parquet_files(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """The Parquet files that hold `table` now, from the lake's catalog (never a directory
    listing: the data path also holds files of expired snapshots and uncommitted writes), for
    readers that take a file list (Polars). Raises LakeError when those files alone would not
    give the table exactly: rows still inlined in the catalog (small commits, until `balance
    lake maintain` flushes them) or deletions; read it through DuckDB then (`.pl()`)."""
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", table):
        raise ValueError(f"not a table name: {table!r}")
    con.execute("BEGIN TRANSACTION")  # one snapshot for the list and the counts
    try:
        listed = con.execute(
            f"SELECT data_file, delete_file FROM ducklake_list_files('{LAKE}', ?)", [table]
        ).fetchall()
        files = [f for f, _ in listed]
        ((rows_in_lake,),) = con.execute(f"SELECT count(*) FROM {LAKE}.main.{table}").fetchall()
        in_files = 0
        if files:
            ((in_files,),) = con.execute("SELECT count(*) FROM read_parquet(?)", [files]).fetchall()
    finally:
        con.execute("ROLLBACK")
    if any(d for _, d in listed):
        raise LakeError(f"{table} has deletions (delete files): read it through DuckDB")
    if in_files != rows_in_lake:
        raise LakeError(
            f"{table}: {rows_in_lake - in_files} rows are not in Parquet files yet (inlined in "
            "the catalog until `balance lake maintain`): read it through DuckDB"
        )
    return files


def lake_schema_sql() -> str:
    """schema.sql as DuckLake takes it. DuckLake has no PRIMARY KEY, UNIQUE or index (NOT
    NULL it has): store_meta's key is NOT NULL but no longer unique, and its INSERT OR IGNORE
    (which needs the key) becomes an insert of what is missing. Every table, column, type and
    NOT NULL is the same."""
    sql = re.sub(r"--[^\n]*", "", schema_sql())
    sql = re.sub(r",\s*PRIMARY KEY \([^)]*\)", "", sql)  # a table's key (its columns: NOT NULL)
    sql = sql.replace("PRIMARY KEY", "NOT NULL")  # (what of it DuckLake keeps)
    sql = re.sub(
        r"INSERT OR IGNORE INTO store_meta VALUES \('([^']*)', '([^']*)'\)",
        r"INSERT INTO store_meta SELECT '\1', '\2' WHERE NOT EXISTS "
        r"(SELECT 1 FROM store_meta WHERE key = '\1')",
        sql,
    )
    if "INSERT OR IGNORE" in sql or "PRIMARY KEY" in sql:
        raise AssertionError("schema.sql has a statement lake_schema_sql does not translate")
    return sql
