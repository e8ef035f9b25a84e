"""JSON responses and errors: every answer of the API is JSON. A browser that asks for a page
that is not there gets a short HTML page pointing to the dashboard instead (`wants_html`)."""

from __future__ import annotations

import logging
import traceback
from html import escape
from http import HTTPStatus

import orjson
from flask import Flask, Response, request
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


def wants_html() -> bool:
    """A browser (it prefers text/html to JSON); API clients (curl's */*, JSON) do not."""
    accept = request.accept_mimetypes
    return accept.best_match(["application/json", "text/html"]) == "text/html" and (
        accept["text/html"] > accept["application/json"]
    )


def html_error(status: int, message: str, headers: dict | None = None) -> Response:
    title = f"{status} {HTTPStatus(status).phrase}"
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<title>{escape(title)}</title></head><body style="font-family:sans-serif;margin:2em">'
        f"<h1>{escape(title)}</h1><p>{escape(message)}</p>"
        '<p><a href="/dashboard/">The dashboard</a> · <a href="/sql">SQL console</a> · '
        '<a href="/openapi.json">API (OpenAPI)</a></p></body></html>'
    )
    return Response(body, status=status, headers=headers, mimetype="text/html")


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        # keep the exception's own headers (Allow on a 405), but answer in JSON (HTML to a
        # browser, outside the API)
        headers = {k: v for k, v in exc.get_headers() if k.lower() != "content-type"}
        if exc.code == 404 and not request.path.startswith("/v1/") and wants_html():
            return html_error(404, "There is no page here.", headers)
        return error(exc.code or 500, exc.description or exc.name, headers)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        if isinstance(exc, HTTPException):
            return http_error(exc)
        from ..storage import StorageUnavailable  # store imports nothing of Flask

        if isinstance(exc, StorageUnavailable):  # a full disk is no bug: retry later
            return storage_unavailable(exc.reason, exc.retry_after)
        # the type and where it was raised, never the message (it could quote request data):
        # the traceback's frames are file, line, function and source line
        frames = "".join(traceback.format_list(traceback.extract_tb(exc.__traceback__)))
        log.error(
            "unhandled %s in %s %s\nTraceback (most recent call last):\n%s%s",
            type(exc).__name__,
            request.method,
            request.url_rule.rule if request.url_rule is not None else "(no route)",
            frames,
            type(exc).__name__,
        )
        return error(500, "internal error; the request may be retried")
