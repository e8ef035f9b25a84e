"""The lake's commit token: one writer at a time has a lake transaction open.

Why: DuckLake gives every commit the next snapshot id, so writers committing at once conflict,
and each loser redoes its catalog work: CPU spent for nothing, more of it with every server
(benchmarks/lake_writers.py). The token is a transaction advisory lock in the catalog's
PostgreSQL database, taken in a PostgreSQL transaction of its own that stays open from the
lake transaction's BEGIN to its COMMIT. A waiter blocks in a socket read (no CPU, unlike a
wait inside `postgres_execute`, which spins its caller); the lock of a holder that dies goes
with its session. A transaction lock, not a session one, so that a pooler between the
servers and PostgreSQL (PgBouncer in transaction mode) keeps the lock and its release on one
backend.

The token only saves work; it never decides what is stored. When it cannot be had (the
catalog unreachable on its own connection, or held past `wait` seconds by a stuck holder)
the commit goes ahead without it, and DuckLake's conflict handling keeps that correct.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

log = logging.getLogger(__name__)

TOKEN_WAIT = 10.0  # seconds a commit waits for the token before it goes ahead without
RECONNECT_AFTER = 5.0  # seconds without the token after its connection failed
# advisory locks are per database: one key for the lake whose catalog is this database
TOKEN_KEY = zlib.crc32(b"balance lake commit token")


class CommitToken:
    """The token on a connection of its own (one per store; not shared between threads)."""

    def __init__(self, conninfo: str, wait: float = TOKEN_WAIT):
        self._conninfo = conninfo
        self.wait = float(wait)
        self._con: psycopg.Connection | None = None
        self._down_until = 0.0
        self.counters = {"held": 0, "missed": 0}

    @contextmanager
    def held(self) -> Iterator[bool]:
        """Hold the token for the block if it can be had; yields whether it is held."""
        got = self._acquire()
        try:
            yield got
        finally:
            if got:
                self._release()

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def _connection(self) -> psycopg.Connection | None:
        if self._con is not None and not self._con.closed:
            return self._con
        if time.monotonic() < self._down_until:
            return None
        try:
            con = psycopg.connect(
                self._conninfo, connect_timeout=5, application_name="balance commit token"
            )
        except psycopg.Error as exc:
            self._lost(exc)
            return None
        self._con = con
        return con

    def _acquire(self) -> bool:
        con = self._connection()
        if con is None:
            self.counters["missed"] += 1
            return False
        try:
            # one round trip; SET LOCAL: a pooler may hand the next transaction another backend
            con.execute(
                f"SET LOCAL lock_timeout = {int(self.wait * 1000)};"
                f"SELECT pg_advisory_xact_lock({TOKEN_KEY})"
            )
        except psycopg.errors.LockNotAvailable:
            self.counters["missed"] += 1
            self._end(con)
            log.warning("the lake commit token was held past %.0f s: committing without", self.wait)
            return False
        except psycopg.Error as exc:
            self.counters["missed"] += 1
            self._lost(exc)
            return False
        self.counters["held"] += 1
        return True

    def _release(self) -> None:
        if self._con is not None:
            self._end(self._con)

    def _end(self, con: psycopg.Connection) -> None:
        """End the token's transaction, and the lock with it."""
        try:
            con.rollback()
        except psycopg.Error as exc:  # the session is gone, and its lock with it
            self._lost(exc)

    def _lost(self, exc: BaseException) -> None:
        log.warning("the lake commit token is unavailable for now: %s", str(exc).strip())
        self.close()
        self._down_until = time.monotonic() + RECONNECT_AFTER
