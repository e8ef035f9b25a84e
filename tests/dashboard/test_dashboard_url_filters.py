"""One rule for a page's URL: a filter left out means the page's default, every value the form
can show is accepted ("all" included), the form submitted gives back the same page, and a
filter that cannot match says why. Pages whose question is not how the live game plays (Data
quality, Trends, Versions) open on the cut that answers theirs, and say so.

On the app in-process over a copy of the session's demo store; counts are checked against SQL
over the stored games.
"""

from __future__ import annotations

import csv
import html as htmllib
import io
import json
import re
from urllib.parse import urlencode

import pytest
from support import AppClient, demo_copy, demo_env


@pytest.fixture(scope="module")
def app(tmp_path_factory, demo_db):
    work = tmp_path_factory.mktemp("url-filters")
    client = AppClient(work, env=demo_env(), db=demo_copy(demo_db, work)).start()
    yield client
    client.stop()


def get(app, path: str) -> str:
    r = app.get(path)
    assert r.status == 200, (path, r.status, r.body[:300])
    return r.body.decode()


def sql(app, text: str) -> list:
    return app.post("/sql/api", json.dumps({"sql": text}), "application/json").json()["rows"]


def coverage(page: str) -> int:
    return int(re.search(r'id="coverage">([\d,]+)', page).group(1).replace(",", ""))


def errors(page: str) -> list[str]:
    return [htmllib.unescape(e) for e in re.findall(r'<p class="error">(.*?)</p>', page, re.S)]


def form_state(page: str) -> dict[str, str]:
    """What the filter form would submit: each select's chosen option (else its first), each
    input's value."""
    form = re.search(r'<form class="filters" method="get".*?</form>', page, re.S).group(0)
    out = {}
    for name, body in re.findall(r'<select name="(\w+)">(.*?)</select>', form, re.S):
        options = re.findall(r'<option value="([^"]*)"\s*(selected)?', body)
        chosen = [v for v, sel in options if sel]
        out[name] = htmllib.unescape(chosen[0] if chosen else options[0][0])
    for name, value in re.findall(r'<input type="date" name="(\w+)" value="([^"]*)"', form):
        out[name] = value
    return out


def live(app) -> str:
    from analysis.live_version import live_version

    rows = sql(
        app,
        "SELECT client_version, count(*) FROM games WHERE mode IN ('online', 'friend') "
        "GROUP BY ALL",
    )
    return live_version(dict(rows)).version


def human_games(app, where: str = "TRUE") -> int:
    return sql(app, f"SELECT count(*) FROM games WHERE mode IN ('online', 'friend') AND {where}")[
        0
    ][0]


def test_every_value_the_form_shows_is_accepted_and_a_filter_left_out_is_the_default(app):
    version = live(app)
    default = get(app, "/dashboard/")
    assert coverage(default) == human_games(app, f"client_version = '{version}'") > 0
    # "all", what the selects show, is every value; the rest of the default cut stays
    every_version = get(app, "/dashboard/?client_version=all")
    assert errors(every_version) == []
    assert coverage(every_version) == human_games(app) > coverage(default)
    for board in ("all", ""):
        page = get(app, f"/dashboard/?board={board}")
        assert errors(page) == [] and coverage(page) == coverage(default), board
    # one filter in the URL keeps the rest of the default cut (mode and version)
    five = get(app, "/dashboard/?board=5")
    assert coverage(five) == human_games(app, f"client_version = '{version}' AND board = 5")
    state = form_state(five)
    assert (state["board"], state["mode"], state["client_version"]) == ("5", "human", version)
    # every mode of every version, as the form sends it
    everything = get(app, "/dashboard/?mode=all&client_version=all")
    assert coverage(everything) == sql(app, "SELECT count(*) FROM games")[0][0]


def test_the_form_submitted_gives_back_the_same_page(app):
    for path in (
        "/dashboard/",
        "/dashboard/?board=7",
        "/dashboard/?client_version=all",
        "/dashboard/p/quality",
        "/dashboard/p/trends?variant=powers",
        "/dashboard/p/setups?mode=all&platform=ios",
    ):
        first = get(app, path)
        state = form_state(first)
        again = get(app, path.split("?")[0] + "?" + urlencode(state))
        assert form_state(again) == state, path
        if 'id="coverage"' in first:
            assert coverage(again) == coverage(first), path
        # and the chart downloads carry that same cut
        csv_links = re.findall(r'href="(/dashboard/chart/[\w-]+\.csv[^"]*)"', again)
        first_links = re.findall(r'href="(/dashboard/chart/[\w-]+\.csv[^"]*)"', first)
        assert csv_links == first_links, path


