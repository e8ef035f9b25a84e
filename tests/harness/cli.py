"""The `balance` command run in this process, its output captured."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from dataclasses import dataclass


@dataclass
class Ran:
    """What a `balance` run gave: as subprocess.CompletedProcess (text) has them."""

    returncode: int
    stdout: str
    stderr: str


def balance(*args: str, env: dict | None = None) -> Ran:
    """`balance ARGS` run in this process (ingest.cli.main), its output captured: the command's
    own code path without a new interpreter's start. It sees this process's environment without
    its BALANCE_* variables, plus `env` (as a `Server` does); the environment is put back after.

    Use a subprocess instead where the process is the point: a file another process holds
    locked (DuckDB shares one open file between the connections of a process), a pipe that
    closes, a signal."""
    from ingest.cli import main

    saved = dict(os.environ)
    out, err = io.StringIO(), io.StringIO()
    try:
        for key in [k for k in os.environ if k.startswith("BALANCE_")]:
            del os.environ[key]
        os.environ.update(env or {})
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors, and commands that exit
                if isinstance(exc.code, str):
                    print(exc.code, file=sys.stderr)
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return Ran(code, out.getvalue(), err.getvalue())
