"""The access log under a flood: refusal lines (408, 429, 503) are rate-limited per status, so
that one client hammering the server cannot fill the disk with them (a flood from one address
wrote 15 MB of 503 lines in 100 s). Each status may log BALANCE_ACCESS_LOG_REFUSALS lines a
second; the rest are counted, and one line says how many were left out of each second that
had any. Every other line is logged as before; /metrics counts every request either way."""

from __future__ import annotations

import logging
import threading
import time

REFUSALS = frozenset((408, 429, 503))
log = logging.getLogger("ingest.access")


class RefusalSampler(logging.Filter):
    """A filter on the "ingest.access" logger, whose lines are (method, route, status, ms)."""

    def __init__(self, per_second: int, clock=time.monotonic):
        super().__init__()
        self.per_second = per_second
        self._clock = clock
        self._lock = threading.Lock()
        self._second: dict[int, int] = {}  # status -> the second its counts are of
        self._logged: dict[int, int] = {}
        self._suppressed: dict[int, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if not (isinstance(args, tuple) and len(args) == 4 and args[2] in REFUSALS):
            self._report()
            return True
        if self.per_second <= 0:
            return True
        status = int(args[2])
        now = int(self._clock())
        with self._lock:
            if self._second.get(status) != now:
                due = self._suppressed.pop(status, 0)
                self._second[status], self._logged[status] = now, 0
            else:
                due = 0
            keep = self._logged[status] < self.per_second
            if keep:
                self._logged[status] += 1
            else:
                self._suppressed[status] = self._suppressed.get(status, 0) + 1
        if due:
            _summary(status, due)
        return keep

    def _report(self) -> None:
        """On any other line: the counts of seconds that are over."""
        now = int(self._clock())
        with self._lock:
            due = {s: n for s, n in self._suppressed.items() if n and self._second.get(s) != now}
            for s in due:
                del self._suppressed[s]
        for status, n in sorted(due.items()):
            _summary(status, n)


def _summary(status: int, n: int) -> None:
    log.info("suppressed %d more %d lines (BALANCE_ACCESS_LOG_REFUSALS)", n, status)


def install(per_second: int) -> RefusalSampler:
    """Put a sampler on the access logger, in place of any earlier one (an app made again)."""
    for old in [f for f in log.filters if isinstance(f, RefusalSampler)]:
        log.removeFilter(old)
    sampler = RefusalSampler(per_second)
    log.addFilter(sampler)
    return sampler
