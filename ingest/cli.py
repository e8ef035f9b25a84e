"""`balance`: one command, a subcommand per job. Each package registers its own subcommands."""

from __future__ import annotations

import argparse
import importlib
import sys

# package module -> registers its subcommands on the parser; imported lazily so that
# `balance verify` does not pay for Flask, Polars or Altair.
COMMAND_MODULES = (
    "replays.commands",
    "ingest.commands",
    "analysis.commands",
    "dashboard.commands",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="balance", description="Slow6 and Slide balance backend: verify, simulate, serve."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
