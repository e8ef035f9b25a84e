"""Analyst SQL that cannot hurt the store or the server: an allow-listed, locked, read-only DuckDB.

Safety is layered so that no single check has to be perfect:
1. the text must be one statement that DuckDB's own parser turns into a plain query tree
   (`json_serialize_sql`): SELECT / WITH / FROM-first / VALUES / set operations, and DESCRIBE,
   SUMMARIZE or SHOW TABLES of such a query. Every node of the tree is checked against an
   allow-list (`Policy`): tables and views of the store only (no file paths, no system views),
   table functions from TABLE_FUNCTIONS only, and scalar/aggregate/window functions of DuckDB's
   catalog except DENIED_FUNCTIONS (settings, environment, logs, plans) and the macros built on
   anything refused. Anything else is refused with a message naming it; nothing runs;
2. the query runs in its own DuckDB instance that attached a *copy* of the store read-only as
   `store` (so no path appears in its database name), with external access off (no files,
   network, ATTACH/COPY/INSTALL), extension autoload/autoinstall off, Python replacement scans
   off, no spilling to disk, a memory limit, and its configuration locked;
3. a timer interrupts the query after `timeout` seconds, at most `limit` rows are fetched, and a
   result over `max_bytes` (in Arrow, then as the file or JSON sent) is refused, never cut; a
   download (`write_file`) is the whole result, written batch by batch to a file and refused
   (the file deleted) once it passes its own byte limit;
   parameters (`params`, named `$name` in the text) are bound as values by DuckDB, never
   written into the text, so a value cannot change what the allow-list checked;
4. on the server, all of this runs in worker processes (sqlpool.py) under an OS memory limit,
   which the server kills when the whole request (execute, fetch, encode) overruns its time.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

from analysis.sql import sql_literal

DEFAULT_TIMEOUT = 5.0
DEFAULT_LIMIT = 10_000
DEFAULT_MAX_BYTES = 32 * 1024 * 1024  # a result (Arrow in the engine, then the bytes sent)
MAX_SQL_CHARS = 256 * 1024
MAX_PARAMS = 64
MAX_PARAM_CHARS = 10_000
PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
ALIAS = "store"  # the name the snapshot is attached under: current_database() in the console
FETCH_ROWS = 2048  # rows per Arrow batch while fetching: the byte limit is checked this often

# First keywords of statements that only read. DESCRIBE/SHOW/SUMMARIZE parse as SELECT too.
QUERY_KEYWORDS = frozenset(
    {"SELECT", "WITH", "FROM", "VALUES", "TABLE", "DESCRIBE", "DESC", "SHOW", "SUMMARIZE"}
)

# Table functions a query may call: generators, the store's own catalog, and pure JSON
# functions. Not: readers and scans (files), settings, databases (paths), extensions, secrets,
# logging and profiling (which write files), memory, temporary files, checkpoints, query().
TABLE_FUNCTIONS = frozenset(
    {
        "range",
        "generate_series",
        "unnest",
        "repeat",
        "repeat_row",
        "json_each",
        "json_tree",
        "duckdb_tables",
        "duckdb_columns",
        "duckdb_views",
        "duckdb_schemas",
        "duckdb_types",
        "duckdb_functions",
        "duckdb_keywords",
        "duckdb_constraints",
        "duckdb_indexes",
        "duckdb_sequences",
        "histogram",
        "histogram_values",
        "icu_calendar_names",
        "pg_timezone_names",
    }
)

# Scalar functions of DuckDB's catalog that are refused: they read settings, variables or the
# environment, write the log, or plan (bind) SQL given as text.
DENIED_FUNCTIONS = frozenset(
    {
        "current_setting",
        "getvariable",
        "getenv",
        "which_secret",  # the object store's credentials: their names and scopes
        "write_log",
        "json_serialize_plan",
        "json_execute_serialized_sql",
    }
)

# Names the binder handles itself (not in duckdb_functions() as scalars).
SPECIAL_FUNCTIONS = frozenset({"unnest", "unlist"})

# SHOW <name> forms that list the store's tables (SHOW TABLES, SHOW ALL TABLES).
SHOW_NAMES = frozenset({"tables", "__show_tables_expanded"})

QUERY_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"})
TABLE_REFS = frozenset(
    {"BASE_TABLE", "TABLE_FUNCTION", "SUBQUERY", "JOIN", "EXPRESSION_LIST", "EMPTY", "SHOW_REF"}
    | {"PIVOT"}
)


class QueryError(Exception):
    """A query that was not answered; `kind` says why, the message says it for a person;
    `position`: where in the query text the engine points (a character offset), if it does."""

    kind = "error"

    def __init__(self, message: str, position: int | None = None):
        super().__init__(message)
        self.message = message
        self.position = position


class Refused(QueryError):
    """Not allowed here (a write, a setting, a file, a second statement...): nothing was run."""

    kind = "refused"


class BadSQL(QueryError):
    """The SQL does not parse or bind, or failed while running."""

    kind = "error"


class TimedOut(QueryError):
    kind = "timeout"


class TooBig(QueryError):
    """The result is over the byte limit, or the query needed more memory than the engine has."""

    kind = "too_big"


class Busy(QueryError):
    """Every SQL engine is busy (or starting): try again in a moment."""

    kind = "busy"


class Replaced(QueryError):
    """The snapshot was swapped for a newer one while the query waited: run it on the new one."""


ERRORS = {cls.kind: cls for cls in (Refused, BadSQL, TimedOut, TooBig, Busy)}


def error_of(kind: str, message: str, position: int | None = None) -> QueryError:
    if kind == "replaced":
        return Replaced(message)
    return ERRORS.get(kind, BadSQL)(message, position)


_LINE = re.compile(r"LINE (\d+): (.*)\n( *)\^")


def error_position(message: str, text: str) -> int | None:
    """The character offset in `text` that DuckDB's "LINE n: ...\n    ^" excerpt points at."""
    m = _LINE.search(message or "")
    if not m:
        return None
    number, excerpt = int(m.group(1)), m.group(2)
    caret = len(m.group(3)) - len(f"LINE {number}: ")
    lines = text.split("\n")
    if not 1 <= number <= len(lines) or caret < 0:
        return None
    line = lines[number - 1]
    column = caret
    if excerpt.startswith("..."):  # a long line, shown around the error
        body = excerpt[3:].removesuffix("...")
        found = line.find(body)
        if found < 0:
            return None
        column = found + caret - 3
    column = max(0, min(column, len(line)))
    return sum(len(ln) + 1 for ln in lines[: number - 1]) + column


