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


if __name__ == "__main__":
    sys.exit(main())
