"""A `balance serve` on a store file for a benchmark: started on a free port and waited for
until /healthz answers 200, then stopped. One place for what the dashboard and saved-query
benchmarks both need (each had its own copy of the start and of a poll loop that spun without
sleeping on a non-200 answer and went on silently when the server never came up)."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
from pathlib import Path
from typing import IO

from tests.harness.processes import free_port
from tests.harness.wait import wait_for

ROOT = Path(__file__).resolve().parents[1]


def _healthy(port: int, proc: subprocess.Popen) -> bool:
    if proc.poll() is not None:
        raise RuntimeError(f"balance serve exited ({proc.returncode}) before it answered")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    finally:
        conn.close()


def start_server(
    db: Path, work: Path, settings: dict[str, str] | None = None
) -> tuple[subprocess.Popen, int, IO[bytes]]:
    """`balance serve --db db` with no rate limit and no scheduled jobs (plus `settings`),
    its log in work/server.log; (process, port, log) once /healthz answers 200."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BALANCE_")}
    env.update(BALANCE_RATE_LIMIT="0", BALANCE_JOBS_INTERVAL="0", PYTHONPATH=str(ROOT))
    env.update(settings or {})
    log = open(work / "server.log", "wb")  # noqa: SIM115 - closed by stop_server
    proc = subprocess.Popen(
        [sys.executable, "-m", "ingest.cli", "serve", "--db", str(db), "--port", str(port),
         "--quiet"],
        cwd=ROOT, env=env, stdout=log, stderr=log,
    )  # fmt: skip
    try:
        wait_for(lambda: _healthy(port, proc), 300, f"balance serve healthy (log: {log.name})",
                 every=0.2, ignore=(OSError,))  # fmt: skip
    except BaseException:
        stop_server(proc, log)
        raise
    return proc, port, log


def stop_server(proc: subprocess.Popen, log: IO[bytes]) -> None:
    proc.terminate()
    proc.wait(60)
    log.close()
