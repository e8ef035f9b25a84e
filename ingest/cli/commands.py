"""`balance serve`, `balance load-demo` and `balance reverify`."""

from __future__ import annotations

import argparse
import os
import sys

from . import lab_commands, lake_commands, rules_commands

DEMO_SET = -1  # `--demo` without N: the shipped dataset


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
        nargs="?",
        const=DEMO_SET,
        default=0,
        metavar="N",
        help="first load the shipped demo dataset (20,400 Slow6 and 5,200 Slide simulated "
        "games, ~30 s); with N, play N fresh Slow6 games (and N/2 Slide games) instead",
    )
    p.add_argument("--demo-level", type=int, default=2, help="bot strength for --demo (1..4)")
    p.add_argument("--quiet", action="store_true", help="no access log lines")
    lake_commands.serve_arguments(p)
    p.set_defaults(run=run_serve)

    p = sub.add_parser(
        "load-demo",
        help="load simulated games into a store (a file: server stopped) or a lake (servers "
        "may run)",
    )
    p.add_argument("--db", help="DuckDB file (default $BALANCE_DB or balance.duckdb)")
    p.add_argument(
        "--lake",
        metavar="CATALOG",
        default=None,
        help="load into this lake instead (docs/lake.md; default $BALANCE_LAKE)",
    )
    p.add_argument("-n", "--games", type=int, default=1000, help="Slow6 games (default 1000)")
    p.add_argument("--slide", type=int, default=None, help="Slide games (default games/2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--level", type=int, default=2, help="bot strength, 1..4 (4 is slow)")
    p.add_argument("--set", action="store_true", help="load the shipped demo dataset instead")
    p.set_defaults(run=run_load_demo)

    p = sub.add_parser("reverify", help="re-run the verifier over every stored record")
    p.add_argument("--db", help="DuckDB file, server stopped (default $BALANCE_DB)")
    p.add_argument(
        "--lake",
        metavar="CATALOG",
        default=None,
        help="a lake instead, its servers running (one reverify at a time; default $BALANCE_LAKE)",
    )
    p.add_argument(
        "--server", metavar="URL", help="ask a running server instead (needs $BALANCE_TOKEN)"
    )
    p.add_argument(
        "--rebuild", action="store_true", help="also rebuild the rows of games that stay verified"
    )
    p.set_defaults(run=run_reverify)

    lake_commands.register(sub)
    rules_commands.register(sub)
    lab_commands.register(sub)


def where(command: str, args):
    """Where `command` acts (storage/where.py: the argument, else the environment, else the
    default), or exit code 2 after one line on stderr when the arguments are mistaken."""
    from ..storage.where import WhereError, of_args

    try:
        return of_args(command, args)
    except WhereError as exc:
        print(f"balance {command}: {exc}", file=sys.stderr)
        return 2


def run_serve(args) -> int:
    from ..server.serve import configure_logging, run

    chosen = where("serve", args)
    if isinstance(chosen, int):
        return chosen
    if chosen.lake:  # on a lake, not the file (docs/lake.md)
        catalog = chosen.lake
        if args.demo:  # into the lake first, through the upload path; servers may share it
            code = _demo_on_lake(catalog, args.data_path, lambda store: _serve_demo(store, args))
            if code:
                return code
        return lake_commands.serve_lake(args, catalog)
    db = str(chosen.db)
    problem = _cannot_serve(db, args.host, args.port)
    if problem:
        print(f"balance serve: {problem}", file=sys.stderr)
        return 2
    short = _short_of_space(db)
    if short:  # served anyway (pages, the console), but an operator must hear it at once
        print(f"balance serve: {short}", file=sys.stderr, flush=True)
    configure_logging(access_log=not args.quiet)
    if args.demo:  # before the server opens the file (one process at a time may)
        from ..storage import Store

        with Store(db) as store:
            _serve_demo(store, args)
    # BALANCE_LAKE emptied: the worker (ingest/server/app.py) would open the lake the variable names
    settings = {"BALANCE_DB": db, "BALANCE_HOST": args.host, "BALANCE_LAKE": ""}
    settings["BALANCE_ACCESS_LOG"] = "0" if args.quiet else "1"
    return run(settings, args.host, args.port, threads=args.threads)


def _short_of_space(db: str) -> str | None:
    """Why uploads will be refused from the start for want of space (BALANCE_MIN_FREE), or
    None: said on the terminal, not only in the log, since /healthz would merely turn 503."""
    from ..storage.failures import min_free, space_reason

    reserve = min_free()
    try:
        st = os.statvfs(os.path.dirname(os.path.abspath(db)))
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if reserve <= 0 or free >= reserve:
        return None
    why = space_reason(free, st.f_blocks * st.f_frsize, reserve)
    return f"uploads will be refused (503): {why}"


def _cannot_serve(db: str, host: str, port: int) -> str | None:
    """Why a server could not start (checked before its worker would fail on it), or None."""
    import duckdb

    from ..server.serve import port_in_use

    if port_in_use(host, port):
        return f"{host}:{port} is in use (another balance serve?): pick another --port"
    try:
        duckdb.connect(db).close()
    except duckdb.IOException as exc:
        if "lock" not in str(exc).lower():
            raise
        return f"{db} is open in another process (a running balance serve?): stop it first"
    return None


