"""Shared fixtures: the app in this process, a real `balance serve` subprocess, the demo store.
The helpers tests import (records, Server, AppClient, query, ...) are in tests/support.py.

    def test_x(app_server):                  # the app in-process, on a tmp DuckDB file
        r = app_server.post("/v1/games", body, "application/x-ndjson")
        assert r.status == 200 and r.json()["results"][0]["verdict"] == "accepted"

    @pytest.mark.parametrize("app_server", [{"env": {"BALANCE_RATE_LIMIT": "2"}}], indirect=True)
    def test_y(app_server): ...              # settings via indirect params

    def test_z(server_factory):              # real servers: a process to kill and restart
        s = server_factory(env={...}, args=["--threads", "4"])
        s.kill(); s.start()                  # same file, same port

Reach the app in-process (`app_server`, `app_factory`) unless the test needs a process or a
socket (see support.py); `server` and `server_factory` start real servers, and a test module
using them is marked `slow`.
"""

from __future__ import annotations

import fcntl
import gc
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from harness.duckdb_threads import one_thread_per_database
from support import CHROMIUM, EXAMPLES, NO_CHROMIUM, AppClient, Browser, Server, build_demo_db


def keep_bytecode() -> None:
    """Where the environment turns bytecode caching off (PYTHONDONTWRITEBYTECODE, as some
    containers and this project's build machine do), cache it outside the checkout instead.

    Otherwise every process of the run compiles the same source again: each xdist worker
    rewrites every test module's asserts (4 of its 7 s of collection), and each of the few
    hundred servers, commands and benchmarks the tests start compiles the product (about
    0.1 s of CPU each). The cache (PYTHONPYCACHEPREFIX, in the temp directory) keeps the
    variable's intent: no __pycache__ in the checkout. Python checks each cached file against
    its source, as it always does. Set here, before xdist starts its workers, so that they
    and every process they start inherit it."""
    if not sys.dont_write_bytecode:
        return  # Python caches bytecode as usual
    prefix = Path(sys.pycache_prefix or Path(tempfile.gettempdir()) / f"balance-pyc-{os.getuid()}")
    sys.pycache_prefix, sys.dont_write_bytecode = str(prefix), False
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


keep_bytecode()
one_thread_per_database()  # in every test process: the suite's processes fill the cores

# The lake's fixtures (lake_cluster.py) for every folder: one PostgreSQL cluster for the run
# (the xdist workers share it), used by the lake tests and the lake benchmarks' smoke runs.
pytest_plugins = ["lake_cluster"]

# Fixtures that make every test using them `slow` (real processes, the demo store's build);
# pg_cluster: the lake tests' PostgreSQL (tests/lake_cluster.py).
SLOW_FIXTURES = {"server", "server_factory", "demo_db", "pg_cluster"}
# Modules that are `slow` as a whole and carry no mark of their own.
SLOW_MODULES = {"test_differential.py"}  # the engine against the referee on 16,000 games


def pytest_collection_modifyitems(items):
    """`slow` by what a test needs: a real server or PostgreSQL, the demo store, or chromium
    (`browser`). Other slow tests are marked where they are (subprocesses, long property runs).
    `browser` tests skip, saying why, where chromium is not installed. `lake`: every test on
    PostgreSQL and the ducklake extension (`-m "not lake"` deselects them)."""
    for item in items:
        if "lake_extensions" in item.fixturenames or item.path.parent.name == "lake":
            item.add_marker(pytest.mark.lake)
        if item.get_closest_marker("browser") and CHROMIUM is None:
            item.add_marker(pytest.mark.skip(reason=NO_CHROMIUM))
        if (
            SLOW_FIXTURES & set(item.fixturenames)
            or item.get_closest_marker("browser")
            or item.path.name in SLOW_MODULES
        ):
            item.add_marker(pytest.mark.slow)
    items[:] = longest_first(items)


