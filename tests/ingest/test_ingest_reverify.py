"""`balance reverify` (file, server stopped), POST /v1/admin/reverify (running app, in-process,
served on a loopback port for the command line), and the quick-start loader: games move between
quarantine and verified with their rows rebuilt. The commands run in this process
(support.balance), but for the one refused a file another process holds."""

from __future__ import annotations

import subprocess
import sys
import time
from types import SimpleNamespace

import duckdb
import pytest
from support import REPO, SLIDE, SLOW6, Ran, balance, buggy_verifier, fresh, query

from ingest.server.demo import load_records
from ingest.server.pipeline import Judge
from ingest.server.reverify import reverify
from ingest.storage import Store
from replays import verdict as V
from replays import verifier as real


def balance_process(*args, env=None) -> subprocess.CompletedProcess:
    """`balance ARGS` as its own process: for a store file this process holds open."""
    return subprocess.run(
        [sys.executable, "-m", "ingest.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.mark.slow
def test_cli_moves_wrongly_quarantined_games_back(tmp_path):
    db = tmp_path / "store.duckdb"
    recs = [fresh(r) for r in SLOW6[:6] + SLIDE[:2]]
    wrong = {recs[1]["game_id"], recs[7]["game_id"]}  # a Slow6 and a Slide game
    with Store(db) as store:
        counts = load_records(store, recs, Judge(buggy_verifier(wrong)), echo=lambda _: None)
    assert counts == {"accepted": 6, "quarantined": 2}
    assert query(db, "SELECT count(*) FROM quarantine")[0][0] == 2

    out = balance("reverify", "--db", str(db))
    assert out.returncode == 0, out.stderr
    for gid in wrong:
        assert f"{gid} quarantined -> verified" in out.stdout
    assert "checked 8 records" in out.stdout and "quarantined->verified 2" in out.stdout
    assert query(db, "SELECT count(*) FROM quarantine")[0][0] == 0
    assert query(db, "SELECT count(DISTINCT status) FROM raw_records")[0][0] == 1
    slow6 = recs[1]
    assert query(db, "SELECT count(*) FROM game_turns WHERE game_id = ?", [slow6["game_id"]]) == [
        (len(slow6["turns"]),)
    ]
    assert query(
        db, "SELECT count(*) FROM slide_rounds WHERE game_id = ?", [recs[7]["game_id"]]
    ) == [(16 * recs[7]["players"],)]
    again = balance("reverify", "--db", str(db))  # nothing left to change
    assert "unchanged 8" in again.stdout and " -> " not in again.stdout


def test_newly_broken_games_leave_the_verified_tables(tmp_path):
    db = tmp_path / "store.duckdb"
    recs = [fresh(r) for r in SLOW6[:4]]
    with Store(db) as store:
        load_records(store, recs, echo=lambda _: None)
    victim = recs[2]["game_id"]
    con = duckdb.connect(str(db))
    lines = []
    summary = reverify(con, Judge(buggy_verifier({victim})), echo=lines.append)
    con.close()
    assert summary["counts"] == {"unchanged": 3, "verified->quarantined": 1}
    assert lines == [f"{victim} verified -> quarantined R2.2 turn 3: buggy engine"]
    for table in ("games", "game_turns", "game_pieces", "game_powers"):
        assert query(db, f"SELECT count(*) FROM {table} WHERE game_id = ?", [victim]) == [(0,)]
    assert query(db, "SELECT rule, turn FROM quarantine") == [("R2.2", 3)]
    assert query(db, "SELECT status FROM raw_records WHERE game_id = ?", [victim]) == [
        ("quarantined",)
    ]
    assert query(db, "SELECT count(*) FROM games")[0][0] == 3


@pytest.mark.slow
def test_reverify_through_the_running_server(app_factory):
    server = app_factory(env={"BALANCE_TOKEN": "s3cret"}).serve_http()
    recs = [fresh(r) for r in SLOW6[:3]]
    server.upload(recs)
    assert server.post("/v1/admin/reverify", b"").status == 401
    wrong = server.post("/v1/admin/reverify", b"", headers={"Authorization": "Bearer nope"})
    assert wrong.status == 401
    r = server.post("/v1/admin/reverify", b"", headers={"Authorization": "Bearer s3cret"})
    assert r.status == 200 and r.json()["checked"] == 3 and r.json()["changes"] == []
    # the CLI asks the server when given --server, and refuses the locked file otherwise
    out = balance("reverify", "--server", server.url, env={"BALANCE_TOKEN": "s3cret"})
    assert out.returncode == 0 and "checked 3 records" in out.stdout, out.stderr
    locked = balance_process("reverify", "--db", str(server.db))  # the app holds the file
    assert locked.returncode == 2 and "another process" in locked.stderr


@pytest.mark.slow
def test_load_demo_fills_every_table(tmp_path):
    db = tmp_path / "demo.duckdb"
    out = balance("load-demo", "--db", str(db), "-n", "4", "--slide", "5", "--level", "1")
    assert out.returncode == 0, out.stderr
    assert query(db, "SELECT count(*) FROM games")[0][0] == 4
    assert query(db, "SELECT count(*) FROM slide_games")[0][0] >= 4  # the simulator may retry
    assert query(db, "SELECT count(*) FROM raw_records WHERE status = 'quarantined'") == [(0,)]


@pytest.mark.slow
def test_server_runs_the_analysis_jobs_on_its_schedule(app_factory):
    server = app_factory(env={"BALANCE_JOBS_INTERVAL": "1"})
    server.upload([fresh(r) for r in SLOW6[:10]])
    for _ in range(600):
        if "analysis run:" in server.output():
            break
        time.sleep(0.1)
    server.stop()
    assert "analysis run:" in server.output(), server.output()[-2000:]
    assert query(server.db, "SELECT count(*) FROM agg_runs")[0][0] >= 1


# -- repair after the Recall fix (R8.7): the engine before it refused these legal games --------

# The smallest game the old engine refused: side 1's 5 on c3 is frozen in turn 2 and taken in the
# same turn, recalled in turn 3, and moves in turn 5; the old engine still held it frozen.
RECALLED_FROZEN = {
    "schema": 1,
    "game_id": "9b8e9a82-0da9-444a-9084-c63f7b949e54",
    "game": "slow6",
    "client": {"platform": "android", "version": "2.4.0"},
    "mode": "online",
    "ended_at": "2026-08-21T20:40:30Z",
    "rules": {"board": 5, "powers": True, "hidden": False},
    "ai": None,
    "challenge": None,
    "first": 0,
    "lineups": [[1, 4, 2, 3, 5], [3, 5, 4, 1, 2]],
    "powers": [["freeze", "trap", "shove"], ["shield", "recall", "freeze"]],
    "turns": [
        {"moves": ["a1-c3"]},
        {"moves": ["e5-c3"]},
        {"power": "freeze", "target": "c3", "moves": ["c1-c3"]},
        {"power": "recall", "target": "e5", "moves": ["c5-a3"]},
        {"power": "trap", "target": "a2", "moves": ["e1-c3"]},
        {"power": "shield", "target": "e5", "moves": ["e5-c3"]},
    ],
    "result": {"winner": 1, "reason": "resign", "points": None},
}
OLD_VERDICT = ("R2.3", 5, "turn 5: e5-c3: e5 is frozen and cannot move this turn (R2.3)")


def old_engine(recall_ids: set[str]):
    """The verdict the engine before the R8.7 fix gave these games (checked by hand against
    that engine: the message is the one it printed)."""

    def replay_record(record):
        if record["game_id"] in recall_ids:
            return V.invalid(record["game_id"], *OLD_VERDICT), None
        return real.replay_record(record)

    return SimpleNamespace(replay_record=replay_record)


def _store_with_wrongly_quarantined(db) -> tuple[list[dict], set[str]]:
    recalls = [fresh(RECALLED_FROZEN) for _ in range(3)]
    recs = recalls + [fresh(r) for r in SLOW6[:5]]
    ids = {r["game_id"] for r in recalls}
    with Store(db) as store:
        counts = load_records(store, recs, Judge(old_engine(ids)), echo=lambda _: None)
    assert counts == {"accepted": 5, "quarantined": 3}
    assert query(db, "SELECT DISTINCT rule, turn FROM quarantine") == [("R2.3", 5)]
    return recs, ids


def _games_read(out: Ran, db) -> tuple[int, int]:
    assert out.returncode == 0, out.stderr
    return query(
        db, "SELECT games_read, quarantined_read FROM agg_runs ORDER BY run_id DESC LIMIT 1"
    )[0]


@pytest.mark.slow
@pytest.mark.rule("R8.7")
def test_reverify_gives_back_recall_games_the_old_engine_refused(tmp_path):
    db = tmp_path / "store.duckdb"
    _recs, ids = _store_with_wrongly_quarantined(db)
    assert _games_read(balance("jobs", "run", "--db", str(db)), db) == (5, 3)

    out = balance("reverify", "--db", str(db))
    assert out.returncode == 0, out.stderr
    for gid in ids:
        assert f"{gid} quarantined -> verified" in out.stdout
    assert query(db, "SELECT count(*) FROM quarantine") == [(0,)]
    for gid in ids:
        assert query(db, "SELECT count(*) FROM game_turns WHERE game_id = ?", [gid]) == [(6,)]
        assert query(
            db,
            "SELECT count(*) FROM game_powers "
            "WHERE game_id = ? AND power = 'recall' AND used_turn = 3",
            [gid],
        ) == [(1,)]
    # the next jobs run counts them
    assert _games_read(balance("jobs", "run", "--db", str(db)), db) == (8, 0)


@pytest.mark.slow
@pytest.mark.rule("R8.7")
def test_reverify_through_the_server_gives_back_recall_games(app_factory, tmp_path):
    db = tmp_path / "store.duckdb"
    _recs, ids = _store_with_wrongly_quarantined(db)
    server = app_factory(env={"BALANCE_TOKEN": "s3cret"}, db=db).serve_http()
    out = balance("reverify", "--server", server.url, env={"BALANCE_TOKEN": "s3cret"})
    assert out.returncode == 0, out.stderr
    assert "quarantined->verified 3" in out.stdout, out.stdout
    server.stop()
    assert query(db, "SELECT count(*) FROM quarantine") == [(0,)]
    assert query(db, "SELECT count(*) FROM games")[0][0] == 8
