"""A cap on the dashboard's and the console's requests served at once (BALANCE_DASHBOARD_SLOTS),
so that they never hold every thread of the server. A page's queries each wait up to their
time limit, so while the store hangs (a frozen lake catalog) each page holds its thread for
a minute or more: without the cap a few designers' pages held all of them, and /healthz and
the uploads' own threads with them. Past the cap a dashboard request is answered 503 with
Retry-After at once; `balance serve` sets the cap to its threads less two (ingest/server/serve.py).
Static files are not counted (they never wait on the store).

Each client address has a fair share of the slots (`Shares`, BALANCE_DASHBOARD_SHARE): one
address looping heavy queries took every slot, and every designer's page was 503. The upload
slots (ingest/server/guard.py) share the same rule, so it lives here, below the server's layer."""

from __future__ import annotations

import ipaddress
import threading

import orjson
from flask import Flask, Response, g, request

DEFAULT = 6
RETRY_AFTER = "5"
MESSAGE = "The dashboard is busy answering other requests; try again in a few seconds."
SHARE_MESSAGE = (
    "This address already has its share of the dashboard's requests in progress; "
    "try again when one of them is answered."
)


def client_key(address: str) -> str:
    """The client an address counts as: an IPv4 address itself (an IPv4-mapped IPv6 one as
    IPv4), an IPv6 address by its /64 (one host or home network usually holds a whole /64,
    so its addresses are one client)."""
    try:
        ip = ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((int(ip) >> 64 << 64, 64)))
    return str(ip)


class Shares:
    """Slots with a per-client share. An address holding `share` slots or more is refused a
    further one while half or more of all the slots are taken: alone on the server it may use
    up to half of them (a load test, a busy office behind one NAT), and however many slots
    it holds, the other half stays for everyone else. Thread-safe."""

    def __init__(self, slots: int, share: int = 0):
        self.slots = max(1, int(slots))
        self.share = max(1, int(share)) if share and int(share) > 0 else default_share(self.slots)
        self._lock = threading.Lock()
        self.taken = 0
        self.held: dict[str, int] = {}  # client key -> slots it holds

    def take(self, key: str) -> str | None:
        """Take a slot for `key`: None, or why not ("busy": none free; "share": this
        client has its share while the slots are scarce)."""
        with self._lock:
            if self.taken >= self.slots:
                return "busy"
            if self.held.get(key, 0) >= self.share and self.taken * 2 >= self.slots:
                return "share"
            self.taken += 1
            self.held[key] = self.held.get(key, 0) + 1
        return None

    def give(self, key: str) -> None:
        with self._lock:
            self.taken -= 1
            left = self.held.get(key, 0) - 1
            if left > 0:
                self.held[key] = left
            else:
                self.held.pop(key, None)

    def stats(self) -> dict[str, int]:
        """Slots taken, clients holding any, clients at their share (no address ever)."""
        with self._lock:
            return {
                "taken": self.taken,
                "clients": len(self.held),
                "at_share": sum(1 for n in self.held.values() if n >= self.share),
                "most_held": max(self.held.values(), default=0),
            }


def default_share(slots: int) -> int:
    """An eighth of the slots, at least two (at least one where there is only one)."""
    return min(slots, max(2, slots // 8))


class Slots:
    def __init__(self, slots: int, share: int = 0):
        self.shares = Shares(slots, share)
        self.on_refused = None  # called with the reason of each refusal (the server's metrics)

    def install(self, app: Flask, blueprints: frozenset[str]) -> None:
        @app.before_request
        def _take_slot():
            endpoint = request.endpoint or ""
            if request.blueprint not in blueprints or endpoint.endswith("static"):
                return None
            key = client_key(request.remote_addr or "")
            refused = self.shares.take(key)
            if refused is not None:
                if self.on_refused is not None:
                    self.on_refused(refused)
                return _busy(SHARE_MESSAGE if refused == "share" else MESSAGE)
            g.dashboard_slot = (self, key)
            return None

        @app.teardown_request
        def _give_slot(exc):
            held = g.pop("dashboard_slot", None)
            if held is not None:
                slots, key = held
                slots.shares.give(key)

    def gauges(self) -> dict[str, tuple[str, float]]:
        """For /metrics (the server's Metrics.sources)."""
        stats = self.shares.stats()
        return {
            "balance_dashboard_slots_taken": (
                "Dashboard and console requests being served (at most BALANCE_DASHBOARD_SLOTS).",
                stats["taken"],
            ),
            "balance_dashboard_clients_at_share": (
                "Client addresses holding their share of the dashboard's slots "
                "(BALANCE_DASHBOARD_SHARE).",
                stats["at_share"],
            ),
        }


def _busy(message: str) -> Response:
    headers = {"Retry-After": RETRY_AFTER, "Cache-Control": "no-store"}
    if "text/html" in request.headers.get("Accept", "") and not request.path.startswith("/sql/api"):
        html = f"<!doctype html><title>Busy</title><p>{message}</p>"
        return Response(html, 503, headers, mimetype="text/html")
    body = orjson.dumps({"error": "busy", "message": message, "status": 503})
    return Response(body, 503, headers, mimetype="application/json")