def test_an_impossible_filter_says_why(app):
    page = get(app, "/dashboard/?board=9")
    (e,) = errors(page)
    assert "Board: '9' is not one of all, 5, 7" in e and "ignored" in e
    page = get(app, "/dashboard/?client_version=9.9.9")
    (e,) = errors(page)
    assert "'9.9.9' has no games in this store" in e
    assert coverage(page) == 0
    page = get(app, "/dashboard/?mode=online&ai_level=2")
    assert any("only computer games have one" in e for e in errors(page))
    page = get(app, "/dashboard/?date_from=2026-12-01&date_to=2026-01-01")
    assert any("is after To" in e for e in errors(page))


def csv_rows(app, path: str) -> list[dict]:
    r = app.get(path)
    assert r.status == 200, (path, r.body[:300])
    return list(csv.DictReader(io.StringIO(r.body.decode())))


def test_pages_about_other_questions_open_on_their_own_cut_and_say_so(app):
    version = live(app)
    # Data quality: every record; the pre-release quarantines are there on opening
    page = get(app, "/dashboard/p/quality")
    line = htmllib.unescape(re.search(r'id="default-cut">(.*?)</p>', page, re.S).group(1))
    assert "every stored record" in line and "balance cut" in line
    shares = csv_rows(app, "/dashboard/chart/quarantine-share.csv")
    quarantined = sql(
        app, "SELECT game, client_version, count(*) FROM quarantine GROUP BY ALL ORDER BY ALL"
    )
    assert sorted(
        [r["game"], r["client_version"], int(r["quarantined"])]
        for r in shares
        if int(r["quarantined"])
    ) == [list(q) for q in quarantined]
    assert any(v != version for _, v, _ in quarantined)
    # Trends: human games of every version
    page = get(app, "/dashboard/p/trends")
    line = htmllib.unescape(re.search(r'id="default-cut">(.*?)</p>', page, re.S).group(1))
    assert "every client version" in line
    rows = csv_rows(app, "/dashboard/chart/trend-first-version.csv")
    human_versions = {
        v for (v,) in sql(app, "SELECT DISTINCT client_version FROM games WHERE mode = 'online'")
    }
    assert {r["client_version"] for r in rows} >= human_versions and len(human_versions) > 1
    # Versions: says which pair it compares and why
    page = get(app, "/dashboard/p/versions")
    line = htmllib.unescape(re.search(r'id="default-cut">(.*?)</p>', page, re.S).group(1))
    assert "live release" in line and "release before it" in line
    # a page on the balance cut says which version, and a filter chosen removes no line
    page = get(app, "/dashboard/p/setups")
    assert version in re.search(r'id="default-cut">(.*?)</p>', page, re.S).group(1)
    page = get(app, "/dashboard/p/quality?mode=human&ruleset=all&client_version=" + version)
    assert 'id="default-cut"' not in page


ALL_GAMES = "?mode=all&client_version=all&ruleset=all"


