"""Server settings: defaults, then the environment (BALANCE_*), then a dict (tests)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from ..storage.sizes import MiB, parse_size

# name -> (default, parser); the name is both the environment variable and the app.config key
SETTINGS: dict[str, tuple[object, Callable[[Any], Any]]] = {
    "BALANCE_DB": ("balance.duckdb", str),  # the DuckDB file (created on first start)
    # a lake instead of the file (docs/lake.md): its catalog's PostgreSQL connection string,
    # its data path (optional: the lake knows it), this server's local directory, the lease
    "BALANCE_LAKE": ("", str),
    "BALANCE_LAKE_DATA": ("", str),
    "BALANCE_LAKE_WORKDIR": ("", str),
    "BALANCE_LAKE_LEASE": (10.0, float),  # seconds before a dead server's claims are taken over
    # staging (lake_staging.py): 1 acknowledges an upload once PostgreSQL holds it and the
    # lake's one loader commits it; 0 waits for a lake commit per group (the old path)
    "BALANCE_LAKE_STAGING": (1, int),
    "BALANCE_LAKE_STAGING_MAX": (200_000, int),  # games staged past which uploads 503
    "BALANCE_LAKE_LOADER": (1, int),  # 1: this server may be elected the lake's loader
    "BALANCE_LAKE_LOAD_EVERY": (1.0, float),  # seconds between the loader's lake commits
    "BALANCE_LAKE_COMMIT_TOKEN": (1, int),  # 1: one server commits at a time (lake_token.py)
    "BALANCE_LAKE_STALL": (20.0, float),  # seconds a lake call may hang before uploads 503
    "BALANCE_RATE_LIMIT": (20.0, float),  # requests a second per client address; 0 = off
    "BALANCE_RATE_BURST": (0.0, float),  # bucket size; 0 = twice the rate
    "BALANCE_MAX_BODY": (8 * MiB, parse_size),  # bytes in one request body
    "BALANCE_MAX_LINES": (1000, int),  # records in one NDJSON batch
    "BALANCE_JOBS_INTERVAL": (300.0, float),  # seconds between analysis runs; 0 = never
    "BALANCE_TOKEN": ("", str),  # bearer token for admin endpoints (and the dashboard)
    "BALANCE_LAB_RUNS": (1, int),  # lab runs started from the Lab page at once (lab_jobs.py)
    "BALANCE_COMMIT_MAX": (5000, int),  # games in one group commit at most
    "BALANCE_CHECKPOINT": ("256MB", str),  # WAL size that triggers a DuckDB checkpoint
    "BALANCE_DB_THREADS": (1, int),  # DuckDB worker threads of the server's store (see store.py)
    "BALANCE_DEFER_ROWS": (1, int),  # 1: derived rows in a second transaction (see store.py)
    "BALANCE_WORKERS": (-1, int),  # judge processes; 0 = judge on the request threads; -1 = cores
    "BALANCE_HOST": ("127.0.0.1", str),  # the address `balance serve` listens on
    # seconds a stopping worker may take (answering what it holds, closing the store, a lake's
    # loader loading what is staged) before it exits regardless; 0 = as long as it takes
    "BALANCE_STOP_TIMEOUT": (30.0, float),
    # limits and timeouts against slow, silent and idle clients (docs/ingest.md, guard.py,
    # reaper.py, serve.py)
    "BALANCE_BODY_TIMEOUT": (30.0, float),  # seconds for an upload's whole body, else 408
    # past the grace a body must keep up this many bytes a second on average, else 408
    "BALANCE_BODY_GRACE": (10.0, float),
    "BALANCE_BODY_MIN_RATE": (500.0, float),  # 0 = no minimum rate
    "BALANCE_MAX_UPLOADS": (64, int),  # uploads in flight; more: 503 + Retry-After
    "BALANCE_UPLOAD_BYTES": (64 * MiB, parse_size),  # their declared body bytes together; more: 503
    # the slots one client address (an IPv6 /64) may hold while they are scarce; 0 = an
    # eighth of BALANCE_MAX_UPLOADS, at least 2; more: 429 (dashboard/slots.py)
    "BALANCE_UPLOAD_SHARE": (0, int),
    "BALANCE_IDLE_TIMEOUT": (10.0, float),  # seconds a connection may wait between requests
    # seconds an answer may wait in a connection's send queue with nothing going out (the
    # client stopped reading) before the connection is closed; 0 = never
    "BALANCE_SEND_TIMEOUT": (30.0, float),
    "BALANCE_MAX_CONNECTIONS": (2048, int),  # open connections (idle ones shed from 90%)
    # access-log lines a second for each refusal status (408, 429, 503); 0 = every one
    "BALANCE_ACCESS_LOG_REFUSALS": (10, int),
}


def _parse(name: str, value) -> object:
    default, kind = SETTINGS[name]
    if value is None or value == "":
        return default
    if kind is float and isinstance(value, str) and value.lower() in ("off", "none", "false"):
        return 0.0
    return kind(value)


def load(overrides: Mapping | None = None, environ: Mapping | None = None) -> dict:
    """All settings; `overrides` may also hold extra keys (e.g. VERIFIER for tests)."""
    environ = os.environ if environ is None else environ
    overrides = dict(overrides or {})
    config = {}
    for name in SETTINGS:
        raw = overrides.pop(name) if name in overrides else environ.get(name)
        try:
            config[name] = _parse(name, raw)
        except ValueError as exc:
            raise ValueError(f"{name}={raw!r}: {exc}") from None
    config.update(overrides)
    return config
