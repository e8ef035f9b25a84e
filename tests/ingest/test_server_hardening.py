"""A disk smaller than the free-space reserve (BALANCE_MIN_FREE) is said when the server starts,
on its terminal and by /healthz, not only in its log (a real tmpfs)."""

from __future__ import annotations

import os
import subprocess

import pytest
from support import SLOW6, Server, fresh

pytestmark = pytest.mark.slow  # real servers


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

    def healthy(self) -> bool:
        """/healthz answers at all (200 or 503)."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"server exited:\n{self.output()}")
        self.get("/healthz", timeout=2)
        return True


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
