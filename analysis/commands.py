"""`balance jobs run [--db PATH] [--full]`: bring the agg_* balance tables of a store up to date."""

from __future__ import annotations

import argparse
import json
import os
import sys

DEFAULT_DB = "balance.duckdb"


def register(subparsers) -> None:
    jobs = subparsers.add_parser("jobs", help="balance analytics jobs (agg_* tables)")
    sub = jobs.add_subparsers(dest="jobs_command", required=True, metavar="JOB")
    run = sub.add_parser(
        "run",
        help="bring every agg_* table up to date with the verified games",
        description="Count the verified games (never the quarantine) new since the last run, "
        "recompute the weeks whose games changed (reverify), add them into every agg_* table "
        "and recompute the rate tables, in one transaction (docs/agg-tables.md, How a run "
        "works). Skips when nothing changed; --full computes everything from the games. "
        "Progress goes to stderr, the summary (JSON) to stdout. Run it with the server "
        "stopped: DuckDB allows one writer per file.",
    )
    run.add_argument(
        "--db",
        default=os.environ.get("BALANCE_DB", DEFAULT_DB),
        help="store file (default: $BALANCE_DB or %(default)s)",
    )
    run.add_argument("--full", action="store_true", help="compute every table from all the games")
    run.add_argument("--force", action="store_true", help="the same as --full (older name)")
    run.add_argument(
        "--memory-limit",
        default=os.environ.get("BALANCE_JOBS_MEMORY_LIMIT", "1GB"),
        help="DuckDB's memory limit; it spills to disk past it "
        "(default: $BALANCE_JOBS_MEMORY_LIMIT or %(default)s)",
    )
    run.add_argument("--board", type=int, action="append", help="only this board (repeatable)")
    run.add_argument("--variant", action="append", help="classic | powers | hidden (repeatable)")
    run.add_argument("--mode", action="append", help="only this mode (repeatable)")
    run.add_argument("--platform", action="append", help="only this platform (repeatable)")
    run.add_argument("--client-version", action="append", help="only this client version")
    run.add_argument("--date-from", help="first day of ended_at (UTC, YYYY-MM-DD)")
    run.add_argument("--date-to", help="last day of ended_at (UTC, YYYY-MM-DD)")
    run.set_defaults(run=run_jobs)
    register_export(subparsers)


def register_export(subparsers) -> None:
    """`balance export`: the public dataset (analysis/public_dataset.py)."""
    p = subparsers.add_parser(
        "export",
        help="write the public dataset of verified games (a row a game, a row a turn, by week)",
        description="Write every verified game (a row a game with its lineups, picks, result, "
        "version and week; a row a turn; Slide's games, seats and rounds) into DIR, partitioned "
        "by week, with a README data dictionary and a manifest of row counts and checksums. "
        "Reads a stopped store (--db), a running server (--server, with $BALANCE_TOKEN) or a "
        "lake (--lake, read-only: docs/lake.md); the same games give the same data files.",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="directory to write (replaced)")
    p.add_argument("--from", dest="date_from", metavar="DATE", help="first day of ended_at (UTC)")
    p.add_argument("--to", dest="date_to", metavar="DATE", help="last day of ended_at (UTC)")
    p.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--db", help="store file, server stopped (default $BALANCE_DB)")
    where.add_argument("--server", metavar="URL", help="a running server instead")
    where.add_argument(
        "--lake",
        metavar="CATALOG",
        help="a lake instead: its catalog's PostgreSQL connection string (read-only access "
        "is enough; $BALANCE_LAKE is not read here)",
    )
    p.add_argument(
        "--data-path",
        metavar="DIR",
        help="with --lake: the lake's data path (optional: the lake knows it; checked if given)",
    )
    p.set_defaults(run=_run_export)


def _run_export(args: argparse.Namespace) -> int:
    from .public_dataset import run_export

    return run_export(args)


def run_jobs(args: argparse.Namespace) -> int:
    import duckdb

    from .cuts import Cut
    from .jobs import run
    from .sql import sql_literal

    if not os.path.exists(args.db):
        print(f"balance jobs run: no store at {args.db}", file=sys.stderr)
        return 2
    cut = Cut(
        board=args.board,
        variant=args.variant,
        mode=args.mode,
        platform=args.platform,
        client_version=args.client_version,
        date_from=args.date_from,
        date_to=args.date_to,
    )
    try:
        con = duckdb.connect(args.db)
    except duckdb.IOException as exc:
        print(f"balance jobs run: cannot open {args.db}: {exc}", file=sys.stderr)
        return 2
    try:
        # a bounded run: DuckDB spills past the limit, and does not keep rows in order where
        # nothing needs them (its advice for memory-bound queries)
        con.execute(f"SET memory_limit = {sql_literal(args.memory_limit)}")
        con.execute("SET preserve_insertion_order = false")
        summary = run(
            con,
            lambda fn: fn(con),
            cut=cut,
            full=args.full or args.force,
            progress=lambda line: print(f"balance jobs run: {line}", file=sys.stderr, flush=True),
        )
    finally:
        con.close()
    print(json.dumps(summary, indent=1, sort_keys=True, default=str))
    return 0