def check_params(params) -> dict | None:
    """Parameter values as DuckDB binds them: a name -> text, number, boolean or NULL."""
    if not params:
        return None
    if not isinstance(params, dict):
        raise Refused('Parameters are given by name: {"name": value}.')
    out = {}
    for name, value in params.items():
        if not isinstance(name, str) or not PARAM_NAME.fullmatch(name):
            raise Refused(f"{str(name)[:40]!r} is not a parameter name (letters, digits, _).")
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise Refused(
                f"The parameter {name} must be text, a number, a boolean or null, "
                f"not {type(value).__name__}."
            )
        if isinstance(value, str) and len(value) > MAX_PARAM_CHARS:
            raise Refused(f"The parameter {name} is longer than {MAX_PARAM_CHARS:,} characters.")
        out[name] = value
    if len(out) > MAX_PARAMS:
        raise Refused(f"At most {MAX_PARAMS} parameters.")
    return out


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

    def describe(self) -> dict:
        return {
            "columns": self.columns,
            "types": self.types,
            "row_count": self.row_count,
            "truncated": self.truncated,
            "elapsed_ms": round(self.elapsed_ms, 1),
            "snapshot_at": self.snapshot_at,
        }


@dataclass
class Payload:
    """A result already encoded (CSV, JSON, Parquet, the API's JSON, Arrow IPC) with its facts."""

    meta: dict  # Result.describe() and "format"
    body: bytes

    @property
    def truncated(self) -> bool:
        return bool(self.meta.get("truncated"))

    @property
    def row_count(self) -> int:
        return int(self.meta.get("row_count", 0))

    @property
    def snapshot_at(self) -> str | None:
        return self.meta.get("snapshot_at")


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


