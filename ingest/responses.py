"""JSON responses and errors: every answer of the service is JSON, never an HTML page."""

from __future__ import annotations

import logging
from http import HTTPStatus

import orjson
from flask import Flask, Response
from werkzeug.exceptions import HTTPException

log = logging.getLogger("ingest.errors")


def json_response(payload, status: int = 200, headers: dict | None = None) -> Response:
    return Response(
        orjson.dumps(payload), status=status, headers=headers, mimetype="application/json"
    )


def error(status: int, message: str, headers: dict | None = None, **extra) -> Response:
    return json_response(error_payload(status, message, **extra), status, headers)


def storage_unavailable(reason: str, retry_after: int = 5, **extra) -> Response:
    """503 + Retry-After: the store cannot make writes durable now (see ingest/storage/store.py)."""
    return error(
        503,
        f"storage unavailable: {reason}",
        {"Retry-After": str(retry_after)},
        reason=reason,
        **extra,
    )


def error_payload(status: int, message: str, **extra) -> dict:
    return {"error": reason(status), "message": message, "status": status, **extra}


def reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    except ValueError:
        return "error"


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        # keep the exception's own headers (Allow on a 405), but answer in JSON
        headers = {k: v for k, v in exc.get_headers() if k.lower() != "content-type"}
        return error(exc.code or 500, exc.description or exc.name, headers)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        if isinstance(exc, HTTPException):
            return http_error(exc)
        from .storage import StorageUnavailable  # store imports nothing of Flask

        if isinstance(exc, StorageUnavailable):  # a full disk is no bug: retry later
            return storage_unavailable(exc.reason, exc.retry_after)
        # the type only: a message or traceback could quote request data
        log.error("unhandled %s in a request", type(exc).__name__)
        return error(500, "internal error; the request may be retried")
