"""`python -m ingest.cli ...`: the `balance` command."""

from . import run

run()
