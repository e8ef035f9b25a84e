"""The app in the server's worker process, as `balance serve` runs it (see serve.py).

granian starts one worker process and calls `create()` there; the settings come from the
environment (BALANCE_*), which `balance serve` sets first. The worker owns the DuckDB file:
it closes the store (journal loaded, checkpoint) when it stops, and dies with the server.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import signal
import sys
import threading
import time
from multiprocessing.util import Finalize

from flask import Flask

from .app import close_app, create_app
from .config import load
from .serve import configure_logging

log = logging.getLogger("ingest.serve")

ON_STOP: list = []  # called once when the worker is told to stop, before granian stops
_PR_SET_PDEATHSIG = 1


def create() -> Flask:
    settings = load()
    die_with_server(settings["BALANCE_SERVER_PID"])
    stop_on_first_signal(float(settings["BALANCE_STOP_TIMEOUT"]))
    configure_logging(access_log=settings["BALANCE_ACCESS_LOG"])
    app = create_app(settings)
    start_reaper(app)
    # The worker leaves through multiprocessing, which joins its child processes (the judge
    # pool's) before atexit hooks run: close (and stop the pool) in its exit finalizers.
    Finalize(None, _close, args=(app,), exitpriority=10)
    # The gatherer and the commit's leader give up the GIL inside every pipe send, receive,
    # write and fdatasync; with request threads busy, the default 5 ms switch interval would
    # make them wait that long to get it back each time.
    sys.setswitchinterval(0.0005)
    # Everything imported and built so far lives as long as the server: keep it out of the
    # cyclic collector, whose full passes over the dashboard's imports (~200,000 objects) took
    # ~120 ms each, stalling every request. Uploads allocate many short-lived containers:
    # collect the young generation less often (in-process, 8 threads: +10% games/s).
    gc.freeze()
    gc.set_threshold(5000, 20, 100)
    return app


def start_reaper(app: Flask) -> None:
    """Close idle, stalled and surplus connections of the server's port (reaper.py)."""
    from .reaper import Reaper, supported

    port = int(app.config["BALANCE_SERVER_PORT"] or 0)
    if not port:
        return
    if not supported():
        log.warning("no TCP_INFO here: connections that never send a byte are never closed")
        return
    conf = app.config
    uploads = app.extensions["uploads"]
    reaper = Reaper(
        port,
        float(conf["BALANCE_IDLE_TIMEOUT"]),
        int(conf["BALANCE_MAX_CONNECTIONS"]),
        stalled=uploads.stalled,
        dawdling=uploads.dawdling,
        send_timeout=float(conf["BALANCE_SEND_TIMEOUT"]),
        metrics=app.extensions["ingest"].metrics,
    )
    reaper.start()

    def stopping():
        # granian waits for every open request before the worker exits: uploads still
        # waiting for their bodies end now (408), idle connections are closed
        uploads.expire()
        reaper.stopping()

    ON_STOP.append(stopping)


def die_with_server(parent: int) -> None:
    """A server killed with SIGKILL cannot stop this process, which holds the DuckDB file's
    lock: have the kernel kill it too (PR_SET_PDEATHSIG), so that a restart can open it."""
    if not parent:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        log.warning("could not tie the worker to the server process (prctl failed)")
    if os.getppid() != parent:  # the server died before the line above
        os._exit(1)


def stop_on_first_signal(stop_timeout: float = 0.0) -> None:
    """Make SIGINT and SIGTERM stop the worker every time, once.

    granian's worker waits on a lock in its main thread for a Python signal handler to stop
    it. A signal the kernel hands to another thread (common when two come at once: a
    terminal's Ctrl-C reaches the whole process group, then the supervisor sends SIGTERM; or
    systemd signals every process of the unit) runs no handler while that lock is held, and
    a second set() of its shutdown signal blocks forever (granian 2.8.9): the worker hung.
    Here the interpreter writes every caught signal to a wakeup pipe, whichever thread took
    it, and one thread reads the pipe and sets the shutdown once. granian's worker code picks
    this `set_sync_signals` up when it starts serving."""
    from granian import _signals
    from granian._granian import WorkerSignal

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda signum, frame: None)  # caught: written to the pipe
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)

    def set_sync_signals():
        event = WorkerSignal()

        def wait_for_stop():
            os.read(wake_r, 1)
            for hook in ON_STOP:
                try:
                    hook()
                except Exception as exc:  # stopping matters more
                    log.warning("stopping: %s in a stop hook", type(exc).__name__)
            event.set()  # once: later signals only fill the pipe
            exit_if_stuck(stop_timeout)

        threading.Thread(target=wait_for_stop, name="stop-signals", daemon=True).start()
        return event

    _signals.set_sync_signals = set_sync_signals


def exit_if_stuck(seconds: float) -> None:
    """Leave after `seconds` (BALANCE_STOP_TIMEOUT) of stopping, whatever still runs: one SIGTERM
    must stop the server (systemd and container runtimes send one, then SIGKILL). A close that
    waits on a frozen catalog, or a thread that never ends, would keep the worker, and with it
    the server, up. What was acknowledged is durable already (the journal, or a lake's
    staging in PostgreSQL), so leaving without a clean close loses none of it."""
    if seconds <= 0:
        return
    time.sleep(seconds)
    log.error("stopping took over %s s (BALANCE_STOP_TIMEOUT): leaving without a clean close",
              f"{seconds:g}")  # fmt: skip
    for handler in logging.getLogger().handlers:
        handler.flush()
    os._exit(1)


def _close(app: Flask) -> None:
    log.info("stopping: closing the store (checkpoint)")
    close_app(app)
