"""A throwaway PostgreSQL cluster and real lake servers, for the lake tests and the lake
benchmarks.

    cluster = Cluster.start()          # initdb + pg_ctl start in a temp dir, a free port
    catalog = cluster.create_db("t1")  # a libpq connection string for a new database
    cluster.stop()                     # pg_ctl stop, the directory removed

    LakeServer(workdir, catalog).start()   # a real `balance serve --lake` process

`initdb` refuses to run as root: as root the cluster's directory belongs to the `postgres`
user and the binaries run through `su postgres`. Trust authentication, listening on
127.0.0.1 only. `unavailable()` says why no cluster can be had here (None: one can);
`lake_unavailable()` also why the ducklake extension cannot load (then the tests skip).

A benchmark run by the test suite borrows the run's cluster instead of starting its own
(`Cluster.borrow()`: the directory named by BALANCE_BENCH_PG_DIR), as the xdist workers do
(tests/lake_cluster.py): one cluster per run.
"""

from __future__ import annotations

import http.client
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from .duckdb_threads import CONSOLE_THREADS
from .processes import children, descendants, free_port
from .records import REPO
from .wait import wait_for


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


BORROW = "BALANCE_BENCH_PG_DIR"  # a running cluster's directory, for a benchmark to borrow


class Cluster:
    def __init__(self, directory: Path, port: int, bindir: Path):
        self.directory = directory
        self.port = port
        self.bindir = bindir
        self._options = ""
        self.borrowed = False  # someone else's: stop() leaves it running

    @classmethod
    def for_benchmark(cls, fsync: bool = True) -> Cluster:
        """The cluster named by $BALANCE_BENCH_PG_DIR (the test session's, when the suite runs
        a benchmark at a tiny size: one cluster per run), else a new one of its own."""
        directory = os.environ.get(BORROW)
        if not directory:
            return cls.start(fsync=fsync)
        return cls.borrow(directory)

    @classmethod
    def borrow(cls, directory: str | Path) -> Cluster:
        """The cluster another process started in `directory`, running: stop() leaves it so
        (unless `borrowed` is set false), and create_db() suffixes its names."""
        bindir = _bin_dir()
        if bindir is None:
            raise RuntimeError(unavailable())
        options = (Path(directory) / "options").read_text()
        port = int(options.split(" -p ", 1)[1].split()[0])
        cluster = cls(Path(directory), port, bindir)
        cluster._options, cluster.borrowed = options, True
        return cluster

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
        (directory / "options").write_text(cluster._options)  # for a borrower's resume()
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
        """A new database; on a borrowed cluster its name gets a unique suffix (the owner's
        tests and other borrowers make theirs in the same cluster)."""
        if self.borrowed:
            name = f"{name}_{uuid.uuid4().hex[:12]}"
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
        """pg_ctl stop and the directory removed; a borrowed cluster is left to its owner."""
        if self.borrowed:
            return
        try:
            self._run([self.bindir / "pg_ctl", "-D", self.directory / "data", "-m", "fast", "stop"])
        except Exception:  # noqa: BLE001 - the directory goes anyway
            pass
        shutil.rmtree(self.directory, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie has ended: nothing of it runs any more)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# -- the lake: can it be had here? -----------------------------------------------------------


def benchmark_extensions(prefix: str) -> tuple[str | None, Path | None]:
    """A lake benchmark's extension directory: the one given ($BALANCE_LAKE_EXTENSIONS, the
    test suite's), used and left; else one of its own, a new temporary directory set for the
    servers it starts. (why the lake cannot run here or None, the directory of its own to
    remove at the end or None); a directory of its own is removed at once with a reason."""
    import os
    import shutil
    import tempfile

    given = os.environ.get("BALANCE_LAKE_EXTENSIONS")
    directory = Path(given or tempfile.mkdtemp(prefix=prefix))
    os.environ["BALANCE_LAKE_EXTENSIONS"] = str(directory)
    own = None if given else directory
    reason = lake_unavailable(directory)
    if reason and own is not None:
        shutil.rmtree(own, ignore_errors=True)
    return reason, None if reason else own


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
            BALANCE_SQL_THREADS=CONSOLE_THREADS,
            BALANCE_WORKERS="0",  # as a Server's (server.py)
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
        try:
            wait_for(self.healthy, timeout, "lake server healthy", every=0.2, ignore=(OSError,))
        except TimeoutError:
            self.kill()
            raise TimeoutError(f"server not healthy in {timeout} s:\n{self.output()}") from None
        return self

    def healthy(self) -> bool:
        """/healthz answers 200 (RuntimeError, with its log, if the process has ended)."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"server exited {self.proc.returncode}:\n{self.output()}")
        return self.get("/healthz", timeout=2).status == 200

    def kill(self) -> None:
        """SIGKILL: a crash; its worker, tied to it by PR_SET_PDEATHSIG, dies with it, and
        this returns once it has."""
        if self.proc is not None and self.proc.poll() is None:
            workers = children(self.proc.pid)
            self.proc.kill()
            self.proc.wait()
            wait_for(lambda: not any(map(_alive, workers)), 30, "the server's worker gone")

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
