"""`balance sql "SELECT ..."`: the SQL console from a terminal.

Asks the server (--server URL, else $BALANCE_URL, else http://127.0.0.1:8000) through POST
/sql/api, sending $BALANCE_TOKEN as a bearer token when set; or, with --db PATH, opens that
store file read-only itself (it must not be open by a running server) under the same locked
engine as the console;
or, with --lake CATALOG, reads the lake read-only at its latest snapshot (servers may be
writing it meanwhile).
Prints a table, or CSV with --csv. `:name` in the query is a parameter: give its value with
`--param name=value` (bound by DuckDB, never written into the text). `--saved SLUG` runs a
saved query of the server (its parameters with --param, the rest take their defaults).
Exit 0 on success, 1 when the query is refused or fails (the reason on stderr), 2 when the
server cannot be reached or answers something unexpected. Output that stops being read
(`balance sql ... | head`) ends the command quietly.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (the storage package is imported when a query runs, not for --help)
    from ingest.storage.where import Where

# where.DEFAULT_URL (tests/ingest/storage/test_where.py holds them equal)
DEFAULT_URL = "http://127.0.0.1:8000"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sql",
        help="run a read-only SQL query on the store (via the server, or a file with --db)",
        description=__doc__,
    )
    p.add_argument(
        "query", nargs="?", help="one SELECT statement; '-' reads it from standard input"
    )
    p.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="the value of the parameter :NAME (repeatable)",
    )
    p.add_argument("--saved", metavar="SLUG", help="run this saved query of the server")
    p.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    p.add_argument("--db", metavar="PATH", help="open this DuckDB store file read-only instead")
    p.add_argument(
        "--lake",
        metavar="CATALOG",
        help="or read this lake (its PostgreSQL catalog) read-only, at its latest snapshot",
    )
    p.add_argument(
        "--server",
        "--url",
        dest="server",
        metavar="URL",
        default=None,
        help=f"the server (default $BALANCE_URL or {DEFAULT_URL})",
    )
    p.add_argument("--limit", type=int, default=None, help="at most this many rows")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds (with --db; default 5)")
    p.set_defaults(run=run)


def _fail(message: str, code: int = 1) -> int:
    from analysis.csvsafe import terminal

    # an error may quote a stored value (a failed cast): no escape sequence runs
    print(f"balance sql: {terminal(message)}", file=sys.stderr)
    return code


def _params(args) -> dict | int:
    out = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            return _fail(f"--param takes NAME=VALUE, not {item!r}")
        out[name.strip().lstrip(":$")] = value
    return out


def _via_server(
    sql: str, where: Where, args, params: dict
) -> tuple[list[str], list[list], bool] | int:
    body: dict = {"saved": args.saved} if args.saved else {"sql": sql}
    if params:
        body["params"] = params
    if args.limit is not None:
        body["limit"] = args.limit
    from ingest.storage.remote import Api, RemoteError

    assert where.server is not None
    try:
        answer = Api(where.server, timeout=args.timeout + 30).request(
            "POST", "/sql/api", json_body=body
        )
        if not answer.ok:
            return _fail(*answer.refusal())
        got = answer.json()
    except RemoteError as exc:
        return _fail(str(exc), exc.code)
    return got["columns"], got["rows"], bool(got.get("truncated"))


def _via_file(
    sql: str, where: Where, args, params: dict
) -> tuple[list[str], list[list], bool] | int:
    """The query on a store file (--db) or a lake (--lake), opened read-only here under the
    console's locked engine."""
    from . import export
    from .console.sqlparams import prepare
    from .console.sqlsafe import DEFAULT_LIMIT, QueryError

    if args.saved:
        return _fail("--saved asks a server (its saved queries); leave out --db / --lake", 2)
    sql = prepare(sql)[0]
    engine = _engine(where)
    if isinstance(engine, int):
        return engine
    try:
        result = engine.run(
            sql, limit=args.limit or DEFAULT_LIMIT, timeout=args.timeout, params=params or None
        )
    except QueryError as exc:
        return _fail(f"{exc.kind}: {exc.message}")
    finally:
        engine.close()
    return result.columns, export.rows(result.table), result.truncated


