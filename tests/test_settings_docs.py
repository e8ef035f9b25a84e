"""docs/settings.md is held equal to the code, as Datasette's test_docs holds its settings page:
every `BALANCE_*` setting the packages read is documented there, and nothing documented there
is read nowhere. A setting is read as a literal `BALANCE_NAME`, or by the dashboard's
`setting(app, "NAME")` / `_setting("NAME")`, which prefix `BALANCE_`."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ingest", "analysis", "dashboard", "replays")
LITERAL = re.compile(r"\bBALANCE_[A-Z0-9_]*[A-Z0-9]\b")
BY_NAME = re.compile(r"\b_?setting\(\s*(?:[a-z_]+\s*,\s*)?\"([A-Z][A-Z0-9_]*)\"")
DOCUMENTED = re.compile(r"`(BALANCE_[A-Z0-9_]+)`")


def read_in_code() -> set[str]:
    found: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            found.update(LITERAL.findall(text))
            found.update(f"BALANCE_{name}" for name in BY_NAME.findall(text))
    return found


def documented() -> set[str]:
    return set(DOCUMENTED.findall((ROOT / "docs" / "settings.md").read_text(encoding="utf-8")))


def test_every_setting_read_is_documented():
    missing = sorted(read_in_code() - documented())
    assert not missing, f"read in the code, missing from docs/settings.md: {missing}"


def test_every_documented_setting_is_read():
    stale = sorted(documented() - read_in_code())
    assert not stale, f"in docs/settings.md, read nowhere in the code: {stale}"


def test_the_check_sees_a_setting_read_by_the_dashboard_helper():
    """The scan can fail: the dashboard's prefix-less reads are seen as settings."""
    assert BY_NAME.findall('x = setting(app, "SNAPSHOT_MAX_AGE", 60)') == ["SNAPSHOT_MAX_AGE"]
    assert BY_NAME.findall('_setting("SQL_WORKERS", 2)') == ["SQL_WORKERS"]
    assert "BALANCE_SQL_WORKERS" in read_in_code()
