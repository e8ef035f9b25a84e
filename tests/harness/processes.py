"""Processes and ports: what a test needs to find a server's workers or a free port."""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

LOWEST_PORT = 10_000  # below it: well-known services' ports


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


def ephemeral_ports() -> tuple[int, int]:
    """The range the kernel takes outgoing connections' local ports from."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_port() -> int:
    """A free loopback port for a server or PostgreSQL to listen on, below the ephemeral
    range: a port from that range (what binding port 0 gives) can be taken, between this
    check and the server's bind or its restart, by any outgoing connection of the machine
    (a PostgreSQL client, an HTTP request), and the server then refuses to start ("in use")."""
    low, _ = ephemeral_ports()
    pick = random.SystemRandom()
    for _ in range(100):
        port = pick.randrange(LOWEST_PORT, max(LOWEST_PORT + 1, low))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:  # another listener, or a connection's TIME_WAIT
                continue
            return port
    with socket.socket() as s:  # the low range full: whatever the kernel gives
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
