"""Designer dashboard (/dashboard) and analyst SQL console (/sql), mounted on the ingest app.

`ingest.server.app.create_app` calls `init_app(app)`. Settings (one table: settings.py, with their
defaults and parsers; `setting(app, NAME)` reads one) from `app.config` (all optional):
each also as a BALANCE_<NAME> key or environment variable: BALANCE_HOST (the address
`balance serve` listens on: anything but loopback requires the token), BALANCE_TOKEN,
SQL_TIMEOUT (5 s),
SQL_ROW_LIMIT (10,000), SNAPSHOT_DIR (default: next to the store file), SNAPSHOT_MAX_AGE
(seconds between snapshots of a changing store, 60), DOCS_DIR (where tables.md and
agg-tables.md are), CACHE_DIR (for the built JavaScript bundle), DASHBOARD_SLOTS (requests
served at once, 6; `balance serve` makes it its threads less two: slots.py), SAVED_MAX,
SAVED_MAX_BYTES, SAVED_TOTAL_BYTES, SAVED_RATE (the saved queries' bounds: saved.py),
DASHBOARD_SHARE (of the slots, what one client address may hold while they are scarce; 0: an
eighth, at least 2).
"""

from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path

EXT_SNAPSHOTS = "dashboard.snapshots"
EXT_BUNDLE = "dashboard.bundle"
EXT_SLOTS = "dashboard.slots"
EXT_PROCESSES = "dashboard.processes"
_SNAPSHOTS_LOCK = threading.Lock()


def setting(app, name: str, default=None):
    """Setting `name` of `app` (None: the environment only): app.config[NAME] / [name] /
    [BALANCE_<NAME>], else the variable BALANCE_<NAME>, else its default; parsed, by the
    dashboard's one settings table (settings.py)."""
    from .settings import value

    return value(app, name, default)


def _snapshot_dir(app, store) -> Path:
    explicit = setting(app, "SNAPSHOT_DIR")
    if explicit:
        return Path(explicit)
    db = getattr(store, "path", None) or setting(app, "DB") or setting(app, "DB_PATH")
    if db and str(db) != ":memory:":
        return Path(f"{db}.snapshots")
    return Path(tempfile.mkdtemp(prefix="balance-snapshots-"))


def snapshots(app):
    """The app's snapshot manager, created on first use (the store may be attached after init)."""
    snaps = app.extensions.get(EXT_SNAPSHOTS)
    if snaps is not None:
        return snaps
    # the first requests come at once: two managers would each clear the other's downloads
    with _SNAPSHOTS_LOCK:
        snaps = app.extensions.get(EXT_SNAPSHOTS)
        if snaps is not None:
            return snaps
        from .snapshot import Snapshots

        store = app.extensions["store"]
        snaps = Snapshots(
            store,
            _snapshot_dir(app, store),
            max_age=float(setting(app, "SNAPSHOT_MAX_AGE", 60)),
            processes=app.extensions.get(EXT_PROCESSES),
        )
        app.extensions[EXT_SNAPSHOTS] = snaps
    return snaps


def init_app(app, processes=None) -> None:
    """Mount the dashboard and the console on `app`. `processes`: the multiprocessing context
    the console's SQL workers start from (the server's fork server); None spawns each."""
    from .assets import Bundle
    from .console.sql_routes import bp as sql_bp
    from .pages import bp as pages_bp
    from .slots import DEFAULT as DEFAULT_SLOTS
    from .slots import Slots

    validate = bool(setting(app, "VALIDATE_CHARTS"))
    # Altair and Polars load with the first page or chart, not at start: a server that only
    # takes uploads never pays for them (benchmarks/server_start.py). Charts not loaded yet
    # start unchecked; loaded ones (another app in this process) take this app's setting.
    if validate or "dashboard.charts" in sys.modules:
        from . import charts

        charts.validate(validate)
    bundle = Bundle(setting(app, "CACHE_DIR"))
    app.extensions[EXT_BUNDLE] = bundle
    app.extensions[EXT_PROCESSES] = processes
    bundle.warm()
    app.register_blueprint(pages_bp)
    app.register_blueprint(sql_bp)
    slots = Slots(
        int(setting(app, "DASHBOARD_SLOTS", DEFAULT_SLOTS)),
        int(setting(app, "DASHBOARD_SHARE", 0)),
    )
    slots.install(app, frozenset({pages_bp.name, sql_bp.name}))
    app.extensions[EXT_SLOTS] = slots
