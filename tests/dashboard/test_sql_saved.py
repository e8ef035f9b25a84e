"""Saved queries, whole downloads, error positions, facets and charts of the SQL console.

The app runs in this process on a copy of the demo store, with one real SQL worker process, so
every query takes the server's own path (allow-list, worker, limits). Saved queries live in the
store's saved_queries table: they outlast a restart and `balance reverify`, change only with
the token where the server requires one, and never run anything the console refuses, whether
by their text or by their parameters, even when the table itself was tampered with.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from urllib.parse import quote, urlencode

import pyarrow.parquet as pq
import pytest
from support import REPO, AppClient, balance, demo_copy

JSON = "application/json"
BIG = "SELECT t.*, c.range AS copy FROM game_turns t, range(2) c"  # more than 10,000 rows


@pytest.fixture(scope="module")
def app(tmp_path_factory, demo_db):
    work = tmp_path_factory.mktemp("sql-saved")
    # no rate of saves: this module saves dozens in a second (test_saved_bounds.py has it)
    env = {"SQL_WORKERS": 1, "SAVED_RATE": 0}
    a = AppClient(work, env=env, db=demo_copy(demo_db, work)).start()
    yield a
    a.stop()


def api(app, sql: str, **extra):
    return app.post("/sql/api", json.dumps({"sql": sql, **extra}), JSON)


def save(app, method="POST", path="/sql/saved", headers=None, **body):
    return app.request(
        method, path, json.dumps(body).encode(), {"Content-Type": JSON, **(headers or {})}
    )


def count(app, sql: str) -> int:
    r = api(app, sql)
    assert r.status == 200, r.body
    return r.json()["rows"][0][0]


def test_save_list_open_by_url_with_parameters_and_change_it(app):
    r = save(
        app,
        title="Games of a board by variant",
        description="How many games each variant has on one board.",
        sql="SELECT variant, count(*) AS games\nFROM games\nWHERE board = :board\nGROUP BY ALL\n"
        "ORDER BY games DESC",
        params=[{"name": "board", "type": "integer", "default": 7, "label": "Board"}],
        chart={"mark": "bar", "x": "variant", "y": "games"},
    )
    assert r.status == 201, r.body
    saved = r.json()
    assert saved["slug"] == "games-of-a-board-by-variant" and saved["version"] == 1
    assert r.headers["location"] == "/sql/q/games-of-a-board-by-variant"
    assert saved["params"] == [
        {"name": "board", "type": "integer", "default": "7", "label": "Board"}
    ]
    listed = app.get("/sql/saved").json()
    assert saved["slug"] in [s["slug"] for s in listed["saved"]]
    assert f'href="{saved["url"]}"' in app.get("/sql").body.decode()

    for board in (5, 7):
        page = app.get(f"/sql/q/{saved['slug']}?board={board}")
        assert page.status == 200
        html = page.body.decode()
        assert 'id="sql-result"' in html and 'id="spec-sqlchart"' in html
        total = count(app, f"SELECT count(*) FROM games WHERE board = {board}")
        data = app.get(f"/sql/q/{saved['slug']}.csv?board={board}")
        rows = list(csv.DictReader(io.StringIO(data.body.decode())))
        assert sum(int(r["games"]) for r in rows) == total
    # the default, and the API
    default = app.post("/sql/api", json.dumps({"saved": saved["slug"]}), JSON).json()
    assert sum(r[1] for r in default["rows"]) == count(
        app, "SELECT count(*) FROM games WHERE board = 7"
    )
    five = app.post("/sql/api", json.dumps({"saved": saved["slug"], "params": {"board": 5}}), JSON)
    assert sum(r[1] for r in five.json()["rows"]) == count(
        app, "SELECT count(*) FROM games WHERE board = 5"
    )
    # a wrong value is refused, nothing runs
    bad = app.get(f"/sql/q/{saved['slug']}?board=seven")
    assert bad.status == 400 and b"whole number" in bad.body and b'id="sql-result"' not in bad.body

    # the chart's spec and its data
    spec = app.get(f"/sql/q/{saved['slug']}/chart.json?board=5")
    assert spec.status == 200 and spec.headers["content-disposition"].endswith('.vl.json"')
    spec = spec.json()
    assert spec["mark"]["type"] == "bar" and spec["encoding"]["x"]["field"] == "variant"
    assert sum(v["games"] for v in spec["data"]["values"]) == count(
        app, "SELECT count(*) FROM games WHERE board = 5"
    )

    # change it (the version it had), then a stale version is refused
    changed = save(
        app,
        "PUT",
        f"/sql/saved/{saved['slug']}",
        title="Games of a board by mode",
        sql="SELECT mode, count(*) AS games FROM games WHERE board = :board GROUP BY ALL",
        params=[{"name": "board", "type": "integer", "default": 5}],
        version=1,
    )
    assert changed.status == 200, changed.body
    assert changed.json()["version"] == 2 and changed.json()["chart"] is None
    stale = save(app, "PUT", f"/sql/saved/{saved['slug']}", title="x", sql="SELECT 1", version=1)
    assert stale.status == 409
    assert app.get(f"/sql/saved/{saved['slug']}").json()["title"] == "Games of a board by mode"
    assert save(app, slug=saved["slug"], title="again", sql="SELECT 1").status == 409
    # delete
    assert app.request("DELETE", f"/sql/saved/{saved['slug']}").status == 204
    assert app.get(f"/sql/q/{saved['slug']}").status == 404
    assert app.request("DELETE", f"/sql/saved/{saved['slug']}").status == 404


def test_a_parameter_without_a_default_is_asked_for(app):
    r = save(app, slug="by-version", title="By version", sql="SELECT count(*) AS n FROM games "
             "WHERE client_version = :version")  # fmt: skip
    assert r.status == 201, r.body
    assert r.json()["params"][0] == {
        "name": "version",
        "type": "text",
        "default": None,
        "label": "",
    }
    page = app.get("/sql/q/by-version")
    assert page.status == 200 and b"Give a value for version" in page.body
    assert b'id="sql-result"' not in page.body
    version = api(app, "SELECT client_version FROM games LIMIT 1").json()["rows"][0][0]
    page = app.get("/sql/q/by-version?" + urlencode({"version": version}))
    assert page.status == 200 and b'id="sql-result"' in page.body


def test_titles_and_descriptions_are_text_not_html(app):
    r = save(app, slug="xss", title="<script>alert(1)</script>",
             description="<img src=x onerror=1>", sql="SELECT 1 AS one")  # fmt: skip
    assert r.status == 201
    for path in ("/sql", "/sql/q/xss"):
        html = app.get(path).body.decode()
        assert "<script>alert(1)</script>" not in html and "<img src=x" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_dashboards_chart_queries_are_read_only_saved_queries(app):
    listed = app.get("/sql/saved").json()["dashboard"]
    slugs = {s["slug"] for s in listed}
    assert {"dashboard-games-daily", "dashboard-end-reasons"} <= slugs
    assert all(s["read_only"] for s in listed)
    page = app.get("/sql/q/dashboard-games-daily")
    assert page.status == 200 and b'id="sql-result"' in page.body
    assert b"FROM agg_games_daily" in page.body and b'id="dashboard-link"' in page.body
    # its parameters are the page's filters, checked as the page checks them
    page = app.get("/sql/q/dashboard-games-daily?board=5&mode=")
    assert b"board = 5" in page.body
    data = app.get("/sql/q/dashboard-games-daily.csv?board=5&mode=")
    assert data.status == 200
    assert {r["board"] for r in csv.DictReader(io.StringIO(data.body.decode()))} == {"5"}
    injected = app.get("/sql/q/dashboard-games-daily?" + urlencode({"board": "5 OR 1=1"}))
    assert b"OR 1=1" not in injected.body.split(b'id="saved-sql"')[1].split(b"</pre>")[0]
    for method in ("PUT", "DELETE"):
        r = save(app, method, "/sql/saved/dashboard-games-daily", title="mine", sql="SELECT 1")
        assert r.status == 403 and r.json()["error"] == "read_only"
    assert save(app, slug="dashboard-mine", title="x", sql="SELECT 1").status == 403


# -- refusals: a saved query cannot smuggle a write, a file read, an ATTACH or a setting ---------

SMUGGLED_TEXTS = [
    "INSERT INTO games SELECT * FROM games",
    "DELETE FROM saved_queries",
    "DROP TABLE games",
    "UPDATE saved_queries SET sql = 'DROP TABLE games'",
    "COPY games TO '/tmp/balance-saved-leak.csv'",
    "SELECT 1; DELETE FROM games",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text(:path)",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM glob(:pattern)",
    "SELECT * FROM query(:sql)",
    "SELECT * FROM query_table(:name)",
    "ATTACH '/tmp/balance-saved.duckdb' AS x",
    "SELECT * FROM duckdb_databases()",
    "SET enable_external_access = true",
    "SELECT current_setting(:name)",
    "SELECT getvariable(:name)",
    "SELECT json_execute_serialized_sql(:plan)",
    "PRAGMA database_list",
    "INSTALL httpfs",
    "LOAD httpfs",
    "CALL enable_logging()",
]


@pytest.mark.parametrize("sql", SMUGGLED_TEXTS)
def test_a_saved_query_cannot_smuggle_anything_by_its_text(app, sql):
    before = count(app, "SELECT count(*) FROM games")
    slugs = {s["slug"] for s in app.get("/sql/saved").json()["saved"]}
    r = save(app, slug="smuggled", title="smuggled", sql=sql)
    assert r.status == 400 and r.json()["error"] in ("refused", "error"), r.body
    assert {s["slug"] for s in app.get("/sql/saved").json()["saved"]} == slugs
    # nor as a change of an existing one
    assert save(app, slug="harmless", title="harmless", sql="SELECT 1 AS one").status in (201, 409)
    r = save(app, "PUT", "/sql/saved/harmless", title="harmless", sql=sql)
    assert r.status == 400
    assert app.get("/sql/saved/harmless").json()["sql"] == "SELECT 1 AS one"
    assert count(app, "SELECT count(*) FROM games") == before
    assert not os.path.exists("/tmp/balance-saved-leak.csv")
    assert not os.path.exists("/tmp/balance-saved.duckdb")


VALUES = [
    "7; DROP TABLE games; --",
    "' OR 1=1 --",
    "x'); ATTACH '/tmp/balance-saved.duckdb' AS y; --",
    "/etc/passwd",
    "SET enable_external_access = true",
]


@pytest.mark.parametrize("value", VALUES)
def test_a_saved_query_cannot_smuggle_anything_by_its_parameters(app, value):
    """A value is bound by DuckDB: it is compared as a value, never read as SQL."""
    r = save(app, slug="by-lineup", title="by lineup", sql="SELECT count(*) AS n FROM games "
             "WHERE lineup_0 = :lineup")  # fmt: skip
    assert r.status in (201, 409)
    before = count(app, "SELECT count(*) FROM games")
    page = app.get("/sql/q/by-lineup?" + urlencode({"lineup": value}))
    assert page.status == 200 and b"<td>0</td>" in page.body  # no lineup is that text
    got = app.post(
        "/sql/api", json.dumps({"saved": "by-lineup", "params": {"lineup": value}}), JSON
    )
    assert got.status == 200 and got.json()["rows"] == [[0]]
    download = app.get("/sql/q/by-lineup.csv?" + urlencode({"lineup": value}))
    assert download.body.decode().splitlines() == ["n", "0"]
    # the console's own parameters are bound the same way
    r = api(app, "SELECT count(*) AS n FROM games WHERE lineup_0 = :v", params={"v": value})
    assert r.json()["rows"] == [[0]]
    assert count(app, "SELECT count(*) FROM games") == before
    assert not os.path.exists("/tmp/balance-saved.duckdb")


def test_parameter_values_and_names_that_are_not_values_are_refused(app):
    for params in (
        {"v": {"sql": "DROP TABLE games"}},
        {"v": ["a"]},
        {"a b": 1},
        {"v": "x" * 20_000},
    ):
        r = api(app, "SELECT :v AS v", params=params)
        assert r.status == 400 and r.json()["error"] == "refused", (params, r.body)
    for name in ("token", "q", "_f0", "a-b"):
        r = save(app, slug="bad-param", title="bad", sql=f"SELECT 1 WHERE :{name} IS NULL",
                 params=[{"name": name}])  # fmt: skip
        assert r.status == 400, (name, r.body)
    r = save(app, slug="bad-default", title="bad", sql="SELECT :n",
             params=[{"name": "n", "type": "integer", "default": "DROP TABLE games"}])  # fmt: skip
    assert r.status == 400 and b"whole number" in r.body
    r = save(app, slug="unused", title="bad", sql="SELECT 1", params=[{"name": "n"}])
    assert r.status == 400 and b"not in the query" in r.body
    r = save(
        app,
        slug="bad-chart",
        title="bad",
        sql="SELECT 1 AS a",
        chart={"mark": "pie", "x": "a", "y": "a"},
    )
    assert r.status == 400


def test_a_tampered_saved_query_is_still_refused_when_it_runs(app):
    """Written into the store behind the API's back: the console's checks still hold when it
    runs, because a saved query runs only through them."""
    store = app.app.extensions["store"]

    def tamper(con):
        con.execute(
            "INSERT INTO saved_queries VALUES ('tampered', 'tampered', '', "
            "'SELECT * FROM read_text(''/etc/passwd'')', '[]', NULL, now(), now(), 1), "
            "('tampered-write', 'w', '', 'DELETE FROM games', '[]', NULL, now(), now(), 1), "
            "('tampered-attach', 'a', '', 'ATTACH ''/tmp/balance-saved.duckdb'' AS z', '[]', "
            "NULL, now(), now(), 1)"
        )

    store.submit(tamper).result()
    before = count(app, "SELECT count(*) FROM games")
    for slug in ("tampered", "tampered-write", "tampered-attach"):
        page = app.get(f"/sql/q/{slug}")
        assert page.status == 400 and b'data-kind="refused"' in page.body, (slug, page.body[:300])
        assert b"root:" not in page.body
        for path in (
            f"/sql/q/{slug}.csv",
            f"/sql/q/{slug}/chart.json?chart.mark=bar&chart.x=a&chart.y=a",
        ):
            r = app.get(path)
            assert r.status == 400 and b"root:" not in r.body, (path, r.body[:200])
        r = app.post("/sql/api", json.dumps({"saved": slug}), JSON)
        assert r.status == 400 and r.json()["error"] == "refused"
    assert count(app, "SELECT count(*) FROM games") == before
    assert not os.path.exists("/tmp/balance-saved.duckdb")


def test_writes_need_json_from_this_server(app):
    form = app.post("/sql/saved", "title=x&sql=SELECT+1", "application/x-www-form-urlencoded")
    assert form.status == 415
    other = save(
        app, slug="cross", title="x", sql="SELECT 1", headers={"Origin": "http://evil.example"}
    )
    assert other.status == 403 and b"another site" in other.body
    other = app.request("DELETE", "/sql/saved/harmless", headers={"Sec-Fetch-Site": "cross-site"})
    assert other.status == 403


def test_saved_queries_outlast_a_restart_and_reverify(tmp_path, demo_db):
    from ingest.server.reverify import reverify
    from ingest.storage import open_db

    a = AppClient(tmp_path / "app", env={"SQL_WORKERS": 0}, db=demo_copy(demo_db, tmp_path / "app"))
    a.start()
    try:
        assert (
            save(a, slug="kept", title="Kept", sql="SELECT count(*) AS n FROM games").status == 201
        )
    finally:
        a.stop()
    con = open_db(a.db)  # the server stopped: `balance reverify --rebuild` on the file
    try:
        con.execute("BEGIN TRANSACTION")
        summary = reverify(con, rebuild=True)
        con.execute("COMMIT")
    finally:
        con.close()
    assert summary["checked"] > 0
    a.start()
    try:
        assert a.get("/sql/saved/kept").json()["title"] == "Kept"
        assert a.get("/sql/q/kept").status == 200
        # and the console reads it like any table of the store
        assert count(a, "SELECT count(*) FROM saved_queries WHERE slug = 'kept'") == 1
    finally:
        a.stop()


def test_saving_needs_the_token_where_the_server_requires_one(tmp_path):
    token = "saved-queries-token"
    a = AppClient(
        tmp_path, env={"SQL_WORKERS": 0, "BALANCE_HOST": "0.0.0.0", "BALANCE_TOKEN": token}
    )
    a.start()
    try:
        body = {"slug": "tok", "title": "t", "sql": "SELECT 1 AS one"}
        assert save(a, **body).status == 401
        assert a.get("/sql/saved").status == 401 and a.get("/sql/q/tok").status == 401
        auth = {"Authorization": f"Bearer {token}"}
        assert save(a, headers=auth, **body).status == 201
        assert a.request("DELETE", "/sql/saved/tok").status == 401
        assert a.get("/sql/saved/tok", headers=auth).status == 200
        assert a.request("DELETE", "/sql/saved/tok", headers=auth).status == 204
    finally:
        a.stop()


# -- whole downloads ----------------------------------------------------------------------------


def test_a_download_is_the_whole_result(app, tmp_path):
    total = count(app, f"SELECT count(*) FROM ({BIG})")
    assert total > 10_000
    page = app.get("/sql?q=" + quote(BIG)).body.decode()
    assert 'data-truncated="true"' in page and "the downloads below hold the whole result" in page
    r = app.get("/sql/download.csv?q=" + quote(BIG))
    assert r.status == 200
    assert r.headers["content-type"] == "text/csv; charset=utf-8"  # once
    assert r.headers["x-row-count"] == str(total) and r.headers["x-truncated"] == "false"
    assert int(r.headers["content-length"]) == len(r.body)
    assert len(list(csv.DictReader(io.StringIO(r.body.decode())))) == total
    r = app.get("/sql/download.jsonl?q=" + quote(BIG))
    assert r.headers["content-type"] == "application/x-ndjson"
    lines = r.body.decode().splitlines()
    assert len(lines) == total and json.loads(lines[-1])["copy"] in (0, 1)
    assert len(json.loads(app.get("/sql/download.json?q=" + quote(BIG)).body)) == total
    (tmp_path / "x.parquet").write_bytes(app.get("/sql/download.parquet?q=" + quote(BIG)).body)
    assert pq.read_table(tmp_path / "x.parquet").num_rows == total
    # the API's own file answers stay capped at the row limit and say so
    capped = app.post("/sql/api", json.dumps({"sql": BIG, "format": "csv"}), JSON)
    assert capped.headers["x-truncated"] == "true"
    assert capped.headers["content-type"].count("charset") == 1
    downloads = app.app.extensions["dashboard.snapshots"].downloads_dir
    assert list(downloads.iterdir()) == []  # each file went as it was sent


def test_a_result_over_the_download_limit_is_refused_and_says_so(tmp_path, demo_db):
    work = tmp_path / "small"
    env = {"SQL_WORKERS": 1, "SQL_DOWNLOAD_MAX_BYTES": "200000"}
    a = AppClient(work, env=env, db=demo_copy(demo_db, work)).start()
    try:
        r = a.get("/sql/download.csv?q=" + quote(BIG))
        assert r.status == 413 and r.json()["error"] == "too_big"
        assert "balance export" in r.json()["message"] and "never cut" in r.json()["message"]
        page = a.get("/sql/download.csv?q=" + quote(BIG), headers={"Accept": "text/html"})
        assert page.status == 413 and b"nothing was downloaded" in page.body
        assert b"balance export" in page.body
        small = a.get("/sql/download.csv?q=" + quote("SELECT * FROM games LIMIT 10"))
        assert small.status == 200 and len(small.body.decode().splitlines()) == 11
        assert list(a.app.extensions["dashboard.snapshots"].downloads_dir.iterdir()) == []
    finally:
        a.stop()


# -- errors point into the SQL; facets; charts ----------------------------------------------------


def test_errors_say_where_in_the_sql_they_point(app):
    r = api(app, "SELECT board,\n       nope\nFROM games")
    assert r.status == 400
    assert r.json()["position"] == {"offset": 21, "line": 2, "column": 8, "text": "       nope"}
    r = api(app, "SELECT 1 +")
    assert r.json()["position"]["offset"] == 10
    r = api(app, "SELECT count(*) FROM games, read_csv('/etc/passwd')")
    assert r.json()["error"] == "refused" and r.json()["position"]["offset"] == 28
    page = app.get("/sql?q=" + quote("SELECT board,\n       nope\nFROM games")).body.decode()
    assert 'data-offset="21" data-at="21" data-line="2" data-column="8"' in page
    assert "At line 2, column 8" in page


def test_facets_count_the_whole_result_and_filter_it(tmp_path, demo_db):
    work = tmp_path / "facets"
    a = AppClient(work, env={"SQL_WORKERS": 0, "SQL_ROW_LIMIT": 50}, db=demo_copy(demo_db, work))
    a.start()
    try:
        sql = "SELECT game_id, board, variant, mode, client_version FROM games"
        page = a.get("/sql?q=" + quote(sql)).body.decode()
        assert 'id="facets"' in page and 'data-truncated="true"' in page
        total = count(a, "SELECT count(*) FROM games")
        fives = count(a, "SELECT count(*) FROM games WHERE board = 5")
        import re

        board = page.split('data-column="board"')[1].split("</div>")[0]
        shown = {int(v): int(n.replace(",", "")) for v, n in re.findall(
            r'data-value="(\d+)">\d+</a> <small>([\d,]+)</small>', board)}  # fmt: skip
        assert sum(shown.values()) == total and shown[5] == fives  # not just the 50 rows shown
        href = re.search(r'href="([^"]*f\.board=5[^"]*)"', board).group(1).replace("&amp;", "&")
        filtered = a.get(href).body.decode()
        assert 'id="sql-filters"' in filtered
        table = filtered.split('id="sql-result"')[1].split("</table>")[0]
        assert len(re.findall(r"<tr><td>", table)) == min(fives, 50)
        data = a.get(href.replace("/sql?", "/sql/download.csv?"))
        assert len(data.body.decode().splitlines()) == fives + 1  # the whole filtered result
    finally:
        a.stop()


def test_a_chart_from_a_result(app):
    sql = "SELECT board, variant, count(*) AS games FROM games GROUP BY ALL ORDER BY ALL"
    args = {"q": sql, "chart.mark": "bar", "chart.x": "variant", "chart.y": "games",
            "chart.color": "board"}  # fmt: skip
    page = app.get("/sql?" + urlencode(args)).body.decode()
    assert 'id="spec-sqlchart"' in page and 'id="dl-chart"' in page
    for mark in ("bar", "line", "point", "heatmap"):
        spec = app.get(
            "/sql/chart.json?" + urlencode({**args, "chart.mark": mark, "chart.facet": "board"})
        )
        assert spec.status == 200, spec.body
        import altair as alt

        alt.Chart.from_dict(spec.json()).to_dict(validate=True)  # a valid Vega-Lite spec
    missing = app.get("/sql?" + urlencode({**args, "chart.y": "nope"})).body.decode()
    assert 'id="chart-error"' in missing and "nope" in missing


# -- balance sql --------------------------------------------------------------------------------


def test_balance_sql_into_head_ends_quietly_and_takes_parameters(tmp_path, demo_db):
    db = demo_copy(demo_db, tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BALANCE_")}
    env["PYTHONPATH"] = str(REPO)
    for extra in ([], ["--csv"]):
        cmd = [sys.executable, "-m", "ingest.cli", "sql", "--db", str(db), *extra,
               "SELECT * FROM game_turns"]  # fmt: skip
        shell = " ".join(quote_arg(c) for c in cmd) + " | head -n 2"
        r = subprocess.run(["bash", "-o", "pipefail", "-c", shell], capture_output=True,
                           text=True, env=env, cwd=REPO, timeout=120)  # fmt: skip
        assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr
        assert r.returncode == 0 and len(r.stdout.splitlines()) == 2
    # (the pipe above needs a process of its own; a parameter does not)
    r = balance("sql", "--db", str(db), "--param", "board=5",
                "SELECT count(*) AS n FROM games WHERE board = :board")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.splitlines()[2]) > 0


def quote_arg(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