def pytest_collection_finish(session):
    """What collection loaded (the whole stack's modules and their tables) stays for the whole
    run: moved out of the garbage collector's sight, so that each full collection during the
    tests walks only what the tests made since (about half of the collections' time)."""
    gc.collect()
    gc.freeze()


def longest_first(items: list) -> list:
    """The files most likely to take longest first, each file's tests in their own order.

    Under `-n 4 --dist loadfile` a worker takes a whole file at a time, in this order: a long
    file handed out last leaves the other workers idle until it ends (the benchmarks' smoke
    runs, two minutes, came last by name). So the lake's files first (PostgreSQL and lake
    servers), then the other files with real processes, most such tests first, then the
    in-process files, which fill in at the end."""
    slow = Counter(i.path for i in items if i.get_closest_marker("slow"))
    lake = {i.path for i in items if i.get_closest_marker("lake")}
    return sorted(items, key=lambda i: (i.path not in lake, slow[i.path] == 0, -slow[i.path]))


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    """The spec's example records (slow6-valid.ndjson, malformed.expected.ndjson, ...)."""
    return EXAMPLES


@pytest.fixture
def app_factory(tmp_path):
    """start(env=None, db=None) -> a started AppClient; all are stopped at the end."""
    apps: list[AppClient] = []

    def start(env: dict | None = None, db: Path | None = None) -> AppClient:
        a = AppClient(tmp_path / f"app{len(apps)}", env=env, db=db)
        apps.append(a)
        return a.start()

    yield start
    for a in apps:
        a.stop()


@pytest.fixture
def app_server(app_factory, request):
    """A started in-process app; parametrize indirectly with {"env": {...}}."""
    params = getattr(request, "param", None) or {}
    return app_factory(**params)


@pytest.fixture
def server_factory(tmp_path):
    """start(env=None, args=(), db=None) -> a started Server; all are stopped at the end."""
    servers: list[Server] = []

    def start(env: dict | None = None, args=(), db: Path | None = None) -> Server:
        s = Server(tmp_path / f"server{len(servers)}", env=env, args=args, db=db)
        servers.append(s)
        return s.start()

    yield start
    for s in servers:
        s.stop()


@pytest.fixture
def server(server_factory, request):
    """A started real server; parametrize indirectly with {"env": {...}, "args": [...]}."""
    params = getattr(request, "param", None) or {}
    return server_factory(**params)


@pytest.fixture(scope="session")
def chromium():
    """Headless Chromium (support.Browser), one for the session: started once, by the first
    browser test."""
    b = Browser()
    yield b
    b.close()


@pytest.fixture(scope="module")
def browser(chromium):
    """A fresh page of the session's Chromium for a browser test module: a browser context
    of its own, so nothing of another module's pages (cookies, storage) is seen."""
    chromium.new_page()
    return chromium


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory) -> Path:
    """One store of simulated games (through the ingest path, analysis jobs run) for every
    dashboard, SQL-console and browser test of the run; tests copy it before serving
    (support.demo_copy), never write to it. Under pytest-xdist the workers share one build:
    the first to come builds it in the run's temp directory, the others wait for it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return build_demo_db(tmp_path_factory.mktemp("demo") / "store.duckdb")
    shared = tmp_path_factory.getbasetemp().parent / "demo"  # the run's, above each worker's
    shared.mkdir(exist_ok=True)
    db, built = shared / "store.duckdb", shared / "built"
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not built.exists():
            for leftover in (db, db.with_name(db.name + ".wal")):  # a build that did not finish
                leftover.unlink(missing_ok=True)
            build_demo_db(db)
            built.touch()
    return db


@pytest.fixture
def small_disk(tmp_path):
    """mount(megabytes) -> the directory of a fresh tmpfs of that size, unmounted at the end.
    Request it before server_factory, so that the servers stop before it is unmounted."""
    mounted: list[Path] = []

    def mount(megabytes: int) -> Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a small tmpfs needs root")
        where = tmp_path / f"disk{len(mounted)}"
        where.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(where)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
        mounted.append(where)
        return where

    yield mount
    for where in mounted:
        if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], capture_output=True)