def _clean(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


# -- the allow-list -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """What a query may name, read from the engine's own catalog when it opens."""

    tables: frozenset[str]  # the store's tables and views (lower case)
    functions: frozenset[str]  # scalar, aggregate, window and macro functions allowed
    known: frozenset[str]  # every function name in the catalog, allowed or not
    table_functions: frozenset[str] = TABLE_FUNCTIONS

    @classmethod
    def of(cls, con, database: str = ALIAS) -> Policy:
        rows = con.execute(
            "SELECT DISTINCT lower(function_name), function_type, coalesce(macro_definition, '') "
            "FROM duckdb_functions()"
        ).fetchall()
        known = frozenset(name for name, _, _ in rows)
        scalar_like = {
            name: definition
            for name, kind, definition in rows
            if kind in ("scalar", "aggregate", "macro", "window")
        }
        # Functions only of other kinds (read_csv, duckdb_settings...) and the denied ones;
        # allowed table functions may appear in macros (format_type uses duckdb_types()).
        refused = (set(known) - set(scalar_like) - TABLE_FUNCTIONS) | DENIED_FUNCTIONS
        # A macro built on a refused function is refused too (e.g. get_block_size()).
        macros = {n: d for n, d in scalar_like.items() if d}
        changed = True
        while changed:
            changed = False
            for name, definition in macros.items():
                if name in refused:
                    continue
                words = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", definition.lower()))
                if words & refused:
                    refused.add(name)
                    changed = True
        functions = frozenset((set(scalar_like) - refused) | SPECIAL_FUNCTIONS)
        names = con.execute(
            "SELECT lower(table_name) FROM duckdb_tables() WHERE database_name = ? "
            "UNION SELECT lower(view_name) FROM duckdb_views() "
            "WHERE database_name = ? AND NOT internal",
            [database, database],
        ).fetchall()
        return cls(frozenset(n for (n,) in names), functions, known)


def parse(con, sql: str) -> dict:
    """DuckDB's own parse tree of `sql` (json_serialize_sql), or Refused/BadSQL."""
    text = con.execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchone()[0]
    tree = json.loads(text)
    if tree.get("error"):
        message = tree.get("error_message") or "the query could not be parsed"
        if tree.get("error_type") == "parser":
            position: int | None
            try:
                position = int(tree["position"])
            except (KeyError, TypeError, ValueError):
                position = error_position(message, sql)
            raise BadSQL(message, position)
        raise Refused(
            "Only plain queries (SELECT, WITH, FROM, VALUES, DESCRIBE, SUMMARIZE) run here, "
            f"and this one cannot be checked: {message}"
        )
    return tree


def check_select(sql: str, con=None, policy: Policy | None = None) -> str:
    """The one read-only statement in `sql`, or Refused/BadSQL saying why not.

    With a connection and a policy, the statement's parse tree is checked node by node."""
    if not sql or not sql.strip():
        raise Refused("The query is empty.")
    if len(sql) > MAX_SQL_CHARS:
        raise Refused(
            f"The query text is {len(sql):,} characters long; the console takes at most "
            f"{MAX_SQL_CHARS:,}."
        )
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        position = error_position(_clean(exc), sql)
        if position is None and con is not None:  # the parser's own position, if it has one
            try:
                parse(con, sql)
            except QueryError as parsed:
                position = parsed.position
            except duckdb.Error:
                pass
        raise BadSQL(_clean(exc), position) from None
    if not statements:
        raise Refused("The query is empty.")
    if len(statements) > 1:
        kinds = [st.type.name for st in statements]
        if "CREATE" in kinds and re.search(r"\b(UN)?PIVOT\b", sql, re.I):
            raise Refused(
                "A PIVOT without an IN list first creates a type from the data, which the "
                "console cannot do: name the values, e.g. PIVOT games ON board IN (5, 7)."
            )
        raise Refused(
            f"One statement at a time, please: this text holds {len(statements)} statements."
        )
    # PRAGMA parses as a SELECT of a pragma function, so the keyword comes from the text as typed.
    kind = statements[0].type.name
    keyword = first_keyword(sql)
    if kind != "SELECT" or keyword not in QUERY_KEYWORDS:
        raise Refused(
            f"Only read-only queries (SELECT, WITH, FROM, VALUES, DESCRIBE, SUMMARIZE) run here, "
            f"and this statement is {keyword or kind}. The console reads a snapshot and cannot "
            f"change data, settings or files."
        )
    if con is not None and policy is not None:
        tree = parse(con, sql)
        nodes = tree.get("statements") or []
        if len(nodes) != 1:
            raise Refused("One statement at a time, please.")
        Checker(policy).query(nodes[0]["node"])
    return sql.strip()


class Checker:
    """Walks a json_serialize_sql tree; every table, table function and function is checked.

    Nodes are recognised by shape wherever they are: a dict with "class" is an expression, one
    with "modifiers" and "cte_map" a query node, one with "sample" and "alias" (no "class") a
    table reference. Unknown query or table reference types are refused."""

    def __init__(self, policy: Policy):
        self.policy = policy
        self.ctes: set[str] = set()

    def query(self, node: dict) -> None:
        self._collect_ctes(node)
        self.walk(node)

    def _collect_ctes(self, value) -> None:
        if isinstance(value, dict):
            cte_map = value.get("cte_map")
            if isinstance(cte_map, dict):
                for entry in cte_map.get("map") or []:
                    if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                        self.ctes.add(entry["key"].lower())
            if value.get("type") == "RECURSIVE_CTE_NODE" and isinstance(value.get("ctename"), str):
                self.ctes.add(value["ctename"].lower())
            for v in value.values():
                self._collect_ctes(v)
        elif isinstance(value, list):
            for v in value:
                self._collect_ctes(v)

    def walk(self, value) -> None:
        if isinstance(value, list):
            for v in value:
                self.walk(v)
            return
        if not isinstance(value, dict):
            return
        if "class" in value:
            self._expression(value)
        elif "modifiers" in value and "cte_map" in value:
            if value.get("type") not in QUERY_NODES:
                raise Refused(f"This kind of query ({value.get('type')}) does not run here.")
            for v in value.values():
                self.walk(v)
        elif "sample" in value and "alias" in value and "type" in value:
            self._table_ref(value)
        else:
            for v in value.values():
                self.walk(v)

    def _expression(self, expr: dict) -> None:
        if expr.get("class") in ("FUNCTION", "WINDOW"):
            name = str(expr.get("function_name", "")).lower()
            try:
                self._function(name)
            except Refused as exc:
                raise _at(exc, expr) from None
        for v in expr.values():
            self.walk(v)

    def _function(self, name: str) -> None:
        policy = self.policy
        if name in policy.functions or name not in policy.known:
            return  # allowed, or not a function at all (the binder will say so)
        if name in policy.table_functions:
            return  # range(), unnest() and the like as list functions
        if name in DENIED_FUNCTIONS:
            raise Refused(
                f"The function {name}() is not available in the console: it reads the server's "
                f"settings, variables or environment, or writes its log."
            )
        raise Refused(
            f"The function {name}() is not available in the console (it reads files, settings "
            f"or the server's state, or changes them)."
        )

    def _table_ref(self, ref: dict) -> None:
        try:
            self._check_ref(ref)
        except Refused as exc:
            raise _at(exc, ref) from None
        for v in ref.values():
            self.walk(v)

    def _check_ref(self, ref: dict) -> None:
        """Refused unless the reference itself is allowed (its parts are walked after)."""
        kind = ref.get("type")
        if kind not in TABLE_REFS:
            raise Refused(f"This kind of table reference ({kind}) does not run here.")
        if kind == "BASE_TABLE":
            self._base_table(ref)
        elif kind == "TABLE_FUNCTION":
            function = ref.get("function") or {}
            name = str(function.get("function_name", "")).lower()
            if name not in self.policy.table_functions:
                allowed = ", ".join(sorted(self.policy.table_functions))
                raise Refused(
                    f"The table function {name}() is not available in the console: it reads "
                    f"files, settings or the server's state, or changes them. The console "
                    f"reads the store's tables and views, and these table functions: {allowed}."
                )
        elif kind == "SHOW_REF":
            show = ref.get("show_type")
            if show in ("DESCRIBE", "SUMMARY") and ref.get("query"):
                pass  # DESCRIBE / SUMMARIZE of a query: the query is checked below
            elif ref.get("query") is None and _unquote(ref.get("table_name")) in SHOW_NAMES:
                pass  # SHOW TABLES, SHOW ALL TABLES: the store's catalog
            else:
                raise Refused(
                    "Only SHOW TABLES, DESCRIBE <table or query> and SUMMARIZE <table or query> "
                    "run here; the schema browser lists every table and column."
                )

    def _base_table(self, ref: dict) -> None:
        name = str(ref.get("table_name", ""))
        catalog = str(ref.get("catalog_name") or "").lower()
        schema = str(ref.get("schema_name") or "").lower()
        lowered = name.lower()
        if not catalog and not schema and lowered in self.ctes:
            return
        if (catalog, schema) in _STORE_SCOPES and lowered in self.policy.tables:
            return
        if "/" in name or "\\" in name or ":" in name or "." in name:
            raise Refused(
                f"Reading files is not available in the console: {name!r} does not exist in "
                f"the store (the console reads only the store's tables and views)."
            )
        shown = ".".join(p for p in (catalog, schema, name) if p)
        raise Refused(
            f"Table {shown} does not exist in the store: the console reads only the store's "
            f"tables and views (see the schema browser), not system views or other databases."
        )


def _at(exc: Refused, node: dict) -> Refused:
    """The refusal, pointing at the node's place in the text (DuckDB's query_location)."""
    where = node.get("query_location")
    if exc.position is None and isinstance(where, int) and 0 <= where < MAX_SQL_CHARS:
        exc.position = where
    return exc


_STORE_SCOPES = frozenset({("", ""), ("", "main"), ("", ALIAS), (ALIAS, ""), (ALIAS, "main")})


def _unquote(name) -> str:
    text = str(name or "").strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    return text.lower()


# -- the engine -----------------------------------------------------------------------------------

# Settings applied when the instance opens (lock_configuration goes last, after the attach).
LOCKED_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "python_enable_replacements": False,  # no Python variable of the engine is a table
    "temp_directory": "",  # no spilling: a query that needs more memory than it has stops
}


