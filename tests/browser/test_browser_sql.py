"""Real browser: the SQL console's saved queries, charts, whole downloads, history and errors.

Headless Chromium (support.Browser) against the app serving a copy of
the demo store on a loopback port, with a real SQL worker: a query with a parameter is run,
charted, saved from the page and opened again by its URL with other values; a result of more
than 10,000 rows is downloaded whole by clicking the link; the history of the session lists
what ran; an error selects the place in the SQL it points at; and a write saved from the page
is refused there, nothing stored.
"""

from __future__ import annotations

import csv
import json
from urllib.parse import quote, urlencode

import pytest
from support import ARTIFACTS, AppClient, Browser, demo_copy, wait_for

pytestmark = pytest.mark.browser

BIG = "SELECT t.*, c.range AS copy FROM game_turns t, range(2) c"


@pytest.fixture(scope="module")
def app(tmp_path_factory, demo_db):
    work = tmp_path_factory.mktemp("browser-sql")
    env = {"SQL_WORKERS": 1, "BALANCE_VALIDATE_CHARTS": "1"}
    a = AppClient(work, env=env, db=demo_copy(demo_db, work)).start().serve_http()
    yield a
    a.stop()


def count(app, sql: str) -> int:
    r = app.post("/sql/api", json.dumps({"sql": sql}), "application/json")
    assert r.status == 200, r.body
    return r.json()["rows"][0][0]


def js(value) -> str:
    return json.dumps(value)


def svg_marks(browser: Browser) -> int:
    return browser.evaluate(
        'document.querySelectorAll(\'#sql-chart svg g[class*="mark-"] > path, '
        '#sql-chart svg g[class*="mark-"] > rect\').length'
    )


def test_run_chart_save_and_open_by_url(browser, app):
    sql = "SELECT variant, mode, count(*) AS games\nFROM games\nWHERE board = :board\nGROUP BY ALL"
    browser.open(app.url + "/sql?" + urlencode({"q": sql}), "document.body.dataset.ready")
    # the parameter is asked for; give it and run
    assert browser.evaluate("!!document.getElementById('sql-note')")
    browser.evaluate("document.querySelector('input[name=\"p.board\"]').value = '7'")
    browser.evaluate("document.getElementById('run').click()")
    browser.wait_for("document.getElementById('sql-result') && document.body.dataset.ready")
    rows = browser.evaluate("document.querySelectorAll('#sql-result tbody tr').length")
    assert rows >= 1
    # a chart from the result: bars of games by variant, coloured by mode
    for channel, column in (("mark", "bar"), ("x", "variant"), ("y", "games"), ("color", "mode")):
        browser.evaluate(f"document.getElementById('chart-{channel}').value = {js(column)}")
    browser.evaluate("document.getElementById('chart-draw').click()")
    browser.wait_for("document.body.dataset.rendered === '1'")
    assert svg_marks(browser) > 0
    assert browser.problems() == [], browser.problems()
    # save it, with its parameter typed and the chart
    browser.evaluate("document.getElementById('save-box').open = true")
    browser.evaluate("document.getElementById('save-title').value = 'Variants of a board'")
    browser.evaluate("document.getElementById('save-description').value = 'From the browser.'")
    browser.evaluate(
        "document.querySelector('#save-params tr[data-param=board] select').value = 'integer'"
    )
    browser.evaluate("document.getElementById('save-button').click()")
    browser.wait_for(
        "location.pathname === '/sql/q/variants-of-a-board' && document.body.dataset.ready"
    )
    browser.wait_for("document.body.dataset.rendered === '1'")
    assert svg_marks(browser) > 0
    assert browser.evaluate("document.getElementById('saved-title').textContent") == (
        "Variants of a board"
    )
    saved = app.get("/sql/saved/variants-of-a-board").json()
    assert saved["params"][0]["type"] == "integer" and saved["params"][0]["default"] == "7"
    assert saved["chart"]["mark"] == "bar" and saved["chart"]["color"] == "mode"
    browser.screenshot(ARTIFACTS / "sql-saved.png")
    # open it by its URL with another value
    browser.open(
        app.url + "/sql/q/variants-of-a-board?board=5", "document.body.dataset.rendered === '1'"
    )
    cells = browser.evaluate(
        "Array.from(document.querySelectorAll('#sql-result tbody tr td:last-child'))"
        ".map(td => +td.textContent)"
    )
    assert sum(cells) == count(app, "SELECT count(*) FROM games WHERE board = 5")
    assert browser.evaluate("document.querySelector('input[name=board]').value") == "5"
    assert browser.problems() == [], browser.problems()


