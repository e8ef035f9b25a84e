"""GET /healthz, /metrics and /openapi.json: for load balancers, Prometheus and client devs."""

from __future__ import annotations

import time

from flask import Blueprint, Response, current_app

from .openapi import document
from .responses import error, json_response

bp = Blueprint("ops", __name__)


@bp.get("/healthz")
def healthz():
    store = current_app.extensions["store"]
    try:
        cur = store.reader()
        try:
            (stored,) = cur.execute("SELECT count(*) FROM raw_records").fetchone()
        finally:
            cur.close()
    except Exception as exc:  # storage unreachable: tell the load balancer
        return error(503, f"storage unreachable: {type(exc).__name__}")
    return json_response({"status": "ok", "stored_records": stored})


@bp.get("/metrics")
def metrics():
    state = current_app.extensions["ingest"]
    gauges = {
        "balance_stored_records": (
            "Records in raw_records (verified and quarantined).",
            state.store.known_count(),
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