@dataclass(frozen=True)
class Attach:
    """A database other than a file for the engine (a lake): the settings its connection
    needs and how it is attached, READ_ONLY, under the alias given."""

    config: dict
    attach: Callable[[duckdb.DuckDBPyConnection, str], list[str]]  # -> the texts to hide


LAKE_SOURCE = "lake-snapshot:"  # a snapshot "path" that names a lake's pinned snapshot


def lake_source(catalog: str, version: int) -> str:
    """The engine's source for snapshot `version` of the lake in `catalog` (no copy: the
    engine attaches the lake read-only at that version)."""
    return f"{LAKE_SOURCE}{int(version)}:{catalog}"


def is_file_source(path: str) -> bool:
    return not path.startswith(LAKE_SOURCE)


def lake_attach(catalog: str, version: int | None = None) -> Attach:
    """The lake in `catalog`, read-only, at snapshot `version` (None: its latest)."""
    from ingest.storage.lake import attach_read_only, read_only_config

    def attach(con: duckdb.DuckDBPyConnection, alias: str) -> list[str]:
        return [catalog, attach_read_only(con, catalog, alias, version)]

    return Attach(read_only_config(), attach)


def _attach_of(path: str) -> Attach | None:
    if is_file_source(path):
        return None
    version, catalog = path[len(LAKE_SOURCE) :].split(":", 1)
    return lake_attach(catalog, int(version))


