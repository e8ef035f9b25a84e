"""No single client stops the others: each client address has a fair share of the upload slots
(and of the declared bytes in flight), a body arriving below the minimum rate is dropped, and
/healthz and /metrics say when uploads are being refused (docs/ingest.md, "Limits and
timeouts"). Real `balance serve` processes and real sockets; the flooding client is 127.0.0.1,
the others other loopback addresses (all of 127/8 is loopback on Linux).

Before: ~70 connections from one address, each sending an upload body a byte a second and
reopening when closed, held all 64 upload slots and every other client's upload was 503 while
/healthz said "ok"; 6 slow `POST /sql/api` bodies held every dashboard slot.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading

import pytest
from support import JSON, NDJSON, Response, Server, dumps, fresh_slow6, verdicts
from test_ingest_hostile_clients import UPLOAD_HEAD, close_all, metric, read_answer, status_of

FLOODER = "127.0.0.1"


def request_from(
    server, source: str, method: str, path: str, body=None, headers=None, timeout=30
) -> Response:
    """One request from the loopback address `source`."""
    return server.request(method, path, body, headers, timeout, source=source)


def upload_from(server, source: str, i: int = 0) -> Response:
    body = dumps(fresh_slow6(i))
    return request_from(server, source, "POST", "/v1/games", body, {"Content-Type": JSON})


class Flood:
    """`n` connections from FLOODER, each sending `head` and then a byte every `every`
    seconds; one the server answers or closes is reopened at once (as the attacker did)."""

    def __init__(self, server, n: int, head: bytes, every: float = 1.0):
        self.server, self.n, self.head, self.every = server, n, head, every
        self.socks: list[socket.socket | None] = [None] * n
        self.opened = 0
        self.rounds = 0  # of bytes sent to every connection
        self.answers: list[int | None] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _open(self) -> socket.socket | None:
        try:
            s = socket.create_connection(
                (self.server.host, self.server.port), timeout=5, source_address=(FLOODER, 0)
            )
            s.sendall(self.head)
        except OSError:
            return None
        s.setblocking(False)
        self.opened += 1
        return s

    def _run(self) -> None:
        while not self._stop.is_set():
            for i, s in enumerate(self.socks):
                if s is None:
                    self.socks[i] = self._open()
                    continue
                try:
                    data = s.recv(4096)
                except BlockingIOError:
                    data = None
                except OSError:
                    data = b""
                if data is not None:  # answered or closed: reopen
                    self.answers.append(status_of(data))
                    with contextlib.suppress(OSError):
                        s.close()
                    self.socks[i] = self._open()
                    continue
                with contextlib.suppress(OSError):
                    s.send(b" ")
            self.rounds += 1
            self._stop.wait(self.every)

    def __enter__(self) -> Flood:
        for i in range(self.n):
            self.socks[i] = self._open()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)
        close_all([s for s in self.socks if s is not None])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The default limits (64 upload slots, 30 s for a body, 10 s of grace before the
    minimum rate), as the attacker met them."""
    s = Server(tmp_path_factory.mktemp("fair")).start()
    yield s
    s.stop()


def wait_for(predicate, what: str, tries: int = 600) -> None:
    """Poll `predicate` (each try a request to the server, so no wall-clock bound)."""
    for _ in range(tries):
        if predicate():
            return
        threading.Event().wait(0.05)
    raise AssertionError(f"never: {what}")


@pytest.mark.slow
def test_one_address_flooding_slow_uploads_leaves_uploads_to_every_other_address(server):
    head = UPLOAD_HEAD.format(ctype=NDJSON, length=60_000).encode()
    with Flood(server, 70, head) as flood:
        # the flood holds what its share allows, and has been refused past it
        wait_for(
            lambda: flood.rounds >= 2 and metric(server, "balance_uploads_in_flight") >= 32,
            "the flood holding upload slots",
        )
        answers = [upload_from(server, f"127.0.0.{2 + i % 3}", i) for i in range(30)]
        assert [a.status for a in answers] == [200] * 30
        # liveness while the flood is on: its connections still hold slots
        assert metric(server, "balance_upload_most_slots_one_client") >= 8
        # the flood's own surplus was refused at once, and reopened
        wait_for(lambda: 429 in flood.answers and flood.opened > 70, "the flood refused")
        health = server.get("/healthz").json()
    assert all(verdicts(a) == ["accepted"] for a in answers)
    assert health["uploads"]["refused_last_minute"]["share"] > 0
    assert health["uploads"]["clients_at_share"] >= 1
    assert health["status"] == "degraded", health
    text = server.get("/metrics").body.decode()
    assert 'balance_upload_refused_total{reason="share"}' in text


@pytest.mark.slow
def test_slow_console_bodies_from_one_address_leave_the_dashboard_to_others(server):
    """Each sends `POST /sql/api` headers and a byte a second: before, 6 of them held every
    dashboard slot and every page was 503."""
    head = (
        b"POST /sql/api HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"Content-Length: 5000\r\n\r\n"
    )
    query = json.dumps({"sql": "SELECT 42 AS answer"}).encode()
    with Flood(server, 12, head) as flood:
        wait_for(lambda: flood.rounds >= 2, "the slow bodies sent")
        api = request_from(
            server, "127.0.0.2", "POST", "/sql/api", query, {"Content-Type": "application/json"}
        )
        html = {"Accept": "text/html"}
        page = request_from(server, "127.0.0.3", "GET", "/dashboard/", headers=html)
        assert (api.status, page.status) == (200, 200), api.body[:300]
        still_held = metric(server, "balance_uploads_in_flight")
        assert flood.opened >= 12
    assert api.json()["rows"] == [[42]]
    assert still_held >= 6  # the slow bodies were still there when both were answered


