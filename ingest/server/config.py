"""The server's settings: one table (name, default, parser, how docs/settings.md shows the
default, what it sets; ingest/storage/settings.py says how the tables are read and held equal to
the docs). `load` reads them once, when the app is created: defaults, then the environment
(BALANCE_*), then a dict (tests); the name is both the environment variable and the app.config
key. HOST is the dashboard's row and TOKEN the storage layer's (the API client sends it), each
written once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from dashboard import settings as dashboard_settings

from ..storage import settings as storage_settings
from ..storage.settings import Setting, given, render, text
from ..storage.sizes import MiB, parse_size

__all__ = ["SETTINGS", "TABLE", "given", "load", "render"]


def _on(value: Any) -> bool:
    return str(value).strip() != "0"


TABLE: tuple[Setting, ...] = (
    Setting("DB", "balance.duckdb", text, "`balance.duckdb`",
            "the DuckDB store file (created on first start); `--db` wins over it"),
    Setting("LAKE", "", text, "—",
            "the lake's catalog (a PostgreSQL connection string): serve and load the lake "
            "instead of a file; `--db` wins over it, `--lake` over both"),
    Setting("LAKE_DATA", "", text, "the lake's own",
            "the lake's data path (a directory or `s3://...`), checked when given"),
    Setting("LAKE_WORKDIR", "", text, "a temp directory",
            "this server's local directory (dashboard snapshots of the lake)"),
    Setting("LAKE_LEASE", 10.0, float, "`10`",
            "seconds before a pending claim of a server that stopped answering may be taken over "
            "(with staging a dead server's claims are rolled back by PostgreSQL at once)"),
    Setting("LAKE_STAGING", 1, int, "`1`",
            "`1`: an upload is acknowledged once the catalog's PostgreSQL holds it, and the "
            "lake's elected loader moves it into the lake in large commits; `0`: each group "
            "waits for its own lake commit"),
    Setting("LAKE_STAGING_MAX", 200_000, int, "`200000`",
            "games staged and not yet loaded past which every server answers uploads 503 + "
            "Retry-After (back-pressure) and `/healthz` says why"),
    Setting("LAKE_LOADER", 1, int, "`1`",
            "`1`: this server (or jobs runner) may be elected the lake's loader; `0`: never"),
    Setting("LAKE_LOAD_EVERY", 1.0, float, "`1`",
            "seconds between the loader's lake commits while fewer than 20,000 games wait"),
    Setting("LAKE_COMMIT_TOKEN", 1, int, "`1`",
            "`1`: the servers take turns to commit (ingest/storage/lake/token.py); `0`: they race"),
    Setting("LAKE_STALL", 20.0, float, "`20`",
            "seconds a lake call may hang before uploads get 503 and `/healthz` says so"),
    Setting("RATE_LIMIT", 20.0, float, "`20`",
            "requests a second per client address; `0`: off"),
    Setting("RATE_BURST", 0.0, float, "`0` (twice the rate)",
            "the rate limit's bucket size"),
    Setting("MAX_BODY", 8 * MiB, parse_size, "`8388608` (8 MiB)",
            "bytes in one request body"),
    Setting("MAX_LINES", 1000, int, "`1000`",
            "records in one NDJSON batch"),
    Setting("JOBS_INTERVAL", 300.0, float, "`300`",
            "seconds between the server's balance-job runs; `0`: never (run `balance jobs run` "
            "yourself)"),
    replace(storage_settings.BY_NAME["TOKEN"], default=""),
    Setting("LAB_RUNS", 1, int, "`1`",
            "lab runs started from the Lab page that may run at once (each a process of its own; "
            "more are refused, 429); starting one needs `BALANCE_TOKEN` (docs/lab.md)"),
    Setting("COMMIT_MAX", 5000, int, "`5000`",
            "games in one group commit at most"),
    Setting("CHECKPOINT", "256MB", text, "`256MB`",
            "WAL size that triggers a DuckDB checkpoint"),
    Setting("DB_THREADS", 1, int, "`1`",
            "DuckDB worker threads of the server's store connection (the judges and the request "
            "threads are the parallelism; more threads only add contention on small commits)"),
    Setting("DEFER_ROWS", 1, int, "`1`",
            "`1`: a game's derived rows are written in a second transaction after the raw record "
            "is durable (ingest/storage/store.py); `0`: in the same one"),
    Setting("WORKERS", -1, int, "`-1` (one per core)",
            "judge processes that replay uploads; `0` judges on the request threads"),
    dashboard_settings.BY_NAME["HOST"],
    Setting("STOP_TIMEOUT", 30.0, float, "`30`",
            "seconds a stopping worker may take (answering what it holds, closing the store, a "
            "lake's loader loading what is staged) before it exits regardless (error logged; "
            "nothing acknowledged is lost); the parent SIGKILLs a worker still there 10 s later; "
            "`0`: as long as it takes"),
    Setting("BODY_TIMEOUT", 30.0, float, "`30`",
            "seconds for an upload's whole body, else 408"),
    Setting("BODY_GRACE", 10.0, float, "`10`",
            "seconds a body may take before its rate is checked"),
    Setting("BODY_MIN_RATE", 500.0, float, "`500`",
            "bytes a second a body must arrive at on average after the grace, else 408 (`0`: no "
            "minimum)"),
    Setting("MAX_UPLOADS", 64, int, "`64`",
            "uploads in flight; more get 503 + Retry-After"),
    Setting("UPLOAD_BYTES", 64 * MiB, parse_size, "`67108864` (64 MiB)",
            "the declared body bytes of the uploads in flight together; more: 503"),
    Setting("UPLOAD_SHARE", 0, int, "`0` (an eighth of `BALANCE_MAX_UPLOADS`, at least 2)",
            "uploads (and the same share of their bytes) one client address (an IPv6 /64) may "
            "have in flight while half or more are taken; more get 429 + Retry-After"),
    Setting("IDLE_TIMEOUT", 10.0, float, "`10`",
            "seconds a connection may wait between requests"),
    Setting("SEND_TIMEOUT", 30.0, float, "`30`",
            "seconds an answer may sit unread in a connection's send queue before the connection "
            "is closed (`0`: never)"),
    Setting("MAX_CONNECTIONS", 2048, int, "`2048`",
            "open connections (idle ones are shed from 90%)"),
    Setting("ACCESS_LOG_REFUSALS", 10, int, "`10`",
            "access lines a second for each refusal status (408, 429, 503); the rest are counted "
            "in one `suppressed K more` line"),
    Setting("ACCESS_LOG", True, _on, "`1`",
            "`0` leaves out the access log lines (`balance serve --quiet` sets it)"),
    # set by `balance serve` for its worker process (serve.py), never by an operator
    Setting("SERVER_PID", 0, int, "—",
            "set by `balance serve` for its worker: the process the worker dies with"),
    Setting("SERVER_PORT", 0, int, "—",
            "set by `balance serve` for its worker: the port it serves (its connections are "
            "reaped: reaper.py)"),
)  # fmt: skip
# name -> (default, parser), the name with its BALANCE_ prefix (the app.config key)
SETTINGS: dict[str, tuple[object, Callable[[Any], Any]]] = {
    s.variable: (s.default, s.parse) for s in TABLE
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
