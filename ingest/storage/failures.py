"""Storage failures: why a store cannot store uploads now, and since when.

Both stores (the DuckDB file store, store.py, and the lake, lake.py) keep them the same way:
each cause ("journal", "space", "lake", ...) is set when a write fails and cleared when writes
work again; while any is set, uploads are refused with `StorageUnavailable` (503) and /healthz
says why and for how long.
"""

from __future__ import annotations

import logging
import os
import threading
import time

RETRY_AFTER = 5  # seconds, for clients of an upload refused while storage fails
MiB = 1024 * 1024
MIN_FREE = 64 * MiB  # default of BALANCE_MIN_FREE (bytes)


def min_free(value: int | None = None) -> int:
    """The free-space reserve: `value`, else $BALANCE_MIN_FREE, else MIN_FREE (0: none)."""
    if value is not None:
        return int(value)
    raw = os.environ.get("BALANCE_MIN_FREE", "")
    return int(raw) if raw.strip() else MIN_FREE


class StorageUnavailable(Exception):
    """The store cannot make writes durable now (disk full, I/O error): nothing of the request
    was stored or acknowledged; retry after `retry_after` seconds."""

    def __init__(self, reason: str, retry_after: int = RETRY_AFTER):
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class Failures:
    """The failing causes of one store (cause -> why). The store's threads set and clear them,
    request threads read them: every change and the joined reason are taken under a lock; `in`
    and truth are single reads of the dict, for the hot path of every upload."""

    def __init__(self, what: str, log: logging.Logger):
        self._what = what  # what the log says is unavailable: "storage", "lake"
        self._log = log
        self._reasons: dict[str, str] = {}
        self._since: float | None = None  # monotonic time the first of them was set
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._reasons)

    def __contains__(self, cause: str) -> bool:
        return cause in self._reasons

    @property
    def reason(self) -> str | None:
        """Every cause's reason, joined (None while nothing fails)."""
        with self._lock:
            return self._joined()

    def _joined(self) -> str | None:
        return "; ".join(self._reasons.values()) if self._reasons else None

    def health(self) -> dict:
        """For /healthz: the failure (None when ok) and for how many seconds it has lasted."""
        with self._lock:
            reason, since = self._joined(), self._since
        return {
            "failure": reason,
            "failing_seconds": None if since is None else round(time.monotonic() - since, 1),
        }

    def check(self) -> None:
        """StorageUnavailable while anything fails."""
        if self._reasons:
            raise StorageUnavailable(self.reason or "storage unavailable")

    def fail(self, cause: str, reason: str) -> bool:
        """Set (or update) a cause; whether it is new (it is logged then)."""
        with self._lock:
            new = cause not in self._reasons
            self._reasons[cause] = reason
            if self._since is None:
                self._since = time.monotonic()
        if new:
            self._log.error(
                "%s unavailable (%s), uploads answered 503: %s", self._what, cause, reason
            )
        return new

    def clear(self, cause: str) -> bool:
        """Clear a cause (writes work again); whether it was set (it is logged then)."""
        with self._lock:
            had = self._reasons.pop(cause, None)
            if not self._reasons:
                self._since = None
        if had is not None:
            self._log.warning("%s available again (%s)", self._what, cause)
        return had is not None


def check_space(failures: Failures, directory: str, reserve: int) -> bool:
    """Whether `reserve` bytes are free on the filesystem of `directory`; sets or clears the
    "space" cause, so uploads stop (503) before the disk is full and resume when room is back.
    A directory that cannot be read is not a space problem (its writes will say what is)."""
    if reserve <= 0:
        failures.clear("space")
        return True
    try:
        st = os.statvfs(directory)
    except OSError:
        return True
    free = st.f_bavail * st.f_frsize
    if free < reserve:
        failures.fail(
            "space",
            # no path: the reason reaches clients (503) and /healthz
            f"disk nearly full: {free // 1024} KiB free, uploads resume at "
            f"{reserve // 1024} KiB (BALANCE_MIN_FREE)",
        )
        return False
    failures.clear("space")
    return True
