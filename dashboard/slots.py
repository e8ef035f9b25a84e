"""A cap on the dashboard's and the console's requests served at once (BALANCE_DASHBOARD_SLOTS),
so that they never hold every thread of the server. A page's queries each wait up to their
time limit, so while the store hangs (a frozen lake catalog) each page holds its thread for
a minute or more: without the cap a few designers' pages held all of them, and /healthz and
the uploads' own threads with them. Past the cap a dashboard request is answered 503 with
Retry-After at once; `balance serve` sets the cap to its threads less two (ingest/serve.py).
Static files are not counted (they never wait on the store)."""

from __future__ import annotations

import threading

import orjson
from flask import Flask, Response, g, request

DEFAULT = 6
RETRY_AFTER = "5"
MESSAGE = "The dashboard is busy answering other requests; try again in a few seconds."


class Slots:
    def __init__(self, slots: int):
        self._free = threading.BoundedSemaphore(max(1, int(slots)))

    def install(self, app: Flask, blueprints: frozenset[str]) -> None:
        @app.before_request
        def _take_slot():
            endpoint = request.endpoint or ""
            if request.blueprint not in blueprints or endpoint.endswith("static"):
                return None
            if not self._free.acquire(blocking=False):
                return _busy()
            g.dashboard_slot = self
            return None

        @app.teardown_request
        def _give_slot(exc):
            slots = g.pop("dashboard_slot", None)
            if slots is not None:
                slots._free.release()


def _busy() -> Response:
    headers = {"Retry-After": RETRY_AFTER, "Cache-Control": "no-store"}
    if "text/html" in request.headers.get("Accept", "") and not request.path.startswith("/sql/api"):
        html = f"<!doctype html><title>Busy</title><p>{MESSAGE}</p>"
        return Response(html, 503, headers, mimetype="text/html")
    body = orjson.dumps({"error": "busy", "message": MESSAGE, "status": 503})
    return Response(body, 503, headers, mimetype="application/json")
