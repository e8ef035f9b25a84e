"""The console's SQL engine, in-process: a locked read-only DuckDB over a snapshot of a real store.

Every claim of dashboard/console/sqlsafe.py is checked against DuckDB itself: writes, COPY,
ATTACH, file readers, INSTALL/LOAD, SET/RESET, PRAGMA, CALL and multi-statement text are
refused; an endless query is interrupted at the time limit; the row limit truncates and says
so; and after each refusal the engine still answers, and the stored data is unchanged.
"""

from __future__ import annotations

import threading
import time

import pytest

from dashboard.console import sqlsafe
from dashboard.snapshot import Snapshots
from ingest.storage import Store

GAME = (
    "INSERT INTO games VALUES ('{gid}', 'slow6', 5, false, false, 'classic', 'online', NULL, "
    "NULL, NULL, 'ios', '2.4.0', 0, '31524', '25143', NULL, NULL, {winner}, 'points', 9, 12, 30, "
    "TIMESTAMP '2026-11-28 19:04:11', TIMESTAMP '2026-11-28 19:05:00', 'standard')"
)


def three_games(path) -> Store:
    st = Store(path)

    def fill(con):
        for i in range(3):
            con.execute(GAME.format(gid=f"00000000-0000-4000-8000-00000000000{i}", winner=i % 2))

    st.submit(fill).result()
    return st


@pytest.fixture
def store(tmp_path):
    st = three_games(tmp_path / "store.duckdb")
    yield st
    st.close()


@pytest.fixture
def snaps(store, tmp_path):
    s = Snapshots(store, tmp_path / "snaps", workers=0)  # in-process: the checks are the same
    yield s
    s.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """(snaps, store) for the tests whose statements are all refused: nothing they run may
    change the store (each checks), so they share one."""
    where = tmp_path_factory.mktemp("engine")
    st = three_games(where / "store.duckdb")
    s = Snapshots(st, where / "snaps", workers=0)
    yield s, st
    s.close()
    st.close()


def stored_games(store) -> int:
    cur = store.reader()
    try:
        return cur.execute("SELECT count(*) FROM games").fetchone()[0]
    finally:
        cur.close()


REFUSED = [
    "INSERT INTO games SELECT * FROM games",
    "UPDATE games SET winner = 1",
    "DELETE FROM games",
    "CREATE TABLE t AS SELECT 1",
    "CREATE TEMP TABLE t AS SELECT 1",
    "DROP TABLE games",
    "ALTER TABLE games ADD COLUMN x INT",
    "COPY games TO '/tmp/balance-leak.csv'",
    "EXPORT DATABASE '/tmp/balance-leak'",
    "ATTACH '/tmp/other.duckdb' AS other",
    "DETACH memory",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "SET threads = 8",
    "RESET lock_configuration",
    "PRAGMA version",
    "pragma database_list",
    "CALL pragma_version()",
    "CHECKPOINT",
    "BEGIN TRANSACTION",
    "USE system",
    "SELECT 1; DROP TABLE games",
    "SELECT 1; SELECT 2",
    "",
    "   -- only a comment\n",
]


@pytest.mark.parametrize("sql", REFUSED)
def test_statements_that_are_not_reads_are_refused_before_running(shared, sql):
    snaps, store = shared
    with pytest.raises(sqlsafe.Refused) as err:
        snaps.run(sql)
    assert err.value.message  # says why, for a person
    assert snaps.run("SELECT count(*) AS n FROM games").table.column("n")[0].as_py() == 3
    assert stored_games(store) == 3


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM read_parquet('/tmp/x.parquet')",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM read_json_auto('https://example.com/x.json')",
        "FROM read_blob('/etc/passwd')",
    ],
)
def test_selects_cannot_read_files_or_the_network(shared, sql):
    snaps, _ = shared
    # Refused by the allow-list before anything runs: readers are no allowed table function,
    # and a quoted path is no table of the store. (The engine's file system is off as well.)
    with pytest.raises(sqlsafe.Refused) as err:
        snaps.run(sql)
    assert "root:" not in err.value.message
    assert "not available in the console" in err.value.message
    assert snaps.run("SELECT 42 AS x").table.column("x")[0].as_py() == 42


