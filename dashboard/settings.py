"""The dashboard's and the SQL console's settings: one table (name, default, parser, how
docs/settings.md shows the default, what it sets), and one reader, `value(app, name)`.

A setting comes from the app's config (`NAME`, `name` or `BALANCE_<NAME>`: tests and embedding),
else the environment variable `BALANCE_<NAME>`, else the table's default, and is parsed by the
table's parser (sizes by ingest/storage/sizes.py). docs/settings.md is held equal to this table
by tests/test_settings_docs.py (each row there is `render(setting)`). A setting two layers
read is one row, kept by the lower layer: TOKEN by the storage table (the API client sends it),
DOCS_DIR by the analysis table (the public dataset's dictionary); the server's table
(ingest/server/config.py) takes HOST and TOKEN from here.
"""

from __future__ import annotations

from typing import Any

from analysis import settings as analysis_settings
from ingest.storage import settings as storage_settings
from ingest.storage.settings import Setting, flag, render, text
from ingest.storage.sizes import parse_size

__all__ = ["TABLE", "BY_NAME", "Setting", "raw", "render", "value"]


def _hosts(value: Any) -> Any:
    return value  # a comma-separated string, or a list from the app's config (guard.py)


TABLE: tuple[Setting, ...] = (
    Setting("SNAPSHOT_DIR", None, text, "`<store>.snapshots`",
            "where the read-only snapshots of the store are kept"),
    Setting("SNAPSHOT_MAX_AGE", 60.0, float, "`60`",
            "seconds before a page refreshes the snapshot it reads"),
    Setting("DB_PATH", None, text, "—",
            "the store file the snapshots copy, where the app is embedded without a store "
            "object (tests, a WSGI host); `balance serve` gives its store"),
    Setting("CACHE_DIR", None, text, "the temp directory",
            "the built JavaScript bundle of the charts (built once per vl-convert version)"),
    analysis_settings.BY_NAME["DOCS_DIR"],
    Setting("VALIDATE_CHARTS", False, flag, "`0`",
            "`1` validates every chart spec against Altair's Vega-Lite schema when it is built "
            "(slow: for development and tests)"),
    Setting("SQL_ROW_LIMIT", 10_000, int, "`10000`",
            "rows a console query returns at most (the answer says it was truncated)"),
    Setting("SQL_TIMEOUT", 5.0, float, "`5`", "seconds a console query may run"),
    Setting("SQL_MAX_BYTES", 32 * 1024 * 1024, parse_size, "`32MiB`",
            "bytes of one console result"),
    Setting("SQL_DOWNLOAD_MAX_BYTES", 64 * 1024 * 1024, parse_size, "`64MiB`",
            "bytes of one console download"),
    Setting("SQL_DOWNLOAD_TIMEOUT", 30.0, float, "`30`",
            "seconds one console download may take"),
    Setting("SQL_DOWNLOADS", 4, int, "`4`", "console downloads at once"),
    Setting("SQL_DOWNLOAD_SHARE", 0, int, "`0` (an eighth of the downloads, at least 2)",
            "downloads one client address may hold while half or more are taken (503 beyond)"),
    Setting("SQL_WORKERS", 2, int, "`2`", "console query processes"),
    Setting("SQL_THREADS", 2, int, "`2`", "DuckDB threads of each console process"),
    Setting("SQL_MEMORY_LIMIT", "1GB", text, "`1GB`",
            "DuckDB memory limit of each console process"),
    Setting("SQL_KILL_MARGIN", 0.5, float, "`0.5`",
            "seconds past a query's timeout before its process is killed and replaced"),
    Setting("SAVED_MAX", 1000, int, "`1000`", "saved queries a store keeps at most (409 beyond)"),
    Setting("SAVED_MAX_BYTES", 64 * 1024, parse_size, "`64KiB`",
            "bytes of one saved query: title, description, text, parameters, chart "
            "(413 beyond)"),
    Setting("SAVED_TOTAL_BYTES", 16 * 1024 * 1024, parse_size, "`16MiB`",
            "bytes of all saved queries together (409 beyond)"),
    Setting("SAVED_RATE", 30, int, "`30`",
            "saves (creates and changes) a minute from one client address (429 beyond; `0`: "
            "no limit)"),
    Setting("HOST", "127.0.0.1", text, "`127.0.0.1`",
            "the address `balance serve` listens on (also the dashboard's own host name)"),
    storage_settings.BY_NAME["TOKEN"],
    Setting("DASHBOARD_SLOTS", 6, int, "`balance serve`'s threads less two",
            "dashboard and console requests served at once; more get 503 + Retry-After"),
    Setting("DASHBOARD_SHARE", 0, int, "`0` (an eighth of the slots, at least 2)",
            "of the dashboard's slots, what one client address may hold while half or more "
            "are taken"),
    Setting("ALLOWED_HOSTS", None, _hosts, "—",
            "more host names (comma separated, `name` or `name:port`) the dashboard answers to"),
)  # fmt: skip
BY_NAME = {s.name: s for s in TABLE}


def raw(app, name: str) -> Any:
    """The setting as given (app config, else environment), None when not given."""
    if app is not None:
        for key in (name, name.lower(), f"BALANCE_{name}"):
            given = app.config.get(key)
            if given not in (None, ""):
                return given
    return storage_settings.given(name)


def value(app, name: str, default: Any = None) -> Any:
    """Setting `name` of `app` (None: the environment only), parsed, else its default (the
    table's; `default` for a name not in the table yet). ValueError names a value that does
    not parse."""
    known = BY_NAME.get(name)
    given = raw(app, name)
    if given is None:
        return known.default if known is not None and default is None else default
    if known is None:
        return given
    try:
        return known.parse(given)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"BALANCE_{name}={given!r}: {exc}") from None
