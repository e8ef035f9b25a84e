"""The demo `balance serve --demo` shows: the shipped dataset (ingest/server/demo_data, made by
`balance simulate --demo-set --seed 2026`), what it holds, and the quick start end to end."""

from __future__ import annotations

import gzip
import re
import time
from collections import Counter
from datetime import date

import orjson
import pytest
from support import Server, wait_for

from ingest.server import demo
from replays import demoset
from replays.verifier import check_text

SEED = 2026  # the seed the shipped files were made with (replays/demoset.py, ingest/server/demo.py)


def records(name: str) -> list[dict]:
    with gzip.open(demo.DATA_DIR / name, "rb") as f:
        return [orjson.loads(line) for line in f]


def test_demo_dataset_holds_what_a_designer_reads():
    slow6, slide = records("slow6.ndjson.gz"), records("slide.ndjson.gz")
    assert len(slow6) >= 20_000 and len(slide) >= 5_000
    assert {r["rules"]["board"] for r in slow6} == {5, 7}
    variants = Counter(
        "hidden" if r["rules"]["hidden"] else "powers" if r["rules"]["powers"] else "classic"
        for r in slow6
    )
    assert set(variants) == {"classic", "powers", "hidden"} and min(variants.values()) > 1_000
    assert set(Counter(r["mode"] for r in slow6)) == {
        "online", "friend", "computer", "challenge", "tutorial"
    }  # fmt: skip
    assert {r["ai"]["level"] for r in slow6 if r["ai"]} == {1, 2, 3, 4}
    assert {r["players"] for r in slide} == {2, 3, 4, 5, 6}
    for game in (slow6, slide):
        versions = Counter(r["client"]["version"] for r in game)
        assert len(versions) >= 4 and all(v.endswith("+sim") for v in versions)  # labelled
        weeks = {date.fromisoformat(r["ended_at"][:10]).isocalendar()[:2] for r in game}
        assert len(weeks) >= 8
    # the release the default balance cut is about has thousands of human games
    human = Counter(r["client"]["version"] for r in slow6 if r["mode"] in ("online", "friend"))
    assert human["3.0.0+sim"] >= 2_000
    ids = [r["game_id"] for r in slow6 + slide]
    assert len(set(ids)) == len(ids)


def test_demo_buggy_client_breaks_rules_of_several_kinds_and_sends_malformed_lines():
    with gzip.open(demo.DATA_DIR / "buggy-client.ndjson.gz", "rb") as f:
        lines = [line.rstrip(b"\n") for line in f]
    verdicts = [check_text(line)[1] for line in lines]
    kinds = Counter(v.verdict for v in verdicts)
    assert kinds["valid"] > 0 and kinds["invalid"] >= 100 and 5 <= kinds["malformed"] <= 20
    rules = Counter(v.rule for v in verdicts if v.verdict == "invalid")
    assert len(rules) >= 4 and any(r.startswith("S") for r in rules), rules
    messages = {re.sub(r"turn \d+: \S+", "", v.message) for v in verdicts if v.rule == "R2.2"}
    assert len(messages) >= 3  # illegal moves of several kinds, not one
    versions = {orjson.loads(line)["client"]["version"] for line in lines if line.endswith(b"}")}
    assert versions == {demoset.BUGGY_VERSION}


def test_demo_dataset_is_what_its_seeded_command_makes():
    """The first games of each file, made again from their chunk's seed, are the same bytes."""
    patched = demoset.ruleset_file(demo.DATA_DIR, demoset.PATCH_FILE)
    for name, make, salt in (
        ("slow6.ndjson.gz", demoset.slow6_chunk, 1),
        ("slide.ndjson.gz", demoset.slide_chunk, 2),
    ):
        seed, _ = demoset._chunks(100, SEED, salt)[0]
        with gzip.open(demo.DATA_DIR / name, "rb") as f:
            shipped = [f.readline().rstrip(b"\n") for _ in range(2)]
        made = make(seed, 2)[:2]
        if name.startswith("slow6"):
            made = list(demoset.patch_release(made, patched))
        assert made == shipped, name


