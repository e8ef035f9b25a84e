"""Processes and ports: what a test needs to find a server's workers or a free port."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def children(pid: int) -> list[int]:
    """The processes `pid` started (Linux /proc); none once it has ended (a process or
    thread that ends while it is read is skipped, not an error)."""
    out = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:
        return out
    for task in tasks:
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return out


def descendants(pid: int) -> list[int]:
    """Every process under `pid`: a server's worker and its judge processes."""
    return [p for child in children(pid) for p in (child, *descendants(child))]


def comm(pid: int) -> str:
    """A process's name (/proc/<pid>/comm: `balance-sql` for an SQL worker), "" once gone."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_bytes(disk: Path) -> int:
    st = os.statvfs(disk)
    return st.f_bavail * st.f_frsize


def ended(pids: list[int]) -> bool:
    """None of `pids` runs any more: gone, or a zombie its parent has not reaped yet."""

    def running(pid: int) -> bool:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            return False
        return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")

    return not any(map(running, pids))


def gone(pids: list[int]) -> bool:
    """None of `pids` is left in /proc (not even a zombie waiting for its parent)."""
    return not any(Path(f"/proc/{pid}").exists() for pid in pids)
