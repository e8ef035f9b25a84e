"""POST /v1/games (one record or an NDJSON batch) and GET /v1/schema."""

from __future__ import annotations

import functools
import logging
from concurrent.futures import TimeoutError as FutureTimeout
from importlib import resources

from flask import Blueprint, Response, current_app, request

from .bodies import BodyTooLarge, ndjson_lines, whole_body
from .pipeline import MAX_RECORD, settle, utcnow
from .ratelimit import retry_after
from .responses import error, json_response

log = logging.getLogger("ingest.api")
bp = Blueprint("games", __name__)

JSON, NDJSON = "application/json", "application/x-ndjson"


@bp.post("/v1/games")
def upload():
    state = current_app.extensions["ingest"]
    wait = state.limiter.acquire(request.remote_addr or "")
    if wait:
        return error(
            429,
            "too many requests from this address; retry later",
            {"Retry-After": retry_after(wait)},
        )
    with state.store.arriving() as arrival:
        return _upload(state, arrival)


def _upload(state, arrival) -> Response:
    kind = request.mimetype
    if kind not in (JSON, NDJSON):
        return error(415, f"send {JSON} (one record) or {NDJSON} (one record a line)")
    if request.headers.get("Content-Encoding", "identity").lower() not in ("identity", ""):
        return error(415, "compressed bodies are not accepted; send identity encoding")
    # a single record may carry a trailing line break beyond its 64 KiB
    limit = MAX_RECORD + 2 if kind == JSON else state.config["BALANCE_MAX_BODY"]
    if request.content_length is not None and request.content_length > limit:
        return _too_large(kind, limit)
    received = utcnow()
    lines = []
    try:
        if kind == JSON:
            body = whole_body(request.stream, limit).rstrip(b"\r\n")
            if len(body) > MAX_RECORD:
                return _too_large(kind, limit)
            if body.strip():
                lines.append((0, body))
        else:
            max_lines = state.config["BALANCE_MAX_LINES"]
            for number, text in ndjson_lines(request.stream, limit):
                if len(lines) >= max_lines:
                    return error(
                        413,
                        f"a batch holds at most {max_lines} records; nothing was stored: split it",
                    )
                lines.append((number, text))
    except BodyTooLarge:
        return _too_large(kind, limit)
    if not lines:
        return error(400, "the body holds no record")
    judged = state.pool.judge_many(lines, received)
    pending = [j.pending for j in judged if j.pending is not None]
    try:
        outcomes = state.store.ingest(pending, timeout=state.commit_timeout, arrival=arrival)
    except FutureTimeout:
        return error(
            503,
            "storage is busy; retry (the same record is never stored twice)",
            {"Retry-After": "5"},
        )
    except RuntimeError:
        return error(503, "the server is shutting down; retry", {"Retry-After": "5"})
    results = settle(judged, outcomes)
    state.metrics.count_results(results)
    if not any(j.json_ok for j in judged):
        return json_response(
            {
                "error": "bad_request",
                "status": 400,
                "results": results,
                "message": "no record in the body is JSON",
            },
            400,
        )
    status = 422 if kind == JSON and results[0]["verdict"] == "rejected" else 200
    return json_response({"results": results}, status)


def _too_large(kind: str, limit: int) -> Response:
    if kind == JSON:
        return error(413, f"a record is at most {MAX_RECORD} bytes of JSON", limit=MAX_RECORD)
    return error(413, f"a batch is at most {limit} bytes", limit=limit)


@functools.cache
def schema_text() -> bytes:
    return resources.files("replays").joinpath("schema", "upload-v1.schema.json").read_bytes()


@bp.get("/v1/schema")
def schema():
    try:
        body = schema_text()
    except FileNotFoundError:
        return error(503, "the upload schema is not installed")
    return Response(body, mimetype="application/schema+json")