def test_the_store_file_itself_is_out_of_reach(snaps, store):
    for sql in (f"SELECT * FROM '{store.path}'", f"SELECT * FROM read_blob('{store.path}')"):
        with pytest.raises((sqlsafe.Refused, sqlsafe.BadSQL)):
            snaps.run(sql)


def test_settings_are_locked(snaps):
    # duckdb_settings() is refused in the console (it shows paths): read them on the engine.
    with pytest.raises(sqlsafe.Refused):
        snaps.run("SELECT name, value FROM duckdb_settings()")
    got = (
        snaps.engine()
        ._con.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN "
            "('enable_external_access', 'lock_configuration', 'autoload_known_extensions', "
            "'autoinstall_known_extensions', 'python_enable_replacements', 'temp_directory') "
            "ORDER BY name"
        )
        .fetchall()
    )
    assert dict(got) == {
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "false",
        "enable_external_access": "false",
        "lock_configuration": "true",
        "python_enable_replacements": "false",
        "temp_directory": "",
    }


def test_an_endless_query_is_interrupted_and_the_engine_keeps_serving(snaps):
    start = time.monotonic()
    with pytest.raises(sqlsafe.TimedOut) as err:
        snaps.run(
            "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) "
            "SELECT count(*) FROM r",
            timeout=0.5,
        )
    elapsed = time.monotonic() - start
    # it never ends: returning at all is the interruption; not before its time limit
    assert elapsed > 0.4, elapsed
    assert "0.5 s" in err.value.message
    assert snaps.run("SELECT count(*) AS n FROM games").table.column("n")[0].as_py() == 3


def test_row_limit_truncates_and_flags_it(snaps):
    r = snaps.run("SELECT * FROM range(25000)", limit=10_000)
    assert r.row_count == 10_000 and r.truncated
    r = snaps.run("SELECT * FROM range(10000)", limit=10_000)
    assert r.row_count == 10_000 and not r.truncated


def test_bad_sql_gets_the_engines_message(snaps):
    with pytest.raises(sqlsafe.BadSQL) as err:
        snaps.run("SELEC 1")
    assert "syntax error" in err.value.message.lower()
    with pytest.raises(sqlsafe.BadSQL) as err:
        snaps.run("SELECT nope FROM games")
    assert "nope" in err.value.message


def test_reads_see_a_snapshot_until_refreshed(snaps, store):
    assert snaps.run("SELECT count(*) FROM games").table.column(0)[0].as_py() == 3
    store.submit(
        lambda con: con.execute(GAME.format(gid="00000000-0000-4000-8000-000000000009", winner=0))
    ).result()
    assert snaps.run("SELECT count(*) FROM games").table.column(0)[0].as_py() == 3
    before = snaps.snapshot_at
    snaps.refresh()
    assert snaps.run("SELECT count(*) FROM games").table.column(0)[0].as_py() == 4
    assert snaps.snapshot_at >= before


def test_queries_running_during_a_refresh_finish_on_the_old_snapshot(snaps):
    results, errors = [], []

    def slow():
        try:
            r = snaps.run("SELECT count(*) FROM range(30000000) a", timeout=20)
            results.append(r.table.column(0)[0].as_py())
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.05)
    snaps.refresh()
    t.join(30)
    assert errors == [] and results == [30000000]
    assert snaps.run("SELECT 1").row_count == 1


def test_first_keyword_skips_comments_and_parentheses():
    assert sqlsafe.first_keyword("/* hi */ -- x\n ((select 1))") == "SELECT"
    assert sqlsafe.first_keyword("  pragma version") == "PRAGMA"
