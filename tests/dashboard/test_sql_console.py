"""The SQL console and `balance sql`, on the app in-process (Flask's test client; served on a
loopback port for `balance sql`, which runs in this process): safe by construction.

Writes, COPY, ATTACH, file readers, INSTALL/LOAD, SET, PRAGMA and an endless query are refused or
interrupted with a clear message, the server keeps serving, and the stored data is unchanged.
Downloads come as real CSV, JSON and Parquet. `balance sql` prints a table or CSV and exits
non-zero with the reason on stderr.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import time
from urllib.parse import quote

import pyarrow.parquet as pq
import pytest
from support import AppClient, balance, demo_copy, demo_env, fresh_slow6, wait_for

JSON = "application/json"


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_db):
    work = tmp_path_factory.mktemp("console")
    env = demo_env({"BALANCE_SQL_TIMEOUT": "1"})
    s = AppClient(work, env=env, db=demo_copy(demo_db, work)).start().serve_http()
    yield s
    s.stop()


def api(server, sql: str, **extra):
    return server.post("/sql/api", json.dumps({"sql": sql, **extra}), JSON)


def count_games(server) -> int:
    r = api(server, "SELECT count(*) AS n FROM games")
    assert r.status == 200, r.body
    return r.json()["rows"][0][0]


REFUSED = [
    "INSERT INTO games SELECT * FROM games",
    "UPDATE games SET winner = NULL",
    "DELETE FROM games",
    "CREATE TABLE x AS SELECT 1",
    "DROP TABLE games",
    "COPY games TO '/tmp/balance-console-leak.csv'",
    "ATTACH '/tmp/balance-console.duckdb' AS x",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "PRAGMA database_list",
    "SELECT 1; DELETE FROM games",
]


@pytest.mark.parametrize("sql", REFUSED)
def test_writes_and_settings_are_refused_and_the_server_keeps_serving(server, sql):
    before = count_games(server)
    r = api(server, sql)
    assert r.status == 400
    body = r.json()
    assert body["error"] == "refused" and body["message"]
    assert count_games(server) == before
    assert not os.path.exists("/tmp/balance-console-leak.csv")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM '/etc/passwd'",
    ],
)
def test_server_files_cannot_be_read(server, sql):
    r = api(server, sql)
    assert r.status == 400
    assert b"root:" not in r.body
    assert count_games(server) > 0


def test_an_endless_query_is_interrupted_and_the_next_one_works(server):
    r = api(  # it never ends: an answer at all is the interruption
        server,
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r",
    )
    assert r.status == 408 and r.json()["error"] == "timeout"
    assert count_games(server) > 0
    assert server.get("/healthz").status == 200


def test_row_limit_and_truncated_flag(server):
    got = api(server, "SELECT * FROM range(20000)").json()
    assert got["row_count"] == 10_000 and got["truncated"] is True
    got = api(server, "SELECT * FROM range(20000)", limit=5).json()
    assert got["row_count"] == 5 and got["truncated"] is True
    got = api(server, "SELECT * FROM range(3)").json()
    assert got["row_count"] == 3 and got["truncated"] is False


def test_bad_sql_gets_a_clear_message(server):
    r = api(server, "SELECT FROM WHERE")
    assert r.status == 400 and r.json()["error"] == "error"
    assert "syntax error" in r.json()["message"].lower()
    page = server.get("/sql?q=" + quote("SELECT nope FROM games"))
    assert page.status == 400 and b'id="sql-error"' in page.body and b"nope" in page.body


def test_console_page_has_schema_browser_with_docs_and_examples(server):
    page = server.get("/sql").body.decode()
    for table in ("games", "quarantine", "raw_records", "agg_lineup", "agg_runs"):
        assert f"<code>{table}</code>" in page, table
    # column notes (docs/tables.md, docs/agg-tables.md, ingest/storage/schema.sql comments)
    tables = {t["name"]: t for t in server.get("/sql/schema").json()["tables"]}
    for table in ("games", "game_turns", "quarantine"):
        undocumented = [c["name"] for c in tables[table]["columns"] if not c["doc"]]
        assert undocumented == [], (table, undocumented)
        assert tables[table]["doc"]
    turn = next(c for c in tables["game_turns"]["columns"] if c["name"] == "turn")
    assert turn["doc"] in page
    assert 'class="examples"' in page and len(re.findall(r'href="/sql/?\?q=', page)) >= 4
    assert 'id="snapshot-at"' in page


def test_console_runs_a_query_and_shows_rows(server):
    sql = "SELECT board, count(*) AS games FROM games GROUP BY board ORDER BY board"
    page = server.get("/sql?q=" + quote(sql)).body.decode()
    assert 'id="sql-result"' in page and "<th" in page
    assert "<td>5</td>" in page or "<td>7</td>" in page


def test_downloads_in_csv_json_and_parquet(server, tmp_path):
    sql = "SELECT game_id, board, lineup_0, powers_0, ended_at FROM games ORDER BY game_id LIMIT 7"
    want = api(server, sql).json()["rows"]
    r = server.get("/sql/download.csv?q=" + quote(sql))
    assert r.status == 200 and r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.body.decode())))
    assert [row["game_id"] for row in rows] == [w[0] for w in want]
    r = server.get("/sql/download.json?q=" + quote(sql))
    data = json.loads(r.body)
    assert [d["game_id"] for d in data] == [w[0] for w in want]
    assert data[0]["powers_0"] is None or isinstance(data[0]["powers_0"], list)
    r = server.get("/sql/download.parquet?q=" + quote(sql))
    assert r.body[:4] == b"PAR1"
    (tmp_path / "x.parquet").write_bytes(r.body)
    table = pq.read_table(tmp_path / "x.parquet")
    assert table.num_rows == 7 and table.column_names[:2] == ["game_id", "board"]
    refused = server.get("/sql/download.csv?q=" + quote("DROP TABLE games"))
    assert refused.status == 400


def test_raw_records_can_be_decoded_in_sql(server):
    got = api(
        server, "SELECT raw_json(record, codec)::JSON->>'$.game' AS g FROM raw_records LIMIT 1"
    ).json()
    assert got["rows"][0][0] in ("slow6", "slide")


def test_snapshot_refresh_endpoint(server):
    before = api(server, "SELECT 1").json()["snapshot_at"]
    time.sleep(1.1)
    r = server.post("/sql/snapshot", b"")
    assert r.status == 200 and r.json()["snapshot_at"] > before


def balance_sql(*args, env=None):
    return balance("sql", *args, env=env)  # in this process (support.balance)


def test_balance_sql_prints_a_table_and_csv(server):
    env = {"BALANCE_URL": server.url}
    r = balance_sql("SELECT board, count(*) AS games FROM games GROUP BY 1 ORDER BY 1", env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["board", "games"] and set(lines[1]) <= {"-", " "}
    r = balance_sql(
        "--csv", "SELECT board, count(*) AS games FROM games GROUP BY 1 ORDER BY 1", env=env
    )
    assert r.returncode == 0 and r.stdout.splitlines()[0] == "board,games"
    total = sum(int(row["games"]) for row in csv.DictReader(io.StringIO(r.stdout)))
    assert total == count_games(server)


def test_balance_sql_fails_with_the_reason(server):
    r = balance_sql("DELETE FROM games", env={"BALANCE_URL": server.url})
    assert r.returncode == 1 and "refused" in r.stderr and r.stdout == ""
    r = balance_sql("SELECT * FROM nope", env={"BALANCE_URL": server.url})
    assert r.returncode == 1 and "nope" in r.stderr
    r = balance_sql("SELECT 1", env={"BALANCE_URL": "http://127.0.0.1:9"})
    assert r.returncode == 2 and "cannot reach" in r.stderr


def test_balance_sql_on_a_file_read_only(demo_db, tmp_path):  # noqa: F811
    db = tmp_path / "copy.duckdb"
    db.write_bytes(demo_db.read_bytes())
    r = balance_sql("--db", str(db), "SELECT count(*) AS n FROM games")
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.splitlines()[2]) > 0
    r = balance_sql("--db", str(db), "DROP TABLE games")
    assert r.returncode == 1 and "refused" in r.stderr
    r = balance_sql("--db", str(db), "SELECT count(*) FROM games")
    assert r.returncode == 0
    # the same trusted raw_json() as the server's console: a saved query runs here too
    sql = "SELECT raw_json(record, codec)::JSON->>'$.game' AS g FROM raw_records LIMIT 1"
    r = balance_sql("--db", str(db), "--csv", sql)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1] in ("slow6", "slide")


@pytest.mark.slow
def test_snapshot_follows_the_store_by_itself(app_factory):
    s = app_factory(env={"BALANCE_SNAPSHOT_MAX_AGE": "0"})
    sql = "SELECT count(*) FROM raw_records"
    assert api(s, sql).json()["rows"] == [[0]]
    assert s.upload([fresh_slow6(0), fresh_slow6(1)]).status == 200
    # a changed store is re-snapshotted in the background
    wait_for(lambda: api(s, sql).json()["rows"][0][0] == 2, 30, "2 rows seen", every=0.5)
