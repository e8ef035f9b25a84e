"""The limits in front of the upload route, so that no client can hold the server: a body
deadline and a bound on uploads in flight (eight silent uploads once blocked every route).

granian 2.8.9 calls the app as soon as a request's headers are in; `wsgi.input.read(n)` then
blocks its Python thread (the GIL released) until n bytes, the end of the body or the end of
the connection, and granian has no body timeout: a client that declares a body and sends
nothing (or a byte a second) holds that thread as long as it keeps the connection open. Such
a read cannot be woken from Python, nor handed to another thread: a read still blocked after
its request was answered stops the whole worker until it returns (measured). So:

- at most `BALANCE_MAX_UPLOADS` uploads are in flight (reading or being judged), and their
  declared bodies together at most `BALANCE_UPLOAD_BYTES`; past either an upload is answered
  503 + Retry-After at once, its body unread. granian runs `--threads` plus
  `BALANCE_MAX_UPLOADS` Python threads (serve.py), so uploads, slow or not, always leave
  `--threads` of them to every other request;
- the body is read through `GuardedStream`, which knows the deadline (`BALANCE_BODY_TIMEOUT`
  from the request's start): a read that returns after it, or a body that ends before its
  Content-Length, aborts the upload before anything is judged or stored (408 / 400). A read
  still blocked at the deadline is ended by the reaper (reaper.py): it finds that request's
  socket among the worker's own (same address, bytes received, no answer since the request
  began) and shuts its reading side, so the read returns and the 408 goes out;
- a declared Content-Length over the limit (64 KiB + a line break for a single record, the
  batch limit for NDJSON), an unknown Content-Type or Content-Encoding is answered at once
  (413 / 415 / 429, by `upload.handle` on an empty body) without reading a byte of it; granian
  closes a connection whose body was left unread, as it does after a chunked body cut off one
  byte past the limit;
- only the exact path `/v1/games` uploads: PATH_INFO variants that werkzeug would fold onto it
  (`//v1/games`, `/v1//games`) are 404. `/v1/%67ames` is the same path by RFC 3986 6.2.2.2
  (an encoded unreserved character): granian decodes it and gives no raw request URI, so it
  uploads; where a server passes one (`RAW_URI`, `REQUEST_URI`: gunicorn, uWSGI, werkzeug) it
  must match too.
"""

from __future__ import annotations

import io
import logging
import os
import re
import threading
import time
from http import HTTPStatus

import orjson

from dashboard.slots import Shares, client_key

from .bodies import BodyTooLarge
from .encodings import coding
from .metrics import OTHER, method_label
from .pipeline import MAX_RECORD
from .responses import error_payload
from .upload import JSON, NDJSON, ROUTE, Answer, handle

log = logging.getLogger("ingest.upload")
access_log = logging.getLogger("ingest.access")

_SLASHES = re.compile(r"/{2,}")
RETRY = 2.0  # seconds before a read still blocked after the reaper shut a socket is retried


class BodyTimeout(BodyTooLarge):
    """The body did not arrive by the deadline (a BodyTooLarge to upload.py: nothing stored)."""


class BodyIncomplete(BodyTooLarge):
    """The body ended before its Content-Length: the client went away."""


