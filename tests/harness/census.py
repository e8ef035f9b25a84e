"""A pytest plugin that writes down the CPU each test costs: benchmarks/suite_time.py loads it
(`-p tests.harness.census`) to say where the suite's time goes.

With `BALANCE_CENSUS_DIR` set, every test process (each xdist worker, or pytest itself without
xdist) appends one JSON line per test to `<dir>/<worker>.jsonl`:

    [nodeid, own CPU s, children's CPU s, wall s]

own: the test process's CPU (user + system, all its threads) from the test's setup to its
teardown; children's: the CPU of the processes it started and waited for in that time (a
server, a browser, a benchmark), with their own children. A module-scoped server's CPU lands
on the test whose teardown stops it; a daemon that detaches (PostgreSQL under pg_ctl) is not
counted. Without the variable the plugin does nothing.

Plain hooks, no hook wrapper, so that nothing here imports pytest.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path
from typing import IO

_DIR = "BALANCE_CENSUS_DIR"
_state: dict = {"out": None, "active": False, "started": {}}


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def pytest_configure(config) -> None:
    directory = os.environ.get(_DIR)
    worker = getattr(config, "workerinput", {}).get("workerid")  # an xdist worker's
    # under xdist the controller sees every test's start and end too, but runs none of them
    controller = worker is None and bool(getattr(config.option, "numprocesses", None))
    _state["active"] = bool(directory) and not controller
    if _state["active"]:
        Path(directory).mkdir(parents=True, exist_ok=True)
        _state["path"] = Path(directory) / f"{worker or 'main'}.jsonl"


def _out() -> IO[str]:
    if _state["out"] is None:
        _state["out"] = open(_state["path"], "a", encoding="utf-8")  # noqa: SIM115
    return _state["out"]


def pytest_runtest_logstart(nodeid: str, location) -> None:
    if _state["active"]:
        _state["started"][nodeid] = (*_cpu(), time.monotonic())


def pytest_runtest_logfinish(nodeid: str, location) -> None:
    began = _state["started"].pop(nodeid, None) if _state["active"] else None
    if began is None:
        return
    own, children = _cpu()
    line = [nodeid, own - began[0], children - began[1], time.monotonic() - began[2]]
    out = _out()
    out.write(json.dumps(line) + "\n")
    out.flush()


def pytest_unconfigure(config) -> None:
    if _state["out"] is not None:
        _state["out"].close()
        _state["out"] = None
