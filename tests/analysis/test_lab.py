"""The balance lab (docs/lab.md): paired bot games under a base and a candidate ruleset.

A planted change is found (a candidate without the strongest power of level-1 bots, Double:
the sides that pick it under the base do worse without it, the interval below 0); a candidate
equal to the base predicts exactly no change (common random numbers: the same games); a run
cancelled with Ctrl-C and then killed with SIGKILL continues to the result of an uninterrupted
run with the same seed; stored runs are shown again as they were printed. Small sizes: 5x5,
bot level 1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from support import balance, wait_for

from analysis.lab import predict
from ingest.server.lab_runner import LabRun, play
from ingest.storage import lab_runs
from replays.rulesets import STANDARD, parse_toml

ROOT = Path(__file__).resolve().parents[2]
NO_DOUBLE = """name = "no-double"
game = "slow6"
description = "Double is gone"
[params]
powers = ["dash", "leap", "shield", "freeze", "swap", "recall", "trap", "shove", "surge"]
"""
FREEZE_1 = 'name = "freeze-1"\ngame = "slow6"\n[params]\nfreeze_turns = 1\n'


def rows_of(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_a_candidate_equal_to_the_base_predicts_exactly_no_change(tmp_path):
    same = parse_toml('name = "same"\ngame = "slow6"\n[params]\nfreeze_turns = 2\n')
    run = LabRun(STANDARD["slow6"], same, levels=(1, 2), seed=5, games=12)
    pairs = play(run, tmp_path / "run.ndjson")
    assert [p["i"] for p in pairs] == list(range(12))
    assert all(p["base"] == p["candidate"] for p in pairs)  # the same games, move for move
    rows = predict(pairs, powers=True, levels=(1, 2))
    families = {r["family"] for r in rows}
    assert families >= {"first_move", "power_pick", "end_reason", "lineup_cell", "level"}
    measured = [r for r in rows if r["change"] is not None]
    assert len(measured) > 10
    for r in measured:
        assert r["change"] == 0 and r["lo"] == 0 and r["hi"] == 0, r
        assert not r["confident"]


def test_a_different_candidate_changes_games_but_shares_their_settings(tmp_path):
    """Under freeze_turns 1 only the games where Freeze is used can differ; levels, lineups,
    first mover and picks are the same in every pair."""
    run = LabRun(STANDARD["slow6"], parse_toml(FREEZE_1), levels=(1,), seed=2, games=10)
    pairs = play(run, tmp_path / "run.ndjson")
    for p in pairs:
        assert p["base"]["picks"] == p["candidate"]["picks"]
        if "freeze" not in p["base"]["used"][0] + p["base"]["used"][1]:
            assert p["base"] == p["candidate"]


@pytest.mark.slow
def test_a_planted_change_is_found_and_the_run_is_stored(tmp_path):
    """Double is level-1 bots' strongest pick (about +0.12 of score over the sides without
    it); removed, the sides that would pick it take their next preferred power and lose that
    edge. 200 pairs (about half a minute on one core)."""
    cand = tmp_path / "no-double.toml"
    cand.write_text(NO_DOUBLE)
    db = str(tmp_path / "lab.duckdb")
    ran = balance("lab", "run", "--candidate", str(cand), "--games", "200", "--powers",
                  "--levels", "1", "--seed", "1", "--json", "--db", db)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    rows = {(r["family"], r["row"]): r for r in rows_of(ran.stdout)}
    double = rows[("power_pick", "double")]
    assert double["base"] > 0.05  # a strong power under the base
    assert double["change"] < 0 and double["hi"] < 0  # weaker, the interval clear of 0
    assert double["lo"] <= double["change"] <= double["hi"]
    assert set(json.loads(ran.stdout.splitlines()[0])) == {
        "family", "row", "base", "candidate", "change", "lo", "hi", "confident"}  # fmt: skip
    assert "stored: lab run" in ran.stderr
    assert not (tmp_path / "lab.duckdb.lab").exists()  # the run file went once stored

    listed = balance("lab", "list", "--db", db, "--json")
    (run,) = json.loads(listed.stdout)["runs"]
    assert run["candidate"]["name"] == "no-double" and run["base"]["name"] == "standard"
    assert (run["games"], run["seed"], run["levels"], run["powers"]) == (200, 1, [1], True)
    assert run["picks_differ"] > 0  # sides that preferred double picked another power
    shown = balance("lab", "show", run["id"][:10], "--db", db, "--json")
    assert rows_of(shown.stdout) == rows_of(ran.stdout)
    table = balance("lab", "show", run["id"], "--db", db).stdout
    assert "what changed: powers" in table and "bots of level 1" in table
    # storing the same run again (its id is its key and size) writes nothing
    stored = lab_runs.run(con := duckdb.connect(db), run["id"])
    assert stored is not None and not lab_runs.save(con, stored, stored["rows"])
    con.close()
    assert len(json.loads(balance("lab", "list", "--db", db, "--json").stdout)["runs"]) == 1


def _pairs_in(path: Path) -> int:
    if not path.exists():
        return 0
    return max(0, path.read_bytes().count(b"\n") - 1)


def _start(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "ingest.cli", *args], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True, text=True,
    )  # fmt: skip


def _wait_for(path: Path, pairs: int, proc: subprocess.Popen) -> None:
    def done() -> bool:
        assert proc.poll() is None, proc.communicate()
        return _pairs_in(path) >= pairs

    wait_for(done, 120, f"{pairs} pairs in {path.name}")


@pytest.mark.slow
def test_a_cancelled_then_killed_run_resumes_to_the_uninterrupted_result(tmp_path):
    """Ctrl-C, then a worker killed, then the whole run killed with SIGKILL: each time the
    finished pairs are kept, and the last run gives what one uninterrupted run gives."""
    cand = tmp_path / "freeze-1.toml"
    cand.write_text(FREEZE_1)
    common = ["lab", "run", "--candidate", str(cand), "--games", "24", "--powers",
              "--levels", "1,2", "--seed", "9", "--json"]  # fmt: skip
    a, b = tmp_path / "a", tmp_path / "b"
    args = [*common, "--db", str(a / "lab.duckdb"), "--run-dir", str(a), "--jobs", "2"]
    proc = _start(args)

    # the run file's name is the run's key: find it once it exists
    def found() -> Path | None:
        assert proc.poll() is None, proc.communicate()
        return next(iter(a.glob("*.ndjson")), None) if a.exists() else None

    run_file = wait_for(found, 60, "the run file")
    _wait_for(run_file, 3, proc)
    proc.send_signal(signal.SIGINT)  # Ctrl-C: the pairs finished are kept
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "cancelled" in err and out == "", err
    kept = _pairs_in(run_file)
    assert 3 <= kept < 24

    # a worker killed (as the out-of-memory killer would): the run stops, naming it, and
    # keeps what it finished (a multiprocessing.Pool would wait for the lost pair for ever)
    proc = _start(args)
    _wait_for(run_file, kept + 2, proc)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    assert children, "no worker processes"
    os.kill(int(children[0]), signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "worker process died" in err and out == "", err
    kept = _pairs_in(run_file)

    proc = _start(args)
    _wait_for(run_file, kept + 3, proc)
    os.killpg(proc.pid, signal.SIGKILL)  # kill -9, workers included, mid-write or not
    proc.communicate(timeout=60)
    killed_at = _pairs_in(run_file)
    assert kept + 3 <= killed_at < 24

    resumed = _start(args)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    uninterrupted = balance(*common, "--db", str(b / "lab.duckdb"), "--run-dir", str(b))
    assert uninterrupted.returncode == 0, uninterrupted.stderr
    assert rows_of(out) == rows_of(uninterrupted.stdout)
    assert len(rows_of(out)) > 10


@pytest.mark.slow
def test_the_lab_page_shows_stored_runs_with_their_rows(tmp_path, app_factory):
    """A run stored by `balance lab run` is on the dashboard's Lab page: what changed, the
    bot levels, its predicted changes drawn as dots with intervals and the same rows as CSV."""
    import csv
    import io
    import re

    cand = tmp_path / "freeze-1.toml"
    cand.write_text(FREEZE_1)
    db = tmp_path / "lab.duckdb"
    ran = balance("lab", "run", "--candidate", str(cand), "--games", "6", "--powers",
                  "--levels", "1", "--seed", "4", "--json", "--db", str(db))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    printed = [r for r in rows_of(ran.stdout) if r["change"] is not None]
    (run,) = json.loads(balance("lab", "list", "--db", str(db), "--json").stdout)["runs"]

    app = app_factory(db=db)
    r = app.get("/dashboard/p/lab")
    assert r.status == 200
    page = r.body.decode()
    assert run["id"] in page and "freeze-1" in page and "freeze_turns 2 -&gt; 1" in page
    assert 'id="spec-lab-changes"' in page and "Bots stand in for players" in page
    assert re.search(r"<td>1</td>", page)  # the bot levels column
    got = list(
        csv.DictReader(io.StringIO(app.get("/dashboard/chart/lab-changes.csv").body.decode()))
    )
    drawn = [r for r in printed if r["family"] != "game_length"]
    assert len(got) == len(drawn) > 5
    by_row = {(g["family"], g["row"]): float(g["rate"]) for g in got}
    for r in drawn:
        assert by_row[(r["family"], r["row"])] == pytest.approx(r["change"])
    changes = [abs(float(g["rate"])) for g in got]
    assert changes == sorted(changes, reverse=True)  # largest first


@pytest.mark.browser
@pytest.mark.slow
def test_the_lab_page_renders_in_a_real_browser(tmp_path, browser):
    from support import ARTIFACTS, Server

    cand = tmp_path / "freeze-1.toml"
    cand.write_text(FREEZE_1)
    db = tmp_path / "lab.duckdb"
    ran = balance("lab", "run", "--candidate", str(cand), "--games", "6", "--powers",
                  "--levels", "1,2", "--seed", "4", "--db", str(db))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    server = Server(tmp_path / "srv", db=db).start()
    try:
        browser.open(server.url + "/dashboard/p/lab", "document.body.dataset.rendered")
        assert browser.problems() == []
        charts = browser.evaluate(
            "Array.from(document.querySelectorAll('div.vis')).map(el => ({r: "
            'el.dataset.rendered || null, marks: el.querySelectorAll(\'svg g[class*="mark-"]'
            ' > path, svg g[class*="mark-"] > line\').length}))'
        )
        assert charts and all(c["r"] == "1" and c["marks"] > 0 for c in charts), charts
        browser.screenshot(ARTIFACTS / "dashboard-lab.png")
    finally:
        server.stop()


def test_rulesets_come_from_files_or_the_registry_and_bad_arguments_are_refused(tmp_path):
    db = str(tmp_path / "lab.duckdb")
    freeze = tmp_path / "freeze-1.toml"
    freeze.write_text(FREEZE_1)
    assert balance("rules", "add", "--db", db, str(freeze)).returncode == 0
    # a candidate file based_on a registered ruleset; the base by its registered name
    child = tmp_path / "child.toml"
    child.write_text('name = "child"\ngame = "slow6"\nbased_on = "freeze-1"\n[params]\n'
                     "trap_turns = 1\n")  # fmt: skip
    ran = balance("lab", "run", "--base", "freeze-1", "--candidate", str(child), "--games", "2",
                  "--levels", "1", "--db", db)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "what changed: trap_turns 2 -> 1\n" in ran.stdout  # not freeze_turns: both have 1
    assert "candidate 'child' against base 'freeze-1'" in ran.stdout

    def refused(*args: str) -> str:
        got = balance("lab", "run", "--games", "1", "--db", db, *args)
        assert got.returncode == 2 and got.stdout == "", got
        return got.stderr

    assert "RS5.1" in refused("--candidate", "no-such-ruleset")
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\ngame = "slow6"\n[params]\nfreeze_turns = 9\n')
    assert "freeze_turns" in refused("--candidate", str(bad))
    slide = tmp_path / "slide.toml"
    slide.write_text('name = "s"\ngame = "slide"\n[params]\nmin_group = 3\n')
    assert "Slow6 only" in refused("--candidate", str(slide))
    assert "--levels" in refused("--candidate", str(freeze), "--levels", "0,5")
    assert "--games" in refused("--candidate", str(freeze), "--games", "0")
    # a run file that holds another run's pairs is refused, not mixed in
    run = LabRun(STANDARD["slow6"], parse_toml(FREEZE_1), powers=False, levels=(1,), seed=3)
    other = tmp_path / "runs" / f"{run.key}.ndjson"
    other.parent.mkdir()
    other.write_text('{"base": "something else"}\n')
    got = balance("lab", "run", "--candidate", str(freeze), "--games", "1", "--levels", "1",
                  "--seed", "3", "--run-dir", str(other.parent), "--db", db)  # fmt: skip
    assert got.returncode == 2 and "another run" in got.stderr
    assert balance("lab", "show", "nope", "--db", db).returncode == 1


@pytest.mark.slow
def test_a_store_held_by_a_running_server_keeps_the_run_file_for_later(tmp_path):
    """`balance serve` owns the store file: the run is printed but not stored, and its pairs
    stay in the run file; once the server stops, the same command stores it without playing
    the pairs again."""
    from support import Server

    cand = tmp_path / "freeze-1.toml"
    cand.write_text(FREEZE_1)
    db = tmp_path / "held.duckdb"
    args = ["lab", "run", "--candidate", str(cand), "--games", "3", "--levels", "1",
            "--json", "--db", str(db)]  # fmt: skip
    server = Server(tmp_path / "srv", db=db).start()
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        held = subprocess.run([sys.executable, "-m", "ingest.cli", *args], env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
    finally:
        server.stop()
    assert held.returncode == 0 and "not stored" in held.stderr, held.stderr
    assert len(rows_of(held.stdout)) > 5
    (run_file,) = Path(str(db) + ".lab").glob("*.ndjson")
    assert _pairs_in(run_file) == 3
    later = balance(*args)
    assert later.returncode == 0 and "stored: lab run" in later.stderr, later.stderr
    assert "lab: 3/3 pairs (0.0 pairs/s)" in later.stderr  # nothing played again
    assert rows_of(later.stdout) == rows_of(held.stdout)
    assert not run_file.exists()


@pytest.mark.slow
def test_a_runs_predictions_are_checked_against_what_players_did(tmp_path, app_factory):
    """After the release: the run's rows (its pre-registered hypotheses) beside the observed
    change between the two rulesets' human games. Synthetic games with a planted Double
    effect under standard and none under freeze-1: the observed Double row falls. The Lab
    page shows the same check once freeze-1 is registered with the run's rules, and the
    track record over it; a run whose candidate has that name but other rules is not
    checked against its release."""
    import polars as pl

    from analysis import synthetic

    db = tmp_path / "released.duckdb"
    con = duckdb.connect(str(db))
    con.execute(synthetic.schema_sql())
    for seed, name, effects in ((1, "standard", {"double": 1.0}), (2, "freeze-1", {})):
        plan = synthetic.Plan(n=3000, seed=seed, p_board7=0.0, p_hidden=0.0, p_powers=1.0,
                              modes=(("online", 1),), power_effects=effects)  # fmt: skip
        data = synthetic.generate(plan)
        data["games"] = data["games"].with_columns(ruleset=pl.lit(name))
        synthetic.insert(con, data, tag=f"r{seed}")
    con.close()
    cand = tmp_path / "freeze-1.toml"
    cand.write_text(FREEZE_1)
    ran = balance("lab", "run", "--candidate", str(cand), "--games", "4", "--powers",
                  "--levels", "1", "--json", "--db", str(db))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    (run,) = json.loads(balance("lab", "list", "--db", str(db), "--json").stdout)["runs"]

    got = balance("lab", "check", run["id"], "--db", str(db), "--json")
    assert got.returncode == 0, got.stderr
    rows = rows_of(got.stdout)
    assert [(r["family"], r["row"]) for r in rows] == [
        (r["family"], r["row"]) for r in rows_of(ran.stdout)]  # fmt: skip
    double = next(r for r in rows if (r["family"], r["row"]) == ("power_pick", "double"))
    assert double["observed"] < 0 and double["observed_hi"] < 0
    assert double["observed_lo"] <= double["observed"]
    for r in rows:
        if r["observed"] is not None and r["predicted_lo"] is not None:
            inside = r["predicted_lo"] <= r["observed"] <= r["predicted_hi"]
            assert r["inside"] is inside
            overlap = (
                r["observed_lo"] <= r["predicted_hi"] and r["predicted_lo"] <= r["observed_hi"]
            )
            assert r["consistent"] is overlap
    plain = balance("lab", "check", run["id"][:8], "--db", str(db)).stdout
    assert "3000 human games under standard, 3000 under freeze-1" in plain
    assert "pre-registered hypotheses" in plain and "consistent:" in plain and "missed:" in plain
    tested = sum(r["predicted_lo"] is not None for r in rows)
    assert f"1 - 0.05/{tested}" in plain
    for r in rows:  # missed: the Bonferroni interval (wider than the 95% one) clear of it
        if r["missed"]:
            assert not r["consistent"] and not r["inside"], r

    # the page reads at most a fixed sample of a release's games (a page view's bootstrap is
    # bounded): the same games every time, a subset of all, in the same order
    from analysis.lab import observed_sql

    con = duckdb.connect(str(db), read_only=True)
    every = con.execute(observed_sql("standard", 5, True)).fetchall()
    some = con.execute(observed_sql("standard", 5, True, sample=100)).fetchall()
    assert len(every) == 3000 and len(some) == 100
    assert some == con.execute(observed_sql("standard", 5, True, sample=100)).fetchall()
    assert all(g in every for g in some)
    assert [every.index(g) for g in some] == sorted(every.index(g) for g in some)
    con.close()

    # the page: nothing is checked until the candidate is registered with the run's rules
    import csv
    import io

    other = tmp_path / "other" / "freeze-1.toml"  # the same name, other rules
    other.parent.mkdir()
    other.write_text(FREEZE_1.replace("freeze_turns = 1", "trap_turns = 1"))
    cfg = balance("lab", "run", "--candidate", str(other), "--games", "3", "--powers",
                  "--levels", "1", "--db", str(db))  # fmt: skip
    assert cfg.returncode == 0, cfg.stderr
    app = app_factory(db=db)
    assert "candidate has been released yet" in app.get(
        "/dashboard/p/lab").body.decode()  # fmt: skip
    app.stop()
    assert balance("rules", "add", "--db", str(db), str(cand)).returncode == 0
    app = app_factory(db=db)
    page = app.get("/dashboard/p/lab").body.decode()
    assert 'id="spec-lab-check"' in page and 'id="spec-lab-record"' in page
    assert "pre-registered" in page and "3,000 players&#39; games under the bases" in page

    def table(chart: str) -> list[dict]:
        got = app.get(f"/dashboard/chart/{chart}.csv")
        assert got.status == 200
        return list(csv.DictReader(io.StringIO(got.body.decode())))

    shown = table("lab-check")
    assert {s["run"] for s in shown} == {f"freeze-1 vs standard ({run['id'][:8]})"}
    assert len(shown) == len(rows)
    for s, r in zip(shown, rows, strict=True):  # the page's numbers are the command's
        assert (s["family"], s["row"]) == (r["family"], r["row"])
        for k in ("predicted", "observed", "observed_lo", "observed_hi"):
            assert (s[k] == "") == (r[k] is None)
            if r[k] is not None:
                assert float(s[k]) == pytest.approx(r[k])
        assert s["inside"] == ("" if r["inside"] is None else str(r["inside"]).lower())
    (record,) = table("lab-record")
    compared = [r for r in rows if r["inside"] is not None]
    assert int(record["compared"]) == len(compared) > 10
    assert int(record["inside"]) == sum(r["inside"] for r in compared)
    assert float(record["lo"]) <= float(record["rate"]) <= float(record["hi"])


def _null_game(rng, first: int) -> dict:
    """A game of a fixed world: Double worth +0.15 to its side, the first mover +0.05."""
    picks = [sorted(rng.sample(range(10), 2)) for _ in (0, 1)]
    names = ["dash", "leap", "shield", "freeze", "swap", "recall", "double", "trap", "shove",
             "surge"]  # fmt: skip
    edge = 0.05 * (1 if first == 0 else -1)
    edge += sum(0.15 * (1 if s == 0 else -1) for s in (0, 1) if 6 in picks[s])
    x = rng.random()
    winner = None if x < 0.1 else (0 if x < 0.1 + 0.45 + edge else 1)
    return {"winner": winner, "reason": rng.choice(["home", "wipeout", "points"]),
            "turns": rng.randint(10, 40), "first": first, "levels": [1, 1],
            "lineups": [rng.sample(range(1, 6), 5) for _ in (0, 1)],
            "picks": [[names[p] for p in ps] for ps in picks],
            "used": [[names[p] for p in ps if rng.random() < 0.6] for ps in picks]}  # fmt: skip


def test_with_no_change_the_paired_intervals_cover_0_at_about_their_rate():
    """Null coverage of the lab's intervals (benchmarks/lab.py --coverage measures it on bot
    games): two independent samples of one world, 80 games a side, 60 times; every row's 95%
    interval should cover the true change, 0, about 95% of the time, and no row be called
    confident more than rarely. (Equal rulesets with the same seeds give exactly 0 and say
    nothing about the rate.)"""
    import random

    covered, confident, rows_seen, runs_naming_any = [], 0, 0, 0
    for rep in range(60):
        rng = random.Random(f"null/{rep}")
        pairs = []
        for i in range(80):
            a, b = _null_game(rng, rng.randrange(2)), _null_game(rng, rng.randrange(2))
            pairs.append({"i": i, "first": a["first"], "levels": [1, 1], "independent": True,
                          "lineups": a["lineups"], "base": a, "candidate": b})  # fmt: skip
        rows = predict(pairs, powers=True, levels=(1,), resamples=400, seed=rep)
        runs_naming_any += any(r["confident"] for r in rows)
        for r in rows:
            if r["lo"] is not None and r["n"] >= 30:
                covered.append(r["lo"] <= 0 <= r["hi"])
                confident += r["confident"]
                rows_seen += 1
    rate = sum(covered) / len(covered)
    print(
        f"null coverage {rate:.3f} over {len(covered)} rows; {confident} confident rows, "
        f"{runs_naming_any} of 60 runs naming any"
    )
    assert len(covered) > 1000
    assert 0.92 <= rate <= 0.98, rate
    # the confident list is one claim per run, held at 5%: of 60 runs with no change, a few
    # at most may name one (13% or more would be 1 in 100 under a true 5%)
    assert runs_naming_any <= 0.13 * 60, runs_naming_any


SHORT_DASH = """name = "short-dash"
game = "slow6"
description = "Slower pieces, and Dash only one square further"
[params]
reach = 1
dash_reach = 2
"""


@pytest.mark.slow
def test_what_a_power_is_worth_by_restricted_play(tmp_path, app_factory):
    """Dash is worth points to level-1 bots under standard (a side barred from it, taking its
    next preferred power, scores less; the interval clear of 0); a ruleset whose Dash reaches
    one square beyond a plain move on a slower board shows it worth less. Both runs stored and
    drawn on the Powers page, beside the observed pick effect. 100 pairs a run."""
    import csv
    import io

    db = tmp_path / "worth.duckdb"
    weak = tmp_path / "short-dash.toml"
    weak.write_text(SHORT_DASH)

    def worth(rules: str) -> dict:
        ran = balance("lab", "worth", "--power", "dash", "--rules", rules, "--games", "100",
                      "--level", "1", "--jobs", "2", "--json", "--db", str(db))  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        assert "stored: lab run worth-" in ran.stderr
        (row,) = rows_of(ran.stdout)
        assert row["power"] == "dash" and row["level"] == 1 and row["n"] == 100
        assert row["lo"] <= row["worth"] <= row["hi"]
        return row

    strong = worth("standard")
    assert strong["lo"] > 0, strong
    weaker = worth(str(weak))
    assert weaker["worth"] < strong["worth"], (weaker, strong)
    runs = json.loads(balance("lab", "list", "--db", str(db), "--json").stdout)["runs"]
    assert len(runs) == 2 and all(r["id"].startswith("worth-") for r in runs)
    shown = balance("lab", "show", runs[0]["id"], "--db", str(db)).stdout
    assert "what each power is worth to a level-1 bot under 'short-dash'" in shown
    assert f"dash     {weaker['worth']:+.3f}" in shown
    assert "worth of powers under standard, bots level 1" in balance(
        "lab", "list", "--db", str(db)).stdout  # fmt: skip

    app = app_factory(db=db)
    page = app.get("/dashboard/p/powers").body.decode()
    assert 'id="spec-power-lab-worth"' in page and "bots level" in page
    got = list(csv.DictReader(io.StringIO(
        app.get("/dashboard/chart/power-lab-worth.csv").body.decode())))  # fmt: skip
    (dash,) = got  # each power's newest worth run: the short-dash one
    assert dash["power"] == "dash" and dash["ruleset"] == "short-dash"
    assert float(dash["worth"]) == pytest.approx(weaker["worth"])
    # worth runs are the Powers page's, not comparisons of two rulesets
    listed = app.get("/dashboard/chart/lab-runs.csv").body.decode()
    assert listed.count("\n") <= 1 and "worth-" not in listed


def test_lab_worth_refuses_a_power_it_cannot_measure(tmp_path):
    db = str(tmp_path / "w.duckdb")
    got = balance("lab", "worth", "--power", "lightning", "--db", db)
    assert got.returncode == 2 and got.stdout == "" and "R8.2" in got.stderr, got
    assert "no such power" in got.stderr and "double" in got.stderr
    few = tmp_path / "few.toml"
    few.write_text('name = "few"\ngame = "slow6"\n[params]\npowers = ["dash", "leap", "shield",'
                   ' "freeze"]\n')  # fmt: skip
    got = balance("lab", "worth", "--power", "double", "--rules", str(few), "--db", db)
    assert got.returncode == 2 and "does not offer it" in got.stderr, got
    assert balance("lab", "worth", "--db", db).returncode == 2  # --power or --all
    assert not (tmp_path / "w.duckdb").exists()  # nothing written for a refused command


@pytest.mark.slow
def test_a_run_started_from_the_page_runs_beside_the_server_and_lands_in_lab_runs(tmp_path):
    """Through a real server: without the token refused; with it started, in a process of its
    own, its progress advancing; a second run at once refused (BALANCE_LAB_RUNS=1) and the
    same run twice refused; a run cancelled keeps its pairs; the finished run is stored in
    the server's store (lab_runs) and is the one `balance lab run` would have stored."""
    from support import Server

    db = tmp_path / "served.duckdb"
    server = Server(tmp_path / "srv", db=db, env={"BALANCE_TOKEN": "s3cret"}).start()
    auth = {"Authorization": "Bearer s3cret"}
    body = {"candidate": FREEZE_1, "games": 40, "levels": "1", "seed": 3, "powers": True}

    def post(path: str, obj=None, headers=None):
        return server.post(path, json.dumps(obj or {}), "application/json", headers=headers)

    try:
        assert post("/dashboard/lab/runs", body).status == 401
        assert post("/dashboard/lab/runs", body, {"Authorization": "Bearer nope"}).status == 401
        bad = post("/dashboard/lab/runs", {**body, "candidate": "no-such"}, auth)
        assert bad.status == 400 and "RS5.1" in bad.json()["message"]
        started = post("/dashboard/lab/runs", body, auth)
        assert started.status == 202, started.body
        job = started.json()["id"]
        again = post("/dashboard/lab/runs", {**body, "seed": 4}, auth)
        assert again.status == 429 and "BALANCE_LAB_RUNS=1" in again.json()["message"]
        seen: list[int] = []

        def finished() -> dict | None:
            state = server.get(f"/dashboard/lab/runs/{job}").json()
            if not seen or state["done"] != seen[-1]:
                seen.append(state["done"])
            return state if state["status"] not in ("running", "storing") else None

        state = wait_for(finished, 240, "the page's lab run to finish", every=0.1)
        assert state["status"] == "done", state
        assert len(seen) >= 3 and seen == sorted(seen) and seen[-1] == 40, seen
        run_id = state["run_id"]

        # a bigger run, cancelled: its pairs stay in the run file for the next start
        big = post("/dashboard/lab/runs", {**body, "games": 5000, "seed": 5}, auth)
        assert big.status == 202, big.body
        same = post("/dashboard/lab/runs", {**body, "games": 5000, "seed": 5}, auth)
        assert same.status in (409, 429)
        wait_for(
            lambda: server.get(f"/dashboard/lab/runs/{big.json()['id']}").json()["done"] >= 2,
            240,
            "two pairs of the big run played",
        )
        assert post(f"/dashboard/lab/runs/{big.json()['id']}/cancel").status == 401
        cancelled = post(f"/dashboard/lab/runs/{big.json()['id']}/cancel", None, auth).json()
        assert cancelled["status"] == "cancelled"
        page = server.get("/dashboard/p/lab").body.decode()
        assert 'id="lab-start-form"' in page
    finally:
        server.stop()
    (kept,) = Path(str(db) + ".lab").glob("*.ndjson")
    assert _pairs_in(kept) >= 2
    con = duckdb.connect(str(db), read_only=True)
    stored = lab_runs.run(con, run_id)
    con.close()
    assert (
        stored is not None and stored["games"] == 40 and stored["candidate"]["name"] == "freeze-1"
    )
    cand = tmp_path / "freeze-1.toml"
    cand.write_text(FREEZE_1)
    cli = balance("lab", "run", "--candidate", str(cand), "--games", "40", "--levels", "1",
                  "--seed", "3", "--powers", "--db", str(db))  # fmt: skip
    assert cli.returncode == 0 and "(stored already)" in cli.stderr, cli.stderr


