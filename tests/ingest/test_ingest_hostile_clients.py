"""Slow, silent and idle clients against a real `balance serve`, over real sockets: none of
them may keep /healthz or another client's upload waiting (docs/ingest.md, "Limits and
timeouts"). Every client here is bounded in count and in time. The slow clients come from
127.0.0.1, the others from another loopback address (each address has its share of the
upload slots: test_ingest_fair_share.py). The tests assert order and liveness (the others are
answered while the slow ones are still waiting), never a time bound: a loaded machine only
makes everything later (benchmarks/soak.py measures the times).

Before the limits: 8 connections that sent upload headers and no body (or a byte a second)
blocked all 8 request threads, /healthz included; a declared 100 MiB body was read before its
413; ~1,100 idle connections (granian's limit of 1,024 at once, none ever closed) made the
server unreachable; `//v1/games` uploaded.
"""

from __future__ import annotations

import contextlib
import http.client
import re
import resource
import signal
import socket
import threading
import time

import pytest
from support import JSON, NDJSON, Response, Server, dumps, fresh_slow6, verdicts, wait_for

UPLOAD_HEAD = (
    "POST /v1/games HTTP/1.1\r\nHost: t\r\nContent-Type: {ctype}\r\nContent-Length: {length}"
    "\r\n\r\n"
)


def open_uploads(
    server, n: int, length: int = 60_000, ctype: str = NDJSON, first=b"", sources=None
):
    """n connections that send an upload's headers (and `first`), then nothing; from
    127.0.0.1, or each from its own of `sources`."""
    socks = []
    for i in range(n):
        source = (sources[i], 0) if sources else None
        s = socket.create_connection((server.host, server.port), timeout=5, source_address=source)
        s.sendall(UPLOAD_HEAD.format(ctype=ctype, length=length).encode() + first)
        socks.append(s)
    return socks


def close_all(socks) -> None:
    for s in socks:
        with contextlib.suppress(OSError):
            s.close()


