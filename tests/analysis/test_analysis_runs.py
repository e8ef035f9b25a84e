"""Running the jobs: skipped when nothing changed, recomputed after new games, the CLI, and the
server's path (reads on a Store cursor, writes on its calls thread)."""

from __future__ import annotations

import json

import duckdb
import pytest
from support import agg_tables

from analysis import jobs, load
from analysis import synthetic as sy
from analysis.cuts import Cut
from ingest import cli

pytestmark = pytest.mark.slow  # synthetic stores of up to 1,300 games, every job each run


def _write(con):
    return lambda fn: fn(con)


def test_unchanged_inputs_skip_the_run_and_new_games_recompute(tmp_path, monkeypatch):
    con, _ = sy.make_store(tmp_path / "s.duckdb", sy.Plan(n=1200, seed=1), quarantined=50)
    first = jobs.run(con, _write(con))
    assert not first["skipped"] and first["games_read"] == 1200

    def no_reading(*a, **k):
        raise AssertionError("an unchanged store must not be read again")

    monkeypatch.setattr(load, "read", no_reading)
    again = jobs.run(con, _write(con))
    assert again["skipped"] and again["run_id"] == first["run_id"]
    monkeypatch.undo()
    assert con.execute("SELECT count(*) FROM agg_runs").fetchone()[0] == 1

    sy.insert(con, sy.generate(sy.Plan(n=100, seed=2)), tag="new")
    after = jobs.run(con, _write(con))
    assert not after["skipped"] and after["games_read"] == 1300
    assert con.execute("SELECT sum(n) FROM agg_first_move").fetchone()[0] == 1300

    sy.quarantine_rows(con, 10, seed=3, tag="q2")  # a new quarantined record changes overview
    assert not jobs.run(con, _write(con))["skipped"]
    assert jobs.run(con, _write(con))["skipped"]
    assert not jobs.run(con, _write(con), force=True)["skipped"]
    assert not jobs.run(con, _write(con), cut=Cut(board=5))["skipped"]  # other filters
    runs = con.execute("SELECT run_id, filters FROM agg_runs ORDER BY run_id").fetchall()
    assert [r[0] for r in runs] == [1, 2, 3, 4, 5]
    assert json.loads(runs[-1][1]) == {"board": [5]}


def test_a_swap_that_keeps_counts_and_times_still_recomputes(tmp_path):
    con, _ = sy.make_store(tmp_path / "x.duckdb", sy.Plan(n=500, seed=1), quarantined=30)
    jobs.run(con, _write(con))
    # move one game out and put another in with the same received_at (as a reverify could)
    (gid,) = con.execute(
        "SELECT game_id FROM games ORDER BY received_at LIMIT 1 OFFSET 10"
    ).fetchone()
    con.execute("CREATE TEMP TABLE one AS SELECT * FROM games WHERE game_id = ?", [gid])
    con.execute("DELETE FROM games WHERE game_id = ?", [gid])
    con.execute("UPDATE one SET game_id = uuid(), lineup_0 = '12345'")
    con.execute("INSERT INTO games SELECT * FROM one")
    assert con.execute("SELECT count(*) FROM games").fetchone()[0] == 500
    assert not jobs.run(con, _write(con))["skipped"]


def test_a_dropped_table_is_rebuilt_even_if_the_games_did_not_change(tmp_path):
    con, _ = sy.make_store(tmp_path / "d.duckdb", sy.Plan(n=600, seed=1))
    jobs.run(con, _write(con))
    con.execute("DROP TABLE agg_lineup")
    assert not jobs.run(con, _write(con))["skipped"]
    assert con.execute("SELECT count(*) FROM agg_lineup").fetchone()[0] > 0


def test_an_empty_store_gives_empty_tables(tmp_path):
    con = duckdb.connect(str(tmp_path / "e.duckdb"))
    con.execute(sy.schema_sql())
    summary = jobs.run(con, _write(con))
    assert summary["games_read"] == 0
    assert con.execute("SELECT count(*) FROM agg_lineup").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM agg_runs").fetchone()[0] == 1


def test_cli_jobs_run(tmp_path, capsys):
    path = tmp_path / "cli.duckdb"
    con, _ = sy.make_store(path, sy.Plan(n=700, seed=8), quarantined=20)
    con.close()
    assert cli.main(["jobs", "run", "--db", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["skipped"] is False and out["games_read"] == 700
    assert "agg_lineup" in out["tables"]
    assert cli.main(["jobs", "run", "--db", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] is True
    assert cli.main(["jobs", "run", "--db", str(path), "--board", "5", "--mode", "online"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert not out["skipped"] and 0 < out["games_read"] < 700
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT DISTINCT board, mode FROM agg_first_move").fetchall() == [
        (5, "online")
    ]
    con.close()
    assert cli.main(["jobs", "run", "--db", str(tmp_path / "missing.duckdb")]) == 2


def test_the_server_path_reads_a_cursor_and_writes_on_the_store_thread(tmp_path):
    from ingest.server import jobs as ingest_jobs
    from ingest.storage import Store

    store = Store(tmp_path / "server.duckdb")
    try:
        data = sy.generate(sy.Plan(n=900, seed=9))
        store.submit(lambda con: sy.insert(con, data, tag="srv")).result()
        summary = ingest_jobs.run_once(store)  # exactly what the scheduler calls
        assert summary["games_read"] == 900 and not summary["skipped"]
        reader = store.reader()
        try:
            assert reader.execute("SELECT sum(n) FROM agg_first_move").fetchone()[0] == 900
        finally:
            reader.close()
        assert ingest_jobs.run_once(store)["skipped"]
    finally:
        store.close()


def test_rows_rewritten_in_place_are_noticed_and_recomputed(tmp_path):
    """`balance reverify --rebuild` rewrites stored games' rows under the same ids and times
    (a fixed engine, new facts): no week's count or id hash changes, but the next run must
    not keep the old facts."""
    con, _ = sy.make_store(tmp_path / "r.duckdb", sy.Plan(n=600, seed=4))
    jobs.run(con, _write(con))
    (stuns_before,) = con.execute("SELECT sum(stuns) FROM agg_side_events").fetchone()
    ids = "SELECT game_id FROM games ORDER BY game_id LIMIT 40"
    con.execute(f"CREATE TEMP TABLE again AS SELECT * FROM game_turns WHERE game_id IN ({ids})")
    con.execute(f"DELETE FROM game_turns WHERE game_id IN ({ids})")
    con.execute("UPDATE again SET stuns = stuns + 1 WHERE turn = 1")  # the new facts
    con.execute("INSERT INTO game_turns SELECT * FROM again")
    run = jobs.run(con, _write(con))
    assert not run["skipped"] and "rewritten" in run["message"], run["message"]
    (stuns_after,) = con.execute("SELECT sum(stuns) FROM agg_side_events").fetchone()
    assert stuns_after == stuns_before + 40
    noticed = agg_tables(con)
    jobs.run(con, _write(con), full=True)
    full = agg_tables(con)
    assert sorted(full) == sorted(noticed)
    for name, rows in full.items():  # floats to rounding: a fit's sums in another order
        assert len(rows) == len(noticed[name]), name
        for a, b in zip(rows, noticed[name], strict=True):
            assert list(b) == [_close(x) for x in a], name


def _close(value):
    return (
        pytest.approx(value, rel=1e-9, abs=1e-12, nan_ok=True)
        if isinstance(value, float)
        else value
    )
