"""Running the analysis jobs (analysis.jobs.run) against the server's store, on a schedule."""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("ingest.jobs")


def run_once(store) -> dict:
    """One analysis run through the store: reads on a cursor, writes on the store's calls thread."""
    # imported at the first run, not with the app: a server whose schedule is off (or not yet
    # due) starts without the analysis stack (about 0.6 s of a worker's start)
    from analysis import jobs as analysis_jobs

    reader = store.reader()  # sees every game stored so far, derived rows included
    try:
        # analysis.jobs opens its own transaction (and falls back to ours if one is open)
        return analysis_jobs.run(reader, lambda fn: store.submit(fn, transaction=False).result())
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
        if self.interval > 0:
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
    """key=value for the summary's plain values; seconds to a tenth (not 2.5672843209999883)."""
    if not isinstance(summary, dict):
        return str(summary)
    return ", ".join(
        f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
        for k, v in summary.items()
        if not isinstance(v, dict | list)
    )
