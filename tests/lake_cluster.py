"""The lake tests' fixtures (a pytest plugin: `pytest_plugins = ["lake_cluster"]`): the
session's PostgreSQL cluster, a new lake per test, stores on it. The cluster and the lake
servers themselves are in the harness (tests/harness/lake.py), re-exported here under the
names tests have always imported."""

from __future__ import annotations

import contextlib
import os
import time

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


@pytest.fixture
def lake(pg_cluster, tmp_path):
    """A new lake (`balance lake init`'s): its catalog string; data in tmp_path/data."""
    from ingest.storage.lake_admin import init_lake

    name = f"lake_{os.getpid()}_{time.monotonic_ns() % 10**9}"
    catalog = pg_cluster.create_db(name)
    init_lake(catalog, str(tmp_path / "data"))
    return catalog


@pytest.fixture
def stores(lake):
    """open(**kw) -> a LakeStore on the test's lake; all are closed at the end."""
    from ingest.storage.lake import LakeStore

    opened = []

    def open_store(**kw):
        store = LakeStore(lake, **kw)
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        with contextlib.suppress(Exception):
            store.close()
