"""The version pins and what they hold in place (ingest/server/pins.py): an upgrade of granian or
DuckDB trips here, listing what to re-check, before anything subtler breaks."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from ingest.server.pins import DUCKDB, GRANIAN, PINS

ROOT = Path(__file__).resolve().parents[1]


def _checklist(pin) -> str:
    return "\n".join(f"  - {r.where} ({r.marker!r}): {r.what}" for r in pin.rechecks)


def check_installed(pin) -> None:
    installed = version(pin.distribution)
    assert installed == pin.version, (
        f"{pin.distribution} {installed} is installed, the code was checked against "
        f"{pin.version}; re-check, then move the pin in ingest/server/pins.py and pyproject.toml:\n"
        + _checklist(pin)
    )


@pytest.mark.parametrize("pin", PINS, ids=lambda p: p.distribution)
def test_the_installed_version_is_the_pinned_one(pin):
    check_installed(pin)


def test_an_upgrade_trips_and_lists_what_to_recheck():
    moved = dataclasses.replace(GRANIAN, version="0.0.1")
    with pytest.raises(AssertionError) as tripped:
        check_installed(moved)
    message = str(tripped.value)
    assert f"granian {GRANIAN.version} is installed" in message
    assert all(r.where in message for r in GRANIAN.rechecks)


def test_pyproject_pins_the_same_versions():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pinned = dict(
        re.fullmatch(r"([A-Za-z0-9_.\-\[\]]+)==(\S+)", d).groups()
        for d in project["project"]["dependencies"]
        if "==" in d
    )
    assert pinned["granian"] == GRANIAN.version
    duckdb_family = {k: v for k, v in pinned.items() if k.startswith("duckdb")}
    assert "duckdb" in duckdb_family and len(duckdb_family) >= 2  # the engine and its extensions
    assert set(duckdb_family.values()) == {DUCKDB.version}, duckdb_family


def test_the_lake_loads_extensions_built_for_the_pin():
    from ingest.storage.lake import BUILT_FOR

    assert BUILT_FOR == DUCKDB.version


@pytest.mark.parametrize("pin", PINS, ids=lambda p: p.distribution)
def test_every_place_the_list_names_is_still_there(pin):
    assert pin.rechecks
    for recheck in pin.rechecks:
        path = ROOT / recheck.where
        assert path.is_file(), recheck.where
        assert recheck.marker in path.read_text(encoding="utf-8"), (recheck.where, recheck.marker)
