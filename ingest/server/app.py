"""The server's composition: the Flask app with the upload API, ops endpoints, admin and the
dashboard (/dashboard, /sql), the store, the judge processes and the jobs schedule."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

from flask import Flask, g, request

import dashboard

from ..storage.interface import GameStore, Target
from ..storage.interface import open_store as open_target
from . import accesslog, admin, api, lab_routes, ops, rulesets_api
from . import config as settings
from .gather import Gatherer
from .guard import GuardedUploadRoute
from .headers import SecurityHeaders
from .jobs import JobScheduler
from .metrics import OTHER, Metrics, method_label
from .pipeline import Judge
from .ratelimit import RateLimiter
from .rejections import RejectionTally
from .responses import register_error_handlers
from .workers import JudgePool, process_context

access_log = logging.getLogger("ingest.access")


@dataclass
class IngestState:
    """What the request handlers share; app.extensions["ingest"]."""

    config: dict
    store: GameStore
    judge: Judge
    pool: JudgePool
    limiter: RateLimiter
    metrics: Metrics
    gather: Gatherer | None = None  # small uploads (None: judged on the request threads)
    jobs: JobScheduler | None = None
    rejections: RejectionTally | None = None
    commit_timeout: float = 60.0
    started: float = field(default_factory=time.monotonic)


def create_app(config: dict | None = None) -> Flask:
    """Build the app. Settings come from BALANCE_* environment variables, overridden by
    `config` (same keys; tests may also pass VERIFIER / WELLFORMED modules and STORE)."""
    conf = settings.load(config)
    app = Flask(__name__)
    app.config.update(conf)
    app.config["MAX_CONTENT_LENGTH"] = None  # the upload handler enforces its own limits
    metrics = Metrics()
    judge = Judge(conf.get("VERIFIER"), conf.get("WELLFORMED"))
    store = conf.get("STORE") or open_store(conf, judge, metrics.observe_commit)
    judge.registry = store.registry  # judged by the store's rulesets (rulesets.md RS5)
    workers = _workers(conf)
    state = IngestState(
        config=conf,
        store=store,
        judge=judge,
        pool=JudgePool(workers, judge),
        limiter=RateLimiter(conf["BALANCE_RATE_LIMIT"], conf["BALANCE_RATE_BURST"] or None),
        metrics=metrics,
    )
    if workers > 0 and store.defer_rows:
        # The gatherer's games come without rows (the rows thread builds them): it needs the
        # journal, which BALANCE_DEFER_ROWS=0 turns off.
        state.gather = Gatherer(store, judge, state.commit_timeout)
        store.rebuild = state.pool.rows_many
    app.extensions["store"] = store
    app.extensions["ingest"] = state
    for bp in (api.bp, ops.bp, admin.bp, rulesets_api.bp):
        app.register_blueprint(bp)
    register_error_handlers(app)
    _instrument(app, metrics)
    accesslog.install(conf["BALANCE_ACCESS_LOG_REFUSALS"])
    dashboard.init_app(app, process_context())  # /dashboard and /sql
    lab_routes.init_app(app, store, conf)  # lab runs started from the Lab page
    # the hot route, without Flask in the way (upload.py), with its limits (guard.py)
    route = GuardedUploadRoute(app.wsgi_app, state)
    # (Flask's documented way to wrap the app in middleware; its types declare a method)
    # outside it, the headers every answer carries (headers.py)
    app.wsgi_app = SecurityHeaders(route)  # type: ignore[method-assign]
    app.extensions["uploads"] = route.uploads  # for the reaper (wsgi.py)
    app.extensions[api.EXT_ROUTE] = route  # the one way an upload is answered (api.py)
    metrics.sources.append(route.uploads.gauges)
    slots = app.extensions[dashboard.EXT_SLOTS]
    slots.on_refused = lambda why: metrics.count_event("balance_dashboard_refused_total", why)
    metrics.sources.append(slots.gauges)
    metrics.sources.append(store.gauges)
    state.jobs = JobScheduler(store, conf["BALANCE_JOBS_INTERVAL"]).start()
    state.rejections = RejectionTally(store)
    return app


def open_store(conf: dict, judge: Judge | None = None, on_commit=None) -> GameStore:
    """The server's store, as the settings (config.load) make it: the DuckDB file, or the
    lake when BALANCE_LAKE names its catalog (docs/lake.md)."""
    if conf["BALANCE_LAKE"]:
        target = Target(lake=conf["BALANCE_LAKE"], data_path=conf["BALANCE_LAKE_DATA"] or None)
    else:
        target = Target(db=conf["BALANCE_DB"])
    return open_target(
        target,
        commit_max=conf["BALANCE_COMMIT_MAX"],
        on_commit=on_commit,
        judge=judge,
        threads=conf["BALANCE_DB_THREADS"],
        file_options={
            "checkpoint_threshold": conf["BALANCE_CHECKPOINT"],
            "defer_rows": bool(conf["BALANCE_DEFER_ROWS"]),
        },
        lake_options={
            "work_dir": conf["BALANCE_LAKE_WORKDIR"] or None,
            "lease": conf["BALANCE_LAKE_LEASE"],
            "commit_token": bool(conf["BALANCE_LAKE_COMMIT_TOKEN"]),
            "stall_after": conf["BALANCE_LAKE_STALL"],
            "staging": bool(conf["BALANCE_LAKE_STAGING"]),
            "loader": bool(conf["BALANCE_LAKE_LOADER"]),
            "staging_max": conf["BALANCE_LAKE_STAGING_MAX"],
            "load_every": conf["BALANCE_LAKE_LOAD_EVERY"],
        },
    )


def close_app(app: Flask) -> None:
    """Stop the jobs thread and close the store (checkpointing it)."""
    state = app.extensions["ingest"]
    if lab_routes.EXT in app.extensions:  # (their pairs stay in their run files)
        app.extensions[lab_routes.EXT].close()
    if state.jobs is not None:
        state.jobs.stop()
    if state.gather is not None:
        state.gather.close()
    if state.rejections is not None:
        state.rejections.close()  # before the store closes: its counts go in
    state.pool.close()
    state.store.close()


def _workers(conf: dict) -> int:
    if conf.get("VERIFIER") or conf.get("WELLFORMED"):
        return 0  # injected (test) modules live in this process only
    n = conf["BALANCE_WORKERS"]
    return min(4, os.cpu_count() or 1) if n < 0 else n


def _instrument(app: Flask, metrics: Metrics) -> None:
    @app.before_request
    def _start():
        g.started = time.perf_counter()

    @app.after_request
    def _finish(response):
        seconds = time.perf_counter() - g.get("started", time.perf_counter())
        # the route pattern, never the raw path or anything about the client; a method
        # outside the fixed set is "other" (metrics.py), in the log too
        route = request.url_rule.rule if request.url_rule is not None else OTHER
        method = method_label(request.method)
        metrics.observe_request(route, method, response.status_code, seconds)
        access_log.info("%s %s %d %.1fms", method, route, response.status_code, seconds * 1000)
        return response
