"""Processes that must not outlive the server that started them.

The judges (ingest/server/workers.py) and the SQL console's workers (console/sqlworker.py) are
forked from the server's fork server, so their parent is the fork server, which stays while
any child of it does. A server killed with SIGKILL can stop none of them: each watches the
server itself, from a daemon thread, and leaves the moment it ends, even in the middle of a
task (a pipe's end of file only shows between tasks). Here, below both in the layers.
"""

from __future__ import annotations

import os
import select
import time


def alive(pid: int) -> bool:
    """Whether process `pid` exists (another user's counts: it is there)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def leave_with(pid: int) -> None:
    """Block until process `pid` has ended, then end this process at once (`os._exit`: no
    clean-up of a parent's resources a fork inherited)."""
    try:
        watch = os.pidfd_open(pid)  # readable once it has ended (Linux)
    except ProcessLookupError:
        os._exit(0)
    except (AttributeError, OSError):  # no pidfd: look once a second
        while alive(pid):
            time.sleep(1.0)
    else:
        select.select([watch], [], [])
    os._exit(0)
