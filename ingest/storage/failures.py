"""Storage failures: why a store cannot store uploads now, and since when.

Both stores (the DuckDB file store, store.py, and the lake, lake/store.py) keep them the same way:
each cause ("journal", "space", "lake", ...) is set when a write fails and cleared when writes
work again; while any is set, uploads are refused with `StorageUnavailable` (503) and /healthz
says why and for how long.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import threading
import time

from . import settings

RETRY_AFTER = 5  # seconds, for clients of an upload refused while storage fails
MIN_FREE = settings.BY_NAME["MIN_FREE"].default  # bytes


def min_free(value: int | None = None) -> int:
    """The free-space reserve: `value`, else $BALANCE_MIN_FREE (the storage table:
    settings.py), else MIN_FREE (0: none)."""
    if value is not None:
        return int(value)
    return int(settings.value("MIN_FREE"))


# What a storage error's text may hold that must not reach clients (the 503's message, /healthz):
# SQL echoed back, a libpq connection string or URI (with its password), quoted host names and
# ports, and server paths (the data path, the journal's files) or object-store URLs.
_SQL_ECHO = re.compile(r"\s*LINE \d+:.*$", re.S)
_PG_URI = re.compile(r"postgres(?:ql)?://\S+", re.I)
_CONNINFO = re.compile(
    r"\"?(?:\b(?:host|hostaddr|port|user|dbname|password|passfile|sslmode|sslcert|sslkey|"
    r"sslrootcert|service|options|application_name|connect_timeout|target_session_attrs)"
    r"\s*=\s*(?:'(?:[^'\\]|\\.)*'|[^\s\"]+)\s*)+\"?",
    re.I,
)
_SERVER_AT = re.compile(r"server at \"[^\"]*\"(?:,? port \d+)?|server on socket \"[^\"]*\"", re.I)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"]+", re.I)
_PATH = re.compile(r"(?<![\w.:/])/[^\s'\"]+")
_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s\"]+)", re.I)
_URI_PASSWORD = re.compile(r"(postgres(?:ql)?://[^:/@\s]+:)[^@\s]+@", re.I)


def without_passwords(text: str) -> str:
    """`text` with every password of a connection string or URI masked: for the log."""
    return _URI_PASSWORD.sub(r"\1***@", _PASSWORD.sub(r"\1***", text))


def public_reason(what: str, exc: BaseException) -> str:
    """Why a write failed, in words fit for clients and /healthz: the error's kind and text,
    with no SQL, connection string, host, port, password or server path (the log has the
    text whole, passwords masked: `without_passwords`)."""
    text = _SQL_ECHO.sub("", " ".join(str(exc).split()))
    for pattern, stand_in in (
        (_PG_URI, "<catalog>"),
        (_CONNINFO, "<catalog> "),
        (_SERVER_AT, "server at <catalog>"),
        (_URL, "<path>"),
        (_PATH, "<path>"),
    ):
        text = pattern.sub(stand_in, text)
    text = re.sub(r"\s+([:;,])", r"\1", " ".join(text.split()))[:300]
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC or "no space left" in text.lower():
        return f"disk full: {what} failed: {text}"
    return f"{what} failed: {type(exc).__name__}: {text}"


_last_detail: dict[tuple[str, str], str] = {}  # (logger, what) -> the detail logged last
_detail_lock = threading.Lock()


def logged_reason(logger: logging.Logger, what: str, exc: BaseException) -> str:
    """`public_reason`, after logging the error whole (passwords masked) unless it is the
    same as the last one logged for `what`: a failure retried every few seconds is logged
    once, not at every retry."""
    detail = without_passwords(" ".join(str(exc).split()))
    key = (logger.name, what)
    with _detail_lock:
        new = _last_detail.get(key) != detail
        _last_detail[key] = detail
    if new:
        logger.warning("%s failed: %s: %s", what, type(exc).__name__, detail)
    return public_reason(what, exc)


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
        failures.fail("space", space_reason(free, st.f_blocks * st.f_frsize, reserve))
        return False
    failures.clear("space")
    return True


def space_reason(free: int, size: int, reserve: int) -> str:
    """Why uploads stop for want of space (no path: it reaches clients and /healthz)."""
    if size < reserve:  # no file removed could ever make room
        return (  # the same opening as below: what monitors match on
            f"disk nearly full: the disk holds {size // 1024} KiB in all, less than the "
            f"free-space reserve of {reserve // 1024} KiB (BALANCE_MIN_FREE): no upload is "
            "stored until the reserve is set lower or the store moves to a larger disk"
        )
    return (
        f"disk nearly full: {free // 1024} KiB free, uploads resume at {reserve // 1024} KiB "
        "(BALANCE_MIN_FREE)"
    )
