"""The Versions page (dashboard/catalog/versions.py) on the app in-process (Flask's test
client), over a synthetic store whose version 3.1.0 gave the first mover a larger edge.

The store: 6,000 synthetic games (analysis.synthetic) of 3.0.0, 3.1.0 and a few of a 3.2.0
pre-release, online and against the computer; the analysis jobs wrote its agg_* tables.
"""

from __future__ import annotations

import csv
import html as htmllib
import io
import re

import pytest
from support import AppClient, demo_env

from analysis import jobs
from analysis import synthetic as sy

A, B, BETA = "3.0.0", "3.1.0", "3.2.0-beta.1"
PAGE = "/dashboard/p/versions"


def store(path, plan: sy.Plan):
    con, _ = sy.make_store(str(path), plan)
    try:
        jobs.run(con, lambda fn: fn(con))
    finally:
        con.close()
    return path


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    work = tmp_path_factory.mktemp("versions")
    plan = sy.Plan(
        n=6_000, seed=4, modes=(("online", 3), ("computer", 1)),
        versions=((A, 1), (B, 1), (BETA, 0.1)), version_first_effect={B: 0.8},
    )  # fmt: skip
    server = AppClient(work, env=demo_env(), db=store(work / "store.duckdb", plan)).start()
    yield server
    server.stop()


def page(server, query: str = "") -> str:
    r = server.get(PAGE + query)
    assert r.status == 200, r.body[:500]
    return htmllib.unescape(r.body.decode())


def table(server, chart: str, query: str = "") -> list[dict]:
    r = server.get(f"/dashboard/chart/{chart}.csv{query}")
    assert r.status == 200 and r.headers["content-type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(r.body.decode())))


def line(text: str, id_: str) -> str:
    return re.search(rf'id="{id_}">(.*?)</p>', text, re.S).group(1)


def test_the_default_is_the_live_release_against_the_one_before(app):
    text = page(app)
    said = line(text, "page-line")
    assert f"A = {A} (standard) with B = {B} (standard)" in said
    assert "live version" in said and "release before" in said
    assert "Both sides played ruleset standard: the rules did not change." in said
    # the pre-release is offered, never chosen by default
    assert f'<option value="{BETA}" >' in text or f'<option value="{BETA}">' in text
    for chart in ("first-move", "powers", "ai-levels", "end-reasons", "game-length"):
        assert f'id="spec-versions-{chart}"' in text, chart
    assert 'name="client_version"' not in text  # the page picks its versions itself


def test_the_summary_counts_the_flagged_rows_of_the_table(app):
    text = page(app)
    summary = line(text, "summary-versions-all")
    rows = table(app, "versions-all")
    flagged = [r for r in rows if r["flagged"] == "true"]
    n = int(re.match(r"(\d+) things? changed", summary).group(1))
    assert n == len(flagged) > 0
    for r in flagged[:5]:  # named strongest first, as the table sorts them
        assert r["label"] in summary
    # the changes first (each clears its minimum: its always-valid interval is beyond it)
    flags = [r["flagged"] == "true" for r in rows]
    assert flags == sorted(flags, reverse=True)
    for r in flagged:
        m = float(r["minimum"])
        assert float(r["always_lo"]) > m or float(r["always_hi"]) < -m
    # the planted change: B's first mover does better on every board and variant with games
    first = [r for r in rows if r["family"] == "first_move"]
    assert first and all(float(r["diff"]) > 0 for r in first if r["flagged"] == "true")
    # found where the games can show it clearing its minimum: the best-informed board and
    # variant at least (the small ones, 7×7 hidden, cannot yet)
    biggest = max(first, key=lambda r: min(int(r["a_n"]), int(r["b_n"])))
    assert biggest["flagged"] == "true"
    assert {r["family"] for r in rows} == {
        "first_move", "powers", "ai_levels", "end_reasons", "game_length", "lineup_cells",
        "adjusted_powers",
    }  # fmt: skip


def test_each_family_chart_is_the_same_numbers_as_the_table(app):
    everything = {(r["family"], r["label"]): r for r in table(app, "versions-all")}
    powers = table(app, "versions-powers")
    assert len(powers) == sum(1 for f, _ in everything if f == "powers")
    for r in powers:
        same = everything[("powers", r["label"])]
        assert float(r["rate"]) == pytest.approx(float(same["diff"]))
        assert r["flagged"] == same["flagged"]
    assert {r["measure"] for r in powers} == {"pick rate", "pick effect", "used rate"}
    # end reasons: each version's shares of one board and variant add up to 1
    shares: dict = {}
    for r in table(app, "versions-end-reasons"):
        for v in "ab":
            key = (r["board"], r["variant"], v)
            shares[key] = shares.get(key, 0.0) + float(r[f"{v}_value"])
    assert shares and all(s == pytest.approx(1.0) for s in shares.values()), shares


def test_chosen_versions_carry_into_the_csv_links(app):
    q = f"?version_a={BETA}&version_b={B}"
    text = page(app, q)
    assert f"A = {BETA} (standard) with B = {B} (standard) (as chosen)" in line(text, "page-line")
    assert (
        f"/dashboard/chart/versions-all.csv?mode=human&ruleset=all&version_a={BETA}&version_b={B}"
        in text
    )
    rows = table(app, "versions-first-move", q)
    default = table(app, "versions-first-move")
    assert rows and {r["a_n"] for r in rows} != {r["a_n"] for r in default}


def test_bad_version_names_are_refused_with_a_message(app):
    text = page(app, "?version_a=9.9.9&version_b=x%27%3B+DROP")
    assert "Version A (before): '9.9.9' has no games in the store (ignored)" in text
    assert "Version B (after): \"x';" in text and "is not a valid value (ignored)" in text
    assert f"A = {A} (standard) with B = {B} (standard)" in line(text, "page-line")  # defaults
    same = page(app, f"?version_a={A}&version_b={A}")
    assert f"A and B are both {A} (standard)" in line(same, "page-line")


def test_a_family_without_games_says_so(app):
    # every human game of the store is online: no friend games in the human families, while
    # the computer levels read computer games whatever the mode says
    text = page(app, "?mode=friend")
    assert "No games of both versions in this family" in text
    assert 'id="spec-versions-ai-levels"' in text
    assert table(app, "versions-first-move", "?mode=friend") == []


@pytest.mark.slow  # a second store and app
def test_one_version_only_is_said_not_compared(tmp_path):
    plan = sy.Plan(n=400, seed=9, modes=(("online", 1),), versions=((A, 1),))
    server = AppClient(tmp_path, env=demo_env(), db=store(tmp_path / "one.duckdb", plan)).start()
    try:
        text = page(server)
        said = line(text, "page-line")
        assert f"Only one client version is in the store ({A}): nothing to compare yet." in said
        assert table(server, "versions-all") == []
    finally:
        server.stop()
