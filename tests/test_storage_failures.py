"""The storage failures both stores keep (ingest/storage/failures.py): what /healthz and a
refused upload say while a cause fails, and that each cause clears on its own."""

import logging

import pytest

from ingest.storage import StorageUnavailable
from ingest.storage.failures import Failures


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
