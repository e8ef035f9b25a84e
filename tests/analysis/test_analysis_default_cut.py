"""The default cut is the live game: the newest release with enough verified human
games. A handful of games on a newer build, computer games or a pre-release, never takes the
rate tables over; the run says which version it chose and why."""

from __future__ import annotations

import json
import shutil

import duckdb
import pytest

from analysis import jobs, load
from analysis import synthetic as sy
from analysis.live_version import MIN_GAMES

pytestmark = pytest.mark.slow  # a 2,000-game synthetic store, the jobs run several times

HUMAN = (("online", 3), ("friend", 1))


def _write(con):
    return lambda fn: fn(con)


@pytest.fixture(scope="module")
def live_file(tmp_path_factory):
    """2,000 human games on 3.0.0, the jobs run once: made once for the module's tests."""
    path = tmp_path_factory.mktemp("live") / "live.duckdb"
    plan = sy.Plan(n=2000, seed=11, modes=HUMAN, versions=(("3.0.0", 1),))
    con, _ = sy.make_store(path, plan)
    try:
        first = jobs.run(con, _write(con))
    finally:
        con.close()
    assert first["default_cut"]["client_version"] == ["3.0.0"]
    return path


@pytest.fixture
def live_store(live_file, tmp_path):
    """A copy of the module's live store, each test's own to add games to."""
    path = tmp_path / "live.duckdb"
    shutil.copyfile(live_file, path)
    con = duckdb.connect(str(path))
    yield con
    con.close()


def _add(con, n: int, version: str, modes, seed: int, tag: str) -> None:
    sy.insert(con, sy.generate(sy.Plan(n=n, seed=seed, modes=modes, versions=((version, 1),))), tag)


def _rates_n(con) -> dict[str, int]:
    one = "SELECT count(*) FROM {}"
    return {
        "first_move": con.execute("SELECT sum(n) FROM agg_first_move_rates").fetchone()[0],
        "lineups": con.execute(one.format("agg_lineup_rates")).fetchone()[0],
        "powers": con.execute(one.format("agg_power_rates")).fetchone()[0],
        "adjusted": con.execute(one.format("agg_adjusted WHERE estimable")).fetchone()[0],
    }


def _last_cut(con) -> tuple[dict, dict]:
    cut, why = con.execute(
        "SELECT default_cut, default_why FROM agg_runs ORDER BY run_id DESC LIMIT 1"
    ).fetchone()
    return json.loads(cut), json.loads(why)


def test_three_computer_games_on_a_newer_release_do_not_take_over(live_store):
    con = live_store
    before = _rates_n(con)
    assert before["first_move"] == 2000 and all(v > 0 for v in before.values())
    _add(con, 3, "3.2.0", (("computer", 1),), seed=12, tag="cpu")
    run = jobs.run(con, _write(con))
    assert not run["skipped"] and run["games_read"] == 2003
    assert run["default_cut"]["client_version"] == ["3.0.0"]
    assert _rates_n(con) == before
    cut, why = _last_cut(con)
    assert cut["client_version"] == ["3.0.0"]
    assert "newest release" in why["slow6"] and "2,000" in why["slow6"]


def test_five_games_on_a_pre_release_do_not_take_over(live_store):
    con = live_store
    _add(con, 5, "3.1.0-beta.2", HUMAN, seed=13, tag="beta")
    run = jobs.run(con, _write(con))
    assert run["default_cut"]["client_version"] == ["3.0.0"]
    assert _rates_n(con)["first_move"] == 2000


def test_a_newer_release_takes_over_once_it_has_enough_human_games(live_store):
    con = live_store
    _add(con, MIN_GAMES - 1, "3.1.0", HUMAN, seed=14, tag="few")
    few = jobs.run(con, _write(con))
    assert few["default_cut"]["client_version"] == ["3.0.0"]
    assert "newer releases have fewer: 3.1.0 (199)" in few["default_why"]["slow6"]

    _add(con, 1, "3.1.0", HUMAN, seed=15, tag="one")
    enough = jobs.run(con, _write(con))
    assert enough["default_cut"]["client_version"] == ["3.1.0"]
    assert _rates_n(con)["first_move"] == MIN_GAMES


def test_the_full_and_incremental_paths_choose_the_same_cut(live_store):
    con = live_store
    _add(con, 50, "3.2.0", HUMAN, seed=16, tag="new")
    _add(con, 300, "3.3.0-rc.1", HUMAN, seed=17, tag="rc")
    incremental = jobs.run(con, _write(con))
    assert incremental["mode"] == "incremental"
    _, dcut = jobs.compute(load.read(con))
    assert dcut.client_version == ("3.0.0",)
    assert incremental["default_cut"]["client_version"] == ["3.0.0"]
    full = jobs.run(con, _write(con), full=True)
    assert full["default_cut"] == incremental["default_cut"]
