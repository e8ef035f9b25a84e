"""Closing the connections granian 2.8.9 would keep open forever (Linux, in the worker).

granian closes a connection that sends no complete request headers within its
header_read_timeout (BALANCE_IDLE_TIMEOUT, set by serve.py), between keep-alive requests too,
but not one that never sends a byte: such sockets pile up, and each holds one of the
connections granian serves at once (its `backpressure`, BALANCE_MAX_CONNECTIONS); past that it
accepts nothing more and every client stalls. Nor has it any deadline for a request body: an
upload read past its BALANCE_BODY_TIMEOUT (guard.py) stays blocked in granian's read.

So a thread of the worker looks at the worker's own TCP sockets on the server's port every
second or so (/proc/self/fd, getsockopt TCP_INFO: bytes received, ms since the last data in
and out) and shuts down (shutdown(2): granian then sees the end of the stream and closes it):

- *idle*: a connection that has not sent one byte in BALANCE_IDLE_TIMEOUT seconds;
- *stalled*: the connection of an upload whose body read is blocked past its deadline. The
  app knows only the client's address (granian gives no port), so the socket is the one
  from that address that sent no answer since the upload began and whose bytes received
  match what the upload read (request line and headers, as sized from the environ, plus the
  body so far, plus at most what the blocked read asked for); failing an exact match (a
  keep-alive connection carries earlier requests too, a chunked body its framing), the one
  whose last data came in nearest the read's last progress; never one a scan that began
  after the upload did had not seen (opened after it). Only its reading side is shut
  (SHUT_RD): the read returns, and the 408 still goes out before granian closes;
- *slow*: the connection of a body (an upload's, or another route's: guard.py) whose read is
  blocked past its grace (BALANCE_BODY_GRACE) while the bytes its socket received (less the
  request's head) fall behind BALANCE_BODY_MIN_RATE, found as a stalled one is and shut the
  same way; the guard answers 408. (A keep-alive socket's earlier requests count as body
  bytes here: such a body is judged leniently, never the other way.)
- *unread*: a connection whose answer waits in its send queue while nothing went out for
  BALANCE_SEND_TIMEOUT seconds: a client that stopped reading (granian takes a download's
  whole answer into memory at once, so such clients held it there for as long as they
  stayed). Shut both ways; a client reading, however slowly, is never one.
- *shed*: above 90% of BALANCE_MAX_CONNECTIONS, every connection with no request in flight
  (nothing received since its last answer, or nothing ever) for a second or more, looking
  again every 0.25 s while it lasts: granian accepts new connections again at once, and the
  clients that were waiting in the kernel's queue get in; idle ones pay for it.

A socket is shut down only after its fd was duplicated and found to be the same socket (inode)
in the same state, so an fd that granian closed and reused meanwhile is never touched.
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import struct
import sys
import termios
import threading
import time
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .guard import GuardedStream

log = logging.getLogger("ingest.serve")

# struct tcp_info (linux/tcp.h): offsets of the fields used here
_LAST_DATA_SENT, _LAST_DATA_RECV = 44, 52  # u32, ms ago
_BYTES_ACKED, _BYTES_RECEIVED = 120, 128  # u64 (Linux 4.1+)
_INFO_SIZE = 136
MATCH = 0.25  # seconds of leeway on "no answer since the upload began" (a 100 Continue)
RETRY = 2.0  # seconds before a stalled read whose socket was shut is matched again
SLACK = 64  # bytes of leeway on the size of a request's head (whitespace, folded headers)
SHED_AT = 0.9  # of BALANCE_MAX_CONNECTIONS
SHED_IDLE = 1.0  # seconds without traffic before a connection may be shed
SHED_EVERY = 0.25  # seconds between sweeps while shedding


@dataclass(slots=True)
class Conn:
    fd: int
    inode: int
    family: int
    peer: str
    received: int  # bytes received on the connection, ever
    sent: int  # bytes sent and acknowledged, ever
    recv_ago: float  # seconds since data last came in (or since it was opened)
    sent_ago: float  # seconds since data last went out (or since it was opened)
    opened_after: float = 0.0  # the start of the last scan it was not in (time.monotonic())

    @property
    def waiting(self) -> bool:
        """No request in flight: nothing ever received, or an answer sent after the last
        bytes came in."""
        return self.received == 0 or (self.sent > 0 and self.sent_ago < self.recv_ago)


def supported() -> bool:
    return sys.platform.startswith("linux") and hasattr(socket, "TCP_INFO")


def tcp_info(sock: socket.socket) -> tuple[int, int, float, float]:
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _INFO_SIZE)
    if len(raw) < _INFO_SIZE:
        raise OSError("TCP_INFO too short (kernel older than 4.1)")
    sent_ms, recv_ms = struct.unpack_from("=I4xI", raw, _LAST_DATA_SENT)
    acked, received = struct.unpack_from("=QQ", raw, _BYTES_ACKED)
    return received, acked, recv_ms / 1000, sent_ms / 1000


def unsent(fd: int) -> int:
    """Bytes in the socket's send queue, not yet acknowledged by the client (SIOCOUTQ)."""
    try:
        raw = fcntl.ioctl(fd, termios.TIOCOUTQ, b"\0\0\0\0")
    except OSError:
        return 0
    return struct.unpack("i", raw)[0]


