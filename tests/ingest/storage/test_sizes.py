"""One parser for every size a setting takes (ingest/storage/sizes.py), and the settings that
docs/settings.md says take a unit do take one."""

from __future__ import annotations

import pytest

from ingest.server.config import load
from ingest.storage.failures import min_free
from ingest.storage.sizes import MiB, parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1000000", 1_000_000),
        (4096, 4096),
        ("64MiB", 64 * MiB),
        ("64 mib", 64 * MiB),
        ("1GB", 10**9),
        ("2g", 2 * 10**9),
        ("512KiB", 512 * 1024),
        ("1.5GiB", 3 * 512 * MiB),
        (" 8 MB ", 8 * 10**6),
    ],
)
def test_a_size_is_bytes_or_a_number_and_a_unit(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "MiB", "12 parsecs", "-5", "5 iB", "1e9", True])
def test_what_is_no_size_is_refused_naming_it(text):
    with pytest.raises(ValueError, match="not a size"):
        parse_size(text)


def test_the_servers_byte_settings_take_units(monkeypatch):
    conf = load({}, environ={"BALANCE_UPLOAD_BYTES": "32MiB", "BALANCE_MAX_BODY": "1MB"})
    assert conf["BALANCE_UPLOAD_BYTES"] == 32 * MiB and conf["BALANCE_MAX_BODY"] == 10**6
    assert load({}, environ={})["BALANCE_UPLOAD_BYTES"] == 64 * MiB
    with pytest.raises(ValueError, match="BALANCE_UPLOAD_BYTES='lots'"):
        load({}, environ={"BALANCE_UPLOAD_BYTES": "lots"})
    monkeypatch.setenv("BALANCE_MIN_FREE", "1GiB")
    assert min_free() == 1024 * MiB
    monkeypatch.setenv("BALANCE_MIN_FREE", "0")
    assert min_free() == 0
