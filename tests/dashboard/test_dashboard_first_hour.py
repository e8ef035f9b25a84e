"""A designer's first hour: the dashboard bugs found reading every page (one test a bug).

The app runs in this process (`support.AppClient`) on a copy of the session's demo store:
simulated games and the spec's quarantined examples, through the ingest path, jobs run.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import re
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
from support import AppClient, demo_app, demo_env, example_records, page

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.fixture(scope="module")
def dash(tmp_path_factory, demo_db):
    app = demo_app(tmp_path_factory.mktemp("first-hour"), demo_db)
    yield app
    app.stop()


def specs(html: str) -> dict[str, dict]:
    return {
        m.group(1): json.loads(m.group(2))
        for m in re.finditer(
            r'<script type="application/json" id="spec-([\w-]+)">(.*?)</script>', html, re.S
        )
    }


def section(html: str, chart_id: str) -> str:
    m = re.search(rf'<section class="chart" id="chart-{chart_id}".*?</section>', html, re.S)
    assert m, chart_id
    return m.group(0)


def store_rows(db: Path, sql: str) -> list[tuple]:
    """Rows of the session's demo store (the app serves a copy of it, and holds that open)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


# 1 ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "?mode=human&client_version=", "?mode=&client_version="])
def test_bug1_boards_game_length_axis_is_in_turn_order(dash, query):
    spec = specs(page(dash, "/dashboard/p/boards" + query))["board-length"]
    rows = spec["data"]["values"]
    assert rows
    for board in {r["board"] for r in rows}:
        seen: list[int] = []
        for r in rows:  # an ordinal axis takes its order from the rows
            if r["board"] == board and r["turns"] not in seen:
                seen.append(r["turns"])
        assert seen == sorted(seen), (board, seen)


# 2 ------------------------------------------------------------------------------------------


def broken_slide_record() -> dict:
    """A valid Slide record whose round 3 leader takes a value nobody revealed (S2.3)."""
    from replays.verifier import check_text

    for value in range(1, 11):
        record = copy.deepcopy(example_records("slide-valid")[0])
        record["game_id"] = "5d1e0c3a-0000-4000-8000-00000000beef"
        record["rounds"][3]["takes"][0] = value
        if check_text(json.dumps(record))[1].rule == "S2.3":
            return record
    raise AssertionError("no value breaks S2.3")


def test_bug2_slide_games_have_a_viewer_and_errors_log_their_traceback(
    dash, demo_db, app_factory, tmp_path
):
    (gid,) = store_rows(demo_db, "SELECT game_id::VARCHAR FROM slide_games LIMIT 1")[0]
    html = page(dash, f"/dashboard/games/{gid}")
    assert "Slide game" in html and 'id="rounds"' in html
    assert len(re.findall(r'<tr data-round="\d+">', html)) == 16  # every round's plays
    assert 'class="slide-grid"' in html

    # a quarantined Slide game opens on the round that broke the rule
    app = app_factory(db=tmp_path / "slide.duckdb")
    r = app.upload([broken_slide_record()])
    assert r.json()["results"][0]["verdict"] == "quarantined", r.body
    html = page(app, "/dashboard/games/5d1e0c3a-0000-4000-8000-00000000beef")
    assert 'id="broken"' in html and "S2.3" in html and 'class="flag broken" data-round="3"' in html

    # an unhandled error in a request logs its traceback (frames only: never the message)
    other = app_factory(db=tmp_path / "other.duckdb")

    def explode():
        from flask import request

        raise RuntimeError(request.args["q"])  # a message that quotes the request

    other.app.add_url_rule("/explode", "explode", explode)
    assert other.get("/explode?q=secret-request-data").status == 500
    log = other.output()
    assert "unhandled RuntimeError in GET /explode" in log
    assert "Traceback (most recent call last):" in log and "in explode" in log
    assert "secret-request-data" not in log


# 3 ------------------------------------------------------------------------------------------


def test_bug3_quality_examples_open_the_viewer_and_the_explorer_takes_a_game_id(dash):
    examples = section(page(dash, "/dashboard/p/quality"), "quarantine-examples")
    ids = re.findall(rf'<a href="/dashboard/games/({UUID})">', examples)
    assert ids, "no example links to its game"
    assert page(dash, f"/dashboard/games/{ids[0]}").count(ids[0]) >= 1

    explorer = page(dash, f"/dashboard/games?game_id={ids[0][:8]}")
    listed = set(re.findall(rf'href="/dashboard/games/({UUID})[?"]', explorer))
    assert listed == {ids[0]}, listed
    assert 'name="game_id"' in explorer


# 4 ------------------------------------------------------------------------------------------


def listed(html: str) -> list[str]:
    return re.findall(rf'<td><a href="/dashboard/games/({UUID})[?"]', html)


