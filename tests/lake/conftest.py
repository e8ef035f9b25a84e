"""The lake tests' fixtures: a new lake per test on the session's PostgreSQL cluster
(`pg_cluster`, tests/lake_cluster.py), stores on it. Every test here is marked `lake`
(tests/conftest.py), and skips, saying why, where PostgreSQL or the ducklake extension cannot
be had."""

from __future__ import annotations

import contextlib
import os
import time

import pytest


@pytest.fixture
def lake(pg_cluster, tmp_path):
    """A new lake (`balance lake init`'s): its catalog string; data in tmp_path/data."""
    from ingest.storage.lake.admin import init_lake

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
