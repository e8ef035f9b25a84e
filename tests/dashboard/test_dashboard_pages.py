"""Dashboard pages on the app in-process (Flask's test client), holding simulated games.

The store is filled once per session the way production fills it (conftest.py `demo_db`,
support.build_demo_db): simulated games and the spec's quarantined examples go through the ingest
path, then the analysis jobs write the agg_* tables. The module's app gets its own copy of that
file, and every chart spec it draws is checked by Altair.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from urllib.parse import parse_qs, quote, urlparse

import pytest
from support import PAGES, AppClient, demo_copy, demo_env, example_lines, example_records


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory, demo_db):
    work = tmp_path_factory.mktemp("dash")
    server = AppClient(work, env=demo_env(), db=demo_copy(demo_db, work)).start()
    yield server
    server.stop()


def html(server, path: str) -> str:
    r = server.get(path)
    assert r.status == 200, (path, r.status, r.body[:500])
    assert r.headers["content-type"].startswith("text/html")
    return r.body.decode()


def specs(page: str) -> dict[str, dict]:
    return {
        m.group(1): json.loads(m.group(2))
        for m in re.finditer(
            r'<script type="application/json" id="spec-([\w-]+)">(.*?)</script>', page, re.S
        )
    }


@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders_its_charts_from_agg_tables(demo_server, path):
    page = html(demo_server, path)
    charts = specs(page)
    assert charts, "no chart on the page"
    for chart_id, spec in charts.items():
        assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/")
        assert f"/dashboard/chart/{chart_id}.csv" in page
    # every console link opens a query over agg_* tables (or the quarantine examples, the
    # rejected uploads counted, the Versions page's sample of games for the adjusted model, or
    # the lab's stored runs: the Powers page's worth by restricted play)
    links = re.findall(r'href="(/sql\?q=[^"]+)"', page)
    assert links
    for link in links:
        sql = parse_qs(urlparse(link.replace("&amp;", "&")).query)["q"][0]
        assert re.search(r"\bFROM (agg_\w+|quarantine|rejections|games|lab_rows)\b", sql), sql
    # no CDN: every script comes from this server
    for src in re.findall(r'<script[^>]+src="([^"]+)"', page):
        assert src.startswith("/"), src
    assert "cdn" not in page.lower()
    # freshness and coverage are on every page
    assert 'id="freshness"' in page and "Tables computed" in page
    assert re.search(r"snapshot \d{4}-\d\d-\d\dT", page)


def test_each_page_shows_its_filters_as_a_get_form(demo_server):
    page = html(demo_server, "/dashboard/p/setups")
    form = re.search(r'<form class="filters" method="get".*?</form>', page, re.S).group(0)
    for name in (
        "board",
        "variant",
        "mode",
        "ai_level",
        "platform",
        "client_version",
        "date_from",
        "date_to",
    ):
        assert f'name="{name}"' in form, name


def test_default_is_the_balance_cut_and_all_widens_it(demo_server):
    default = html(demo_server, "/dashboard/")
    assert 'id="default-cut"' in default
    widened = html(demo_server, "/dashboard/?mode=&client_version=&ruleset=")
    assert 'id="default-cut"' not in widened
    n_default = int(re.search(r'id="coverage">([\d,]+)', default).group(1).replace(",", ""))
    n_all = int(re.search(r'id="coverage">([\d,]+)', widened).group(1).replace(",", ""))
    got = demo_server.post(
        "/sql/api", json.dumps({"sql": "SELECT count(*) FROM games"}), "application/json"
    ).json()
    assert 0 < n_default < n_all == got["rows"][0][0]  # every verified game, none quarantined


def test_chart_csv_is_the_table_behind_the_chart_under_the_same_filters(demo_server):
    q = "?board=5&mode=&client_version="
    page = html(demo_server, "/dashboard/p/setups" + q)
    spec = specs(page)["lineups"]
    r = demo_server.get("/dashboard/chart/lineups.csv" + q)
    assert r.status == 200 and r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.body.decode())))
    assert rows and {row["board"] for row in rows} == {"5"}
    # the chart draws the first 40 rows of the table, in the table's order (by lower bound)
    drawn = [v["label"] for v in spec["data"]["values"]]
    assert drawn == [row["label"] for row in rows][: len(drawn)]
    lows = [float(row["lo"]) for row in rows]
    assert lows == sorted(lows, reverse=True)
    # counts add up to what the store holds: each 5x5 game counts once per side
    n = sum(int(row["n"]) for row in rows)
    con_sql = "SELECT count(*) * 2 FROM games WHERE board = 5"
    got = demo_server.post("/sql/api", json.dumps({"sql": con_sql}), "application/json").json()
    assert n == got["rows"][0][0]


def test_rates_carry_interval_n_and_flags(demo_server):
    spec = specs(html(demo_server, "/dashboard/p/setups?mode=&client_version="))["lineups"]
    row = spec["data"]["values"][0]
    for key in ("rate", "lo", "hi", "n", "flagged", "shrunk"):
        assert key in row
    assert row["lo"] <= row["rate"] <= row["hi"]
    tips = json.dumps(spec)
    assert '"field": "n"' in tips and '"field": "lo"' in tips
    # small samples are greyed, not hidden: they stay in the data with their own colour
    assert any(v["_sample"] == "small n" for v in spec["data"]["values"])


def test_the_console_link_runs_the_same_query(demo_server):
    page = html(demo_server, "/dashboard/p/overview".replace("/p/overview", "/"))
    link = re.search(r'href="(/sql\?q=[^"]+)"', page).group(1).replace("&amp;", "&")
    sql = parse_qs(urlparse(link).query)["q"][0]
    console = html(demo_server, "/sql?q=" + quote(sql))
    assert 'id="sql-result"' in console and 'id="sql-error"' not in console


def test_filters_that_a_table_cannot_take_are_named(demo_server):
    page = html(demo_server, "/dashboard/p/setups?platform=ios&mode=&client_version=")
    # agg_lineup has no platform column: said on the page, not silently ignored
    assert "Not applied to this table: platform" in page


def test_bad_filter_values_are_reported_not_run(demo_server):
    page = html(demo_server, "/dashboard/?board=9&client_version=x%27%3B+DROP")
    assert "is not one of all, 5, 7 (ignored" in page
    assert "is not a client version (like 3.0.1) (ignored: the default" in page


def test_js_bundle_is_served_once_with_caching_headers(demo_server):
    page = html(demo_server, "/dashboard/")
    src = re.search(r'<script src="(/dashboard/assets/vega-bundle-[^"]+\.js)"', page).group(1)
    r = demo_server.get(src, headers={"Accept-Encoding": "gzip"})
    assert r.status == 200 and r.headers["content-encoding"] == "gzip"
    assert (
        "immutable" in r.headers["cache-control"]
        and "max-age=31536000" in r.headers["cache-control"]
    )
    etag = r.headers["etag"]
    again = demo_server.get(src, headers={"If-None-Match": etag})
    assert again.status == 304
    plain = demo_server.get(src)
    assert b"vegaEmbed" in plain.body and len(plain.body) > len(r.body)
    assert gzip.decompress(r.body) == plain.body


def test_the_bundles_gzip_is_kept_beside_it_and_a_copy_of_another_is_made_again(tmp_path):
    from dashboard.assets import FILENAME, Bundle

    js = Bundle().body(False)  # the machine's cached bundle (building one takes a second)
    (tmp_path / f"balance-{FILENAME}").write_bytes(js)
    gz = Bundle(tmp_path).body(True)
    kept = tmp_path / f"balance-{FILENAME}.gz"
    assert kept.read_bytes() == gz and gzip.decompress(gz) == js
    assert Bundle(tmp_path).body(True) == gz  # the next start reads it
    kept.write_bytes(gzip.compress(b"another bundle"))  # not this bundle's
    again = Bundle(tmp_path)
    assert gzip.decompress(again.body(True)) == js and kept.read_bytes() == again.body(True)


def test_a_bundle_cache_on_a_full_disk_serves_the_bundle_and_leaves_no_part_file(small_disk):
    from dashboard.assets import FILENAME, Bundle

    disk = small_disk(1)  # the 0.9 MB bundle fits, its gzip then does not
    js = Bundle().body(False)
    (disk / f"balance-{FILENAME}").write_bytes(js)
    bundle = Bundle(disk)
    assert gzip.decompress(bundle.body(True)) == js and bundle.body(False) == js
    assert sorted(p.name for p in disk.iterdir()) == [f"balance-{FILENAME}"]


def test_explorer_finds_games_and_opens_them(demo_server):
    page = html(demo_server, "/dashboard/games?status=quarantined")
    ids = re.findall(r'href="/dashboard/games/([0-9a-f-]{36})[?"]', page)
    assert len(ids) == len(example_records("slow6-invalid"))
    page = html(demo_server, "/dashboard/games?status=verified&board=7")
    rows = re.findall(
        r"<tr class=\"\">\s*<td><a[^>]+>[^<]+</a></td>\s*<td>verified</td><td>(\d)", page
    )
    assert rows and set(rows) == {"7"}


def test_explorer_filters_by_lineup_power_and_reason(demo_server):
    got = demo_server.post(
        "/sql/api",
        json.dumps({"sql": "SELECT lineup_0, reason FROM games WHERE powers LIMIT 1"}),
        "application/json",
    ).json()
    lineup, reason = got["rows"][0]
    page = html(demo_server, f"/dashboard/games?lineup={lineup}&reason={reason}")
    assert f"<code>{lineup}</code>" in page
    assert re.findall(r"href=\"/dashboard/games/[0-9a-f-]{36}[?\"]", page)


def test_quarantined_game_opens_at_the_turn_that_broke_the_rule(demo_server):
    expected = {e["game_id"]: e for e in map(json.loads, example_lines("slow6-invalid.expected"))}
    gid, exp = next((g, e) for g, e in expected.items() if e["turn"] is not None)
    page = html(demo_server, f"/dashboard/games/{gid}")
    replay = json.loads(re.search(r'id="replay">(.*?)</script>', page, re.S).group(1))
    assert replay["error"]["turn"] == exp["turn"]
    start = int(re.search(r'id="board" data-start="(\d+)"', page).group(1))
    # frames = the start + one per good turn; the viewer's step past them is the broken turn
    assert start == len(replay["frames"]) == exp["turn"] + 1
    assert exp["rule"] in page


def test_valid_game_viewer_has_every_turn(demo_server):
    got = demo_server.post(
        "/sql/api",
        json.dumps({"sql": "SELECT game_id, turns FROM games LIMIT 1"}),
        "application/json",
    ).json()
    gid, turns = got["rows"][0]
    page = html(demo_server, f"/dashboard/games/{gid}")
    replay = json.loads(re.search(r'id="replay">(.*?)</script>', page, re.S).group(1))
    assert replay["error"] is None and len(replay["frames"]) == turns + 1
    assert 'data-start="0"' in page
    assert demo_server.get("/dashboard/games/00000000-0000-4000-8000-000000000000").status == 404


def sql(server, text: str) -> list:
    got = server.post("/sql/api", json.dumps({"sql": text}), "application/json").json()
    return got["rows"]


def csv_rows(server, path: str) -> list[dict]:
    r = server.get(path)
    assert r.status == 200 and r.headers["content-type"].startswith("text/csv"), r.body[:300]
    return list(csv.DictReader(io.StringIO(r.body.decode())))


SLIDE_ALL = "?mode=&client_version="  # every Slide game, not the default cut


def test_slide_page_draws_every_chart_from_agg_slide_tables(demo_server):
    from dashboard.catalog import slide as slide_charts

    page = html(demo_server, "/dashboard/p/slide" + SLIDE_ALL)
    drawn = {c.id for c in slide_charts.CHARTS if c.draw is not None}
    assert set(specs(page)) == drawn
    for c in slide_charts.CHARTS:  # the summary table too has its CSV and console link
        assert f"/dashboard/chart/{c.id}.csv" in page
    for link in re.findall(r'href="(/sql\?q=[^"]+)"', page):
        q = parse_qs(urlparse(link.replace("&amp;", "&")).query)["q"][0]
        assert re.search(r"\bFROM agg_slide_\w+\b", q), q
    # the filter form takes table sizes, not Slow6's board / variant / AI level
    form = re.search(r'<form class="filters" method="get".*?</form>', page, re.S).group(0)
    assert 'name="players"' in form and 'name="board"' not in form
    # freshness counts the Slide games the jobs read
    games = sql(demo_server, "SELECT count(*) FROM slide_games")[0][0]
    assert f"{games:,} verified Slide games read" in page


def test_slide_seat_chart_is_its_csv_and_counts_every_seat(demo_server):
    page = html(demo_server, "/dashboard/p/slide" + SLIDE_ALL)
    spec = specs(page)["slide-seats"]
    rows = csv_rows(demo_server, "/dashboard/chart/slide-seats.csv" + SLIDE_ALL)
    drawn = spec["data"]["values"]
    key = ("players", "seat_from_first", "seats", "flagged")
    assert [tuple(str(v[k]).lower() for k in key) for v in drawn] == [
        tuple(r[k].lower() for k in key) for r in rows
    ]
    for v, r in zip(drawn, rows, strict=True):
        for k in ("rate", "lo", "hi", "fair_share"):
            assert abs(v[k] - float(r[k])) < 1e-4, (k, v, r)
        assert v["lo"] <= v["rate"] <= v["hi"]
        assert abs(v["fair_share"] - 1 / v["players"]) < 1e-4
        assert v["n"] == v["seats"]
        assert v["_sample"] in ("ok", "small n", "flagged (FDR 5%)")
    tips = json.dumps(spec)
    for field in ("n", "lo", "hi", "fair_share", "flagged"):
        assert f'"field": "{field}"' in tips, field
    # every seat of every game, and one win credit per game (shared victories split)
    per_size = dict(sql(demo_server, "SELECT players, count(*) FROM slide_games GROUP BY 1"))
    for players, games in per_size.items():
        mine = [r for r in rows if int(r["players"]) == players]
        assert len(mine) == players
        assert all(int(r["seats"]) == games for r in mine)
        assert abs(sum(float(r["win_credit"]) for r in mine) - games) < 1e-6


def test_slide_distributions_and_matches_add_up_to_the_store(demo_server):
    seats = sql(demo_server, "SELECT count(*) FROM slide_seats")[0][0]
    for chart in ("slide-score", "slide-cards-left"):
        rows = csv_rows(demo_server, f"/dashboard/chart/{chart}.csv" + SLIDE_ALL)
        assert sum(int(r["seats"]) for r in rows) == seats, chart
    groups = sql(demo_server, "SELECT sum(len(groups))::BIGINT FROM slide_seats")[0][0]
    rows = csv_rows(demo_server, "/dashboard/chart/slide-group-sizes.csv" + SLIDE_ALL)
    assert sum(int(r["groups"]) for r in rows) == groups
    takes = sql(demo_server, "SELECT count(*) FROM slide_rounds WHERE had_choice")[0][0]
    rows = csv_rows(demo_server, "/dashboard/chart/slide-take-lowest.csv" + SLIDE_ALL)
    assert sum(int(r["takes"]) for r in rows) == takes
    assert all(0 <= float(r["lo"]) <= float(r["rate"]) <= float(r["hi"]) <= 1 for r in rows)
    matches = sql(demo_server, "SELECT count(DISTINCT match_id) FROM slide_games")[0][0]
    rows = csv_rows(demo_server, "/dashboard/chart/slide-match-games.csv" + SLIDE_ALL)
    assert matches and sum(int(r["matches"]) for r in rows) == matches


def test_slide_filters_apply_and_the_default_is_slides_own_balance_cut(demo_server):
    rows = csv_rows(demo_server, "/dashboard/chart/slide-seats.csv?players=4&mode=&client_version=")
    assert rows and {r["players"] for r in rows} == {"4"}
    # a Slow6 filter is named under each chart, not silently dropped
    page = html(demo_server, "/dashboard/p/slide?board=5&mode=&client_version=")
    assert "Not applied to this table: board" in page
    # no filter: human tables on Slide's live client version (Slide has its own versions)
    from analysis.live_version import live_version

    by_version = sql(
        demo_server,
        "SELECT client_version, count(*) FROM slide_games "
        "WHERE mode IN ('online', 'friend') GROUP BY ALL",
    )
    latest = live_version(dict(by_version)).version
    page = html(demo_server, "/dashboard/p/slide")
    assert 'id="default-cut"' in page
    assert f'<option value="{latest}" selected' in page
    covered = int(re.search(r'id="coverage">([\d,]+)', page).group(1).replace(",", ""))
    want = sql(
        demo_server,
        "SELECT count(*) FROM slide_games WHERE mode IN ('online', 'friend') "
        f"AND client_version = '{latest}'",
    )[0][0]
    assert covered == want > 0
    # the chart CSV without a query string is the same default cut
    rows = csv_rows(demo_server, "/dashboard/chart/slide-seats.csv")
    assert sum(int(r["seats"]) for r in rows if r["seat_from_first"] == "0") == want


def test_an_app_reads_its_own_stores_tables_after_another_app_in_the_process(app_factory, tmp_path):
    """Two apps in one process (tests, a benchmark): the dashboard once cached which tables a
    snapshot holds by the snapshot's time, None before the first one, so the second app took
    the first one's answer ("No data yet") for its own store."""
    import duckdb

    from analysis import jobs
    from ingest.storage import Store

    inline = {"SQL_WORKERS": 0}  # the queries in this process: the cache is the point here
    bare = app_factory(env=inline)  # no analysis run yet: no agg_* table
    r = bare.get("/sql/q/dashboard-games-daily")
    assert r.status == 400 and b"No data yet" in r.body
    assert 'id="simulated"' not in html(bare, "/dashboard/")

    db = tmp_path / "analysed.duckdb"
    Store(db).close()
    con = duckdb.connect(str(db))
    try:
        jobs.run(con, lambda fn: fn(con))  # the agg_* tables, empty
    finally:
        con.close()
    analysed = app_factory(env=inline, db=db)
    r = analysed.get("/sql/q/dashboard-games-daily")
    assert r.status == 200 and b'id="sql-result"' in r.body


