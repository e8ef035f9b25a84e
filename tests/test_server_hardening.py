"""A real server's answers carry the anti-framing and no-sniffing headers on the wire, the
console's errors from a Python function carry no traceback or install path, and a disk smaller
than the free-space reserve is said at start, on the terminal and by /healthz (a real tmpfs)."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.parse

import pytest
from support import REPO, SLOW6, Server, fresh

pytestmark = pytest.mark.slow  # real servers

HEADERS = {
    "x-frame-options": "DENY",
    "content-security-policy": "frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("hardening")).start()
    yield s
    s.stop()


def test_every_answer_carries_the_security_headers(server):
    q = urllib.parse.urlencode({"q": "SELECT 1 AS one"})
    answers = [
        server.get("/healthz"),
        server.get("/"),
        server.get("/metrics"),
        server.get("/nowhere"),
        server.upload([fresh(SLOW6[0])]),
        server.post("/v1/games", b"{}", "text/plain"),  # 415 from the upload route
        server.post("/v1/games", b"x" * (70 * 1024), "application/json"),  # 413
        server.get("/dashboard/"),
        server.get("/sql"),
        server.get("/sql/download.csv?" + q),
        server.get("/sql/saved"),
        server.get("/dashboard/static/style.css"),
    ]
    statuses = [a.status for a in answers]
    assert {200, 404, 413, 415} <= set(statuses)
    for a in answers:
        assert {k: a.headers.get(k) for k in HEADERS} == HEADERS, (a.status, a.headers)


def test_a_python_function_error_reaches_the_console_without_a_traceback(server):
    for sql in ("SELECT raw_json('x'::BLOB, 77)", "SELECT raw_json('\\xff\\xfe'::BLOB, 0)"):
        r = server.post("/sql/api", json.dumps({"sql": sql}), "application/json")
        assert r.status == 400
        message = r.json()["message"]
        assert "raw_json: " in message and "\n" not in message, message
        for leak in ("At:", ".py", "Traceback", str(REPO), "site-packages"):
            assert leak not in message, message


@pytest.fixture
def small_disk(tmp_path):
    """A real tmpfs of 16 MiB, below the 64 MiB reserve (mounted as root; else skipped)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)]).returncode:
        pytest.skip("cannot mount a tmpfs here (no privilege in this container)")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)])


class Unhealthy(Server):
    """A server that is up but whose /healthz may say 503."""

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited:\n{self.output()}")
            try:
                self.get("/healthz", timeout=2)
                return
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(self.output())


def test_a_disk_smaller_than_the_reserve_is_said_at_start(small_disk, tmp_path):
    server = Unhealthy(tmp_path / "srv", db=small_disk / "store.duckdb")
    server.start()
    try:
        health = server.get("/healthz")
        upload = server.upload([fresh(SLOW6[0])])
    finally:
        server.stop()
    stderr = server.stderr_path.read_text()
    said = [line for line in stderr.splitlines() if line.startswith("balance serve: ")]
    assert len(said) == 1 and "uploads will be refused (503)" in said[0], stderr
    assert "less than the free-space reserve" in said[0] and "BALANCE_MIN_FREE" in said[0]
    assert health.status == 503
    assert "less than the free-space reserve" in health.json()["reason"]
    assert upload.status == 503
