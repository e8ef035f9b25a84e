"""A real `balance serve` subprocess on a loopback port: for what needs a process or a socket
(kill -9, signals, slow and idle sockets, headers on the wire, the browser, a full disk)."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
from pathlib import Path

from .duckdb_threads import CONSOLE_THREADS
from .http import Client, Response
from .processes import free_port
from .records import REPO
from .wait import wait_for

# judge processes as deployed on a 2-core machine: for a test about them or the process tree
JUDGES = {"BALANCE_WORKERS": "2"}


class Server(Client):
    """One `balance serve` process; start/stop/kill/restart keep the same file and port.

    It runs from this working tree (`python -m ingest.cli serve`), with rate limiting and the
    analysis schedule off, the console's DuckDB on one thread (duckdb_threads.py) and judging
    on the request threads (BALANCE_WORKERS=0, as an AppClient's) unless `env` says otherwise;
    its stdout/stderr go to files in `workdir` (`output()`).

    No judge processes by default: their fork server and judges cost about half a second of
    CPU a start (more than a third of a server's start), which init, not the test, reaps. A
    test about the judges or the process tree names BALANCE_WORKERS (JUDGES)."""

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
            {
                "BALANCE_RATE_LIMIT": "0",
                "BALANCE_JOBS_INTERVAL": "0",
                "BALANCE_SQL_THREADS": CONSOLE_THREADS,
                "BALANCE_WORKERS": "0",
                "PYTHONUNBUFFERED": "1",
            }
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

    def healthy(self) -> bool:
        """/healthz answers 200 (RuntimeError, with its output, if the process has ended)."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.output()}")
        return self.get("/healthz", timeout=2).status == 200

    def wait_healthy(self, timeout: float) -> None:
        try:
            wait_for(self.healthy, timeout, "server healthy", ignore=(OSError,))
        except TimeoutError:
            self.kill()
            raise TimeoutError(f"server not healthy after {timeout}s:\n{self.output()}") from None

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

    def output(self) -> str:
        parts = []
        for path in (self.stdout_path, self.stderr_path):
            if path.exists():
                parts.append(path.read_bytes().decode("utf-8", "replace"))
        return "\n".join(parts)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict | None = None,
        timeout: float = 60.0,
        source: str | None = None,
    ) -> Response:
        """One request on a connection of its own; `source`: the loopback address it comes
        from (127.0.0.2, ...: another client to the server's per-address limits)."""
        where = (source, 0) if source else None
        conn = http.client.HTTPConnection(
            self.host, self.port, timeout=timeout, source_address=where
        )
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
        finally:
            conn.close()