def test_each_chart_downloads_as_svg_and_png_drawn_on_the_server(app):
    page = get(app, "/dashboard/" + ALL_GAMES)
    assert (
        '/dashboard/chart/first-move.svg?mode=all&amp;client_version=all&amp;ruleset=all"' in page
    )
    r = app.get("/dashboard/chart/first-move.svg" + ALL_GAMES)
    assert r.status == 200 and r.headers["content-type"].startswith("image/svg+xml")
    svg = r.body.decode()
    assert svg.startswith("<svg") and "First-move advantage" in svg
    labels = {row["label"] for row in csv_rows(app, "/dashboard/chart/first-move.csv" + ALL_GAMES)}
    assert labels and all(label in svg for label in labels)  # every row drawn, named
    assert "mode all" not in svg and "href" not in svg  # a file's points link nowhere
    r = app.get("/dashboard/chart/first-move.png?board=5")
    assert r.status == 200 and r.headers["content-type"] == "image/png"
    assert r.body[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(r.body[16:20], "big")
    assert width > 300
    # nothing to draw: said, not an empty picture
    r = app.get("/dashboard/chart/first-move.svg?client_version=0.0.1")
    assert r.status == 404 and "Nothing to draw" in r.json()["message"]


def test_every_chart_has_its_values_as_a_table(app):
    page = get(app, "/dashboard/" + ALL_GAMES)
    drawn = set(re.findall(r'id="spec-([\w-]+)"', page))
    tables = set(re.findall(r'<details class="values" id="values-([\w-]+)"', page))
    assert drawn and tables == drawn
    block = re.search(r'id="values-first-move">.*?</details>', page, re.S).group(0)
    head = re.findall(r"<th>(\w+)</th>", block)
    cells = [re.findall(r"<td>(.*?)</td>", tr) for tr in re.findall(r"<tr>(<td>.*?)</tr>", block)]
    rows = csv_rows(app, "/dashboard/chart/first-move.csv" + ALL_GAMES)
    assert len(cells) == len(rows)
    for got, want in zip(cells, rows, strict=True):
        shown = dict(zip(head, got, strict=True))
        assert shown["label"] == htmllib.escape(want["label"]) or shown["label"] == want["label"]
        assert shown["n"] == want["n"] and shown["rate"] == f"{float(want['rate']):.3f}"


def test_a_link_on_the_default_cut_keeps_its_release_and_says_when_it_moved(app):
    version = live(app)
    page = get(app, "/dashboard/")
    assert f'data-pin="{version}"' in page  # dashboard.js writes it into the address: live=
    same = get(app, f"/dashboard/?live={version}")
    assert 'id="cut-moved"' not in same and coverage(same) == coverage(page)
    older = next(
        v
        for (v,) in sql(app, "SELECT DISTINCT client_version FROM games ORDER BY 1")
        if v != version and "-" not in v
    )
    then = get(app, f"/dashboard/?live={older}")
    note = htmllib.unescape(re.search(r'id="cut-moved">(.*?)</p>', then, re.S).group(1))
    assert older in note and version in note
    assert coverage(then) == human_games(app, f"client_version = '{older}'")
    assert f'<option value="{older}" selected' in then
    gone = get(app, "/dashboard/?live=0.0.1")
    assert any("has no games in this store now" in e for e in errors(gone))
    assert coverage(gone) == coverage(page)
    # a version chosen in the form is the form's: no pin
    chosen = get(app, f"/dashboard/?client_version={older}&live={version}")
    assert "data-pin" not in chosen and 'id="cut-moved"' not in chosen


def spec_of(page: str, chart: str) -> dict:
    return json.loads(
        re.search(
            rf'<script type="application/json" id="spec-{chart}">(.*?)</script>', page, re.S
        ).group(1)
    )


def layers(spec: dict) -> list[dict]:
    inner = spec.get("spec", spec)
    return inner.get("layer", [inner])


def test_small_things(app):
    from dashboard.charts import INK, PAPER
    from replays.vocabulary import POWERS

    # the Computer page says it shows computer games, and its form says so too
    page = get(app, "/dashboard/p/computer")
    line = htmllib.unescape(re.search(r'id="default-cut">(.*?)</p>', page, re.S).group(1))
    assert "computer games" in line and "human against human" not in line
    assert form_state(page)["mode"] == "computer"
    # heat-map numbers: white on the darkest cells, ink on the others
    page = get(app, "/dashboard/p/powers" + ALL_GAMES)
    spec = spec_of(page, "power-vs")
    (text,) = [x for x in layers(spec) if x["mark"]["type"] == "text"]
    assert text["encoding"]["color"]["condition"]["test"] == f"datum._ink == '{PAPER}'"
    for r in spec["data"]["values"]:
        t = (r["rate"] - 0.4) / 0.2
        assert r["_ink"] == (PAPER if t < 0.18 or t > 0.82 else INK), r
    assert {r["_ink"] for r in spec["data"]["values"]} == {PAPER, INK}
    # the pair-synergy map: both triangles, the same power order across and down
    spec = spec_of(page, "power-pairs")
    rows = spec["data"]["values"]
    cells = {(r["board_label"], r["power_a"], r["power_b"]): r["synergy"] for r in rows}
    assert all(cells[(b, y, x)] == s for (b, x, y), s in cells.items())
    enc = layers(spec)[0]["encoding"]
    assert enc["x"]["sort"] == enc["y"]["sort"] == list(POWERS)
    # the pick-rate axis spans the rates, not 0-1; rate charts' labels are not cut at 180 px
    spec = spec_of(page, "power-pick-rate")
    rule = layers(spec)[0]["encoding"]
    assert rule["x"]["scale"] == {"zero": False}
    assert rule["y"]["axis"]["labelLimit"] == 360