@contextlib.contextmanager
def trickling(socks, every: float = 1.0):
    """Each socket sends one byte every `every` seconds while the block runs."""
    stop = threading.Event()

    def drip():
        while not stop.wait(every):
            for s in socks:
                with contextlib.suppress(OSError):
                    s.send(b" ")

    t = threading.Thread(target=drip, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join(5)


def read_answer(sock, timeout: float, whole: bool = False) -> tuple[bytes, bool]:
    """What the server sends within `timeout` seconds (`whole`: until one whole answer is
    in), and whether it closed the connection."""
    sock.settimeout(0.2)
    data, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        if whole and complete(data):
            return data, False
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except OSError:  # reset
            return data, True
        if not chunk:
            return data, True
        data += chunk
    return data, False


def complete(data: bytes) -> bool:
    head, sep, body = data.partition(b"\r\n\r\n")
    m = re.search(rb"(?i)content-length: *(\d+)", head)
    return bool(sep and m and len(body) >= int(m.group(1)))


def status_of(data: bytes) -> int | None:
    m = re.match(rb"HTTP/1\.1 (\d{3})", data)
    return int(m.group(1)) if m else None


OTHER = "127.0.0.2"  # another client: all of 127/8 is loopback on Linux


def from_other(server, method: str, path: str, body=None, headers=None) -> Response:
    return server.request(method, path, body, headers, 30, source=OTHER)


def unanswered(socks) -> bool:
    """None of `socks` has been answered or closed yet."""
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(1, socket.MSG_PEEK) is not None:
                return False
        except BlockingIOError:
            continue
        except OSError:
            return False
        finally:
            s.settimeout(5)
    return True


def metric(server, name: str) -> float:
    text = server.get("/metrics", timeout=5).body.decode()
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise KeyError(name)


def assert_others_answered(server, slow) -> None:
    """/healthz and an upload from another client are answered while every one of the `slow`
    connections is still waiting for its answer."""
    r = server.get("/healthz", timeout=30)
    assert r.status == 200
    r = from_other(server, "POST", "/v1/games", dumps(fresh_slow6()), {"Content-Type": JSON})
    assert r.status == 200 and verdicts(r) == ["accepted"]
    assert unanswered(slow)  # order: the others went first


@pytest.fixture(scope="module")
def patient(tmp_path_factory):
    """The defaults (30 s to send a body): the slow clients stay in flight for the whole test."""
    s = Server(tmp_path_factory.mktemp("patient")).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def brisk(tmp_path_factory):
    """2 s to send a body, 2 s of idleness allowed; 4 uploads in flight at most."""
    env = {
        "BALANCE_BODY_TIMEOUT": "2",
        "BALANCE_IDLE_TIMEOUT": "2",
        "BALANCE_MAX_UPLOADS": "4",
    }
    s = Server(tmp_path_factory.mktemp("brisk"), env=env).start()
    yield s
    s.stop()


# -- slow and silent uploads -------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("n", [8, 16, 50])
def test_silent_uploads_keep_nobody_else_waiting(patient, n):
    # from seven addresses of this test's own (the last test's may still be leaving): within
    # each one's share of the slots, so all of them hold one
    socks = open_uploads(patient, n, sources=[f"127.{n}.1.{1 + i % 7}" for i in range(n)])
    try:
        time.sleep(0.3)  # every one of them is in the server, waiting for its body
        assert_others_answered(patient, socks)
    finally:
        close_all(socks)


@pytest.mark.slow
@pytest.mark.parametrize("n", [8, 16])
def test_uploads_sending_a_byte_a_second_keep_nobody_else_waiting(patient, n):
    socks = open_uploads(patient, n)
    try:
        with trickling(socks):
            time.sleep(1.5)
            assert_others_answered(patient, socks)
    finally:
        close_all(socks)


@pytest.mark.slow
def test_a_declared_100_mib_body_is_413_at_once_and_closed(patient):
    socks = open_uploads(patient, 8, length=100 * 1024 * 1024)
    try:
        for s in socks:
            data, closed = read_answer(s, 30)
            assert status_of(data) == 413 and closed
        assert_others_answered(patient, [])
    finally:
        close_all(socks)


@pytest.mark.slow
def test_a_silent_upload_is_408_at_its_deadline_then_closed(brisk):
    (sock,) = open_uploads(brisk, 1)
    try:
        started = time.monotonic()
        data, closed = read_answer(sock, 30, whole=True)
        took = time.monotonic() - started
        assert status_of(data) == 408 and took > 1.5, (data, took)  # not before its deadline
        assert b"BALANCE_BODY_TIMEOUT" in data
        if not closed:
            _, closed = read_answer(sock, 2)
        assert closed
    finally:
        close_all([sock])
    assert metric(brisk, "balance_upload_bodies_reading") == 0
    text = brisk.get("/metrics", timeout=5).body.decode()
    assert 'balance_upload_refused_total{reason="timeout"}' in text


@pytest.mark.slow
def test_a_trickling_upload_is_408_at_its_deadline_then_closed(brisk):
    socks = open_uploads(brisk, 2, length=1000, ctype=JSON, first=b'{"schema":')
    try:
        with trickling(socks, every=0.5):
            for s in socks:  # answered while still trickling
                data, closed = read_answer(s, 30, whole=True)
                assert status_of(data) == 408, data
                if not closed:
                    _, closed = read_answer(s, 10)
                assert closed
    finally:
        close_all(socks)


@pytest.mark.slow
def test_more_uploads_than_slots_are_503_at_once(brisk):
    # BALANCE_MAX_UPLOADS=4, all waiting for their bodies, from four addresses (each within
    # its share)
    socks = open_uploads(brisk, 4, sources=[f"127.0.0.{3 + i}" for i in range(4)])
    try:
        time.sleep(0.3)
        r = from_other(brisk, "POST", "/v1/games", dumps(fresh_slow6()), {"Content-Type": JSON})
        assert r.status == 503 and r.headers["retry-after"] == "1"
        assert unanswered(socks)  # at once: before any of them was answered
        assert brisk.get("/healthz", timeout=5).status == 200
        text = brisk.get("/metrics", timeout=5).body.decode()
        assert 'balance_upload_refused_total{reason="busy"}' in text
    finally:
        close_all(socks)

    # their deadline passes (2 s): slots free again, uploads go through
    def through() -> Response | None:
        r = brisk.post("/v1/games", dumps(fresh_slow6()), JSON, timeout=5)
        return r if r.status == 200 else None

    r = wait_for(through, 8, "an upload through", every=0.3)
    assert verdicts(r) == ["accepted"]


@pytest.mark.slow
def test_a_body_cut_short_is_not_stored(brisk):
    record = dumps(fresh_slow6())
    sock = socket.create_connection((brisk.host, brisk.port), timeout=5)
    try:
        sock.sendall(UPLOAD_HEAD.format(ctype=JSON, length=len(record)).encode() + record[:-10])
        sock.shutdown(socket.SHUT_WR)  # the client gives up mid-body
        read_answer(sock, 3)
    finally:
        sock.close()
    r = brisk.post("/v1/games", record, JSON, timeout=5)
    assert verdicts(r) == ["accepted"]  # the first attempt stored nothing


# -- idle connections --------------------------------------------------------------------------


def raise_open_files(n: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= n:
        return
    if hard != resource.RLIM_INFINITY and hard < n:
        pytest.skip(f"needs {n} open files; the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (n, hard))


def open_idle(server, n: int) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.settimeout(5)
        s.connect((server.host, server.port))  # accepted by the kernel, even past granian's
        socks.append(s)
    return socks


def count_closed(socks, within: float) -> int:
    """How many of `socks` the server closes within `within` seconds."""
    for s in socks:
        s.setblocking(False)
    closed, deadline = set(), time.monotonic() + within
    while len(closed) < len(socks) and time.monotonic() < deadline:
        for i, s in enumerate(socks):
            if i in closed:
                continue
            try:
                if s.recv(1) == b"":
                    closed.add(i)
            except BlockingIOError:
                pass
            except OSError:
                closed.add(i)
        time.sleep(0.1)
    return len(closed)


@pytest.mark.slow
def test_1200_idle_connections_leave_the_server_reachable_and_are_closed(brisk):
    raise_open_files(1200 + 256)
    socks = open_idle(brisk, 1200)
    try:
        r = brisk.get("/healthz", timeout=30)
        assert r.status == 200
        assert unanswered(socks[-10:])  # answered while they were all open
        # BALANCE_IDLE_TIMEOUT=2: each is closed 2 s after it opened, give or take a sweep
        assert count_closed(socks, 60) == len(socks)
        assert brisk.get("/healthz", timeout=30).status == 200
    finally:
        close_all(socks)


@pytest.mark.slow
def test_a_keep_alive_connection_is_closed_after_the_idle_timeout(brisk):
    conn = http.client.HTTPConnection(brisk.host, brisk.port, timeout=5)
    try:
        conn.request("GET", "/healthz")
        assert conn.getresponse().read() and conn.sock is not None
        started = time.monotonic()
        assert count_closed([conn.sock], 60) == 1
        assert time.monotonic() - started > 1.5  # not before its idle timeout
    finally:
        conn.close()


@pytest.mark.slow
def test_past_the_connection_limit_idle_ones_are_shed_not_everyone_stalled(server_factory):
    """BALANCE_MAX_CONNECTIONS=200 and idle connections kept for a minute: 400 of them would
    fill granian's limit (it accepts nothing past it); idle ones are closed instead."""
    raise_open_files(400 + 256)
    server = server_factory(env={"BALANCE_MAX_CONNECTIONS": "200", "BALANCE_IDLE_TIMEOUT": "60"})
    socks = open_idle(server, 400)
    try:
        time.sleep(1.5)
        r = server.get("/healthz", timeout=30)
        assert r.status == 200
        assert count_closed(socks, 60) >= 200
        text = server.get("/metrics", timeout=5).body.decode()
        assert 'balance_connections_closed_total{reason="shed"}' in text
    finally:
        close_all(socks)


# -- only the canonical path uploads -----------------------------------------------------------


def raw_post(server, target: str, body: bytes) -> int:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=5)
    try:
        conn.putrequest("POST", target, skip_accept_encoding=True)
        conn.putheader("Content-Type", JSON)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


@pytest.mark.slow
@pytest.mark.parametrize("target", ["//v1/games", "/v1//games", "///v1/games"])
def test_paths_folded_onto_the_upload_route_do_not_upload(patient, target):
    record = dumps(fresh_slow6())
    assert raw_post(patient, target, record) == 404
    r = patient.post("/v1/games", record, JSON)
    assert verdicts(r) == ["accepted"]  # it was not stored by the first request


@pytest.mark.slow
def test_a_percent_encoded_upload_path_is_the_upload_path(patient):
    """RFC 3986 6.2.2.2: `%67` is `g`, so this is `/v1/games` (granian decodes it); it stores
    the record once, like the plain path (docs/ingest.md, "Paths")."""
    record = dumps(fresh_slow6())
    assert raw_post(patient, "/v1/%67ames", record) == 200
    r = patient.post("/v1/games", record, JSON)
    assert verdicts(r) == ["duplicate"]


def test_the_raw_uri_is_checked_where_the_server_gives_one():
    from ingest.server.guard import canonical

    assert canonical({"PATH_INFO": "/v1/games"}) is True
    assert canonical({"PATH_INFO": "/v1/games", "RAW_URI": "/v1/games?x=1"}) is True
    assert canonical({"PATH_INFO": "/v1/games", "RAW_URI": "/v1/%67ames"}) is False
    assert canonical({"PATH_INFO": "/v1/games", "REQUEST_URI": "/v1%2Fgames"}) is False
    assert canonical({"PATH_INFO": "//v1/games"}) is False
    assert canonical({"PATH_INFO": "/healthz"}) is None


# -- stopping with slow and idle clients connected --------------------------------------------


@pytest.mark.slow
def test_the_server_stops_at_once_with_silent_uploads_and_idle_connections_open(tmp_path):
    """granian waits for every open request before its worker exits: a silent upload kept
    `balance serve` from stopping for as long as its client stayed."""
    # bodies that would hold the server for 10 minutes, if it waited for them
    env = {"BALANCE_BODY_TIMEOUT": "600", "BALANCE_BODY_MIN_RATE": "0"}
    server = Server(tmp_path / "srv", env=env).start()
    socks = open_uploads(server, 3) + open_idle(server, 3)
    try:
        time.sleep(0.5)
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(120) == 0  # it stopped long before their deadline
    finally:
        close_all(socks)
        server.kill()
    assert "closing the store" in server.output()


# -- which socket is a stalled upload's (reaper.py), on made-up sockets ------------------------


def test_the_reaper_finds_the_socket_of_a_stalled_read_by_its_bytes_and_answers():
    from ingest.server.guard import GuardedStream
    from ingest.server.reaper import Conn, Reaper

    now = 1000.0
    head = {"REQUEST_METHOD": "POST", "PATH_INFO": "/v1/games", "SERVER_PROTOCOL": "HTTP/1.1"}
    head |= {"HTTP_HOST": "t", "CONTENT_TYPE": NDJSON, "CONTENT_LENGTH": "60000"}
    body = GuardedStream(None, now - 5, now - 3, 60_000, 60_000, "10.0.0.1", head, False)
    wire = UPLOAD_HEAD.format(ctype=NDJSON, length=60_000)
    assert body.head == len(wire.encode())
    body.total, body.want, body.progress_at = 1000, 59_000, now - 4.9

    def conn(inode, peer="10.0.0.1", received=body.head + 1000, sent=0, recv_ago=4.9, sent_ago=5):
        return Conn(inode, inode, socket.AF_INET, peer, received, sent, recv_ago, sent_ago)

    stalled = conn(1)
    others = [
        conn(2, peer="10.0.0.2"),  # another client
        conn(3, received=body.head + 900),  # fewer bytes than the upload read: another request
        conn(4, sent=500, sent_ago=1.0),  # answered since the upload began: another request
        conn(5, received=90_000, recv_ago=0.5),  # more bytes than it could have (keep-alive)
    ]
    assert Reaper.match(body, [*others, stalled], set(), now) is stalled
    assert Reaper.match(body, others, set(), now).inode == 5  # failing an exact match
    assert Reaper.match(body, others[:3], set(), now) is None
    assert Reaper.match(body, [stalled], {1}, now) is None  # already being closed
    # a socket a scan that began after the upload did had not seen is another request's
    younger = conn(6)
    younger.opened_after = now - 4
    assert Reaper.match(body, [younger], set(), now) is None
    younger.opened_after = now - 6  # it was there before the upload began
    assert Reaper.match(body, [younger], set(), now) is younger
