"""Shared fixtures: a real `balance serve` subprocess on a free loopback port, the spec examples.

    def test_x(server):                      # a fresh server on a tmp DuckDB file
        r = server.post("/v1/games", body, "application/x-ndjson")
        assert r.status == 200 and r.json()["results"][0]["verdict"] == "accepted"

    @pytest.mark.parametrize("server", [{"env": {"BALANCE_RATE_LIMIT": "2"}}], indirect=True)
    def test_y(server): ...                  # env vars and extra `serve` args via indirect params

    def test_z(server_factory):              # several servers, or one to kill and restart
        s = server_factory(env={...}, args=["--threads", "4"])
        s.kill(); s.start()                  # same file, same port

The server runs from this working tree (`python -m ingest.cli serve`), with rate limiting and
the analysis schedule off unless the test's env says otherwise; its stdout/stderr go to files
in tmp_path (`server.output()`).
"""

from __future__ import annotations

import copy
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[1]


def _examples_dir() -> Path:
    for candidate in (
        REPO / "tests" / "spec" / "examples",
        REPO.parent / "shared" / "spec" / "examples",
        Path("/work/shared/spec/examples"),
    ):
        if (candidate / "slow6-valid.ndjson").exists():
            return candidate
    raise FileNotFoundError("spec examples not found")


EXAMPLES = _examples_dir()


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    """The spec's example records (slow6-valid.ndjson, malformed.expected.ndjson, ...)."""
    return EXAMPLES


def children(pid: int) -> list[int]:
    """The processes `pid` started (Linux /proc)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def descendants(pid: int) -> list[int]:
    """Every process under `pid`: a server's worker and its judge processes."""
    return [p for child in children(pid) for p in (child, *descendants(child))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Response:
    status: int
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self):
        return json.loads(self.body)


class Server:
    """One `balance serve` process; start/stop/kill/restart keep the same file and port."""

    def __init__(self, workdir: Path, env: dict | None = None, args=(), db: Path | None = None):
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.db = Path(db) if db else workdir / "store.duckdb"
        self.host = "127.0.0.1"
        self.port = free_port()
        self.extra_env = dict(env or {})
        self.args = list(args)
        self.proc: subprocess.Popen | None = None
        self.stdout_path = workdir / "server.stdout"
        self.stderr_path = workdir / "server.stderr"
        self.starts = 0
        self.new_session = False  # True: its own process group, to signal it as a terminal does

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "ingest.cli",
            "serve",
            "--db",
            str(self.db),
            "--host",
            self.host,
            "--port",
            str(self.port),
            *self.args,
        ]

    def environment(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BALANCE_")}
        env.update(
            {"BALANCE_RATE_LIMIT": "0", "BALANCE_JOBS_INTERVAL": "0", "PYTHONUNBUFFERED": "1"}
        )
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        env.update(self.extra_env)
        return env

    def start(self, timeout: float = 90.0) -> Server:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.starts += 1
        with open(self.stdout_path, "ab") as out, open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(
                self.command(),
                cwd=REPO,
                env=self.environment(),
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=self.new_session,
            )
        self.wait_healthy(timeout)
        return self

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.output()}")
            try:
                if self.get("/healthz", timeout=2).status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        self.kill()
        raise TimeoutError(f"server not healthy after {timeout}s:\n{self.output()}")

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait: the server checkpoints and closes the store."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill(self) -> None:
        """SIGKILL: a crash, nothing flushed or checkpointed."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self) -> Server:
        self.stop()
        return self.start()

    def output(self) -> str:
        parts = []
        for path in (self.stdout_path, self.stderr_path):
            if path.exists():
                parts.append(path.read_bytes().decode("utf-8", "replace"))
        return "\n".join(parts)

    # -- HTTP ----------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict | None = None,
        timeout: float = 60.0,
    ) -> Response:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
        finally:
            conn.close()

    def get(self, path: str, **kw) -> Response:
        return self.request("GET", path, **kw)

    def post(
        self,
        path: str,
        body: bytes | str,
        content_type: str | None = None,
        headers: dict | None = None,
        **kw,
    ) -> Response:
        if isinstance(body, str):
            body = body.encode()
        headers = dict(headers or {})
        if content_type is not None:
            headers["Content-Type"] = content_type
        return self.request("POST", path, body, headers, **kw)

    def upload(self, records: list, **kw) -> Response:
        """NDJSON batch of records (dicts are dumped; bytes/str lines are sent as they are)."""
        lines = [
            r
            if isinstance(r, bytes)
            else r.encode()
            if isinstance(r, str)
            else json.dumps(r).encode()
            for r in records
        ]
        return self.post("/v1/games", b"\n".join(lines) + b"\n", "application/x-ndjson", **kw)


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
    """A started server; parametrize indirectly with {"env": {...}, "args": [...]}."""
    params = getattr(request, "param", None) or {}
    return server_factory(**params)


# -- records and store look-ups for tests (import them: `from conftest import fresh`) ---------

NDJSON, JSON = "application/x-ndjson", "application/json"


def example_lines(name: str) -> list[str]:
    return [line for line in (EXAMPLES / f"{name}.ndjson").read_text().splitlines() if line]


def example_records(name: str) -> list[dict]:
    return [json.loads(line) for line in example_lines(name)]


SLOW6 = example_records("slow6-valid")
SLIDE = example_records("slide-valid")


def fresh(record: dict, **changes) -> dict:
    """A copy with a new game_id (still a valid game: the id is not part of the rules)."""
    out = copy.deepcopy(record)
    out["game_id"] = str(uuid.uuid4())
    out.update(changes)
    return out


def fresh_slow6(i: int = 0) -> dict:
    return fresh(SLOW6[i % len(SLOW6)])


def dumps(record: dict) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode()


def padded(record: dict, size: int) -> bytes:
    """The record as JSON text of exactly `size` bytes (spaces before the final brace)."""
    text = dumps(record)
    assert len(text) <= size, (len(text), size)
    return text[:-1] + b" " * (size - len(text)) + b"}"


def query(db: Path, sql: str, params=None) -> list[tuple]:
    """Read the store file (the server must be stopped: DuckDB has one writer process)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def verdicts(response) -> list[str]:
    return [r["verdict"] for r in response.json()["results"]]


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory) -> Path:
    """One store of simulated games (through the ingest path, analysis jobs run) for every
    dashboard, SQL-console and browser test of the session; tests copy it before serving."""
    from test_dashboard_pages import build_demo_db

    return build_demo_db(tmp_path_factory.mktemp("demo") / "store.duckdb")