def _engine(where: Where):
    """The locked engine on the store file or the lake; an exit code when it cannot be
    opened."""
    from .console.sqlfuncs import register
    from .console.sqlsafe import Engine, lake_attach

    # `setup=register`: the same trusted `raw_json(record, codec)` as the server's console, so a
    # query saved there runs here too (docs/dashboard.md promises it)
    if where.lake:
        from ingest.storage.lake import LakeError, LakeUnavailable

        try:
            _loaded(where.lake)
            return Engine("lake", threads=2, attach=lake_attach(where.lake), setup=register)
        except (LakeError, LakeUnavailable) as exc:
            return _fail(str(exc), 2)
        except Exception as exc:  # the catalog unreachable, ...
            return _fail(f"cannot open the lake read-only: {exc}", 2)
    db = str(where.db)
    if not os.path.isfile(db):
        return _fail(f"no such database file: {db}", 2)
    try:
        return Engine(db, threads=2, setup=register)
    except Exception as exc:  # locked by a running server, not a DuckDB file, ...
        return _fail(f"cannot open {db} read-only: {exc}", 2)


def _text(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def print_table(columns: list[str], rows: list[list], out=None) -> None:
    from analysis import csvsafe

    out = sys.stdout if out is None else out  # the stream at call time (a test redirects it)
    # what uploads put in the store reaches the analyst's terminal: no escape sequence runs
    columns = [csvsafe.terminal(c) for c in columns]
    cells = [[csvsafe.terminal(_text(v)) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=False)).rstrip() + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for r in cells:
        out.write("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=False)).rstrip() + "\n")


def print_csv(columns: list[str], rows: list[list], out=None) -> None:
    import polars as pl

    from analysis import csvsafe

    out = sys.stdout if out is None else out

    data = {c: [_text(r[i]) if isinstance(r[i], (list, dict)) else r[i] for r in rows]
            for i, c in enumerate(columns)}  # fmt: skip
    frame = pl.DataFrame(data, strict=False) if rows else pl.DataFrame({c: [] for c in columns})
    text = csvsafe.write_csv(frame) or ""
    if out.isatty():  # for a person: no escape sequence runs (a pipe gets the data as stored)
        text = csvsafe.terminal(text, keep_lines=True)
    out.write(text)


def run(args) -> int:
    if args.query is None and not args.saved:
        return _fail("give a query (or - to read it from standard input), or --saved SLUG", 2)
    sql = sys.stdin.read() if args.query == "-" else (args.query or "")
    params = _params(args)
    if isinstance(params, int):
        return params
    from ingest.storage.where import WhereError, of_args

    try:
        where = of_args("sql", args)
    except WhereError as exc:
        return _fail(str(exc), 2)
    via = _via_server if where.server else _via_file
    got = via(sql, where, args, params)
    if isinstance(got, int):
        return got
    columns, rows, truncated = got
    try:
        (print_csv if args.csv else print_table)(columns, rows)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader left (`| head`): nothing more to say, and nothing for Python to flush
        # into the closed pipe at exit either
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0
    if truncated:
        print(f"balance sql: truncated at {len(rows)} rows", file=sys.stderr)
    return 0


def _loaded(catalog: str, timeout: float = 10.0) -> None:
    """Give the lake's loader a moment to commit what is staged (docs/lake.md, "Staging"):
    the query then sees every game acknowledged before it; past `timeout` it reads the lake
    as it is, and says so."""
    from ingest.storage.lake import conninfo
    from ingest.storage.lake.staging import wait_loaded

    try:
        if wait_loaded(conninfo(catalog), timeout):
            return
    except Exception:  # noqa: BLE001 - opening the lake says what is wrong
        return
    print(
        f"balance sql: the lake's loader is more than {timeout:.0f} s behind: the newest "
        "games are not in this result",
        file=sys.stderr,
    )
