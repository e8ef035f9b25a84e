"""A throwaway PostgreSQL cluster, lake servers and fixtures for the lake tests and benchmarks
(not a test module; tests import the fixtures they use from here).

    cluster = Cluster.start()          # initdb + pg_ctl start in a temp dir, a free port
    catalog = cluster.create_db("t1")  # a libpq connection string for a new database
    cluster.stop()                     # pg_ctl stop, the directory removed

    LakeServer(workdir, catalog).start()   # a real `balance serve --lake` process

`initdb` refuses to run as root: as root the cluster's directory belongs to the `postgres`
user and the binaries run through `su postgres`. Trust authentication, listening on
127.0.0.1 only. `unavailable()` says why no cluster can be had here (None: one can);
`lake_unavailable()` also why the ducklake extension cannot load (then the tests skip).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _bin_dir() -> Path | None:
    explicit = os.environ.get("BALANCE_PG_BIN")
    if explicit and (Path(explicit) / "pg_ctl").exists():
        return Path(explicit)
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    for candidate in reversed(versions):
        if (candidate / "initdb").exists() and (candidate / "pg_ctl").exists():
            return candidate
    found = shutil.which("pg_ctl")
    return Path(found).parent if found and (Path(found).parent / "initdb").exists() else None


def unavailable() -> str | None:
    """Why no PostgreSQL cluster can be started here, or None."""
    if _bin_dir() is None:
        return "PostgreSQL binaries not found (apt-get install postgresql, or set BALANCE_PG_BIN)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user for initdb"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, directory: Path, port: int, bindir: Path):
        self.directory = directory
        self.port = port
        self.bindir = bindir
        self._options = ""

    @classmethod
    def start(cls, fsync: bool = False) -> Cluster:
        reason = unavailable()
        if reason:
            raise RuntimeError(reason)
        bindir = _bin_dir()
        directory = Path(tempfile.mkdtemp(prefix="balance-pg-"))
        os.chmod(directory, 0o700)
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(directory, user.pw_uid, user.pw_gid)
        cluster = cls(directory, free_port(), bindir)
        data = directory / "data"
        cluster._run([bindir / "initdb", "-D", data, "-A", "trust", "-U", "postgres", "-N"])
        cluster._options = (
            f"-c listen_addresses=127.0.0.1 -p {cluster.port} "
            f"-c unix_socket_directories={directory} -c max_connections=200 "
            f"-c fsync={'on' if fsync else 'off'}"
        )
        try:
            cluster.resume()
        except Exception:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return cluster

    def halt(self) -> None:
        """Stop the server (an outage of the catalog); `resume` starts it again, same data."""
        self._run([self.bindir / "pg_ctl", "-D", self.directory / "data", "-m", "fast", "stop"])

    def processes(self) -> list[int]:
        """The postmaster and every process under it (Linux /proc)."""
        from support import descendants

        postmaster = int((self.directory / "data" / "postmaster.pid").read_text().split()[0])
        return [postmaster, *descendants(postmaster)]

    def freeze(self) -> list[int]:
        """SIGSTOP every process of the cluster: a catalog that accepts connections and
        answers nothing (a frozen VM, a hung disk under it). `thaw(pids)` ends it."""
        pids = self.processes()
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        return pids

    def thaw(self, pids: list[int]) -> None:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def resume(self) -> None:
        self._run(
            [self.bindir / "pg_ctl", "-D", self.directory / "data", "-w", "-t", "60"]
            + ["-l", self.directory / "server.log", "-o", self._options, "start"]
        )

    def _run(self, argv: list) -> str:
        argv = [str(a) for a in argv]
        if os.geteuid() == 0:
            argv = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(_quote(a) for a in argv)]
        done = subprocess.run(argv, capture_output=True, text=True, cwd="/", timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{argv[-1]} failed ({done.returncode}): {done.stderr[-2000:]}")
        return done.stdout

    def conninfo(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname}"

    def create_db(self, name: str) -> str:
        self.psql(f'CREATE DATABASE "{name}"')
        return self.conninfo(name)

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        argv = [self.bindir / "psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1"]
        argv += ["-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", dbname]
        argv += ["-c", sql]
        done = subprocess.run(
            [str(a) for a in argv], capture_output=True, text=True, cwd="/", timeout=120
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr[-2000:]}")
        return done.stdout

    def stop(self) -> None:
        try:
            self._run([self.bindir / "pg_ctl", "-D", self.directory / "data", "-m", "fast", "stop"])
        except Exception:  # noqa: BLE001 - the directory goes anyway
            time.sleep(0.5)
        shutil.rmtree(self.directory, ignore_errors=True)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# -- the lake: can it be had here? -----------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]


def lake_unavailable(extensions: Path) -> str | None:
    """Why the lake tests cannot run here (PostgreSQL or the ducklake extension missing,
    DuckDB of another version), or None."""
    reason = unavailable()
    if reason:
        return reason
    import duckdb

    # outside the try: a product that fails to import fails the tests, never skips them
    from ingest.storage.lake import LakeUnavailable, install_extensions

    try:
        directory = install_extensions(extensions)
        con = duckdb.connect(
            config={
                "extension_directory": str(directory),
                "autoinstall_known_extensions": "false",
                "autoload_known_extensions": "false",
            }
        )
        try:
            con.execute("LOAD ducklake")
            con.execute("LOAD postgres")
        finally:
            con.close()
    except LakeUnavailable as exc:
        return f"the ducklake extension cannot load here: {exc}"
    except Exception as exc:  # noqa: BLE001 - e.g. a binary built for another DuckDB
        return f"the ducklake extension cannot load here: {type(exc).__name__}: {exc}"
    return None


# -- a real server on a lake --------------------------------------------------------------------


class Reply:
    def __init__(self, status: int, headers: dict, body: bytes):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)


class LakeServer:
    """One `balance serve --lake` process (or `--db FILE` when `catalog` is None, for
    comparisons); start/kill/stop keep its port."""

    def __init__(
        self, workdir: Path, catalog: str | None, env: dict | None = None, args=(), db=None
    ):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.catalog = catalog
        self.db = Path(db) if db else self.workdir / "store.duckdb"
        self.port = free_port()
        self.env = dict(env or {})
        self.args = list(args)
        self.proc: subprocess.Popen | None = None
        self.log = self.workdir / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120.0) -> LakeServer:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BALANCE_")}
        env.update(
            BALANCE_RATE_LIMIT="0",
            BALANCE_JOBS_INTERVAL="0",
            PYTHONUNBUFFERED="1",
            PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
        )
        if os.environ.get("BALANCE_LAKE_EXTENSIONS"):
            env["BALANCE_LAKE_EXTENSIONS"] = os.environ["BALANCE_LAKE_EXTENSIONS"]
        env.update(self.env)
        argv = [sys.executable, "-m", "ingest.cli", "serve", "--port", str(self.port), "--quiet"]
        if self.catalog is None:
            argv += ["--db", str(self.db)]
        else:
            argv += ["--lake", self.catalog, "--work-dir", str(self.workdir / "work")]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                argv + self.args, cwd=REPO, env=env, stdout=out, stderr=out,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited {self.proc.returncode}:\n{self.output()}")
            try:
                if self.get("/healthz", timeout=2).status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        self.kill()
        raise TimeoutError(f"server not healthy in {timeout} s:\n{self.output()}")

    def kill(self) -> None:
        """SIGKILL: a crash (its worker dies with it)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            time.sleep(0.3)  # the worker, tied to it by PR_SET_PDEATHSIG

    def stop(self, timeout: float = 60.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def output(self) -> str:
        return self.log.read_bytes().decode("utf-8", "replace") if self.log.exists() else ""

    def request(self, method, path, body=None, headers=None, timeout=120.0) -> Reply:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
        finally:
            conn.close()

    def get(self, path: str, **kw) -> Reply:
        return self.request("GET", path, **kw)

    def upload(self, lines: list[bytes], **kw) -> Reply:
        body = b"\n".join(lines) + b"\n"
        return self.request(
            "POST", "/v1/games", body, {"Content-Type": "application/x-ndjson"}, **kw
        )


# -- fixtures (import them into the test module) ------------------------------------------------

try:
    import pytest
except ImportError:  # pragma: no cover - benchmarks without pytest
    pytest = None

if pytest is not None:

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
