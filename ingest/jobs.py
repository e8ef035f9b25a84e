"""Running the analysis jobs (analysis.jobs.run, when installed) against the server's store."""

from __future__ import annotations

import importlib
import logging
import threading

log = logging.getLogger("ingest.jobs")


def analysis_run():
    """`analysis.jobs.run(read_con, write)` if the analysis package provides it, else None."""
    try:
        module = importlib.import_module("analysis.jobs")
    except ModuleNotFoundError as exc:
        if exc.name not in ("analysis", "analysis.jobs"):
            log.error("analysis jobs unavailable: %s", exc)
        return None
    except ImportError as exc:  # a broken analysis package must not take uploads down
        log.error("analysis jobs unavailable: %s", exc)
        return None
    return getattr(module, "run", None)


def run_once(store) -> dict | None:
    """One analysis run through the store: reads on a cursor, writes on the store's calls thread."""
    run = analysis_run()
    if run is None:
        return None
    reader = store.reader()  # sees every game stored so far, derived rows included
    try:
        # analysis.jobs opens its own transaction (and falls back to ours if one is open)
        return run(reader, lambda fn: store.submit(fn, transaction=False).result())
    finally:
        reader.close()


class JobScheduler:
    """Runs the analysis every `interval` seconds on a daemon thread (first run after one
    interval, so a restart does not redo work at once)."""

    def __init__(self, store, interval: float):
        self.store, self.interval = store, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="analysis-jobs", daemon=True)

    def start(self) -> JobScheduler:
        if self.interval > 0 and analysis_run() is not None:
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                summary = run_once(self.store)
                log.info("analysis run: %s", _short(summary))
            except Exception as exc:  # a failed run must not stop the next one
                log.error("analysis run failed: %s: %s", type(exc).__name__, exc)


def _short(summary) -> str:
    if not isinstance(summary, dict):
        return str(summary)
    return ", ".join(f"{k}={v}" for k, v in summary.items() if not isinstance(v, dict | list))