class GuardedStream:
    """An upload body read in the request thread, with its deadline and at most `cap` bytes;
    what the reaper needs to find its socket (`head`: the request's bytes before the body)."""

    __slots__ = (
        "stream", "deadline", "cap", "declared", "ip", "environ", "started", "chunked",
        "total", "want", "reading", "progress_at", "ended", "timed_out", "failed",
        "shut", "eof", "_head", "grace", "min_rate", "slow",
    )  # fmt: skip

    def __init__(self, stream, started, deadline, cap, declared, ip, environ, chunked):
        self.stream = stream
        self.started = started  # time.monotonic(), as the reaper's clock
        self.deadline = deadline
        self.cap = cap
        self.declared = declared
        self.ip = ip
        self.environ = environ  # sized only if the reaper needs it (head)
        self._head: int | None = None
        self.chunked = chunked
        self.total = 0  # bytes returned so far
        self.want = 0  # bytes asked of the read in progress
        self.reading = False
        self.progress_at = started  # when the last read returned data
        self.ended = False
        self.eof = False
        self.timed_out = False
        self.failed = False
        self.shut = 0.0  # when the reaper shut the reading side of its socket (reaper.py)
        self.grace = 0.0  # seconds before the body's rate is held to `min_rate`
        self.min_rate = 0.0  # bytes a second, on average from the start; 0: no minimum
        self.slow = False  # cut off for arriving slower than that

    def late(self, now: float, received: int) -> bool:
        """Whether `received` body bytes by `now` is slower than the minimum rate: past the
        grace, each `min_rate` bytes buy one more second (as Apache's mod_reqtimeout
        MinRate does)."""
        if self.min_rate <= 0:
            return False
        return now >= self.started + self.grace + received / self.min_rate

    @property
    def head(self) -> int:
        if self._head is None:
            self._head = head_size(self.environ) if isinstance(self.environ, dict) else 0
        return self._head

    def read(self, size: int | None = -1) -> bytes:
        return self._call(self.stream.read, size)

    def readline(self, size: int | None = -1) -> bytes:
        return self._call(self.stream.readline, size)

    def _call(self, fn, size) -> bytes:
        if self.ended:
            return b""
        left = self.cap - self.total
        n = left if size is None or size < 0 else min(size, left)
        if n <= 0:
            self.ended = True  # the cap: what is left stays unread (granian closes)
            return b""
        if time.monotonic() >= self.deadline:
            self._timeout()
        self.want, self.reading = n, True
        try:
            data = fn(n)
        except Exception:
            self.ended = self.failed = True
            raise BodyIncomplete from None
        finally:
            self.reading = False
        now = time.monotonic()
        if now >= self.deadline:
            self._timeout()
        got = self.total + len(data)
        if self.slow or (data and got != self.declared and self.late(now, got)):
            self.slow = True
            self._timeout()
        if not data:
            self.ended = self.eof = True
            if self.declared is not None and self.total < self.declared:
                self.failed = True
                raise BodyIncomplete
            return data
        self.total += len(data)
        self.progress_at = now
        return data

    def _timeout(self):
        self.ended = self.timed_out = True
        raise BodyTimeout


class Uploads:
    """The upload slots (shared fairly between client addresses: dashboard/slots.py), the byte
    budget, the bodies being read (for the reaper) and the recent refusals (for /healthz)."""

    def __init__(self, slots: int, budget: int, share: int = 0):
        self.shares = Shares(slots, share)
        self.slots = self.shares.slots
        self.budget = max(0, budget)
        # an address's share of the declared bytes is its share of the slots
        self.byte_share = self.budget * self.shares.share // self.slots
        self._lock = threading.Lock()
        self._bytes = 0
        self._client_bytes: dict[str, int] = {}
        self._reading: set[GuardedStream] = set()
        self.recent = Recent()

    def admit(self, reserve: int, key: str = "") -> str | None:
        """Take a slot and `reserve` bytes of the budget for client `key`; None, or why not
        ("busy": no slot free; "memory": the byte budget; "share": this client holds its
        share while slots or bytes are scarce)."""
        with self._lock:
            taken = self.shares.taken
            if self._bytes + reserve > self.budget and taken:
                return "memory"  # (one upload alone always fits: its limit is checked first)
            mine = self._client_bytes.get(key, 0)
            scarce = taken * 2 >= self.slots or (self._bytes + reserve) * 2 > self.budget
            if mine and mine + reserve > self.byte_share and scarce:
                return "share"
            refused = self.shares.take(key)
            if refused is not None:
                return refused
            self._bytes += reserve
            self._client_bytes[key] = mine + reserve
        return None

    def release(self, reserve: int, key: str = "") -> None:
        with self._lock:
            self.shares.give(key)
            self._bytes -= reserve
            left = self._client_bytes.get(key, 0) - reserve
            if left > 0:
                self._client_bytes[key] = left
            else:
                self._client_bytes.pop(key, None)

    def track(self, stream: GuardedStream) -> None:
        with self._lock:
            self._reading.add(stream)

    def untrack(self, stream: GuardedStream) -> None:
        with self._lock:
            self._reading.discard(stream)

    def expire(self) -> None:
        """Every body still being read is past its deadline from now (the server stops)."""
        now = time.monotonic()
        with self._lock:
            for s in self._reading:
                s.deadline = min(s.deadline, now)

    def stalled(self, now: float) -> list[GuardedStream]:
        """Bodies whose read is still blocked past their deadline (for the reaper)."""
        with self._lock:
            return [
                s
                for s in self._reading
                if s.reading and now >= s.deadline and now - s.shut >= RETRY
            ]

    def dawdling(self, now: float) -> list[GuardedStream]:
        """Bodies whose read is blocked past their grace: the reaper checks their rate
        against the bytes their socket received (GuardedStream.late)."""
        with self._lock:
            return [
                s
                for s in self._reading
                if s.reading
                and s.min_rate > 0
                and now >= s.started + s.grace
                and now < s.deadline
                and now - s.shut >= RETRY
            ]

    def health(self) -> dict:
        """What /healthz says of the uploads: slots held, the clients at their share, and
        the refusals of the last minute by reason (no address ever)."""
        stats = self.shares.stats()
        attempts, refused = self.recent.totals()
        total = sum(refused.values())
        return {
            "slots": self.slots,
            "slots_taken": stats["taken"],
            "clients_at_share": stats["at_share"],
            "attempts_last_minute": attempts,
            "refused_last_minute": refused,
            "degraded": total >= DEGRADED_AT and total * 10 >= attempts,
        }

    def gauges(self) -> dict[str, tuple[str, float]]:
        """For /metrics (Metrics.sources)."""
        stats = self.shares.stats()
        with self._lock:
            return {
                "balance_uploads_in_flight": (
                    "Uploads being read or processed (at most BALANCE_MAX_UPLOADS).",
                    stats["taken"],
                ),
                "balance_upload_bytes_in_flight": (
                    "Declared body bytes of the uploads in flight (at most BALANCE_UPLOAD_BYTES).",
                    self._bytes,
                ),
                "balance_upload_bodies_reading": (
                    "Upload bodies being read.",
                    len(self._reading),
                ),
                "balance_upload_clients": (
                    "Client addresses with uploads in flight.",
                    stats["clients"],
                ),
                "balance_upload_clients_at_share": (
                    "Client addresses holding their share of the upload slots "
                    "(BALANCE_UPLOAD_SHARE).",
                    stats["at_share"],
                ),
                "balance_upload_most_slots_one_client": (
                    "The most upload slots one client address holds.",
                    stats["most_held"],
                ),
            }


