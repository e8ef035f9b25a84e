"""Answering an upload (one record or an NDJSON batch) from the WSGI environ, without a web
framework in the way.

The upload is the one route clients hit thousands of times a second, and Flask's request
and response objects, routing and hooks cost about as much CPU as judging a record. So the
server's WSGI middleware (guard.GuardedUploadRoute, with the upload limits) answers it straight
from the WSGI environ with `handle`, and passes every other request to the Flask app (whose
rule of the route, in api.py, hands an upload that reaches it to the same middleware).
"""

from __future__ import annotations

import logging
from concurrent.futures import TimeoutError as FutureTimeout

from ..storage import StorageUnavailable
from .bodies import BodyTooLarge, drain, ndjson_lines, whole_body
from .encodings import ACCEPTED, BadEncoding, Inflating, coding
from .pipeline import MAX_RECORD, TooLong, recheck_unknown, settle, utcnow
from .ratelimit import retry_after
from .responses import error_payload

log = logging.getLogger("ingest.upload")
access_log = logging.getLogger("ingest.access")

JSON, NDJSON = "application/json", "application/x-ndjson"
ROUTE = "/v1/games"
# Requests of this many records at most are judged with other requests' (gather.py); larger
# ones have worker processes to themselves (workers.py).
GATHERED = 2

Answer = tuple[int, dict, dict]  # status, JSON payload, extra headers


def error(status: int, message: str, headers: dict | None = None, **extra) -> Answer:
    return status, error_payload(status, message, **extra), headers or {}


def handle(state, client: str, mimetype: str, encoding: str, length: int | None, stream) -> Answer:
    """The answer to an upload; `stream` yields the body (at most `length` bytes if given)."""
    try:
        wait = state.limiter.acquire(client)
        if wait:
            return error(
                429,
                "too many requests from this address; retry later",
                {"Retry-After": retry_after(wait)},
            )
        return _upload(state, mimetype, encoding, length, stream)
    finally:  # beyond twice the batch limit, a client still sending sees the connection close
        drain(stream, 2 * state.config["BALANCE_MAX_BODY"] + 1024 * 1024)


def _upload(state, kind, encoding, length, stream) -> Answer:
    if kind not in (JSON, NDJSON):
        return error(415, f"send {JSON} (one record) or {NDJSON} (one record a line)")
    coded = coding(encoding)
    if coded is None:
        return error(
            415,
            f"Content-Encoding {encoding.strip()[:40]!r} is not accepted; send "
            + ", ".join(ACCEPTED)
            + " (one of them, not several)",
            accepted=list(ACCEPTED),
        )
    if coded != "identity":
        # inflated as it is read: the limits below apply to the inflated body
        stream = Inflating(stream, coded)
    # a single record may carry a trailing line break beyond its 64 KiB
    limit = MAX_RECORD + 2 if kind == JSON else state.config["BALANCE_MAX_BODY"]
    if length is not None and length > limit:
        return _too_large(kind, limit)
    failure = state.store.failure
    if failure is not None:  # nothing could be stored: answered before any judging
        return _unavailable(StorageUnavailable(failure))
    received = utcnow()
    lines: list[tuple[int, bytes | TooLong]] = []
    try:
        if kind == JSON:
            body = whole_body(stream, limit).rstrip(b"\r\n")
            if len(body) > MAX_RECORD:
                return _too_large(kind, limit)
            if body.strip():
                lines.append((0, body))
        else:
            max_lines = state.config["BALANCE_MAX_LINES"]
            for number, text in ndjson_lines(stream, limit):
                if len(lines) >= max_lines:
                    return error(
                        413,
                        f"a batch holds at most {max_lines} records; nothing was stored: split it",
                    )
                lines.append((number, text))
    except BodyTooLarge:
        return _too_large(kind, limit)
    except BadEncoding as exc:
        return error(400, f"{exc}; nothing was stored", encoding=exc.encoding)
    if not lines:
        return error(400, "the body holds no record")
    try:
        judged, outcomes = _judge_and_store(state, lines, received)
    except FutureTimeout:
        return error(
            503,
            "storage is busy; retry (the same record is never stored twice)",
            {"Retry-After": "5"},
        )
    except StorageUnavailable as exc:
        return _unavailable(exc)
    except RuntimeError:
        return error(503, "the server is shutting down; retry", {"Retry-After": "5"})
    results = settle(judged, outcomes)
    state.metrics.count_results(results)
    if state.rejections is not None:
        state.rejections.count(results)
    if not any(j.json_ok for j in judged):
        return error(400, "no record in the body is JSON", results=results)
    status = 422 if kind == JSON and results[0]["verdict"] == "rejected" else 200
    return status, {"results": results}, {}


def _judge_and_store(state, lines: list, received) -> tuple[list, list[str]]:
    if (
        state.gather is not None
        and len(lines) <= GATHERED
        and not any(isinstance(text, TooLong) for _, text in lines)
    ):
        return state.gather.judge_and_store(lines, received)
    judged = state.pool.judge_many(lines, received)
    judged = recheck_unknown(state.judge, judged, lines, [received] * len(lines))
    pending = [j.pending for j in judged if j.pending is not None]
    return judged, state.store.ingest(pending, timeout=state.commit_timeout)


def _unavailable(exc: StorageUnavailable) -> Answer:
    """503: the store cannot make writes durable now (disk full, I/O error); nothing of the
    request was stored or acknowledged, and the store retries by itself."""
    return error(
        503,
        f"storage unavailable: {exc.reason}; nothing was stored: retry later "
        "(the same record is never stored twice)",
        {"Retry-After": str(exc.retry_after)},
        reason=exc.reason,
    )


def _too_large(kind: str, limit: int) -> Answer:
    if kind == JSON:
        return error(413, f"a record is at most {MAX_RECORD} bytes of JSON", limit=MAX_RECORD)
    return error(413, f"a batch is at most {limit} bytes", limit=limit)
