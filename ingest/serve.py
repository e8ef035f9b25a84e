"""Running the app on waitress, with logs that never carry a client address or header."""

from __future__ import annotations

import gc
import logging
import signal
import sys

from flask import Flask

from .app import close_app

log = logging.getLogger("ingest.serve")


def configure_logging(access_log: bool = True) -> None:
    """Our own lines only: method, route, status, time. Waitress logs no access lines itself
    (no TransLogger here), and nothing request-derived is logged anywhere else."""
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("ingest.access").setLevel(logging.INFO if access_log else logging.WARNING)
    # "Task queue depth is N" whenever every thread waits on a commit: normal under load
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)


def run(app: Flask, host: str, port: int, threads: int = 16) -> int:
    from waitress import create_server

    # The writer thread gives up the GIL inside every DuckDB call; with request threads busy
    # (reading bodies, judging when BALANCE_WORKERS=0), the default 5 ms switch interval
    # would make it wait that long to get it back after each statement of a commit.
    sys.setswitchinterval(0.0005)
    # Everything imported and built so far lives as long as the server: keep it out of the
    # cyclic collector, whose full passes over the dashboard's imports (~200,000 objects) took
    # ~120 ms each, stalling every request. Uploads allocate many short-lived containers:
    # collect the young generation less often (in-process, 8 threads: +10% games/s).
    gc.freeze()
    gc.set_threshold(5000, 20, 100)

    max_body = app.extensions["ingest"].config["BALANCE_MAX_BODY"]
    server = create_server(
        app,
        host=host,
        port=port,
        threads=threads,
        ident="balance",
        # The app answers an over-limit body with its own JSON 413; waitress only guards
        # memory and disk beyond twice the limit (it buffers a body before the app sees it).
        max_request_body_size=2 * max_body + 1024 * 1024,
        expose_tracebacks=False,
        clear_untrusted_proxy_headers=True,
    )

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print(f"Serving on http://{host}:{server.effective_port}", flush=True)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        log.info("stopping: closing the store (checkpoint)")
        server.close()
        close_app(app)
    return 0
