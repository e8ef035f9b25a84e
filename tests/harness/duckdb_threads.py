"""One DuckDB thread per database in the test processes, unless a connection asks for more.

DuckDB gives every database a pool of worker threads, one per core by default. The suite
already keeps every core busy with processes (the README's `-n 4` on two cores, plus the
servers and browsers they start), so a query's extra threads finish nothing sooner: they wake,
hand work to each other and wait: measured with `python -m benchmarks.suite_time`, with and
without this on the same machine (the commit that added it has the figures).

What it changes: `duckdb.connect` in the process that calls `one_thread_per_database()` (the
pytest workers: tests/conftest.py; and a module run as `python -m tests.harness.duckdb_threads
MODULE ARGS...`, as the benchmarks' smoke runs are: tests/test_benchmarks_smoke.py) opens a
database with `threads = 1` unless its `config` names `threads`. What it does not: the
product's own settings (a store's BALANCE_DB_THREADS, the console's BALANCE_SQL_THREADS, a `SET
threads` after opening) still win, and the servers and commands the tests start as processes
run DuckDB's defaults, as deployed, but for one setting: the servers the harness starts
(AppClient, Server, LakeServer) run their SQL console's processes on `CONSOLE_THREADS` DuckDB
threads, for the same reason (their default, BALANCE_SQL_THREADS=2, is a deployment's; a test
that needs two sets it).
"""

from __future__ import annotations

import functools
import runpy
import sys

_MARK = "_balance_one_thread"
CONSOLE_THREADS = "1"  # BALANCE_SQL_THREADS of the harness's servers


def one_thread_per_database() -> None:
    """Make `duckdb.connect` in this process default to one thread per database (once)."""
    import duckdb

    original = duckdb.connect
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def connect(database=":memory:", read_only=False, config=None, **kwargs):
        return original(database, read_only, {"threads": 1, **(config or {})}, **kwargs)

    setattr(connect, _MARK, True)
    duckdb.connect = connect


def main(argv: list[str]) -> None:
    """Run module `argv[0]` as `python -m` would, with `argv[1:]` as its arguments, on one
    DuckDB thread per database."""
    if not argv or argv[0].startswith("-"):
        print("usage: python -m tests.harness.duckdb_threads MODULE [ARGS...]", file=sys.stderr)
        raise SystemExit(2)
    one_thread_per_database()
    sys.argv = list(argv)  # runpy puts the module's file in place of its name
    runpy.run_module(argv[0], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
