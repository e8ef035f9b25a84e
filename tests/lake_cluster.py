"""The session's lake fixtures (a pytest plugin, registered by tests/conftest.py): the
extension directory and one PostgreSQL cluster per session (per xdist worker), shared by the
lake tests (tests/lake/, whose conftest makes a new lake per test on it) and the lake
benchmarks' smoke runs. The cluster and the lake servers themselves are in the harness
(tests/harness/lake.py), re-exported here under the names tests have always imported."""

from __future__ import annotations

import os

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


@pytest.fixture(scope="session")
def pg_cluster(lake_extensions):
    """A PostgreSQL cluster for the session (its own temp dir and port)."""
    cluster = Cluster.start()
    yield cluster
    cluster.stop()
