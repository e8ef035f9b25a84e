"""`balance lake init | upgrade | import | maintain | check`: operating a lake (docs/lake.md).

`balance serve --lake CATALOG` (ingest/cli/commands.py) runs a server on it. CATALOG is the
catalog's PostgreSQL connection string ('host=db port=5432 dbname=lake user=balance' or
'postgresql://balance@db/lake'); $BALANCE_LAKE when not given. Standard library only at
module level (see ingest/cli/__init__.py).
"""

from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser(
        "lake", help="a lake of several servers: init, upgrade, import, maintain, check"
    )
    lake = p.add_subparsers(dest="lake_command", required=True, metavar="ACTION")

    q = lake.add_parser("init", help="create the store's tables in a lake (idempotent)")
    _catalog(q)
    q.add_argument("--data-path", required=True, help="directory (or URL) of the Parquet files")
    q.add_argument(
        "--inline-rows",
        type=int,
        default=None,
        help="inserts of fewer rows than this go into the catalog, not a Parquet file "
        "(DuckLake's data_inlining_row_limit; default DuckLake's, 10)",
    )
    q.set_defaults(run=run_init)

    q = lake.add_parser(
        "upgrade",
        help="bring a lake made by an earlier version to this one (servers stopped; idempotent)",
    )
    _catalog(q)
    q.set_defaults(run=run_upgrade)

    q = lake.add_parser("import", help="move a store file's games into the lake (counts checked)")
    _catalog(q)
    q.add_argument("--db", required=True, help="the DuckDB store file (its server stopped)")
    q.add_argument("--chunk", type=int, default=50_000, help="games to a lake commit")
    q.set_defaults(run=run_import)

    q = lake.add_parser("maintain", help="compact, expire snapshots, delete old files")
    _catalog(q)
    q.add_argument(
        "--older-than",
        default="1 hour",
        help="files (orphaned, or scheduled for deletion) younger than this are kept; "
        "at least 1 hour (default)",
    )
    q.add_argument(
        "--expire-older-than", default="1 day", help="snapshots older than this are expired"
    )
    q.set_defaults(run=run_maintain)

    q = lake.add_parser("check", help="each game_id stored once, claims and lake in step")
    _catalog(q)
    q.add_argument(
        "--full",
        action="store_true",
        help="check every game and claim (default: what came since the last clean check)",
    )
    q.set_defaults(run=run_check)


def serve_arguments(p) -> None:
    """`balance serve`'s lake options."""
    p.add_argument(
        "--lake",
        metavar="CATALOG",
        default=None,
        help="store in the lake of this catalog (a PostgreSQL connection string) instead of "
        "--db; several servers may share one lake (docs/lake.md; default $BALANCE_LAKE)",
    )
    p.add_argument(
        "--data-path",
        default=None,
        help="with --lake: the lake's data path (optional: the lake knows it; checked if given)",
    )
    p.add_argument(
        "--work-dir",
        default=None,
        help="with --lake: this server's own local directory (dashboard snapshots); "
        "default a temporary one",
    )


def serve_lake(args, catalog: str) -> int:
    """`balance serve --lake`: the same server, its store on the lake. The analysis schedule
    is off unless BALANCE_JOBS_INTERVAL is set (one jobs runner for the lake, not one per
    server); --demo has been loaded into the lake already (commands.run_serve)."""
    from ..server.config import given
    from ..server.serve import configure_logging, port_in_use, run
    from ..storage.lake import LakeError, LakeUnavailable, connect

    if port_in_use(args.host, args.port):
        print(f"balance serve: {args.host}:{args.port} is in use: pick another --port",
              file=sys.stderr)  # fmt: skip
        return 2
    try:  # fail here, plainly, rather than in the worker
        connect(catalog, args.data_path).close()
    except (LakeError, LakeUnavailable) as exc:
        print(f"balance serve: {exc}", file=sys.stderr)
        return 2
    configure_logging(access_log=not args.quiet)
    settings = {
        "BALANCE_LAKE": catalog,
        "BALANCE_LAKE_DATA": args.data_path or "",
        "BALANCE_LAKE_WORKDIR": args.work_dir or "",
        "BALANCE_HOST": args.host,
        "BALANCE_ACCESS_LOG": "0" if args.quiet else "1",
    }
    if given("JOBS_INTERVAL") is None:
        settings["BALANCE_JOBS_INTERVAL"] = "0"
    return run(settings, args.host, args.port, threads=args.threads)


def _catalog(p) -> None:
    p.add_argument(
        "--lake",
        metavar="CATALOG",
        default=None,
        help="the catalog's PostgreSQL connection string (default $BALANCE_LAKE)",
    )


def _needs_catalog(args) -> str:
    """The lake: --lake, else $BALANCE_LAKE (storage/where.py); exit 2 with neither. (--db of
    `lake import` is the file it reads, not a choice of store.)"""
    from ..storage.where import WhereError, resolve

    try:
        where = resolve("lake", lake=args.lake)
    except WhereError as exc:
        print(f"balance lake: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    return str(where.lake)


def _fails(exc: Exception) -> int:
    print(f"balance lake: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 1


def run_init(args) -> int:
    from ..storage.lake.admin import init_lake

    try:
        out = init_lake(_needs_catalog(args), args.data_path, args.inline_rows)
    except Exception as exc:
        return _fails(exc)
    print(f"lake ready: data path {out['data_path']}, tables {', '.join(out['tables'])}")
    return 0


def run_upgrade(args) -> int:
    from ..storage.lake.admin import upgrade_lake

    try:
        out = upgrade_lake(_needs_catalog(args))
    except Exception as exc:
        return _fails(exc)
    if out["steps"]:
        print(f"lake upgraded from schema version {out['from'] or 1} to {out['to']} "
              f"(DuckLake catalog {out['ducklake']})")  # fmt: skip
    else:
        print(f"lake at schema version {out['to']} already (DuckLake catalog {out['ducklake']})")
    return 0


def run_import(args) -> int:
    from ..storage.lake.admin import import_store

    try:
        out = import_store(_needs_catalog(args), args.db, chunk=args.chunk)
    except Exception as exc:
        return _fails(exc)
    print(
        f"imported {out['imported']} games; {out['already']} were in the lake already, "
        f"{out['conflicts']} conflict (the lake's kept)"
    )
    for table, counts in out["tables"].items():
        print(f"  {table}: file {counts['file']}, lake {counts['lake']}")
    return 0


def run_maintain(args) -> int:
    from ..storage.lake.admin import maintain

    try:
        out = maintain(
            _needs_catalog(args),
            older_than=args.older_than,
            expire_older_than=args.expire_older_than,
        )
    except Exception as exc:
        return _fails(exc)
    print(json.dumps(out))
    return 0


def run_check(args) -> int:
    from ..storage.lake.admin import check, check_since

    try:
        out = (check if args.full else check_since)(_needs_catalog(args))
    except Exception as exc:
        return _fails(exc)
    print(json.dumps(out))
    return 0 if out["ok"] else 1