@pytest.mark.browser
@pytest.mark.slow
def test_the_lab_pages_form_starts_a_run_and_shows_its_progress(tmp_path, browser):
    """In Chromium, the Lab page's form: a wrong token is refused on the page; the right one
    starts the run, whose progress line ends 'done' naming the stored run."""
    from support import Server

    server = Server(tmp_path / "srv", db=tmp_path / "form.duckdb",
                    env={"BALANCE_TOKEN": "s3cret"}).start()  # fmt: skip
    try:
        browser.open(server.url + "/dashboard/p/lab", "document.body.dataset.rendered")
        fill = (
            "(() => { const f = document.getElementById('lab-start-form');"
            "document.getElementById('lab-start').open = true;"
            f"f.candidate.value = {json.dumps(FREEZE_1)}; f.games.value = 6;"
            "f.levels.value = '1'; f.token.value = '%s'; f.requestSubmit(); })()"
        )
        browser.evaluate(fill % "wrong")
        status = "document.getElementById('lab-job').dataset.status"
        browser.wait_for(f"{status} === 'refused'")
        assert "Not started" in browser.evaluate("document.getElementById('lab-job').textContent")
        browser.evaluate(fill % "s3cret")
        browser.wait_for(f"{status} === 'done'", timeout=120)
        line = browser.evaluate("document.getElementById('lab-job').textContent")
        assert "freeze-1 vs standard, 6 pairs: done, 6 of 6 pairs" in line and "lab run" in line
        # (the wrong token's 401 is the browser's to log; nothing else)
        assert [p for p in browser.problems() if "status of 401" not in p] == []
    finally:
        server.stop()