def test_a_kept_chart_spec_is_used_again_only_if_it_was_checked(monkeypatch):
    """dashboard.charts keeps each built spec. With validation on, a spec built unchecked is
    built again and checked (an invalid one then fails); a checked one is used again, also
    after validation was off for a while (an app of another setting in the same process)."""
    import altair as alt
    from altair.utils.schemapi import SchemaValidationError

    from dashboard import charts

    monkeypatch.setattr(charts, "_SPECS", {})
    monkeypatch.setattr(charts, "VALIDATE", False)
    built = []

    def chart(bin_value):
        def make():
            built.append(bin_value)
            return alt.Chart().mark_bar().encode(x=alt.X("v:Q", bin=bin_value))

        return make

    rows = [{"v": 1.0}, {"v": 2.0}]
    bad = charts._finish(chart(123), rows, None, ("bad",))  # an invalid bin: unchecked, kept
    assert bad["data"] == {"values": rows} and built == [123]
    charts.validate(True)
    with pytest.raises(SchemaValidationError):
        charts._finish(chart(123), rows, None, ("bad",))
    assert built == [123, 123]  # built again, to be checked

    charts._finish(chart(True), rows, None, ("good",))
    charts.validate(False)
    charts._finish(chart(True), rows, None, ("good",))
    charts.validate(True)
    again = charts._finish(chart(True), rows, None, ("good",))
    assert built == [123, 123, True]  # checked once, used again since
    assert again["encoding"]["x"]["bin"] is True
