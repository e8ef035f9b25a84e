"""`balance`: one command, a subcommand per job; each package registers its own subcommands.

The command line composes every package, so it lives at the top of the import order (here,
with the server), never in the engine package. The `commands` modules import only the
standard library at module level, so that `balance verify` does not pay for Flask, Polars or
Altair.
"""

from __future__ import annotations

import argparse
import sys

from analysis import commands as analysis_commands
from dashboard import commands as dashboard_commands
from replays import commands as replays_commands

from . import commands as ingest_commands

COMMANDS = (replays_commands, ingest_commands, analysis_commands, dashboard_commands)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="balance", description="Slow6 and Slide balance backend: verify, simulate, serve."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.run(args) or 0)


def run() -> None:
    """The `balance` process: `main`, then out without the interpreter's teardown.

    Arrow's and DuckDB's native thread pools can still hold a joinable worker when the
    interpreter destroys them, and the process then aborts ("terminate called without an
    active exception", SIGABRT) after its work is done and reported: apache/arrow#34314,
    duckdb/duckdb#13904; seen once in `balance export --server`. Every command has closed its
    files and connections by the time `main` returns, so what is left to do is flush: the
    streams and the log handlers, then `os._exit` with the command's code. An exception still
    takes the ordinary way out (traceback, exit 1)."""
    import logging
    import os

    code = main()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken pipe: nothing more can be said
            pass
    os._exit(code)


if __name__ == "__main__":
    run()
