"""GET /, /healthz, /metrics and /openapi.json: for people, load balancers, Prometheus and
client devs."""

from __future__ import annotations

import time

from flask import Blueprint, Response, current_app, redirect

from ..storage import RETRY_AFTER, StorageUnavailable
from .openapi import document
from .responses import error, json_response, storage_unavailable, wants_html

bp = Blueprint("ops", __name__)

INDEX = {
    "service": "Slow6 & Slide balance backend",
    "dashboard": "/dashboard/",
    "sql_console": "/sql",
    "upload": "POST /v1/games",
    "schema": "/v1/schema",
    "rulesets": "/v1/rulesets",
    "openapi": "/openapi.json",
    "health": "/healthz",
    "metrics": "/metrics",
}


@bp.get("/")
def index():
    """A browser goes to the dashboard; an API client gets the map of the service."""
    if wants_html():
        return redirect("/dashboard/", 302)
    return json_response(INDEX)


@bp.get("/healthz")
def healthz():
    """200 {"status": "ok", ...} when uploads can be stored; 503 + Retry-After with the reason
    (a full disk, an I/O error) while they cannot: take the server out of rotation.

    200 {"status": "degraded", "uploads": {...}} while the server's limits refuse many of the
    last minute's uploads (guard.Uploads.health): the server works, but some client is being
    turned away (a flood from one address, or too little capacity), and the refusals by
    reason and the slots held say which. It stays 200: taking the server out of rotation
    would not help the clients it refuses."""
    store = current_app.extensions["store"]
    health = store.health()
    if health["failure"] is not None:
        return storage_unavailable(
            health["failure"],
            RETRY_AFTER,
            failing_seconds=health["failing_seconds"],
            journal_backlog=health["journal_backlog"],
        )
    try:
        stored = store.stored_records()  # never a query that a hung lake catalog would hold
    except StorageUnavailable as exc:
        return storage_unavailable(exc.reason, exc.retry_after)
    except Exception as exc:  # storage unreachable: tell the load balancer
        store.report(exc)
        return error(503, f"storage unreachable: {type(exc).__name__}", {"Retry-After": "5"})
    extra = {"staging": health["staging"]} if "staging" in health else {}
    return _healthy(stored, store.degraded(), **extra)


def _healthy(stored: int, slow: str | None = None, **extra):
    """200: "degraded" while uploads are being refused (guard.Uploads.health) or, on a lake,
    while its calls are slow or the loader is behind (`slow`: why); still storing either way."""
    uploads = current_app.extensions["uploads"].health()
    degraded = uploads.pop("degraded") or bool(slow)
    body = {"status": "degraded" if degraded else "ok", "stored_records": stored}
    body["uploads"] = uploads
    if slow:
        body["degraded"] = slow
    return json_response({**body, **extra})


@bp.get("/metrics")
def metrics():
    state = current_app.extensions["ingest"]
    gauges = {
        "balance_stored_records": (
            "Records in raw_records (verified and quarantined).",
            state.store.known_count(),
        ),
        "balance_storage_available": (
            "1 while uploads can be stored, 0 while storage fails (see /healthz).",
            int(state.store.failure is None),
        ),
        "balance_uptime_seconds": (
            "Seconds since the app started.",
            time.monotonic() - state.started,
        ),
    }
    return Response(
        state.metrics.exposition(gauges),
        mimetype="text/plain",
        content_type="text/plain; version=0.0.4; charset=utf-8",
    )


@bp.get("/openapi.json")
def openapi():
    return json_response(document(current_app.extensions["ingest"].config))
