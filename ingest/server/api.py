"""The upload API's Flask blueprint: GET /v1/schema, and the rule of POST /v1/games. An upload
has one code path, the middleware in front of Flask (guard.GuardedUploadRoute, then
upload.handle): the rule gives other methods their 405 (Allow: POST), and hands an upload that
reaches Flask itself (the app mounted without its middleware) to that same middleware."""

from __future__ import annotations

import functools
from importlib import resources

from flask import Blueprint, Response, current_app

from .responses import error

bp = Blueprint("games", __name__)
EXT_ROUTE = "uploads.route"  # app.extensions: the app's guard.GuardedUploadRoute


@bp.post("/v1/games")
def upload():
    """The middleware answers (a WSGI app is a view's answer in Flask): its canonical path,
    limits, slots, metrics and access line, as for every upload."""
    return current_app.extensions[EXT_ROUTE]


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
