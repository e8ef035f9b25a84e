"""docs/settings.md is held equal to the code, as Datasette's test_docs holds its settings page:
each layer's settings table (ingest/storage/settings.py, analysis/settings.py,
dashboard/settings.py, ingest/server/config.py) is there row for row, every row there is a
table's, every `BALANCE_*` setting the packages read is documented, and nothing documented is
read nowhere. Outside the tables a setting is read as a literal `BALANCE_NAME`, or by name
through a table's reader (`setting(app, "NAME")`, `settings.value("NAME")`, `given("NAME")`),
which prefix `BALANCE_`."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from analysis import settings as analysis_settings
from dashboard import settings as dashboard_settings
from ingest.server import config as server_settings
from ingest.storage import settings as storage_settings
from ingest.storage.settings import render

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ingest", "analysis", "dashboard", "replays")
TABLES = {
    "ingest/storage/settings.py": storage_settings.TABLE,
    "analysis/settings.py": analysis_settings.TABLE,
    "dashboard/settings.py": dashboard_settings.TABLE,
    "ingest/server/config.py": server_settings.TABLE,
}
LITERAL = re.compile(r"\bBALANCE_[A-Z0-9_]*[A-Z0-9]\b")
BY_NAME = re.compile(r"\b(?:_?setting|value|given)\(\s*(?:[a-z_]+\s*,\s*)?\"([A-Z][A-Z0-9_]*)\"")
DOCUMENTED = re.compile(r"`(BALANCE_[A-Z0-9_]+)`")
ROW = re.compile(r"^\| `(BALANCE_[A-Z0-9_]+)` \|")


def read_in_code() -> set[str]:
    """Settings the modules read, the tables themselves left out (a row nothing reads is
    stale)."""
    found: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if str(path.relative_to(ROOT)) in TABLES:
                continue
            text = path.read_text(encoding="utf-8")
            found.update(LITERAL.findall(text))
            found.update(f"BALANCE_{name}" for name in BY_NAME.findall(text))
    return found


def doc_lines() -> list[str]:
    return (ROOT / "docs" / "settings.md").read_text(encoding="utf-8").splitlines()


def documented() -> set[str]:
    return set(DOCUMENTED.findall("\n".join(doc_lines())))


def test_every_setting_read_is_documented():
    missing = sorted(read_in_code() - documented())
    assert not missing, f"read in the code, missing from docs/settings.md: {missing}"


def test_every_documented_setting_is_read():
    stale = sorted(documented() - read_in_code())
    assert not stale, f"in docs/settings.md, read nowhere in the code: {stale}"


def test_every_tables_row_is_in_the_docs_as_it_is_in_the_table():
    lines = set(doc_lines())
    differ = [
        f"{where}: {render(s)}" for where, table in TABLES.items() for s in table
        if render(s) not in lines
    ]  # fmt: skip
    assert not differ, "docs/settings.md differs from the tables:\n" + "\n".join(differ)


def test_every_row_in_the_docs_is_a_tables_row_and_is_there_once():
    rows = [line for line in doc_lines() if ROW.match(line)]
    rendered = {render(s) for table in TABLES.values() for s in table}
    foreign = [line for line in rows if line not in rendered]
    assert not foreign, "rows of docs/settings.md no table holds:\n" + "\n".join(foreign)
    twice = [name for name, n in Counter(ROW.match(r)[1] for r in rows).items() if n > 1]
    assert not twice, f"documented in more than one row: {twice}"


def test_a_setting_two_layers_read_is_one_row():
    """HOST, TOKEN and DOCS_DIR are read by two layers: written once, rendered the same."""
    seen: dict[str, str] = {}
    for table in TABLES.values():
        for s in table:
            assert seen.setdefault(s.name, render(s)) == render(s), s.name
    assert {"HOST", "TOKEN", "DOCS_DIR"} <= {s.name for s in dashboard_settings.TABLE} & (
        {s.name for s in server_settings.TABLE} | {s.name for s in analysis_settings.TABLE}
    )


def test_the_check_sees_a_setting_read_by_a_tables_reader():
    """The scan can fail: prefix-less reads through a table are seen as settings."""
    assert BY_NAME.findall('x = setting(app, "SNAPSHOT_MAX_AGE", 60)') == ["SNAPSHOT_MAX_AGE"]
    assert BY_NAME.findall('_setting("SQL_WORKERS", 2)') == ["SQL_WORKERS"]
    assert BY_NAME.findall('settings.value("MIN_FREE")') == ["MIN_FREE"]
    assert "BALANCE_SQL_WORKERS" in read_in_code()
    assert "BALANCE_MIN_FREE" in read_in_code()