def _address(ip: str) -> str:
    return ip[7:] if ip.startswith("::ffff:") else ip


class Reaper(threading.Thread):
    def __init__(
        self,
        port: int,
        idle_timeout: float,
        max_connections: int,
        stalled: Callable[[float], list[GuardedStream]] = lambda now: [],
        metrics=None,
        dawdling: Callable[[float], list[GuardedStream]] = lambda now: [],
        send_timeout: float = 0.0,
        interval: float | None = None,
    ):
        super().__init__(name="reaper", daemon=True)
        self.port = port
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self.stalled = stalled
        self.dawdling = dawdling
        self.send_timeout = send_timeout
        self.metrics = metrics
        self.interval = interval or min(1.0, max(0.25, idle_timeout / 4))
        self._stop = threading.Event()
        self._poke = threading.Event()
        self._stopping = False
        # inode -> (family, peer, opened after: the start of the last scan it was not in) or
        # None (not a connection of the port)
        self._known: dict[int, tuple[int, str, float] | None] = {}
        self._last_scan = 0.0
        self.open = 0

    def stop(self) -> None:
        self._stop.set()
        self._poke.set()

    def stopping(self) -> None:
        """The server stops: from now on every sweep closes every connection with no request
        in flight, and the next sweep starts at once."""
        self._stopping = True
        self._poke.set()

    def run(self) -> None:
        wait = self.interval
        while True:
            self._poke.wait(wait)
            self._poke.clear()
            if self._stop.is_set():
                return
            try:
                shed = self.sweep()["shed"]
            except Exception as exc:  # keep reaping; the type only (no request data)
                log.warning("reaper: %s in a sweep", type(exc).__name__)
                shed = 0
            wait = SHED_EVERY if shed or self._stopping else self.interval

    # -- one pass ------------------------------------------------------------------------------

    def sweep(self) -> dict[str, int]:
        now = time.monotonic()
        conns = self.scan()
        self.open = len(conns)
        closing: dict[int, tuple[Conn, str, int, GuardedStream | None]] = {}
        for c in conns:
            if c.received == 0 and c.recv_ago >= self.idle_timeout:
                closing[c.inode] = (c, "idle", socket.SHUT_RDWR, None)
        if self.send_timeout > 0:
            for c in conns:
                if c.sent_ago >= self.send_timeout and c.inode not in closing and unsent(c.fd):
                    closing[c.inode] = (c, "unread", socket.SHUT_RDWR, None)
        for stream in self.stalled(now):
            hit = self.match(stream, conns, closing, now)
            if hit is not None:
                closing[hit.inode] = (hit, "stalled", socket.SHUT_RD, stream)
        for stream in self.dawdling(now):
            hit = self.match(stream, conns, closing, now)
            if hit is not None and stream.late(now, max(0, hit.received - stream.head)):
                stream.slow = True  # the guard answers 408 "too slow" once its read returns
                closing[hit.inode] = (hit, "slow", socket.SHUT_RD, stream)
        if self._stopping or len(conns) - len(closing) > self.max_connections * SHED_AT:
            least = 0.0 if self._stopping else SHED_IDLE
            for c in conns:
                quiet = min(c.recv_ago, c.sent_ago if c.sent else c.recv_ago)
                if c.inode not in closing and c.waiting and quiet >= least:
                    closing[c.inode] = (c, "shed", socket.SHUT_RDWR, None)
        closed = {"idle": 0, "stalled": 0, "slow": 0, "unread": 0, "shed": 0}
        for c, reason, how, body in closing.values():
            if self._shutdown(c, how, same=reason not in ("stalled", "slow", "unread")):
                if body is not None:
                    body.shut = now  # looked at again in RETRY s if its read still blocks
                closed[reason] += 1
                if self.metrics is not None:
                    self.metrics.count_event("balance_connections_closed_total", reason)
        if closed["shed"] and not self._stopping:
            log.warning(
                "%d connections open, near BALANCE_MAX_CONNECTIONS=%d: closed %d idle ones",
                len(conns),
                self.max_connections,
                closed["shed"],
            )
        if self.metrics is not None:
            self.metrics.set_gauge(
                "balance_connections_open",
                "TCP connections the server holds open (at the reaper's last look).",
                len(conns) - sum(closed.values()),
            )
        return closed

    @staticmethod
    def match(
        body: GuardedStream, conns: list[Conn], taken: Container[int], now: float
    ) -> Conn | None:
        """The socket of `body` (guard.GuardedStream), a read blocked past its deadline."""
        ip = _address(body.ip)
        lo = body.head + body.total - SLACK
        hi = body.head + body.total + body.want + SLACK
        best, best_key = None, None
        for c in conns:
            if c.inode in taken or not c.received or _address(c.peer) != ip:
                continue
            if c.opened_after > body.started:
                continue  # opened after the request began: another request's
            if c.received < lo:
                continue  # fewer bytes than this upload has read: another request
            if c.sent and now - c.sent_ago > body.started + MATCH:
                continue  # an answer went out since the upload began: another request
            exact = not body.chunked and c.received <= hi
            key = (not exact, abs((now - c.recv_ago) - body.progress_at))
            if best_key is None or key < best_key:
                best, best_key = c, key
        return best

    def scan(self) -> list[Conn]:
        """The worker's accepted TCP connections on the server's port."""
        out, seen = [], set()
        began = time.monotonic()
        for name in os.listdir("/proc/self/fd"):
            try:
                fd = int(name)
                link = os.readlink(f"/proc/self/fd/{name}")
            except (OSError, ValueError):
                continue
            if not link.startswith("socket:["):
                continue
            inode = int(link[8:-1])
            seen.add(inode)
            if inode not in self._known:
                found = self._classify(fd)
                self._known[inode] = None if found is None else (*found, self._last_scan)
            known = self._known[inode]
            if known is None:
                continue
            family, peer, opened_after = known
            sock = socket.socket(family, socket.SOCK_STREAM, 0, fileno=fd)
            try:
                received, sent, recv_ago, sent_ago = tcp_info(sock)
            except OSError:
                continue
            finally:
                sock.detach()  # the fd stays granian's
            out.append(
                Conn(fd, inode, family, peer, received, sent, recv_ago, sent_ago, opened_after)
            )
        for inode in self._known.keys() - seen:
            del self._known[inode]
        self._last_scan = began
        return out

    def _classify(self, fd: int) -> tuple[int, str] | None:
        try:
            sock = socket.socket(fileno=fd)
        except OSError:
            return None
        try:
            if sock.type != socket.SOCK_STREAM or sock.family not in (
                socket.AF_INET,
                socket.AF_INET6,
            ):
                return None
            if sock.getsockname()[1] != self.port:
                return None
            peer = sock.getpeername()[0]  # the listening socket has none: OSError
            return sock.family, peer
        except OSError:
            return None
        finally:
            sock.detach()

    def _shutdown(self, c: Conn, how: int, same: bool = True) -> bool:
        """Shut down c's socket if its fd still is that socket (and, `same`, has received
        nothing since the scan: an idle one that just sent a request is left alone)."""
        try:
            dup = os.dup(c.fd)
        except OSError:
            return False
        try:
            if os.fstat(dup).st_ino != c.inode:
                return False  # closed and reused since the scan
            sock = socket.socket(c.family, socket.SOCK_STREAM, 0, fileno=dup)
            try:
                received, _, _, _ = tcp_info(sock)
                if same and received != c.received:
                    return False  # it spoke meanwhile
                sock.shutdown(how)
                return True
            except OSError:
                return False
            finally:
                sock.detach()
        finally:
            os.close(dup)
