"""`balance jobs run [--db PATH | --lake CATALOG] [--full] [--every SECONDS]`: bring the agg_*
balance tables of a store up to date: a stopped store file, or a lake (docs/lake.md) while its
servers run, once or on a schedule (the lake's jobs runner, which also owns its maintenance).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import settings

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
        "Progress goes to stderr, the summary (JSON) to stdout. On a store file, run it with "
        "the server stopped (DuckDB allows one writer per file); on a lake, beside its "
        "servers: the tables go into the lake, where every server's dashboard reads them. "
        "Run one jobs runner per lake.",
    )
    # one of --db / --lake (two are refused in one line: ingest/storage/where.py)
    run.add_argument(
        "--db", help=f"store file (default: $BALANCE_DB or {DEFAULT_DB}, unless $BALANCE_LAKE)"
    )
    run.add_argument(
        "--lake",
        metavar="CATALOG",
        help="a lake's catalog, a PostgreSQL connection string (default: $BALANCE_LAKE)",
    )
    run.add_argument(
        "--every",
        type=float,
        default=0,
        metavar="SECONDS",
        help="run again every SECONDS until stopped (a failed run is logged, the next goes on)",
    )
    run.add_argument(
        "--maintain-every",
        type=float,
        default=0,
        metavar="SECONDS",
        help="with --lake and --every: also run `balance lake maintain` (its safe defaults) "
        "every SECONDS (e.g. 3600)",
    )
    run.add_argument("--full", action="store_true", help="compute every table from all the games")
    run.add_argument("--force", action="store_true", help="the same as --full (older name)")
    run.add_argument(
        "--memory-limit",
        default=settings.value("JOBS_MEMORY_LIMIT"),
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
    register_report(subparsers)


def register_report(subparsers) -> None:
    """`balance report`: the findings as one HTML file (analysis/report.py)."""
    p = subparsers.add_parser(
        "report",
        help="write the findings (what the balance tables flag) as a self-contained HTML file",
        description="Every row the balance tables flag (5% false discovery rate within each "
        "family), strongest evidence first, with its size, interval, n, test and q-value, a "
        "link to its dashboard chart and its SQL: the rows of the dashboard's Findings page. "
        "Reads a stopped store (--db, read-only) or a running server (--server, through its "
        "SQL console, with $BALANCE_TOKEN). Prints where it wrote the file.",
    )
    p.add_argument("--db", help="store file, server stopped (default $BALANCE_DB)")
    p.add_argument("--server", metavar="URL", help="a running server instead")
    p.add_argument("--out", default="report.html", help="file to write (default %(default)s)")
    p.add_argument(
        "--link-base",
        metavar="URL",
        help="the dashboard the report's links open (default: --server, else $BALANCE_URL "
        "or http://127.0.0.1:8000)",
    )
    p.set_defaults(run=_run_report)


def _run_report(args: argparse.Namespace) -> int:
    from .report import run

    return run(args)


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
    p.add_argument("--db", help="store file, server stopped (default $BALANCE_DB)")
    p.add_argument("--server", metavar="URL", help="a running server instead")
    p.add_argument(
        "--lake",
        metavar="CATALOG",
        help="a lake instead: its catalog's PostgreSQL connection string (read-only access "
        "is enough; default $BALANCE_LAKE)",
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


def _cut(args: argparse.Namespace):
    from .cuts import Cut

    return Cut(
        board=args.board,
        variant=args.variant,
        mode=args.mode,
        platform=args.platform,
        client_version=args.client_version,
        date_from=args.date_from,
        date_to=args.date_to,
    )


def _say(line: str) -> None:
    print(f"balance jobs run: {line}", file=sys.stderr, flush=True)


def _target(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """(store file, lake catalog) by ingest/storage/where.py's precedence; WhereError when the
    arguments are mistaken."""
    from ingest.storage.where import of_args

    chosen = of_args("jobs run", args)
    return chosen.db, chosen.lake


def _connect(db: str | None, catalog: str | None):
    import duckdb

    if catalog:
        from ingest.storage.lake import connect

        return connect(catalog, claims=False)
    assert db is not None
    if not os.path.exists(db):
        raise OSError(f"no store at {db}")
    try:
        return duckdb.connect(db)
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise OSError(
                f"{db} is open in another process (a running `balance serve`? it runs the jobs "
                "itself every BALANCE_JOBS_INTERVAL seconds): stop it first"
            ) from exc
        raise OSError(f"cannot open {db}: {exc}") from exc


def run_once(args: argparse.Namespace, db: str | None, catalog: str | None) -> dict:
    from .jobs import run
    from .sql import sql_literal

    if catalog:  # every game acknowledged before the run is in the snapshot it reads
        _wait_loaded(catalog)
    con = _connect(db, catalog)
    try:
        # a bounded run: DuckDB spills past the limit, and does not keep rows in order where
        # nothing needs them (its advice for memory-bound queries)
        con.execute(f"SET memory_limit = {sql_literal(args.memory_limit)}")
        con.execute("SET preserve_insertion_order = false")
        return run(
            con, lambda fn: fn(con), cut=_cut(args), full=args.full or args.force, progress=_say
        )
    finally:
        con.close()


def _wait_loaded(catalog: str, timeout: float = 120.0) -> None:
    """Until the lake's loader has moved every game staged so far into the lake (a run then
    counts every game acknowledged before it began); past `timeout` the run goes on with the
    lake as it is (the next run counts the rest: late games only change weeks)."""
    from ingest.storage.lake import conninfo
    from ingest.storage.lake.staging import wait_loaded

    try:
        if not wait_loaded(conninfo(catalog), timeout):
            _say(f"the lake's loader is more than {timeout:.0f} s behind: this run counts "
                 "the games loaded so far")  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - the catalog's failure shows in the run itself
        _say(f"could not ask the loader: {type(exc).__name__}")


def run_jobs(args: argparse.Namespace) -> int:
    from ingest.storage.where import WhereError

    try:
        db, catalog = _target(args)
    except WhereError as exc:
        print(f"balance jobs run: {exc}", file=sys.stderr)
        return 2
    if not args.every:
        from ingest.storage.lake import LakeError, LakeUnavailable

        try:
            summary = run_once(args, db, catalog)
        except (OSError, LakeError, LakeUnavailable) as exc:
            print(f"balance jobs run: {exc}", file=sys.stderr)
            return 2
        print(json.dumps(summary, indent=1, sort_keys=True, default=str))
        return 0
    if args.maintain_every and not catalog:
        print("balance jobs run: --maintain-every needs --lake", file=sys.stderr)
        return 2
    return _loop(args, db, catalog)


def _loop(args: argparse.Namespace, db: str | None, catalog: str | None) -> int:
    """Run every `--every` seconds until stopped (SIGINT/SIGTERM), the lake's maintenance
    every `--maintain-every`; one summary line (JSON) a run on stdout."""
    import signal
    import threading
    import time

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    maintained = time.monotonic()
    loader = None
    if catalog:  # the lake's loader may be this process (docs/lake.md, "Staging")
        from ingest.storage.lake import conninfo, make_loader
        from ingest.storage.lake.token import CommitToken

        loader = make_loader(catalog, token=CommitToken(conninfo(catalog))).start()
    while not stop.is_set():
        try:
            summary = run_once(args, db, catalog)
            print(json.dumps(summary, sort_keys=True, default=str), flush=True)
        except Exception as exc:  # a failed run must not stop the next one
            _say(f"run failed: {type(exc).__name__}: {exc}")
        if catalog and args.maintain_every and time.monotonic() - maintained >= args.maintain_every:
            maintained = time.monotonic()
            try:
                from ingest.storage.lake.admin import maintain

                maintain(catalog, echo=_say)
            except Exception as exc:
                _say(f"maintenance failed: {type(exc).__name__}: {exc}")
        stop.wait(args.every)
    if loader is not None:
        loader.stop(drain=True)
    _say("stopped")
    return 0