def _serve_demo(store, args) -> None:
    if args.demo == DEMO_SET:
        _load_demo_set(store)
    else:
        _load_demo(store, args.demo, args.demo // 2, 0, args.demo_level)


def _demo_on_lake(catalog: str, data_path: str | None, load) -> int:
    """`load(store)` on a LakeStore of the lake (other servers may be writing it too)."""
    from ..storage.lake import LakeError, LakeStore, LakeUnavailable

    try:
        store = LakeStore(catalog, data_path)
    except (LakeError, LakeUnavailable) as exc:
        print(f"balance: {exc}", file=sys.stderr)
        return 2
    try:
        load(store)
    finally:
        store.close()
    return 0


def run_load_demo(args) -> int:
    from ..storage import Store

    slide = args.games // 2 if args.slide is None else args.slide

    def load(store) -> None:
        if args.set:
            _load_demo_set(store)
        else:
            _load_demo(store, args.games, slide, args.seed, args.level)

    chosen = where("load-demo", args)
    if isinstance(chosen, int):
        return chosen
    if chosen.lake:
        return _demo_on_lake(chosen.lake, None, load)
    try:
        store = Store(str(chosen.db))
    except Exception as exc:
        return _locked(exc)
    with store:
        load(store)
    return 0


def _load_demo(store, slow6: int, slide: int, seed: int, level: int) -> None:
    from ..server.demo import labelled, load_records, simulated_records

    def echo(line: str) -> None:
        print(line, flush=True)

    echo(f"Simulating and loading {slow6:,} Slow6 games (bots level <= {level}), "
         f"then {slide:,} Slide games (client versions labelled +sim)")  # fmt: skip
    load_records(store, labelled(simulated_records(slow6, 0, seed, level)), echo=echo,
                 label="Slow6", total=slow6, every=250)  # fmt: skip
    if slide:
        load_records(store, labelled(simulated_records(0, slide, seed, level)), echo=echo,
                     label="Slide", total=slide, every=250)  # fmt: skip
    _run_jobs(store)


def _load_demo_set(store) -> None:
    from ..server.demo import load_demo_set

    def echo(line: str) -> None:
        print(line, flush=True)

    echo("Loading the demo dataset (simulated games, client versions labelled +sim) through "
         "the upload path")  # fmt: skip
    load_demo_set(store, echo=echo)
    _run_jobs(store)


def _run_jobs(store) -> None:
    import time

    from ..server import jobs

    print("Analysis jobs: computing the balance tables", flush=True)
    started = time.perf_counter()
    summary = jobs.run_once(store)
    took = time.perf_counter() - started
    cur = store.reader()  # the summary counts Slow6 games only: the store has the Slide ones
    try:
        (slide,) = cur.execute("SELECT count(*) FROM slide_games").fetchone()
    finally:
        cur.close()
    print(
        f"Analysis jobs: {summary.get('games_read', 0):,} verified Slow6 games"
        + (f" and {slide:,} Slide games" if slide else "")
        + f" read, {len(summary.get('tables') or ()):,} tables written in {took:.1f} s",
        flush=True,
    )


def run_reverify(args) -> int:
    chosen = where("reverify", args)
    if isinstance(chosen, int):
        return chosen
    if chosen.server:
        return _reverify_remote(chosen.server, args)
    if chosen.lake:
        return _reverify_lake(chosen.lake, args)
    from ..server.reverify import reverify
    from ..storage import Store, open_db

    db = str(chosen.db)
    try:
        Store(db).close()  # first store the games a crash left in the upload journal
        con = open_db(db)
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


def _reverify_lake(catalog: str, args) -> int:
    """A lake transaction a batch, applied again while the servers' appends conflict with its
    deletes and then with their commits paused (reverify.reverify_lake); one at a time."""
    import duckdb

    from ..server.reverify import reverify_lake
    from ..storage.lake import LakeError, LakeUnavailable, connect

    try:
        con = connect(catalog)
    except (LakeError, LakeUnavailable) as exc:
        print(f"balance reverify: {exc}", file=sys.stderr)
        return 2
    try:
        summary = reverify_lake(con, rebuild=args.rebuild, echo=print)
    except duckdb.TransactionException as exc:
        print(f"balance reverify: gave up on a batch the uploads kept conflicting with: {exc}; "
              "the batches before it are stored: run it again", file=sys.stderr)  # fmt: skip
        return 1
    except duckdb.Error as exc:  # the catalog or the data path failing mid-run
        print(f"balance reverify: the lake failed: {exc}; the batches before it are stored: "
              "run it again once the lake answers", file=sys.stderr)  # fmt: skip
        return 1
    finally:
        con.close()
    _print_summary(summary)
    return 0


def _reverify_remote(server: str, args) -> int:
    from ..storage.remote import Api, RemoteError

    path = "/v1/admin/reverify" + ("?rebuild=1" if args.rebuild else "")
    try:
        answer = Api(server, timeout=3600).request("POST", path)
        if not answer.ok:
            print(f"reverify refused: {answer.status} {answer.problem()}", file=sys.stderr)
            return 1
        summary = answer.json()
    except RemoteError as exc:
        print(f"balance reverify: {exc}", file=sys.stderr)
        return exc.code
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
