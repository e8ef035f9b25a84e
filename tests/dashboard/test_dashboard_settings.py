"""The dashboard's one settings table (dashboard/settings.py): docs/settings.md holds exactly
its rows, its defaults are the ones the code falls back to, and one reader parses them."""

from __future__ import annotations

import pytest
from flask import Flask
from support import REPO

from dashboard import setting, settings

DOCS = REPO / "docs" / "settings.md"


def test_docs_hold_every_row_of_the_table():
    lines = set(DOCS.read_text(encoding="utf-8").splitlines())
    missing = [settings.render(s) for s in settings.TABLE if settings.render(s) not in lines]
    assert not missing, "docs/settings.md differs from the table:\n" + "\n".join(missing)


def test_the_table_defaults_are_the_codes():
    from dashboard import slots
    from dashboard.console import sqlsafe
    from dashboard.console.saved import Limits

    d = Limits()
    expect = {
        "SQL_ROW_LIMIT": sqlsafe.DEFAULT_LIMIT,
        "SQL_TIMEOUT": sqlsafe.DEFAULT_TIMEOUT,
        "SQL_MAX_BYTES": sqlsafe.DEFAULT_MAX_BYTES,
        "SAVED_MAX": d.count,
        "SAVED_MAX_BYTES": d.size,
        "SAVED_TOTAL_BYTES": d.total,
        "SAVED_RATE": d.rate,
        "DASHBOARD_SLOTS": slots.DEFAULT,
    }
    for name, default in expect.items():
        assert settings.BY_NAME[name].default == default, name


def test_one_reader_config_then_environment_then_default_parsed(monkeypatch):
    app = Flask(__name__)
    monkeypatch.delenv("BALANCE_SQL_MAX_BYTES", raising=False)
    assert setting(app, "SQL_MAX_BYTES") == 32 * 1024 * 1024  # the table's default
    monkeypatch.setenv("BALANCE_SQL_MAX_BYTES", "1MiB")
    assert setting(app, "SQL_MAX_BYTES") == 1024 * 1024  # the environment, parsed
    assert setting(None, "SQL_MAX_BYTES") == 1024 * 1024
    app.config["SQL_MAX_BYTES"] = "2MB"  # the app's config first, in any of its spellings
    assert setting(app, "SQL_MAX_BYTES") == 2_000_000
    app.config["BALANCE_SQL_TIMEOUT"] = "7.5"
    assert setting(app, "SQL_TIMEOUT") == 7.5
    app.config["sql_row_limit"] = "lots"
    with pytest.raises(ValueError, match="BALANCE_SQL_ROW_LIMIT='lots'"):
        setting(app, "SQL_ROW_LIMIT")
    assert setting(app, "NOT_IN_THE_TABLE_YET", 3) == 3  # a caller's own default