def test_the_demo_ships_a_balance_patch_and_uploads_of_an_unknown_ruleset():
    """Release 3.1.0's Slow6 games play the registered patch (reach 2 -> 1): valid under it,
    RS5.1 without it, replayed by the same seeded patch; the play-test build's uploads name a
    ruleset the demo never registers (RS5.1), valid once it is."""
    from replays import rulesets as R
    from replays.verifier import check_text as check

    patched = demoset.ruleset_file(demo.DATA_DIR, demoset.PATCH_FILE)
    tested = demoset.ruleset_file(demo.DATA_DIR, demoset.PLAYTEST_FILE, patched)
    assert patched.changes_from(R.STANDARD["slow6"]) == [("reach", 2, 1)]
    assert tested.changes_from(patched) == [("freeze_turns", 2, 1)]
    assert demo.RULESETS == (demoset.PATCH_FILE,)  # the play-test's is not registered

    def known(*rulesets):
        return lambda game, name: next(
            (r for r in (R.STANDARD[game], *rulesets) if (r.game, r.name) == (game, name)), None
        )

    slow6 = records("slow6.ndjson.gz")
    mine = [r for r in slow6 if r["client"]["version"] == demoset.PATCH_VERSION]
    human = [r for r in mine if r["mode"] in ("online", "friend")]
    assert len(human) >= 1_000 and {r.get("ruleset") for r in mine} == {patched.name}
    assert all(r.get("ruleset") is None for r in slow6 if r not in mine)
    for r in mine[:: len(mine) // 40]:  # a spread of them: valid under 3.1, RS5.1 without
        line = orjson.dumps(r)
        assert check(line, rulesets=known(patched))[1].verdict == "valid"
        assert check(line)[1].rule == "RS5.1"
    again = list(demoset.patch_release([orjson.dumps(r) for r in mine[:3]], patched))
    assert again == [orjson.dumps(r) for r in mine[:3]]  # the patch plays the same games
    playtest = records("playtest.ndjson.gz")
    assert len(playtest) == demoset.PLAYTEST_GAMES
    for r in playtest:
        line = orjson.dumps(r)
        assert r["ruleset"] == tested.name
        assert check(line, rulesets=known(patched))[1].rule == "RS5.1"
        assert check(line, rulesets=known(patched, tested))[1].verdict == "valid"


def test_demo_loader_logs_each_stage_without_raw_floats(tmp_path, capsys):
    from ingest.cli.commands import _load_demo
    from ingest.storage import Store

    with Store(tmp_path / "store.duckdb") as store:
        _load_demo(store, 12, 6, 0, 1)
    out = capsys.readouterr().out
    assert "  Slow6: 12 of 12 records" in out and "  Slide: 6 of 6 records" in out
    assert "Analysis jobs: 12 verified Slow6 games and 6 Slide games read" in out
    assert not re.search(r"\d\.\d{3,}", out), out  # no seconds=2.5672843209999883


@pytest.fixture(scope="module")
def quick_start(tmp_path_factory):
    """`balance serve --demo`, as the README's quick start runs it, until its last log line;
    yields the server and the seconds it took to be ready."""
    server = Server(tmp_path_factory.mktemp("quick-start") / "demo", args=["--demo"])
    started = time.monotonic()
    server.start(timeout=300)
    try:
        wait_for(lambda: "Ready. Dashboard:" in server.output(), 30, "the last log line")
        yield server, time.monotonic() - started
    finally:
        server.stop()


def _live_cut(server) -> tuple[str, int, int]:
    """(the live version, its human games, all versions' human games), from the games."""
    from analysis.live_version import live_version

    text = (
        "SELECT client_version, count(*) FROM games WHERE mode IN ('online', 'friend') GROUP BY ALL"
    )
    answer = server.post("/sql/api", orjson.dumps({"sql": text}), "application/json")
    by_version = {v: n for v, n in answer.json()["rows"]}
    live = live_version(by_version)
    assert live.version is not None
    return live.version, by_version[live.version], sum(by_version.values())


@pytest.mark.slow
def test_quick_start_serves_the_demo(quick_start):
    """Every stage logged, the dashboard's address last, and the first screen reads
    thousands of games of the live release (never the pre-release the demo also has). How
    long it takes is printed (about a minute on two cores), not asserted: a loaded machine
    only makes it later."""
    server, took = quick_start
    log = open(server.stdout_path).read().strip().splitlines()
    last = log[-1]
    assert last.startswith("Ready. Dashboard: http://127.0.0.1:") and "/dashboard/" in last
    text = "\n".join(log)
    for stage in ("ruleset 3.1 (slow6): added", "Slow6:", "Slide:", "buggy client", "play-test"):
        assert stage in text, stage
    assert re.search(r"quarantined [\d,]+, rejected [\d,]+", text), text
    assert not re.search(r"\d\.\d{3,}", text), text
    print(f"ready in {took:.0f} s")

    home = server.get("/", headers={"Accept": "text/html"})
    assert home.status == 302 and home.headers["location"].endswith("/dashboard/")
    page = server.get("/dashboard/").body.decode()
    assert 'id="simulated"' in page
    games = int(re.search(r'<b id="coverage">([\d,]+)</b>', page).group(1).replace(",", ""))
    version, human, _ = _live_cut(server)
    assert "-" not in version.partition("+")[0]  # a release, not 3.1.0-beta.2+sim
    assert games == human >= 1_000
    assert f"client version <b>{version}</b>" in page
    quality = server.get("/dashboard/p/quality").body.decode()
    assert "3.1.0-beta.3+sim" in quality
    assert "RS5.1" in quality and demoset.PLAYTEST_VERSION in quality  # the unknown ruleset


@pytest.mark.slow
@pytest.mark.browser
def test_the_first_screen_in_a_browser_reads_the_live_release(quick_start, browser):
    """In Chromium: the first screen's default cut has thousands of games, says which version
    and why, logs no console warning, and one click widens it to every version."""
    from support import console

    server, _ = quick_start
    version, human, every = _live_cut(server)
    browser.open(server.url + "/dashboard/", "document.body.dataset.rendered")
    assert browser.evaluate("document.body.dataset.rendered") not in ("0", "error")
    assert console(browser) == []
    shown = browser.evaluate("document.getElementById('coverage').textContent")
    assert int(shown.replace(",", "")) == human >= 1_000
    line = browser.evaluate("document.getElementById('default-cut').textContent")
    assert version in line and "newest release" in line, line
    browser.evaluate("document.getElementById('all-rulesets').click()")
    wait_for(
        lambda: "client_version=" in browser.evaluate("location.search"),
        30,
        "the widened cut in the address",
        every=0.1,
    )
    browser.open(browser.evaluate("location.href"), "document.body.dataset.rendered")
    widened = browser.evaluate("document.getElementById('coverage').textContent")
    assert int(widened.replace(",", "")) == every > human
    assert browser.evaluate("document.getElementById('default-cut')") is None
    assert console(browser) == []


@pytest.mark.slow
@pytest.mark.browser
def test_the_versions_page_shows_the_patch_and_what_it_did(quick_start, browser):
    """In Chromium, the fresh demo's Versions page: 3.0.0 (standard) against the patched 3.1.0
    (ruleset 3.1), the parameter that changed, and Shield, the strongest power before the
    patch, with a smaller adjusted effect after it, its interval drawn."""
    import csv
    import io

    from support import console

    server, _ = quick_start
    browser.open(server.url + "/dashboard/p/versions", "document.body.dataset.rendered")
    assert browser.evaluate("document.body.dataset.rendered") not in ("0", "error")
    assert console(browser) == []
    line = browser.evaluate("document.getElementById('page-line').textContent")
    assert "A = 3.0.0+sim (standard) with B = 3.1.0+sim (3.1)" in line, line
    assert "What changed: reach 2 -> 1." in line, line
    chart = "document.getElementById('chart-versions-adjusted-powers')"
    said = browser.evaluate(f"{chart}.querySelector('.covers').textContent")
    assert "What changed: reach 2 -> 1." in said  # next to the differences measured
    drawn = browser.evaluate(f"{chart}.querySelector('svg') ? {chart}.textContent : ''")
    assert "shield adjusted effect" in drawn
    body = server.get("/dashboard/chart/versions-adjusted-powers.csv").body.decode()
    rows = {r["label"]: r for r in csv.DictReader(io.StringIO(body))}
    shield = rows["shield adjusted effect"]
    before = {k: float(r["a_value"]) for k, r in rows.items()}
    assert max(before, key=before.get) == "shield adjusted effect"  # the strongest before
    lo, diff, hi = (float(shield[k]) for k in ("lo", "rate", "hi"))
    print(f"shield adjusted effect {shield['a_value']} -> {shield['b_value']}: "
          f"{diff:+.2f} [{lo:+.2f}, {hi:+.2f}]")  # fmt: skip
    assert lo < diff < hi < 0  # it shrank, and the whole interval says so


def test_the_readme_recovers_the_play_test_uploads(tmp_path):
    """The README's steps on the demo's play-test uploads (loaded as `balance serve --demo`
    loads them, the patch registered first): RS5.1 quarantines; `balance rules add` of the
    shipped play-test ruleset and `balance reverify` move every one to the verified games,
    under that ruleset, and the next jobs run counts them. Nothing is lost."""
    import duckdb
    from support import balance

    from ingest.storage import Store

    db = tmp_path / "store.duckdb"
    with Store(db) as store:
        demo.register_demo_rulesets(store, echo=lambda _: None)
        path = demo.DATA_DIR / "playtest.ndjson.gz"
        counts = demo.load_records(store, demo.read_lines(path), echo=lambda _: None)
    assert counts == {"quarantined": demoset.PLAYTEST_GAMES}
    con = duckdb.connect(str(db))
    rule = con.execute("SELECT DISTINCT rule, ruleset FROM quarantine").fetchall()
    con.close()
    assert rule == [("RS5.1", "3.2-playtest")]
    toml = str(demo.DATA_DIR / demoset.PLAYTEST_FILE)
    assert balance("rules", "add", "--db", str(db), toml).returncode == 0
    assert balance("reverify", "--db", str(db)).returncode == 0
    assert balance("jobs", "run", "--db", str(db)).returncode == 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (0,)
        verified = con.execute("SELECT ruleset, count(*) FROM games GROUP BY ALL").fetchall()
        assert verified == [("3.2-playtest", demoset.PLAYTEST_GAMES)]
        counted = con.execute(
            "SELECT sum(n) FROM agg_first_move WHERE ruleset = '3.2-playtest'"
        ).fetchone()
        assert counted == (demoset.PLAYTEST_GAMES,)
    finally:
        con.close()


def test_the_demo_ships_the_lab_run_that_predicted_its_patch():
    """lab-3.1.json is the run `python -m ingest.server.demo_lab` plays: the shipped patch file
    against standard, its id the key of those settings with the engine it was played on (so
    `balance lab run` with them stores nothing twice), and its rows the lab's families."""
    import json

    from ingest.server import demo_lab
    from ingest.server.lab_runner import LabRun
    from replays.rulesets import STANDARD, parse_toml

    shipped = json.loads((demo.DATA_DIR / demo_lab.FILE).read_text())
    run, rows = shipped["run"], shipped["rows"]
    patch = parse_toml((demo.DATA_DIR / demoset.PATCH_FILE).read_bytes())
    assert run["candidate"] == patch.to_json() and run["base"]["name"] == "standard"
    again = LabRun(STANDARD["slow6"], patch, 5, True, demo_lab.LEVELS, demo_lab.SEED,
                   run["games"], engine_version=run["engine_version"])  # fmt: skip
    assert run["id"] == again.run_id and run["games"] >= 500
    families = {r["family"] for r in rows}
    assert families >= {"first_move", "power_pick", "end_reason", "game_length", "level"}
    ends = {r["row"]: r for r in rows if r["family"] == "end_reason"}
    assert ends["points"]["confident"] and ends["points"]["change"] > 0  # slower pieces


@pytest.mark.slow
def test_the_demo_checks_the_patch_prediction_against_its_release(quick_start):
    """The fresh demo's Lab page: the shipped run's predicted rows beside the change observed
    between standard's and 3.1's games, and the track record over that release."""
    import csv
    import io

    server, _ = quick_start
    page = server.get("/dashboard/p/lab").body.decode()
    assert "3.1" in page and "reach 2 -&gt; 1" in page and "pre-registered" in page
    rows = list(csv.DictReader(io.StringIO(
        server.get("/dashboard/chart/lab-check.csv").body.decode())))  # fmt: skip
    assert rows and {r["run"].split(" (")[0] for r in rows} == {"3.1 vs standard"}
    compared = [r for r in rows if r["inside"] in ("true", "false")]
    assert len(compared) > 20
    points = next(r for r in rows if r["row"] == "points")
    assert float(points["observed"]) > 0  # the release's games, too, end on points more often
    (record,) = csv.DictReader(io.StringIO(
        server.get("/dashboard/chart/lab-record.csv").body.decode()))  # fmt: skip
    assert int(record["compared"]) == len(compared)
    assert int(record["inside"]) == sum(r["inside"] == "true" for r in compared)


@pytest.mark.slow
@pytest.mark.browser
def test_the_lab_page_of_the_demo_renders_in_a_browser(quick_start, browser):
    """In Chromium: the demo's Lab page draws every chart (the runs' predicted changes, the
    prediction against observation, the track record) with no console warning."""
    from support import ARTIFACTS, console

    server, _ = quick_start
    browser.open(server.url + "/dashboard/p/lab", "document.body.dataset.rendered")
    assert browser.evaluate("document.body.dataset.rendered") not in ("0", "error")
    assert console(browser) == []
    drawn = browser.evaluate(
        "Array.from(document.querySelectorAll('div.vis')).map(el => ({id: "
        "el.closest('section').id, r: el.dataset.rendered || null, marks: "
        'el.querySelectorAll(\'svg g[class*="mark-"] > path, svg g[class*="mark-"] > '
        "line').length}))"
    )
    ids = {d["id"] for d in drawn}
    assert {"chart-lab-changes", "chart-lab-check", "chart-lab-record"} <= ids, drawn
    assert all(d["r"] == "1" and d["marks"] > 0 for d in drawn), drawn
    browser.screenshot(ARTIFACTS / "dashboard-lab-demo.png")
