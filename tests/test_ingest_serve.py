"""`balance serve` refuses, with a clear message, what would make it fail or misbehave later:
a port another server listens on (granian's SO_REUSEPORT would share it silently), or a store
file another process holds."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO, free_port


def serve(server, db, port) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "replays.cli", "serve", "--db", str(db), "--port", str(port)]
    return subprocess.run(
        cmd, cwd=REPO, env=server.environment(), capture_output=True, text=True, timeout=60
    )


def test_a_second_server_on_a_busy_port_refuses_to_start(server_factory, tmp_path):
    server = server_factory()
    second = serve(server, tmp_path / "other.duckdb", server.port)
    assert second.returncode == 2
    assert f"127.0.0.1:{server.port} is in use" in second.stderr
    assert not (tmp_path / "other.duckdb").exists()  # refused before touching anything
    assert server.get("/healthz").status == 200


def test_a_second_server_on_the_same_store_refuses_to_start(server_factory):
    server = server_factory()
    second = serve(server, server.db, free_port())
    assert second.returncode == 2
    assert "is open in another process" in second.stderr
    assert server.get("/healthz").status == 200
