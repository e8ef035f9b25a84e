"""The upload API's Flask blueprint: GET /v1/schema, and POST /v1/games for requests that reach
the Flask app itself (its test client); the server answers uploads before Flask (guard.py,
upload.py), with the same `upload.handle`."""

from __future__ import annotations

import functools
from importlib import resources

from flask import Blueprint, Response, current_app, request

from .guard import canonical
from .responses import error, json_response
from .upload import handle

bp = Blueprint("games", __name__)


@bp.post("/v1/games")
def upload():
    """Reached only without guard.GuardedUploadRoute in front (the app mounted bare): the same
    `handle`, the same answers."""
    if not canonical(request.environ):  # werkzeug folds "//v1/games" onto this rule
        return error(404, "not found: uploads go to /v1/games exactly")
    state = current_app.extensions["ingest"]
    status, payload, headers = handle(
        state,
        request.remote_addr or "",
        request.mimetype,
        request.headers.get("Content-Encoding", "identity"),
        request.content_length,
        request.stream,
    )
    return json_response(payload, status, headers)


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
