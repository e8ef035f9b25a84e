"""dashboard/lifetime.py: a judge or SQL worker leaves when its server ends, whoever its
parent is (the fork server's children)."""

from __future__ import annotations

import subprocess
import sys

from support import REPO, wait_for

from dashboard.lifetime import alive


def test_a_process_leaves_with_the_one_it_watches_and_not_before():
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    watcher = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from dashboard.lifetime import leave_with; leave_with({server.pid})",
        ],
        cwd=REPO,
    )
    try:
        assert alive(server.pid)
        assert watcher.poll() is None  # still watching: the server is there
        server.kill()
        server.wait()
        assert not alive(server.pid)
        assert wait_for(lambda: watcher.poll() is not None, 30, "the watcher gone")
        assert watcher.returncode == 0
    finally:
        for p in (server, watcher):
            p.kill()
            p.wait()
