"""What this code assumes of the exact versions it pins (pyproject.toml), one list per
dependency: each entry is a place that works around or relies on that version's behaviour,
and what to re-check there before moving the pin. `tests/test_pins.py` fails when the
installed version differs from the pin, printing the list; it also holds every place named
here to exist (its marker text in its file), so the list cannot silently go stale.

Nothing imports this at run time: it is the maintainer's checklist, kept beside the code.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Recheck:
    where: str  # a file of the repository
    marker: str  # text in that file at the place (the test finds it there)
    what: str  # what to re-check after an upgrade


@dataclass(frozen=True)
class Pin:
    distribution: str  # as pip names it
    version: str
    rechecks: tuple[Recheck, ...]


GRANIAN = Pin(
    "granian",
    "2.8.9",
    (
        Recheck(
            "ingest/server/wsgi.py",
            "def stop_on_first_signal",
            "the private `granian._signals.set_sync_signals` and `granian._granian.WorkerSignal` "
            "still exist and are still picked up when the worker starts serving; a second set() "
            "of the shutdown signal still blocks (else the wakeup-pipe shim can go): "
            "tests/ingest/test_ingest_serve.py's signal tests",
        ),
        Recheck(
            "ingest/server/guard.py",
            "calls the app as soon as a request's headers are in",
            "granian still has no body timeout and `wsgi.input.read(n)` still blocks its thread "
            "until n bytes arrive; it still closes a connection whose body was left unread: "
            "tests/ingest/test_ingest_hostile_clients.py",
        ),
        Recheck(
            "ingest/server/reaper.py",
            "Closing the connections granian",
            "a connection that never completes its request still holds a slot of "
            "`backpressure` forever, and granian still gives no client port (the reaper finds "
            "the socket by address and byte counts); shutdown(2) still makes granian close: "
            "tests/ingest/test_ingest_hostile_clients.py, tests/ingest/test_server_hardening.py",
        ),
        Recheck(
            "ingest/server/serve.py",
            "granian warns at every start",
            "the warning on threads above 2 x cores + 1 (filtered) and `backpressure` as the "
            "bound on connections served at once (BALANCE_MAX_CONNECTIONS)",
        ),
    ),
)

DUCKDB = Pin(
    "duckdb",
    "1.5.5",
    (
        Recheck(
            "ingest/storage/lake/connections.py",
            "BUILT_FOR = ",
            "the ducklake, postgres_scanner and httpfs extension wheels are pinned to the same "
            "version (pyproject.toml) and the lake's catalog format still reads: "
            "tests/lake/test_lake.py",
        ),
        Recheck(
            "docs/ingest.md",
            "optimistic write",
            "whether `enable_optimistic_write` exists now (a transaction filling a row group is "
            "written before its commit); re-measure `benchmarks/ingest_size.py` and the figure "
            "in docs/ingest.md",
        ),
        Recheck(
            "dashboard/console/sqlsafe.py",
            "seen with duckdb",
            "an allocation refused under a SQL worker's memory limit still surfaces as an "
            "OSError from the Arrow batch reader (a download answered 413): "
            "tests/dashboard/test_sql_hostile.py",
        ),
        Recheck(
            "dashboard/console/sqlworker.py",
            "Memory DuckDB's allocator keeps",
            "memory the allocator keeps after a big query still counts against the limit (a "
            "worker past half of it is recycled): tests/dashboard/test_sql_hostile.py",
        ),
        Recheck(
            "pyproject.toml",
            "DuckDB's postgres extension spins its caller",
            "the lake's commit token waits through psycopg because the postgres extension "
            "spins its caller while it waits: tests/lake/test_lake_token.py",
        ),
        Recheck(
            "ingest/storage/store.py",
            "DuckDB cannot add a column with a constraint",
            "ALTER TABLE ADD COLUMN with NOT NULL: the migration adds, then sets NOT NULL",
        ),
        Recheck(
            "ingest/storage/store.py",
            "DuckDB's autocheckpoint failing",
            "a commit that is durable and still raises (autocheckpoint), and a failed "
            "checkpoint invalidating the database: tests/ingest/storage/test_storage_failures.py",
        ),
    ),
)

PINS = (GRANIAN, DUCKDB)
