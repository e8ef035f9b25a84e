"""POST /v1/admin/reverify: re-judge every stored record without stopping the server."""

from __future__ import annotations

import hmac

from flask import Blueprint, current_app, request

from .responses import error, json_response
from .reverify import reverify_running

bp = Blueprint("admin", __name__)


def _authorized() -> bool:
    token = current_app.extensions["ingest"].config["BALANCE_TOKEN"]
    sent = request.headers.get("Authorization", "")
    return bool(token) and hmac.compare_digest(sent.encode(), f"Bearer {token}".encode())


def refused():
    """The answer to an admin request without the token (403: the server has none; 401: not
    sent or wrong), None when it may go on."""
    if not current_app.extensions["ingest"].config["BALANCE_TOKEN"]:
        return error(403, "admin endpoints need BALANCE_TOKEN set on the server")
    if not _authorized():
        return error(
            401, "send Authorization: Bearer <BALANCE_TOKEN>", {"WWW-Authenticate": "Bearer"}
        )
    return None


@bp.post("/v1/admin/reverify")
def admin_reverify():
    state = current_app.extensions["ingest"]
    denied = refused()
    if denied is not None:
        return denied
    rebuild = request.args.get("rebuild", "").lower() in ("1", "true", "yes")
    summary = reverify_running(state.store, state.judge, rebuild=rebuild)
    return json_response(summary)