def test_a_download_of_more_than_10000_rows_is_whole(browser, app, tmp_path):
    total = count(app, f"SELECT count(*) FROM ({BIG})")
    assert total > 10_000
    browser.downloads(tmp_path)
    browser.open(app.url + "/sql?" + urlencode({"q": BIG}), "document.body.dataset.ready")
    assert browser.evaluate("document.getElementById('sql-status').dataset.truncated") == "true"
    browser.evaluate("document.getElementById('dl-csv').click()")
    target = tmp_path / "query.csv"
    wait_for(
        lambda: target.exists() and not list(tmp_path.glob("*.crdownload")),
        60,
        f"the download whole: {target}",
        every=0.2,
    )
    with open(target, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == total
    assert {r["copy"] for r in rows} == {"0", "1"}


def test_history_and_where_the_error_points(browser, app):
    browser.open(app.url + "/sql?q=" + quote("SELECT 1 AS one"), "document.body.dataset.ready")
    bad = "SELECT board,\n       nope\nFROM games"
    browser.open(app.url + "/sql?q=" + quote(bad), "document.body.dataset.ready")
    assert browser.evaluate("document.getElementById('sql-error').dataset.line") == "2"
    start = browser.evaluate("document.getElementById('sql-text').selectionStart")
    end = browser.evaluate("document.getElementById('sql-text').selectionEnd")
    assert bad[start:end] == "nope"
    assert "^" in browser.evaluate("document.getElementById('sql-error-where').textContent")
    items = browser.evaluate(
        "Array.from(document.querySelectorAll('#history li')).map(li => li.textContent)"
    )
    assert "nope" in items[0] and "at line 2, column 8" in items[0]
    assert any("SELECT 1 AS one" in item and "1 rows" in item for item in items[1:])
    # one click on a facet filters the result
    browser.open(app.url + "/sql?q=" + quote("SELECT game_id, board, variant FROM games"),
                 "document.body.dataset.ready")  # fmt: skip
    browser.evaluate("document.querySelector('.facet[data-column=board] a.facet-value').click()")
    browser.wait_for("document.getElementById('sql-filters') && document.body.dataset.ready")
    boards = browser.evaluate(
        "Array.from(document.querySelectorAll('#sql-result tbody tr td:nth-child(2)'))"
        ".map(td => td.textContent)"
    )
    assert len(set(boards)) == 1


def test_a_write_saved_from_the_page_is_refused_there(browser, app):
    before = count(app, "SELECT count(*) FROM games")
    browser.open(app.url + "/sql?q=" + quote("SELECT 1 AS one"), "document.body.dataset.ready")
    for sql in ("DELETE FROM games", "SELECT * FROM read_text('/etc/passwd')",
                "ATTACH '/tmp/balance-browser.duckdb' AS x", "SET threads = 1"):  # fmt: skip
        browser.evaluate(f"document.getElementById('sql-text').value = {js(sql)}")
        browser.evaluate("document.getElementById('save-box').open = true")
        browser.evaluate("document.getElementById('save-title').value = 'sneaky'")
        browser.evaluate("delete document.body.dataset.saveError")
        browser.evaluate("document.getElementById('save-button').click()")
        browser.wait_for("document.body.dataset.saveError")
        assert "refused" in browser.evaluate("document.body.dataset.saveError"), sql
        assert browser.evaluate("location.pathname") == "/sql"
    assert "sneaky" not in json.dumps(app.get("/sql/saved").json()["saved"])
    assert count(app, "SELECT count(*) FROM games") == before


@pytest.mark.parametrize(
    "name", ["it's", 'say "hi"', "line\u2028sep\u2028arator", "'quoted'"], ids=str.encode
)
def test_a_chart_draws_whatever_its_column_names_hold(browser, app, name):
    """Quotes start a quoted path in a Vega field and U+2028 ends a string in Vega's
    expressions: such a column is charted under a plain field, its name kept as the title."""
    quoted = '"' + name.replace('"', '""') + '"'
    sql = f"SELECT variant AS {quoted}, count(*) AS games FROM games GROUP BY ALL"
    args = {"q": sql, "chart.mark": "bar", "chart.x": name, "chart.y": "games",
            "chart.color": name}  # fmt: skip
    browser.open(app.url + "/sql?" + urlencode(args), "document.body.dataset.ready")
    browser.wait_for("document.body.dataset.rendered === '1'")
    assert svg_marks(browser) > 0
    assert browser.problems() == [], browser.problems()
    title = name.replace("\u2028", " ")
    assert title in browser.evaluate("document.querySelector('#sql-chart svg').textContent")
