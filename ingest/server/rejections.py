"""Rejected uploads, counted: how many records were rejected, per day, field and kind of
problem (the store's `rejections` table), so the Data quality page shows a client build that
sends malformed records. Nothing of a rejected record is kept: not its text, not the values
the message quotes, and an unknown field's name only when it looks like a field name.

The counts are kept in memory and appended to the store every FLUSH_SECONDS (and at close)
through its writer, never in an upload's own commit: counting can neither fail nor slow an
upload. A flush that fails (a full disk) keeps its counts for the next one. The keys are
bounded (MAX_KEYS distinct ones a day and server: past them, field '(other)'), so a client
cannot grow the table with made-up field names, however it spreads them over flushes.

A flush appends a row per key, so a steady flood of one malformed record adds 8,640 rows a
day and server. Once a day (at the first flush, then at the first flush of each new day)
the rows of past days are rolled up into one per (day, field, problem), in one transaction:
the sums are read, the rows they sum deleted and the sums inserted. Rows of a flush that
commits meanwhile are not in the transaction's snapshot and stay as they are (on the file);
on a lake both hold the commit token, and should one go without it (ingest/storage/
lake/token.py), one of the two fails on the conflict and is tried again (a flush keeps its
counts; a roll-up runs again at the next flush).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import threading
from collections import Counter

from ..storage.failures import without_passwords

log = logging.getLogger("ingest.rejections")

FLUSH_SECONDS = 10.0
MAX_KEYS = 200
_INDEX = re.compile(r"\[\d+\]")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\[\]]{0,47}$")
INSERT = "INSERT INTO rejections (day, field, problem, records) VALUES (?, ?, ?, ?)"
_SPLIT = (
    "SELECT day, field, problem, sum(records)::BIGINT FROM rejections WHERE day < ? "
    "GROUP BY day, field, problem HAVING count(*) > 1"
)
_DELETE = "DELETE FROM rejections WHERE day = ? AND field = ? AND problem = ?"


def roll_up(con, before: dt.date) -> int:
    """Make the rows of each (day, field, problem) before `before` one row holding their sum,
    inside the caller's transaction; returns the keys rolled up."""
    sums = con.execute(_SPLIT, [before]).fetchall()
    if sums:
        con.executemany(_DELETE, [key[:3] for key in sums])
        con.executemany(INSERT, sums)
    return len(sums)


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
        self._rolled: dt.date | None = None  # the day of the last roll-up
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
            self.store.submit(lambda con: con.executemany(INSERT, rows), token=True).result(timeout)
        except Exception as exc:  # a full disk, a closed store: keep them for the next flush
            log.warning(  # a catalog's error may carry its connection string: no password
                "rejection counts not stored yet: %s: %s",
                type(exc).__name__,
                without_passwords(str(exc)),
            )
            with self._lock:
                self._counts.update(counts)
            return 0
        return sum(counts.values())

    def roll_up(self, timeout: float = 30.0) -> int:
        """Roll up past days' rows once a day (see the module docstring); the keys rolled up,
        or 0 if it failed (tried again at the next flush)."""
        today = dt.datetime.now(dt.UTC).date()
        if self._rolled == today:
            return 0
        try:
            rolled = self.store.submit(lambda con: roll_up(con, today), token=True).result(timeout)
        except Exception as exc:  # a full disk, a lake conflict: the next flush tries again
            log.warning(
                "rejection counts not rolled up yet: %s: %s",
                type(exc).__name__,
                without_passwords(str(exc)),
            )
            return 0
        self._rolled = today
        return rolled

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        self.flush()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            if self.store.closed:  # closed without this tally (close_app closes it first)
                return
            self.flush()
            self.roll_up()
