"""`balance serve`, `balance load-demo` and `balance reverify`."""

from __future__ import annotations

import argparse
import os
import sys
import urllib.error
import urllib.request

import orjson

from . import config as settings


def register(sub) -> None:
    p = sub.add_parser("serve", help="run the upload service (granian) on the DuckDB store")
    p.add_argument("--db", help="DuckDB file (default $BALANCE_DB or balance.duckdb)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument(
        "--threads", type=int, default=8, help="Python threads answering requests (default 8)"
    )
    p.add_argument(
        "--demo",
        type=int,
        default=0,
        metavar="N",
        help="first load N simulated Slow6 games (and N/2 Slide games)",
    )
    p.add_argument("--demo-level", type=int, default=2, help="bot strength for --demo (1..4)")
    p.add_argument("--quiet", action="store_true", help="no access log lines")
    p.set_defaults(run=run_serve)

    p = sub.add_parser("load-demo", help="load simulated games into a store (server stopped)")
    p.add_argument("--db", help="DuckDB file (default $BALANCE_DB or balance.duckdb)")
    p.add_argument("-n", "--games", type=int, default=1000, help="Slow6 games (default 1000)")
    p.add_argument("--slide", type=int, default=None, help="Slide games (default games/2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--level", type=int, default=2, help="bot strength, 1..4 (4 is slow)")
    p.set_defaults(run=run_load_demo)

    p = sub.add_parser("reverify", help="re-run the verifier over every stored record")
    p.add_argument("--db", help="DuckDB file, server stopped (default $BALANCE_DB)")
    p.add_argument(
        "--server", metavar="URL", help="ask a running server instead (needs $BALANCE_TOKEN)"
    )
    p.add_argument(
        "--rebuild", action="store_true", help="also rebuild the rows of games that stay verified"
    )
    p.set_defaults(run=run_reverify)


def _db(args) -> str:
    return args.db or os.environ.get("BALANCE_DB") or settings.SETTINGS["BALANCE_DB"][0]


def run_serve(args) -> int:
    from .serve import configure_logging, run

    db = _db(args)
    problem = _cannot_serve(db, args.host, args.port)
    if problem:
        print(f"balance serve: {problem}", file=sys.stderr)
        return 2
    configure_logging(access_log=not args.quiet)
    if args.demo:  # before the server opens the file (one process at a time may)
        from .storage import Store

        with Store(db) as store:
            _load_demo(store, args.demo, args.demo // 2, 0, args.demo_level)
    settings = {"BALANCE_DB": db, "BALANCE_HOST": args.host}
    settings["BALANCE_ACCESS_LOG"] = "0" if args.quiet else "1"
    return run(settings, args.host, args.port, threads=args.threads)


def _cannot_serve(db: str, host: str, port: int) -> str | None:
    """Why a server could not start (checked before its worker would fail on it), or None."""
    import duckdb

    from .serve import port_in_use

    if port_in_use(host, port):
        return f"{host}:{port} is in use (another balance serve?): pick another --port"
    try:
        duckdb.connect(db).close()
    except duckdb.IOException as exc:
        if "lock" not in str(exc).lower():
            raise
        return f"{db} is open in another process (a running balance serve?): stop it first"
    return None


def run_load_demo(args) -> int:
    from .storage import Store

    slide = args.games // 2 if args.slide is None else args.slide
    try:
        store = Store(_db(args))
    except Exception as exc:
        return _locked(exc)
    with store:
        _load_demo(store, args.games, slide, args.seed, args.level)
    return 0


def _load_demo(store, slow6: int, slide: int, seed: int, level: int) -> None:
    from . import jobs
    from .demo import load_records, simulated_records

    print(
        f"loading {slow6} simulated Slow6 and {slide} Slide games (bots level <= {level})",
        flush=True,
    )
    load_records(
        store,
        simulated_records(slow6, slide, seed, level),
        echo=lambda line: print(line, flush=True),
    )
    summary = jobs.run_once(store)
    if summary is None:
        print("analysis jobs: not installed, skipped")
    else:
        print(f"analysis jobs: {jobs._short(summary)}")


def run_reverify(args) -> int:
    if args.server:
        return _reverify_remote(args)
    from .reverify import reverify
    from .storage import Store, open_db

    try:
        Store(_db(args)).close()  # first store the games a crash left in the upload journal
        con = open_db(_db(args))
    except Exception as exc:
        return _locked(exc)
    try:
        con.execute("BEGIN TRANSACTION")
        summary = reverify(con, rebuild=args.rebuild, echo=print)
        con.execute("COMMIT")
        con.execute("CHECKPOINT")
    finally:
        con.close()
    _print_summary(summary)
    return 0


def _reverify_remote(args) -> int:
    token = os.environ.get("BALANCE_TOKEN", "")
    url = args.server.rstrip("/") + "/v1/admin/reverify" + ("?rebuild=1" if args.rebuild else "")
    req = urllib.request.Request(
        url, method="POST", data=b"", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(req, timeout=3600) as resp:
            summary = orjson.loads(resp.read())
    except urllib.error.HTTPError as exc:
        print(
            f"reverify refused: {exc.code} {exc.read().decode(errors='replace')}", file=sys.stderr
        )
        return 1
    except urllib.error.URLError as exc:
        print(f"cannot reach {args.server}: {exc.reason}", file=sys.stderr)
        return 1
    for c in summary["changes"]:
        line = f"{c['game_id']} {c['from']} -> {c['to']}"
        if c["to"] == "quarantined":
            line += f" {c['rule']} turn {c['turn']}: {c['message']}"
        print(line)
    _print_summary(summary)
    return 0


def _print_summary(summary: dict) -> None:
    counts = ", ".join(f"{k} {v}" for k, v in sorted(summary["counts"].items())) or "nothing"
    print(f"checked {summary['checked']} records: {counts}")


def _locked(exc: Exception) -> int:
    msg = str(exc)
    if "lock" in msg.lower():
        print(
            "the store is open in another process (a running `balance serve`?): stop it, "
            "or use `balance reverify --server URL`",
            file=sys.stderr,
        )
    else:
        print(f"cannot open the store: {msg}", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