class Engine:
    """One read-only, locked DuckDB instance over one snapshot file (or `attach`'s database,
    or a lake's snapshot named by `lake_source`); a cursor per query."""

    def __init__(
        self,
        path: str,
        *,
        snapshot_at: str | None = None,
        threads: int = 1,
        memory_limit: str = "1GB",
        max_concurrent: int = 2,
        setup=None,
        memory_label: str | None = None,
        attach: Attach | None = None,
    ):
        config = dict(LOCKED_CONFIG)
        config.update({"threads": threads, "memory_limit": memory_limit})
        attach = attach or _attach_of(path)
        if attach is not None:
            config.update(attach.config)
        self.path = path
        self.hidden: list[str] = []  # more texts `scrub_message` takes out of errors
        self.snapshot_at = snapshot_at
        self.memory_limit = memory_limit
        self.memory_label = memory_label or memory_limit  # the limit as the console states it
        con = duckdb.connect(":memory:", config=config)
        try:
            if attach is not None:  # errors never name the lake's catalog or data path
                self.hidden = [t for t in attach.attach(con, ALIAS) if t]
            else:  # ATTACH takes no parameter: the path goes in as a literal
                con.execute(f"ATTACH {sql_literal(path)} AS {ALIAS} (READ_ONLY)")
            con.execute(f"USE {ALIAS}")
            if setup is not None:
                setup(con)  # e.g. register trusted Python UDFs (no SQL-visible settings)
            con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")
            self.policy = Policy.of(con)
        except Exception:
            con.close()
            raise
        self._con = con
        self._slots = threading.BoundedSemaphore(max_concurrent)
        self._lock = threading.Lock()
        self._active = 0
        self._closing = False

    def _cursor(self):
        cur = self._con.cursor()
        cur.execute(f"USE {ALIAS}")  # a cursor starts on the in-memory database
        return cur

    def check(self, sql: str) -> str:
        cur = self._cursor()
        try:
            return check_select(sql, cur, self.policy)
        except duckdb.Error as exc:
            message = self.scrub_message(_clean(exc))
            raise BadSQL(message, error_position(_clean(exc), sql)) from None
        finally:
            cur.close()

    @contextmanager
    def _slot(self, timeout: float):
        """One of the engine's query slots, for as long as a query runs on this snapshot."""
        if not self._slots.acquire(timeout=timeout):
            raise Busy(f"The console is busy; try again in a few seconds (waited {timeout:g} s).")
        with self._lock:
            closing = self._closing
            if not closing:
                self._active += 1
        if closing:
            self._slots.release()
            raise Replaced("The snapshot was replaced while the query waited; run it again.")
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1
                done = self._closing and self._active == 0
            self._slots.release()
            if done:
                self._con.close()

    @staticmethod
    def _located(exc: QueryError, query: str, sql: str) -> QueryError:
        """The error with its position in `sql` as given (the engine ran it stripped)."""
        if exc.position is None and isinstance(exc, BadSQL):
            at = error_position(exc.message, query)
            if at is not None:
                exc.position = at + len(sql) - len(sql.lstrip())
        return exc

    def run(
        self,
        sql: str,
        *,
        limit: int = DEFAULT_LIMIT,
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        params: dict | None = None,
    ) -> Result:
        values = check_params(params)
        with self._slot(timeout):
            query = self.check(sql)
            try:
                return self._run(query, limit, timeout, max_bytes, values)
            except QueryError as exc:
                raise self._located(exc, query, sql) from None

    def write_file(
        self,
        sql: str,
        fmt: str,
        path: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        params: dict | None = None,
    ) -> dict:
        """The whole result written to `path` as csv / json / jsonl / parquet, batch by batch
        (never the whole result in memory), refused (the file deleted) past `max_bytes` or
        `timeout` (execute, fetch and encode). Returns the facts: columns, types, rows, bytes."""
        from .. import export

        values = check_params(params)
        with self._slot(timeout):
            query = self.check(sql)
            try:
                return self._write(query, fmt, path, timeout, max_bytes, values, export)
            except QueryError as exc:
                Path(path).unlink(missing_ok=True)
                raise self._located(exc, query, sql) from None
            except BaseException:
                Path(path).unlink(missing_ok=True)
                raise

    @contextmanager
    def _executed(
        self, query: str, params: dict | None, timeout: float
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """`query` run on a cursor of its own, interrupted after `timeout` seconds; the body
        reads the result. DuckDB's errors (and running out of memory) come out as the
        QueryError that says why; the cursor is closed after."""
        cur = self._cursor()
        fired = threading.Event()

        def stop():
            fired.set()
            cur.interrupt()

        timer = threading.Timer(timeout, stop)
        timer.daemon = True
        timer.start()
        try:
            yield cur.execute(query, params) if params else cur.execute(query)
        except duckdb.Error as exc:
            raise self._engine_error(exc, fired, timeout) from None
        except MemoryError:
            raise TooBig(out_of_memory_message(self.memory_label)) from None
        finally:
            timer.cancel()
            cur.close()

    def _write(self, query, fmt, path, timeout, max_bytes, params, export) -> dict:
        start = time.perf_counter()
        deadline = time.monotonic() + timeout
        try:
            with self._executed(query, params, timeout) as rel:
                columns, types = _described(rel)
                reader = rel.to_arrow_reader(FETCH_ROWS)
                with open(path, "wb") as f:
                    writer = export.StreamWriter(fmt, f, reader.schema)
                    for batch in reader:
                        writer.write(batch)
                        if writer.bytes > max_bytes:
                            raise TooBig(download_too_big_message(max_bytes, writer.rows))
                        if time.monotonic() > deadline:
                            raise TimedOut(timed_out_message(timeout))
                    writer.close()
                    if writer.bytes > max_bytes:
                        raise TooBig(download_too_big_message(max_bytes, writer.rows))
        except OSError:
            # Arrow reports an allocation refused under the worker's memory limit as an
            # OSError from the batch reader (seen with duckdb 1.5.5); a temporary file that
            # cannot grow is the same story: the result is too big to download here
            raise TooBig(download_too_big_message(max_bytes, None)) from None
        return {
            "columns": columns,
            "types": types,
            "row_count": writer.rows,
            "bytes": writer.bytes,
            "format": fmt,
            "truncated": False,
            "elapsed_ms": round((time.perf_counter() - start) * 1000, 1),
            "snapshot_at": self.snapshot_at,
        }

    def _engine_error(self, exc: duckdb.Error, fired: threading.Event, timeout: float):
        """The QueryError of a DuckDB error; `fired`: the query's timeout interrupted it."""
        if isinstance(exc, duckdb.InterruptException):
            return TimedOut(timed_out_message(timeout))
        if isinstance(exc, duckdb.OutOfMemoryException):
            return TooBig(out_of_memory_message(self.memory_label))
        if fired.is_set():
            return TimedOut(timed_out_message(timeout))
        if "Out of Memory Error" in str(exc):  # also raised as other kinds (ArrowBuffer)
            return TooBig(out_of_memory_message(self.memory_label))
        if isinstance(exc, duckdb.PermissionException):
            return Refused(
                "The console has no access to files, the network or extensions: "
                + self.scrub_message(_clean(exc))
            )
        return BadSQL(self.scrub_message(_clean(exc)))

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
        """The result as the bytes to send (see export.encode), refused over `max_bytes`."""
        from .. import export

        result = self.run(sql, limit=limit, timeout=timeout, max_bytes=max_bytes, params=params)
        try:
            body = export.encode(result, fmt, limit=limit)
        except MemoryError:
            raise TooBig(too_big_message(max_bytes)) from None
        if len(body) > max_bytes:
            raise TooBig(too_big_message(max_bytes, len(body)))
        return Payload({**result.describe(), "format": fmt, "limit": limit}, body)

    def _run(
        self, query: str, limit: int, timeout: float, max_bytes: int, params: dict | None = None
    ) -> Result:
        start = time.perf_counter()
        with self._executed(query, params, timeout) as rel:
            columns, types = _described(rel)
            batches, rows, size = [], 0, 0
            reader = rel.to_arrow_reader(FETCH_ROWS)
            schema = reader.schema
            for batch in reader:
                batches.append(batch)
                rows += batch.num_rows
                size += batch.nbytes
                if size > max_bytes:
                    raise TooBig(too_big_message(max_bytes, size, partial=True))
                if rows > limit:
                    break
            table = pa.Table.from_batches(batches, schema=schema)
        truncated = table.num_rows > limit
        if truncated:
            table = table.slice(0, limit)
        elapsed = (time.perf_counter() - start) * 1000
        return Result(table, columns, types, truncated, elapsed, self.snapshot_at)

    def scrub_message(self, message: str) -> str:
        return scrub(scrub_hidden(message, self.hidden), self.path)

    def close(self) -> None:
        """Close now if idle, else as soon as the last running query ends."""
        with self._lock:
            self._closing = True
            idle = self._active == 0
        if idle:
            self._con.close()


def _described(rel) -> tuple[list[str], list[str]]:
    """A query's result columns: (their names, their DuckDB types)."""
    return [d[0] for d in rel.description or []], [str(d[1]) for d in rel.description or []]


# DuckDB appends a Python UDF's traceback ("\n\nAt:\n  /path/file.py(55): fn ...") to its
# error: the server's install paths and code, for no analyst's use
_UDF_TRACE = re.compile(r"\s*\n\s*At:\n.*", re.DOTALL)
_UDF_PREFIX = "Python exception occurred while executing the UDF: "
_PY_PATH = re.compile(r"(?:/[\w.+-]+)+/[\w.+-]+\.py\b(?:\(\d+\))?")


def scrub_hidden(message: str, hidden: list[str]) -> str:
    """`message` with each of `hidden` (the lake's catalog string, its data path) as
    "<lake>", where it stands as a word of its own: a catalog named `lake` must not turn the
    table `ducklake_snapshot` of a "permission denied" into `duck<lake>_snapshot`."""
    for text in sorted((t.rstrip("/") for t in hidden if t.rstrip("/")), key=len, reverse=True):
        message = re.sub(rf"(?<![\w]){re.escape(text)}(?![\w])", "<lake>", message)
    return message


def scrub(message: str, path) -> str:
    """An error message that does not name the snapshot's path (or its directory) on the server,
    nor carry a Python traceback or a source file's path (a UDF's error)."""
    message = _UDF_TRACE.sub("", message).replace(_UDF_PREFIX, "")
    message = _PY_PATH.sub("<server code>", message)
    path = str(path or "")
    if path and path != ":memory:":
        message = message.replace(path, ALIAS)
        parent = path.rsplit("/", 1)[0]
        if parent:
            message = message.replace(parent, "<snapshots>")
    return message


def timed_out_message(timeout: float) -> str:
    return f"The query ran longer than the {timeout:g} s limit and was stopped."


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):,.0f} MB" if n >= 1024 * 1024 else f"{n:,} bytes"


def too_big_message(max_bytes: int, size: int | None = None, partial: bool = False) -> str:
    got = ""
    if size is not None:
        got = f" (more than {_mb(size)})" if partial else f" ({_mb(size)})"
    return (
        f"The result is too big for the console{got}: it sends at most {_mb(max_bytes)}. "
        f"Select fewer rows or columns, or aggregate."
    )


def download_too_big_message(max_bytes: int, rows: int | None) -> str:
    passed = f"; passed after {rows:,} rows" if rows is not None else ""
    return (
        f"The whole result is larger than the download limit of {_mb(max_bytes)} "
        f"(BALANCE_SQL_DOWNLOAD_MAX_BYTES{passed}), so nothing was sent: a "
        f"download is never cut. Select fewer rows or columns, or take the public dataset with "
        f"`balance export --out DIR` (every verified game and turn, by week)."
    )


def out_of_memory_message(limit: str) -> str:
    return (
        f"The query was too big and was stopped: it needed more than the console's memory "
        f"limit ({limit}). Select fewer rows or columns, or aggregate."
    )
