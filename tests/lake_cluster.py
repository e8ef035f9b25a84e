"""The session's lake fixtures (a pytest plugin, registered by tests/conftest.py): the
extension directory and one PostgreSQL cluster for the whole run, shared by the lake tests
(tests/lake/, whose conftest makes a new lake per test on it) and the lake benchmarks' smoke
runs. Under pytest-xdist the workers share it (`shared_dir`): the first to need it starts it,
the others borrow it, the last to leave stops it. The cluster and the lake servers themselves
are in the harness (tests/harness/lake.py), re-exported here under the names tests have
always imported."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.lake import (
    BORROW,
    Cluster,
    LakeServer,
    Reply,
    lake_unavailable,
    unavailable,
)
from harness.processes import free_port

__all__ = [
    "BORROW",
    "Cluster",
    "LakeServer",
    "Reply",
    "free_port",
    "lake_unavailable",
    "unavailable",
]

# -- fixtures -------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def lake_extensions(tmp_path_factory):
    """The extension directory of the session's lake tests (set for servers too); skips
    the lake tests, with the reason, where PostgreSQL or the extension cannot be had."""
    directory = tmp_path_factory.mktemp("duckdb-extensions")
    reason = lake_unavailable(directory)
    if reason:
        pytest.skip(reason)
    old = os.environ.get("BALANCE_LAKE_EXTENSIONS")
    os.environ["BALANCE_LAKE_EXTENSIONS"] = str(directory)
    yield directory
    if old is None:
        os.environ.pop("BALANCE_LAKE_EXTENSIONS", None)
    else:
        os.environ["BALANCE_LAKE_EXTENSIONS"] = old


SHARED = "pg"  # the run's cluster: a directory beside the xdist workers' temp directories


def shared_dir(root: Path) -> Path:
    """Where the run's cluster is noted, under the run's temp directory `root`: `cluster` (its
    directory, while it runs), `users` (the workers using it), `template` (the lake template's
    database, tests/lake/conftest.py), `lock`."""
    return root / SHARED


@contextlib.contextmanager
def locked(shared: Path) -> Iterator[None]:
    """The run's cluster's notes, one worker at a time."""
    shared.mkdir(exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


def _run_root(tmp_path_factory) -> Path | None:
    """The run's temp directory above this xdist worker's (None: not under xdist)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return None
    return tmp_path_factory.getbasetemp().parent


def stop_left_behind(root: Path) -> None:
    """Stop the run's cluster if it still runs (a worker that died never left it): for the
    controller, once every worker is done."""
    noted = shared_dir(root) / "cluster"
    if noted.exists() and Path(noted.read_text()).exists():
        cluster = Cluster.borrow(noted.read_text())
        cluster.borrowed = False
        cluster.stop()
    noted.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def pg_cluster(lake_extensions, tmp_path_factory):
    """The run's PostgreSQL cluster (its own temp dir and port). Under xdist every worker
    uses the same one: started by the first worker to need it, borrowed by the others (a
    borrower's databases get a unique suffix, Cluster.create_db), stopped by the last one
    out; a new one is started if a worker needs it after that."""
    root = _run_root(tmp_path_factory)
    if root is None:
        cluster = Cluster.start()
        yield cluster
        cluster.stop()
        return
    shared = shared_dir(root)
    with locked(shared):
        users = int((shared / "users").read_text()) if (shared / "users").exists() else 0
        noted = shared / "cluster"
        if not users or not noted.exists():
            started = Cluster.start()
            noted.write_text(str(started.directory))
        cluster = Cluster.borrow(noted.read_text())  # the starter too: names suffixed alike
        (shared / "users").write_text(str(users + 1))
    try:
        yield cluster
    finally:
        with locked(shared):
            users = int((shared / "users").read_text()) - 1
            (shared / "users").write_text(str(users))
            if users == 0:  # the last one out
                cluster.borrowed = False
                cluster.stop()
                noted.unlink(missing_ok=True)
                (shared / "template").unlink(missing_ok=True)


def pytest_unconfigure(config):
    """The controller of an xdist run, once every worker is done: stop the run's cluster if a
    worker that died left it running (the workers' own fixtures stop it otherwise)."""
    if hasattr(config, "workerinput"):
        return  # a worker
    factory = getattr(config, "_tmp_path_factory", None)
    root = getattr(factory, "_basetemp", None)  # set only where a temp directory was made
    if root is not None:
        stop_left_behind(Path(root))
