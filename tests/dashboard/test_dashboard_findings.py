"""The Findings page (/dashboard/p/findings) and `balance report`: the same findings, from
analysis.findings, on a synthetic store with planted effects (a strong power, the first-move
edge): the page lists them with links to their charts and SQL, and the report file, read
from the stopped store or through a running server, holds the same rows."""

from __future__ import annotations

import csv
import html
import io
import re
import shutil

import pytest
from support import AppClient, balance, demo_env

from analysis import jobs
from analysis import synthetic as sy

IN_BAND = (-1.24, -0.51, 0.10, 0.73)  # no computer level off its target band


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    work = tmp_path_factory.mktemp("findings")
    db = work / "planted.duckdb"
    plan = sy.Plan(
        n=6_000, seed=3, first_effect=0.3, power_effects={"surge": 0.5},
        ai_level_effects=IN_BAND, modes=(("online", 1),), versions=(("3.0.0", 1),),
    )  # fmt: skip
    con, _ = sy.make_store(db, plan)
    jobs.run(con, lambda fn: fn(con))
    con.close()
    return db


@pytest.fixture(scope="module")
def app(store, tmp_path_factory):
    work = tmp_path_factory.mktemp("findings-app")
    db = work / "store.duckdb"
    shutil.copy(store, db)
    client = AppClient(work, env=demo_env(), db=db).start()
    yield client
    client.stop()


def page_csv(app) -> list[dict]:
    r = app.get("/dashboard/chart/findings.csv")
    assert r.status == 200
    return list(csv.DictReader(io.StringIO(r.body.decode())))


def report_statements(text: str) -> list[str]:
    return [html.unescape(s) for s in re.findall(r'<td class="statement">(.*?)</td>', text)]


def test_the_page_lists_the_flags_with_their_chart_and_sql(app):
    r = app.get("/dashboard/p/findings")
    assert r.status == 200
    page = r.body.decode()
    rows = page_csv(app)
    assert rows, "planted effects, nothing found"
    assert any(row["statement"].startswith("surge scores ") for row in rows)
    z = [float(row["z_beyond"]) for row in rows]
    assert z == sorted(z, reverse=True) and z[-1] > 0  # strongest evidence first
    assert all(row["since"] == "new this week" for row in rows)  # one run: all new
    for row in rows[:5]:  # the strongest are on the page, each linked
        assert html.escape(row["statement"]) in page
    assert 'href="/dashboard/p/powers#chart-power-adjusted"' in page
    sql_links = re.findall(r'class="sql-link" href="(/sql\?q=[^"]+)"', page)
    assert len(sql_links) >= len(rows[:5])
    assert "agg_adjusted" in html.unescape(sql_links[0]) or "agg_" in html.unescape(sql_links[0])
    summary = re.search(r'id="summary-findings">(.*?)</p>', page, re.S).group(1)
    assert "families" in summary and "at most 0.1 false findings" in summary
    games_links = re.findall(r'class="games-link" href="(/dashboard/games\?[^"]+)"', page)
    assert "/dashboard/games?mode=human&amp;power=surge" in games_links
    # the findings lead, then the watch list, then what each family could see
    order = [page.index(f'id="chart-findings{x}"') for x in ("", "-watch", "-families")]
    assert order == sorted(order) and 'id="chart-findings-descriptive"' in page
    watch = app.get("/dashboard/chart/findings-watch.csv")
    assert watch.status == 200 and "to_confirm" in watch.body.decode().splitlines()[0]
    assert 'data-spec="spec-findings-effects"' in page  # the effects drawn with intervals
    assert "/dashboard/p/findings" in page  # in the navigation bar


def test_the_report_from_the_stopped_store_has_the_pages_rows(app, store, tmp_path):
    db = tmp_path / "copy.duckdb"  # the app holds its own copy; this one is stopped
    shutil.copy(store, db)
    out = tmp_path / "report.html"
    ran = balance("report", "--db", str(db), "--out", str(out))
    assert ran.returncode == 0, ran.stderr
    assert str(out) in ran.stdout and "false entries expected" in ran.stdout
    text = out.read_text(encoding="utf-8")
    assert report_statements(text) == [row["statement"] for row in page_csv(app)]
    # self-contained: nothing to fetch, no script
    assert "<script" not in text and "src=" not in text and "<link" not in text
    assert 'href="http://127.0.0.1:8000/dashboard/p/powers#chart-power-adjusted"' in text
    assert "http://127.0.0.1:8000/sql?q=SELECT" in text
    assert "http://127.0.0.1:8000/dashboard/games?mode=human&amp;power=surge" in text
    assert 'id="descriptive"' in text and "side 0 against side 1" in text
    # the findings lead, then the watch list (its rows as the page's), then the families
    assert text.index("id='findings'") < text.index("id='watch'") < text.index('id="families"')
    watched = [html.unescape(x) for x in re.findall(r'<td class="watch">(.*?)</td>', text)]
    page_watch = list(csv.DictReader(io.StringIO(
        app.get("/dashboard/chart/findings-watch.csv").body.decode())))  # fmt: skip
    assert watched == [row["statement"] for row in page_watch]


def test_the_report_through_a_running_server_is_the_same(app, tmp_path):
    app.serve_http()
    out = tmp_path / "served.html"
    ran = balance("report", "--server", app.url, "--out", str(out))
    assert ran.returncode == 0, ran.stderr
    text = out.read_text(encoding="utf-8")
    assert report_statements(text) == [row["statement"] for row in page_csv(app)]
    assert f'href="{app.url}/dashboard/p/powers#chart-power-adjusted"' in text


def test_the_report_says_why_it_cannot_read_a_store(tmp_path):
    ran = balance("report", "--db", str(tmp_path / "missing.duckdb"), "--out", "x.html")
    assert ran.returncode == 2 and "no store at" in ran.stderr