DEGRADED_AT = 20  # refusals in the last minute (and a tenth of the attempts) for "degraded"
WINDOW = 60  # seconds /healthz looks back


class Recent:
    """Upload attempts and refusals by reason, per second, over the last WINDOW seconds."""

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._seconds: dict[int, list] = {}  # second -> [attempts, {reason: n}]

    def attempt(self, refused: str | None = None) -> None:
        self._add(1, refused)

    def refuse(self, reason: str) -> None:
        """A refusal of an attempt already counted (a body cut off)."""
        self._add(0, reason)

    def _add(self, attempts: int, refused: str | None) -> None:
        now = int(self._clock())
        with self._lock:
            slot = self._seconds.get(now)
            if slot is None:
                slot = self._seconds[now] = [0, {}]
                for old in [t for t in self._seconds if t <= now - WINDOW]:
                    del self._seconds[old]
            slot[0] += attempts
            if refused is not None:
                slot[1][refused] = slot[1].get(refused, 0) + 1

    def totals(self) -> tuple[int, dict[str, int]]:
        since = int(self._clock()) - WINDOW
        attempts = 0
        refused: dict[str, int] = {}
        with self._lock:
            for t, (n, reasons) in self._seconds.items():
                if t > since:
                    attempts += n
                    for reason, k in reasons.items():
                        refused[reason] = refused.get(reason, 0) + k
        return attempts, refused


def upload_limit(kind: str, max_body: int) -> int:
    """The most body bytes an upload of this Content-Type may declare (see upload.py)."""
    return MAX_RECORD + 2 if kind == JSON else max_body


def canonical(environ) -> bool | None:
    """True: the upload path itself; False: a variant of it that must not upload (404);
    None: another path."""
    path = environ.get("PATH_INFO", "")
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if path == ROUTE:
        return raw is None or raw.partition("?")[0] == ROUTE
    if path.endswith("games") and _SLASHES.sub("/", path) == ROUTE:
        return False
    return None


def head_size(environ) -> int:
    """About how many bytes the request line and headers took on the wire (names keep their
    length whatever their case; one space after each colon assumed). granian's environ also
    holds the process environment: its HTTP_* variables (HTTP_PROXY...) are no headers."""
    query = environ.get("QUERY_STRING", "")
    target = len(environ.get("PATH_INFO", "")) + (len(query) + 1 if query else 0)
    size = len(environ.get("REQUEST_METHOD", "")) + target + len(environ.get("SERVER_PROTOCOL", ""))
    size += 4  # two spaces, CRLF
    for key, value in environ.items():
        if key.startswith("HTTP_") and os.environ.get(key) != value:
            size += len(key) - 5 + 4 + len(value)
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            size += len(key) + 4 + len(value)
    return size + 2  # the blank line


BODY_METHODS = frozenset(("POST", "PUT", "PATCH", "DELETE"))