@pytest.fixture(scope="module")
def strict(tmp_path_factory):
    """A body must keep up 200 bytes a second after 1 s of grace (60 s to send it at most)."""
    env = {"BALANCE_BODY_GRACE": "1", "BALANCE_BODY_MIN_RATE": "200", "BALANCE_BODY_TIMEOUT": "60"}
    s = Server(tmp_path_factory.mktemp("strict"), env=env).start()
    yield s
    s.stop()


@pytest.mark.slow
def test_a_body_below_the_minimum_rate_is_408_long_before_its_deadline(strict):
    record = dumps(fresh_slow6())
    sock = socket.create_connection((strict.host, strict.port), timeout=5)
    stop = threading.Event()
    sent = []

    def drip():
        for byte in record[:-1]:  # never the whole body
            if stop.wait(0.25):
                return
            with contextlib.suppress(OSError):
                sock.send(bytes([byte]))
                sent.append(byte)

    try:
        sock.sendall(UPLOAD_HEAD.format(ctype=JSON, length=len(record)).encode())
        t = threading.Thread(target=drip, daemon=True)
        t.start()
        data, _ = read_answer(sock, 50, whole=True)
        stop.set()
        t.join(5)
    finally:
        sock.close()
    assert status_of(data) == 408 and b"BALANCE_BODY_MIN_RATE" in data, data
    assert len(sent) < len(record) - 1  # answered while it was still trickling
    text = strict.get("/metrics").body.decode()
    assert 'balance_upload_refused_total{reason="slow"}' in text
    assert 'balance_connections_closed_total{reason="slow"}' in text
    # nothing of it was stored: the same record uploads as new
    r = strict.post("/v1/games", record, JSON)
    assert verdicts(r) == ["accepted"]


@pytest.mark.slow
def test_a_body_sent_steadily_above_the_minimum_rate_is_accepted(strict):
    """Past the grace but faster than the minimum rate on average: stored."""
    record = dumps(fresh_slow6())
    piece = max(1, len(record) // 12)
    sock = socket.create_connection((strict.host, strict.port), timeout=5)
    try:
        sock.sendall(UPLOAD_HEAD.format(ctype=JSON, length=len(record)).encode())
        for start in range(0, len(record), piece):  # about 12 pieces, 0.15 s apart
            threading.Event().wait(0.15)
            sock.sendall(record[start : start + piece])
        data, _ = read_answer(sock, 30, whole=True)
    finally:
        sock.close()
    assert status_of(data) == 200 and b'"accepted"' in data, data


# -- the shares themselves, in-process ----------------------------------------------------------


def test_a_client_is_an_ipv4_address_or_an_ipv6_64():
    from dashboard.slots import client_key

    assert client_key("192.0.2.7") == "192.0.2.7"
    assert client_key("::ffff:192.0.2.7") == "192.0.2.7"
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:bbbb::9")
    assert client_key("2001:db8:1:2::1") != client_key("2001:db8:1:3::1")


def test_an_address_past_its_share_is_refused_only_while_slots_are_scarce():
    from dashboard.slots import Shares

    shares = Shares(16)  # share: 2
    assert shares.share == 2
    # alone, one address may take up to half of the slots
    assert [shares.take("a") for _ in range(9)] == [None] * 8 + ["share"]
    # the other half stays for everyone else, each up to its share once slots are scarce
    assert [shares.take("b") for _ in range(3)] == [None, None, "share"]
    assert [shares.take(f"c{i}") for i in range(6)] == [None] * 6
    assert shares.take("d") == "busy"
    shares.give("a")
    assert shares.take("a") == "share" and shares.take("d") is None
    assert shares.stats() == {"taken": 16, "clients": 9, "at_share": 2, "most_held": 7}


def test_an_address_has_its_share_of_the_declared_bytes_too():
    from ingest.server.guard import Uploads

    uploads = Uploads(16, 16_000, share=2)  # 2,000 declared bytes an address while scarce
    assert uploads.admit(1_500, "a") is None
    assert uploads.admit(7_000, "b") is None  # another address: the budget is half taken
    assert uploads.admit(1_500, "a") == "share"
    uploads.release(7_000, "b")
    assert uploads.admit(1_500, "a") is None  # bytes no longer scarce: it may go over


@pytest.mark.slow
def test_a_client_that_never_reads_its_download_is_cut_off_after_the_send_deadline(tmp_path):
    """granian takes a download's whole answer at once and holds it until the client reads it:
    a client that never reads held it (64 MiB at most each) as long as it stayed connected."""
    server = Server(tmp_path / "srv", env={"BALANCE_SEND_TIMEOUT": "2"}).start()
    big = "/sql/download.csv?q=SELECT+repeat('x',+1000)+AS+x+FROM+range(20000)"
    sock = socket.socket()
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(10)
        sock.connect((server.host, server.port))
        sock.sendall(f"GET {big} HTTP/1.1\r\nHost: {server.host}:{server.port}\r\n\r\n".encode())
        text = lambda: server.get("/metrics").body.decode()  # noqa: E731
        wait_for(
            lambda: 'balance_connections_closed_total{reason="unread"} 1' in text(),
            "the unread download's connection closed",
        )
        # the client finds its connection closed long before the 20 MB could have come
        got, closed = 0, False
        while not closed:
            try:
                chunk = sock.recv(65536)
            except OSError:
                break
            closed = not chunk
            got += len(chunk)
        assert got < 20_000_000
        # everyone else downloads as before
        r = request_from(server, "127.0.0.2", "GET", "/sql/download.csv?q=SELECT+1+AS+one")
        assert r.status == 200 and r.body.strip().splitlines()[-1] == b"1"
    finally:
        sock.close()
        server.stop()
