"""The lake tests' fixtures: a new lake per test on the session's PostgreSQL cluster
(`pg_cluster`, tests/lake_cluster.py), stores on it. Every test here is marked `lake`
(tests/conftest.py), and skips, saying why, where PostgreSQL or the ducklake extension cannot
be had."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

import pytest
from lake_cluster import locked, shared_dir


@pytest.fixture(scope="session")
def lake_template(pg_cluster, tmp_path_factory) -> str:
    """The name of a database holding a lake `init_lake` made, once a run (under xdist the
    workers share the one made on the run's cluster, noted beside it): each test's lake is a
    copy of it (CREATE DATABASE ... TEMPLATE takes milliseconds, init_lake most of a second
    of CPU). Nothing ever connects to it after, as a template needs."""
    from ingest.storage.lake.admin import init_lake

    def make(data: Path) -> str:
        catalog = pg_cluster.create_db(f"lake_template_{os.getpid()}")
        init_lake(catalog, str(data))
        return catalog.rsplit("dbname=", 1)[1]

    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return make(tmp_path_factory.mktemp("template") / "data")
    shared = shared_dir(tmp_path_factory.getbasetemp().parent)
    with locked(shared):
        noted = shared / "template"
        if not noted.exists():  # (removed when the cluster stops)
            noted.write_text(make(Path(tempfile.mkdtemp(prefix="template-", dir=shared))))
        return noted.read_text()


@pytest.fixture
def lake(pg_cluster, lake_template, tmp_path):
    """A new lake (`balance lake init`'s, copied from the session's template): its catalog
    string; data in tmp_path/data (DuckLake's `data_path`, the one thing that differs)."""
    name = f"lake_{os.getpid()}_{time.monotonic_ns() % 10**9}"
    pg_cluster.psql(f'CREATE DATABASE "{name}" TEMPLATE "{lake_template}"')
    data = tmp_path / "data"
    data.mkdir()
    moved = pg_cluster.psql(
        f"UPDATE ducklake_metadata SET value = '{data}/' WHERE key = 'data_path' RETURNING value",
        dbname=name,
    )
    assert moved.splitlines()[0] == f"{data}/", moved  # the row, then psql's "UPDATE 1"
    return pg_cluster.conninfo(name)


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