def test_bug4_explorer_says_what_it_did_not_understand_pages_and_totals(dash, demo_db, monkeypatch):
    r22 = store_rows(demo_db, "SELECT count(*) FROM quarantine WHERE rule = 'R2.2'")[0][0]
    r6 = store_rows(demo_db, "SELECT count(*) FROM quarantine WHERE rule LIKE 'R6%'")[0][0]
    assert r22 and r6 > 1
    html = page(dash, "/dashboard/games?rule=r2.2")
    assert len(listed(html)) == r22 and 'value="R2.2"' in html
    html = page(dash, "/dashboard/games?rule=R6")  # a prefix: every rule of R6
    assert len(listed(html)) == r6 and 'value="R6"' in html

    for bad in ("315", "99999"):
        html = page(dash, f"/dashboard/games?lineup={bad}")
        assert f"Lineup: &#39;{bad}&#39; is not a lineup" in html, bad
        assert f'value="{bad}"' in html  # the field keeps what was typed
    assert "Rule: &#39;X9&#39; is not a rule" in page(dash, "/dashboard/games?rule=x9")

    # paging past a page (200 games; 60 here, the demo store being small), and the totals
    monkeypatch.setattr("dashboard.pages.PER_PAGE", 60)
    (total,) = store_rows(
        demo_db, "SELECT count(*) FROM raw_records"  # Slow6 and Slide, every status
    )[0]  # fmt: skip
    assert total > 120
    first, second = page(dash, "/dashboard/games"), page(dash, "/dashboard/games?page=2")
    assert len(listed(first)) == 60 and len(listed(second)) == 60
    assert not set(listed(first)) & set(listed(second))
    assert 'id="next-page"' in first and 'id="prev-page"' in second
    assert re.search(rf"<b>{total:,}</b> games match", first)
    last = -(-total // 60)
    assert len(listed(page(dash, f"/dashboard/games?page={last}"))) == total - 60 * (last - 1)
    monkeypatch.undo()

    (lineup, n, w, d, l_) = store_rows(
        demo_db,
        """SELECT lineup, count(*),
                  count(*) FILTER (WHERE winner = side), count(*) FILTER (WHERE winner IS NULL),
                  count(*) FILTER (WHERE winner = 1 - side)
           FROM (SELECT lineup_0 AS lineup, 0 AS side, winner FROM games
                 UNION ALL SELECT lineup_1, 1, winner FROM games)
           WHERE length(lineup) = 5 GROUP BY lineup ORDER BY count(*) DESC, lineup LIMIT 1""",
    )[0]
    html = page(dash, f"/dashboard/games?lineup={lineup}&status=verified")
    assert f"the side with lineup {lineup}" in html
    assert f'<b id="wdl">{w:,} W · {d:,} D · {l_:,} L</b>' in html, (n, w, d, l_)


# 5 ------------------------------------------------------------------------------------------


def test_bug5_challenge_solve_rate_counts_wins_only_without_repeated_columns():
    from dashboard.catalog import challenges

    frame = pl.DataFrame(
        {
            "board": [5, 5, 5, 7, 7],
            "challenge_id": ["set-161", "set-001", "set-002", "set-070", "set-071"],
            "n": [1, 4, 3, 1, 2],
            "wins": [0, 3, 1, 0, 0],
            "draws": [1, 0, 1, 0, 1],
            "losses": [0, 1, 1, 1, 1],
            "solve_turns_sum": [0, 33, 9, 0, 0],
        }
    )
    out = challenges._challenges(frame, None)
    assert len(out.columns) == len(set(out.columns))
    for twin in ("score_rate", "wilson_lo", "wilson_hi", "score"):
        assert twin not in out.columns
    rows = {r["challenge_id"]: r for r in out.to_dicts()}
    assert rows["set-161"]["solves"] == 0 and rows["set-161"]["rate"] == 0.0  # a draw: no solve
    assert rows["set-001"]["rate"] == pytest.approx(0.75)
    for r in rows.values():
        assert r["rate"] == pytest.approx(r["solves"] / r["n"])
        assert r["lo"] <= r["rate"] <= r["hi"]
        # no set on 7×7 is solved yet: shrinking must still leave a set tried once above 0
        assert 0.0 < r["shrunk"] < 1.0, r


# 7 ------------------------------------------------------------------------------------------


def coverage(html: str) -> tuple[int, int | None]:
    n = int(re.search(r'<b id="coverage">([\d,]+)</b>', html).group(1).replace(",", ""))
    m = re.search(r'<b id="coverage-partial">([\d,]+)</b>', html)
    return n, (int(m.group(1).replace(",", "")) if m else None)


@pytest.mark.parametrize(
    "query, without",
    [
        ("ai_level=4&mode=human", "mode=human"),
        ("platform=web&mode=&client_version=", "mode=&client_version="),
    ],
)
def test_bug7_games_count_agrees_with_charts_that_cannot_take_a_filter(dash, query, without):
    html = page(dash, f"/dashboard/p/setups?{query}")
    games, partial = coverage(html)
    wider, _ = coverage(page(dash, f"/dashboard/p/setups?{without}"))
    assert "Not applied to this table" in html
    assert partial == wider and partial > games, (games, partial, wider)


# 8 ------------------------------------------------------------------------------------------


def test_bug8_lineup_against_lineup_names_its_30_game_minimum(dash, demo_db):
    from analysis.setups import MIN_N_VS
    from dashboard.catalog import setups

    assert setups.MIN_N_VS == MIN_N_VS
    assert store_rows(demo_db, "SELECT count(*) FROM agg_lineup_vs")[0][0] == 0
    vs = section(page(dash, "/dashboard/p/setups"), "lineup-vs")
    assert "No rows under these filters" not in vs
    assert f"at least {MIN_N_VS} games" in vs and "met 30 times" in vs


# 10 -----------------------------------------------------------------------------------------


def test_bug10_panels_have_their_own_axes_and_trends_are_small_multiples(dash):
    for path in ("/dashboard/p/powers", "/dashboard/p/setups", "/dashboard/p/slide?mode="):
        for chart_id, spec in specs(page(dash, path)).items():
            if "facet" in spec:  # every panel its own x and y: no 5×5 round 16, no stray axis
                scale = spec.get("resolve", {}).get("scale", {})
                assert scale.get("x") == "independent", (path, chart_id, scale)
    used = specs(page(dash, "/dashboard/p/powers"))["power-used-round"]
    assert used["resolve"]["scale"] == {"x": "independent", "y": "independent"}

    trends = specs(page(dash, "/dashboard/p/trends?mode=&client_version="))
    assert set(trends) == {
        "trend-first-week", "trend-first-version", "trend-power-week", "trend-ai-version"
    }  # fmt: skip
    for chart_id, spec in trends.items():
        assert "facet" in spec, chart_id
        layer = spec["spec"]["layer"]
        colors = {
            r.get(layer[0]["encoding"]["color"]["field"])
            for r in spec["data"]["values"]
            if "field" in layer[0]["encoding"].get("color", {})
        }
        assert len(colors) <= 3, (chart_id, colors)  # at most a few lines a panel


# 12 -----------------------------------------------------------------------------------------


def test_bug12_counts_are_signed_pages_are_compressed_and_slide_has_its_title(dash):
    for chart_id in ("board-length", "first-move", "slide-seats", "power-used-round"):
        r = dash.get(f"/dashboard/chart/{chart_id}.parquet?mode=&client_version=")
        assert r.status == 200, chart_id
        table = pq.read_table(io.BytesIO(r.body))
        unsigned = [f.name for f in table.schema if str(f.type).startswith("uint")]
        assert unsigned == [], (chart_id, unsigned)
        frame = pl.from_arrow(table)
        if {"board", "n"} <= set(frame.columns):  # an analyst's arithmetic does not overflow
            assert (frame["board"] - frame["n"]).min() < 0

    r = dash.get("/dashboard/p/powers", headers={"Accept-Encoding": "gzip, deflate"})
    assert r.headers.get("content-encoding") == "gzip"
    body = gzip.decompress(r.body)
    assert body.startswith(b"<!doctype html>") and len(r.body) * 4 < len(body)
    assert "Accept-Encoding" in r.headers.get("vary", "")

    slide = page(dash, "/dashboard/p/slide")
    title = re.search(r"<title>(.*?)</title>", slide).group(1)
    assert "Slide" in title and "Slow6" not in title, title


# GET / and the 404 page -----------------------------------------------------------------------


def test_root_leads_a_browser_to_the_dashboard_and_answers_api_clients_in_json(dash):
    r = dash.get("/", headers=BROWSER)
    assert r.status == 302 and r.headers["location"].endswith("/dashboard/")
    api = dash.get("/", headers={"Accept": "*/*"})
    assert api.status == 200 and api.json()["dashboard"] == "/dashboard/"
    missing = dash.get("/nowhere", headers=BROWSER)
    assert missing.status == 404 and missing.headers["content-type"].startswith("text/html")
    assert b'href="/dashboard/"' in missing.body
    assert dash.get("/nowhere").headers["content-type"].startswith("application/json")
    api_missing = dash.get("/v1/nowhere", headers=BROWSER)  # the API answers JSON to anyone
    assert api_missing.headers["content-type"].startswith("application/json")


def test_simulated_data_carries_a_banner(dash, tmp_path):
    assert 'id="simulated"' not in page(dash, "/dashboard/")  # the session's store: unlabelled
    from analysis import jobs
    from ingest.server.demo import labelled, load_records, simulated_records
    from ingest.storage import Store

    db = Path(tmp_path) / "sim.duckdb"
    with Store(db) as store:
        load_records(store, labelled(simulated_records(20, 5, seed=3)), echo=lambda _: None)
    con = duckdb.connect(str(db))
    try:
        jobs.run(con, lambda fn: fn(con))
    finally:
        con.close()
    app = AppClient(tmp_path / "sim", env=demo_env(), db=db).start()
    try:
        html = page(app, "/dashboard/")
        assert 'id="simulated"' in html and "Simulated data: 25 of the games" in html
        assert "+sim" in html
    finally:
        app.stop()
