"""Rejected uploads, counted: how many records were rejected, per day, field and kind of
problem (the store's `rejections` table), so the Data quality page shows a client build that
sends malformed records. Nothing of a rejected record is kept: not its text, not the values
the message quotes, and an unknown field's name only when it looks like a field name.

The counts are kept in memory and appended to the store every FLUSH_SECONDS (and at close)
through its writer, never in an upload's own commit: counting can neither fail nor slow an
upload. A flush that fails (a full disk) keeps its counts for the next one. The keys are
bounded (MAX_KEYS distinct ones a day and server: past them, field '(other)'), so a client
cannot grow the table with made-up field names, however it spreads them over flushes.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import threading
from collections import Counter

log = logging.getLogger("ingest.rejections")

FLUSH_SECONDS = 10.0
MAX_KEYS = 200
_INDEX = re.compile(r"\[\d+\]")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\[\]]{0,47}$")
INSERT = "INSERT INTO rejections (day, field, problem, records) VALUES (?, ?, ?, ?)"


def problem_of(message: str) -> str:
    for kind in ("not JSON", "unknown field", "missing field"):
        if message.startswith(kind):
            return kind
    return "invalid value"


def field_of(field: str | None) -> str:
    """The field at fault, indices folded ('turns[7]' -> 'turns[]'); a name that does not look
    like one (a client's made-up key, say) is '(unknown)'."""
    name = _INDEX.sub("[]", field or "record")
    return name if _NAME.match(name) else "(unknown)"


class RejectionTally:
    def __init__(self, store, every: float = FLUSH_SECONDS):
        self.store = store
        self._counts: Counter[tuple[dt.date, str, str]] = Counter()
        self._seen: set[tuple[dt.date, str, str]] = set()  # today's keys (MAX_KEYS at most)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rejections", daemon=True)
        if every > 0:
            self.every = every
            self._thread.start()

    def count(self, results: list[dict]) -> None:
        rejected = [r for r in results if r.get("verdict") == "rejected"]
        if not rejected:
            return
        day = dt.datetime.now(dt.UTC).date()
        with self._lock:
            for r in rejected:
                key = (day, field_of(r.get("field")), problem_of(r.get("message") or ""))
                if key not in self._seen:
                    self._seen = {k for k in self._seen if k[0] == day}  # a new day: anew
                    if len(self._seen) >= MAX_KEYS:
                        key = (day, "(other)", key[2])
                    self._seen.add(key)
                self._counts[key] += 1

    def pending(self) -> int:
        with self._lock:
            return sum(self._counts.values())

    def flush(self, timeout: float = 30.0) -> int:
        """Append the counts to the store; returns the records counted (0 if it failed)."""
        with self._lock:
            counts, self._counts = self._counts, Counter()
        if not counts:
            return 0
        rows = [(day, field, problem, n) for (day, field, problem), n in sorted(counts.items())]
        try:
            self.store.submit(lambda con: con.executemany(INSERT, rows)).result(timeout)
        except Exception as exc:  # a full disk, a closed store: keep them for the next flush
            log.warning("rejection counts not stored yet: %s: %s", type(exc).__name__, exc)
            with self._lock:
                self._counts.update(counts)
            return 0
        return sum(counts.values())

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        self.flush()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.flush()