class GuardedUploadRoute:
    """WSGI middleware: POST /v1/games answered here (upload.handle, without Flask), with the
    body deadline and minimum rate, the upload slots and their per-client share, and the
    canonical path. Every other request goes to `app` (Flask), but one with a body has it read
    first under the same limits (a slow `POST /sql/api` body held a dashboard slot for
    minutes)."""

    def __init__(self, app, state, uploads: Uploads | None = None):
        self.app = app
        self.state = state
        conf = state.config
        self.uploads = uploads or Uploads(
            conf["BALANCE_MAX_UPLOADS"], conf["BALANCE_UPLOAD_BYTES"], conf["BALANCE_UPLOAD_SHARE"]
        )
        self.body_timeout = float(conf["BALANCE_BODY_TIMEOUT"])
        self.grace = float(conf["BALANCE_BODY_GRACE"])
        self.min_rate = float(conf["BALANCE_BODY_MIN_RATE"])

    def __call__(self, environ, start_response):
        where = canonical(environ)
        method = environ.get("REQUEST_METHOD", "")
        if where is None or (where and method != "POST"):
            if method in BODY_METHODS and (_length(environ) or _chunked(environ)):
                return self.other_with_body(environ, start_response)
            return self.app(environ, start_response)
        started = time.perf_counter()
        if where:
            route, method = ROUTE, "POST"
            try:
                status, payload, headers = self.upload(environ)
            except Exception as exc:
                # the type only: a message or traceback could quote request data
                log.error("unhandled %s in an upload", type(exc).__name__)
                message = "internal error; the request may be retried"
                status, payload, headers = 500, error_payload(500, message), {}
        else:
            route, method = "other", method_label(method)
            message = f"not found: uploads go to {ROUTE} exactly"
            status, payload, headers = 404, error_payload(404, message), {}
        return self._answer(start_response, started, route, method, status, payload, headers)

    def _answer(self, start_response, started, route, method, status, payload, headers):
        body = orjson.dumps(payload)
        start_response(
            f"{status} {HTTPStatus(status).phrase}",
            [
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(body))),
                *headers.items(),
            ],
        )
        seconds = time.perf_counter() - started
        self.state.metrics.observe_request(route, method, status, seconds)
        access_log.info("%s %s %d %.1fms", method, route, status, seconds * 1000)
        return [body]

    def other_with_body(self, environ, start_response):
        """Read the body of a request for another route (the console's, the dashboard's, the
        admin's) under the uploads' slots, share, deadline and rate, then hand the request
        to the app with the body in memory: a slow body never reaches a dashboard slot."""
        started = time.perf_counter()
        method = method_label(environ.get("REQUEST_METHOD", ""))
        limit = int(self.state.config["BALANCE_MAX_BODY"])
        length = _length(environ)
        answer = None
        if length is not None and length > limit:
            message = f"a request body is at most {limit} bytes (BALANCE_MAX_BODY)"
            answer = 413, error_payload(413, message), {"Connection": "close"}
        else:
            data, answer = self._read(environ, limit, length)
        if answer is not None:
            status, payload, headers = answer
            return self._answer(start_response, started, OTHER, method, status, payload, headers)
        environ["wsgi.input"] = io.BytesIO(data)
        environ["CONTENT_LENGTH"] = str(len(data))
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        environ["wsgi.input_terminated"] = False
        return self.app(environ, start_response)

    def _read(self, environ, limit: int, length: int | None) -> tuple[bytes, Answer | None]:
        key = client_key(environ.get("REMOTE_ADDR") or "")
        reserve = limit if length is None else length
        refused = self.uploads.admit(reserve, key)
        if refused is not None:
            self.state.metrics.count_event("balance_body_refused_total", refused)
            return b"", _busy(refused, "request bodies")
        stream = self._stream(environ, limit, length)
        self.uploads.track(stream)
        chunks: list[bytes] = []
        try:
            while True:
                chunk = stream.read(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except BodyTooLarge:
            pass
        finally:
            self.uploads.untrack(stream)
            self.uploads.release(reserve, key)
        cut = self._cut_off(stream)
        if cut is not None:
            self.state.metrics.count_event("balance_body_refused_total", cut[0])
            return b"", cut[1]
        if length is None and stream.total > limit:
            message = f"a request body is at most {limit} bytes (BALANCE_MAX_BODY)"
            return b"", (413, error_payload(413, message), {"Connection": "close"})
        return b"".join(chunks), None

    def _stream(self, environ, limit: int, length: int | None) -> GuardedStream:
        """The body, to be read with its deadline and minimum rate; a body without a length
        is read up to one byte over `limit`."""
        started = time.monotonic()
        stream = GuardedStream(
            environ["wsgi.input"],
            started,
            started + self.body_timeout,
            limit + 1 if length is None else length,
            length,
            environ.get("REMOTE_ADDR") or "",
            environ,
            _chunked(environ),
        )
        stream.grace, stream.min_rate = self.grace, self.min_rate
        return stream

    def _cut_off(self, stream: GuardedStream) -> tuple[str, Answer] | None:
        """(the reason, the answer) for a body that was not read whole, or None."""
        if stream.failed and stream.late(time.monotonic(), stream.total):
            stream.slow = True  # its socket shut for being slow (reaper.py), or the client gave up
        if stream.slow:
            message = (
                f"the body arrived slower than {_secs(self.min_rate)} bytes a second "
                f"(BALANCE_BODY_MIN_RATE, after {_secs(self.grace)} s); nothing was stored: "
                "send it again"
            )
            return "slow", (408, error_payload(408, message), {"Connection": "close"})
        if stream.timed_out:
            message = (
                f"the body did not arrive within {_secs(self.body_timeout)} s "
                "(BALANCE_BODY_TIMEOUT); nothing was stored: send it again"
            )
            return "timeout", (408, error_payload(408, message), {"Connection": "close"})
        if stream.failed:
            message = "the body ended before its Content-Length; nothing was stored"
            return "incomplete", (400, error_payload(400, message), {"Connection": "close"})
        return None

    def upload(self, environ) -> tuple[int, dict, dict]:
        state, metrics, recent = self.state, self.state.metrics, self.uploads.recent
        client = environ.get("REMOTE_ADDR") or ""
        kind = environ.get("CONTENT_TYPE", "").partition(";")[0].strip().lower()
        encoding = environ.get("HTTP_CONTENT_ENCODING", "identity")
        length = _length(environ)
        chunked = _chunked(environ)
        limit = upload_limit(kind, state.config["BALANCE_MAX_BODY"])
        if (
            kind not in (JSON, NDJSON)
            or coding(encoding) is None
            or (length is not None and length > limit)
            or length == 0
        ):
            # answered before a byte of the body is read: 415 / 413 (or 429, or 400 for an
            # empty body), as upload.py words them; granian closes a connection whose body was
            # left unread
            status, payload, headers = handle(state, client, kind, encoding, length, _empty())
            if length or chunked:
                headers = {**headers, "Connection": "close"}
            if status == 413:
                metrics.count_event("balance_upload_refused_total", "too_large")
            recent.attempt()
            return status, payload, headers
        reserve = limit if length is None else length
        key = client_key(client)
        refused = self.uploads.admit(reserve, key)
        recent.attempt(refused)
        if refused is not None:
            metrics.count_event("balance_upload_refused_total", refused)
            return _busy(refused, "uploads")
        # a body without a length is read up to one byte over the limit: upload.py answers
        # 413, and the rest stays unread (granian closes the connection)
        stream = self._stream(environ, limit, length)
        self.uploads.track(stream)
        try:
            status, payload, headers = handle(state, client, kind, encoding, length, stream)
        except BodyTooLarge:  # BodyTimeout or BodyIncomplete out of upload.py's drain
            if not (stream.timed_out or stream.failed):
                raise
        finally:
            self.uploads.untrack(stream)
            self.uploads.release(reserve, key)
        cut = self._cut_off(stream)
        if cut is not None:
            metrics.count_event("balance_upload_refused_total", cut[0])
            if cut[0] != "incomplete":  # (a client that went away: no refusal)
                recent.refuse(cut[0])
            return cut[1]
        if (length is None and not stream.eof) or (length is not None and stream.total < length):
            headers = {**headers, "Connection": "close"}  # the rest of it was never read
        return status, payload, headers


def _chunked(environ) -> bool:
    return "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()


def _busy(why: str, what: str) -> Answer:
    """503 (the server's slots or bytes are taken) or 429 (this client has its share)."""
    headers = {"Retry-After": "1", "Connection": "close"}
    if why == "share":
        message = (
            f"this address already has its share of the {what} in flight "
            "(BALANCE_UPLOAD_SHARE); retry when one of them is answered (nothing was read "
            "or stored)"
        )
        return 429, error_payload(429, message), headers
    if why == "memory":
        what = f"{what}' bytes"
    message = f"too many {what} in flight; retry shortly (nothing was read or stored)"
    return 503, error_payload(503, message), headers


def _empty() -> io.BytesIO:
    return io.BytesIO(b"")


def _secs(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _length(environ) -> int | None:
    try:
        length = int(environ.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None
    return length if length >= 0 else None
