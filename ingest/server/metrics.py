"""Prometheus text exposition (format 0.0.4), hand-written: three counters and histograms."""

from __future__ import annotations

import threading
from bisect import bisect_left

VERDICTS = ("accepted", "duplicate", "conflict", "quarantined", "rejected")
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000)
COMMIT_BUCKETS = (1, 5, 10, 50, 100, 500, 1000, 2500, 5000)
# Label values are fixed sets: a method outside METHODS counts as "other", as does a request
# no route matched (app.py passes the matched Flask rule, never the path), so no client can
# add series (`curl -X M1` a thousand times added a thousand).
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"))
OTHER = "other"
# counters with a fixed set of labels each: name -> (help, label name, label values)
EVENTS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "balance_upload_refused_total": (
        "Uploads refused by the server's limits before their body was processed, by reason "
        "(busy / memory: 503; share: 429, the client's address holds its share of the slots "
        "or bytes; timeout / slow: 408, past BALANCE_BODY_TIMEOUT or below "
        "BALANCE_BODY_MIN_RATE; too_large: 413 by declared length; incomplete: 400).",
        "reason",
        ("busy", "memory", "share", "timeout", "slow", "too_large", "incomplete"),
    ),
    "balance_body_refused_total": (
        "Request bodies for other routes than uploads (the console's, the admin's) refused by "
        "the same limits, by reason (as balance_upload_refused_total).",
        "reason",
        ("busy", "memory", "share", "timeout", "slow", "incomplete"),
    ),
    "balance_dashboard_refused_total": (
        "Dashboard and console requests refused at once, by reason (busy: every slot "
        "taken; share: the client's address holds its share, BALANCE_DASHBOARD_SHARE).",
        "reason",
        ("busy", "share"),
    ),
    "balance_connections_closed_total": (
        "Connections the server closed itself, by reason (idle: never sent a request; "
        "stalled: an upload body blocked past BALANCE_BODY_TIMEOUT; slow: a body arriving "
        "below BALANCE_BODY_MIN_RATE; unread: an answer not read for BALANCE_SEND_TIMEOUT; "
        "shed: idle ones closed near BALANCE_MAX_CONNECTIONS).",
        "reason",
        ("idle", "stalled", "slow", "unread", "shed"),
    ),
}


def method_label(method: str) -> str:
    return method if method in METHODS else OTHER


class Histogram:
    def __init__(self, buckets: tuple[float, ...]):
        self.buckets = buckets
        # per bucket (cumulated at exposition), plus one past the last bound (+Inf only)
        self.counts = [0] * (len(buckets) + 1)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.buckets, value)] += 1  # the first bound >= value
        self.count += 1
        self.sum += value

    def lines(self, name: str, labels: str = "") -> list[str]:
        sep = "," if labels else ""
        out, running = [], 0
        for bound, n in zip(self.buckets, self.counts[:-1], strict=True):
            running += n
            out.append(f'{name}_bucket{{{labels}{sep}le="{_num(bound)}"}} {running}')
        out.append(f'{name}_bucket{{{labels}{sep}le="+Inf"}} {self.count}')
        braces = f"{{{labels}}}" if labels else ""
        out.append(f"{name}_sum{braces} {_num(self.sum)}")
        out.append(f"{name}_count{braces} {self.count}")
        return out


def _num(x: float) -> str:
    return repr(float(x)) if not float(x).is_integer() else str(int(x))


class Metrics:
    """Thread-safe; labels are fixed sets (routes, verdicts, status codes), never client data."""

    def __init__(self):
        self._lock = threading.Lock()
        self.records = dict.fromkeys(VERDICTS, 0)
        self.requests: dict[tuple[str, str, int], int] = {}
        self.latency: dict[str, Histogram] = {}
        self.batch = Histogram(BATCH_BUCKETS)
        self.commit_size = Histogram(COMMIT_BUCKETS)
        self.commit_seconds = Histogram(LATENCY_BUCKETS)
        self.events = {name: dict.fromkeys(values, 0) for name, (_, _, values) in EVENTS.items()}
        self.gauges: dict[str, tuple[str, float]] = {}  # name -> (help, value), set by the server
        # callables returning more such values, read at exposition (a name ending in _total
        # is a counter)
        self.sources: list = []

    def count_results(self, results: list[dict]) -> None:
        with self._lock:
            for r in results:
                self.records[r["verdict"]] += 1
            self.batch.observe(len(results))

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        """`route`: a route pattern of the app (or "other"); `method` is folded to METHODS."""
        method = method_label(method)
        with self._lock:
            key = (route, method, status)
            self.requests[key] = self.requests.get(key, 0) + 1
            hist = self.latency.get(route)
            if hist is None:
                hist = self.latency[route] = Histogram(LATENCY_BUCKETS)
            hist.observe(seconds)

    def count_event(self, name: str, label: str) -> None:
        """One of EVENTS; an unknown label is a bug, counted as the first one rather than lost."""
        with self._lock:
            counts = self.events[name]
            key = label if label in counts else next(iter(counts))
            counts[key] += 1

    def set_gauge(self, name: str, help_text: str, value: float) -> None:
        with self._lock:
            self.gauges[name] = (help_text, value)

    def observe_commit(self, records: int, seconds: float) -> None:
        with self._lock:
            self.commit_size.observe(records)
            self.commit_seconds.observe(seconds)

    def exposition(self, gauges: dict[str, tuple[str, float]] | None = None) -> str:
        extra = {}
        for source in self.sources:
            extra.update(source())
        with self._lock:
            out = [
                "# HELP balance_records_total Upload records answered, by verdict.",
                "# TYPE balance_records_total counter",
            ]
            out += [f'balance_records_total{{verdict="{v}"}} {n}' for v, n in self.records.items()]
            out += [
                "# HELP balance_http_requests_total HTTP requests, by route, method, status.",
                "# TYPE balance_http_requests_total counter",
            ]
            for (route, method, status), n in sorted(self.requests.items()):
                out.append(
                    f'balance_http_requests_total{{route="{route}",method="{method}",'
                    f'status="{status}"}} {n}'
                )
            out += [
                "# HELP balance_http_request_duration_seconds Request latency, by route.",
                "# TYPE balance_http_request_duration_seconds histogram",
            ]
            for route, hist in sorted(self.latency.items()):
                out += hist.lines("balance_http_request_duration_seconds", f'route="{route}"')
            out += [
                "# HELP balance_upload_batch_records Records per upload request.",
                "# TYPE balance_upload_batch_records histogram",
            ]
            out += self.batch.lines("balance_upload_batch_records")
            out += [
                "# HELP balance_commit_records Records per group commit.",
                "# TYPE balance_commit_records histogram",
            ]
            out += self.commit_size.lines("balance_commit_records")
            out += [
                "# HELP balance_commit_duration_seconds Time to write one group commit.",
                "# TYPE balance_commit_duration_seconds histogram",
            ]
            out += self.commit_seconds.lines("balance_commit_duration_seconds")
            for name, (help_text, label, _) in EVENTS.items():
                out += [f"# HELP {name} {help_text}", f"# TYPE {name} counter"]
                out += [f'{name}{{{label}="{v}"}} {n}' for v, n in self.events[name].items()]
            gauges = {**self.gauges, **extra, **(gauges or {})}
        for name, (help_text, value) in gauges.items():
            kind = "counter" if name.endswith("_total") else "gauge"  # Prometheus' naming rule
            out += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f"{name} {_num(value)}"]
        return "\n".join(out) + "\n"
