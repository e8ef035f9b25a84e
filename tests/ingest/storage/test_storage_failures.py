"""The storage failures both stores keep (ingest/storage/failures.py): what /healthz and a
refused upload say while a cause fails, and that each cause clears on its own."""

import errno
import logging

import duckdb
import pytest

from ingest.storage import StorageUnavailable
from ingest.storage.failures import Failures, logged_reason, public_reason, without_passwords


def test_a_failing_cause_refuses_uploads_until_every_cause_is_cleared(caplog):
    log = logging.getLogger("test.failures")
    failures = Failures("storage", log)
    assert not failures and failures.reason is None
    failures.check()  # nothing fails: no error
    assert failures.health() == {"failure": None, "failing_seconds": None}

    with caplog.at_level(logging.WARNING, logger="test.failures"):
        assert failures.fail("space", "disk nearly full") is True
        assert failures.fail("space", "disk nearly full, 10 KiB") is False  # logged once
        assert failures.fail("journal", "fdatasync failed") is True
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == [
        "storage unavailable (space), uploads answered 503: disk nearly full",
        "storage unavailable (journal), uploads answered 503: fdatasync failed",
    ]
    assert "space" in failures and "duckdb" not in failures
    with pytest.raises(StorageUnavailable) as refused:
        failures.check()
    assert refused.value.reason == "disk nearly full, 10 KiB; fdatasync failed"
    health = failures.health()
    assert health["failure"] == "disk nearly full, 10 KiB; fdatasync failed"
    assert health["failing_seconds"] is not None and health["failing_seconds"] >= 0

    assert failures.clear("space") is True
    assert failures.clear("space") is False  # cleared already: nothing to say
    assert failures.reason == "fdatasync failed"  # the other cause still fails
    assert failures.health()["failing_seconds"] is not None
    failures.clear("journal")
    assert not failures
    failures.check()
    assert failures.health() == {"failure": None, "failing_seconds": None}


# A real DuckDB error of a lake whose catalog is down (its text as DuckDB 1.5.5 words it).
CATALOG_DOWN = (
    'IO Error: Unable to connect to Postgres at "host=db.internal port=6543 user=balance '
    'password=\'p w!\' dbname=lake": connection to server at "db.internal", port 6543 failed: '
    "Connection refused\nIs the server running on that host and accepting TCP/IP connections?"
    "\nLINE 1: SELECT * FROM postgres_query('balance_pg', ?)"
)


@pytest.mark.parametrize(
    "exc, kept",
    [
        (duckdb.IOException(CATALOG_DOWN), "Connection refused"),
        (
            OSError(errno.ENOSPC, "No space left on device", "/var/lib/balance/j/seg-7.ndjson"),
            "No space left on device",
        ),
        (duckdb.IOException('Cannot open file "s3://bkt/lake/main/games/f.parquet": 403'), "403"),
        (RuntimeError("lost postgresql://balance:pw@db.internal:6543/lake"), "lost"),
    ],
)
def test_a_public_reason_names_no_catalog_host_password_path_or_sql(exc, kept):
    reason = public_reason("lake write", exc)
    assert kept in reason and reason.startswith(("lake write failed", "disk full"))
    for secret in ("db.internal", "6543", "p w!", "pw@", "balance", "/var/lib", "s3://", "SELECT"):
        assert secret not in reason, (secret, reason)


def test_the_log_gets_the_error_whole_once_with_passwords_masked(caplog):
    log = logging.getLogger("test.failures.detail")
    exc = duckdb.IOException(CATALOG_DOWN)
    with caplog.at_level(logging.WARNING, logger=log.name):
        for _ in range(3):  # a probe retrying the same failure
            logged_reason(log, "lake", exc)
        logged_reason(log, "lake", duckdb.IOException("another error"))
    lines = [r.getMessage() for r in caplog.records if r.name == log.name]
    assert len(lines) == 2 and "another error" in lines[1]
    assert "host=db.internal port=6543" in lines[0] and "SELECT" in lines[0]
    assert "p w!" not in lines[0] and "password=***" in lines[0]
    assert without_passwords("postgresql://u:secret@h/db") == "postgresql://u:***@h/db"
