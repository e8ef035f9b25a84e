"""Incremental runs (analysis.watermark) give the tables a full run gives: after a random
sequence of uploads (some quarantined by a buggy engine), reverifies that move games between
verified and quarantined, and a run after each step, `--full` computes the same agg_* tables,
table for table. And the ways a run decides what to count: late rows, deleted rows, rowid
bounds, a version change, the CLI's --full and progress lines."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import duckdb
import polars as pl
import pytest

from analysis import jobs, sample, watermark
from analysis import synthetic as sy
from analysis.cuts import Cut
from ingest import cli
from ingest.server import jobs as ingest_jobs
from ingest.server.demo import load_records, simulated_records
from ingest.server.pipeline import Judge
from ingest.server.reverify import reverify
from ingest.storage import Store
from replays import verdict as V
from replays import verifier as real

pytestmark = pytest.mark.slow  # synthetic stores, full and incremental runs compared


def buggy(bad: set[str]) -> Judge:
    """An engine with a bug: quarantines these ids, judges the rest like the real one."""

    def replay_record(record):
        if record["game_id"] in bad:
            return V.invalid(record["game_id"], "R2.2", 3, "buggy engine"), None
        return real.replay_record(record)

    return Judge(SimpleNamespace(replay_record=replay_record))


def tables(con, names) -> dict[str, pl.DataFrame]:
    return {n: con.sql(f"SELECT * FROM {n}").pl() for n in names}


def assert_same(a: dict[str, pl.DataFrame], b: dict[str, pl.DataFrame]) -> None:
    """Table for table: the same rows (in any order); floats to 1e-12 (a rate summed in
    another row order may differ in its last bit), everything else exactly."""
    assert sorted(a) == sorted(b)
    for name in a:
        x, y = a[name], b[name]
        assert x.columns == y.columns, name
        assert x.height == y.height, name
        key = [c for c, t in x.schema.items() if t != pl.Float64 and not isinstance(t, pl.List)]
        x, y = x.sort(key, nulls_last=True), y.sort(key, nulls_last=True)
        for c, t in x.schema.items():
            if t == pl.Float64:
                d = (x[c] - y[c]).abs() <= 1e-12 * (1 + x[c].abs())
                same = d.fill_null(False) | (x[c].is_null() & y[c].is_null())
                same = same | (x[c].is_nan() & y[c].is_nan()).fill_null(False)
                assert same.all(), (name, c)
            else:
                assert x[c].equals(y[c], check_names=True), (name, c)


@pytest.fixture(scope="module")
def records():
    recs = list(simulated_records(240, 60, seed=11, level=1))
    random.Random(5).shuffle(recs)
    return recs


@pytest.mark.parametrize("lag_minutes", [0, 5])
def test_incremental_runs_equal_a_full_run(tmp_path, records, monkeypatch, lag_minutes):
    # lag 0: every upload but the last lands before the boundary (weeks' fingerprints);
    # lag 5 (the default): the test's uploads all stay recent (kept one by one)
    monkeypatch.setattr(watermark, "LAG", watermark.dt.timedelta(minutes=lag_minutes))
    rng = random.Random(lag_minutes)
    store = Store(tmp_path / "store.duckdb")
    pending, uploaded, bad = list(records), [], set()
    modes, recomputed = [], 0
    try:
        assert ingest_jobs.run_once(store)["mode"] == "full"  # an empty store
        steps = ["upload"] * 5 + ["reverify"] * 3 + ["upload"] * 2
        rng.shuffle(steps)
        for step in ["upload", *steps]:
            if step == "upload" and pending:
                batch, pending = pending[:30], pending[30:]
                broken = {r["game_id"] for r in batch if rng.random() < 0.15}
                bad |= broken
                load_records(store, batch, buggy(bad), echo=lambda _: None)
                uploaded += batch
            else:  # an engine fix and a new bug: games move both ways
                ids = [r["game_id"] for r in uploaded]
                bad = set(rng.sample(ids, k=max(1, len(ids) // 12)))
                store.submit(lambda con, b=set(bad): reverify(con, buggy(b))).result()
            summary = ingest_jobs.run_once(store)
            modes.append(summary.get("mode", "skipped"))
            recomputed += sum(len(w) for w in summary.get("weeks_recomputed", {}).values())
        reader = store.reader()
        try:
            names = [
                t
                for (t,) in reader.execute(
                    "SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'agg_%' "
                    "AND table_name <> 'agg_runs'"
                ).fetchall()
            ]
            incremental = tables(reader, names)
            games = reader.execute("SELECT count(*) FROM games").fetchone()[0]
        finally:
            reader.close()
        reader = store.reader()
        try:
            full = jobs.run(
                reader, lambda fn: store.submit(fn, transaction=False).result(), full=True
            )
            assert full["mode"] == "full" and full["games_read"] == games
            assert_same(incremental, tables(reader, names))
        finally:
            reader.close()
    finally:
        store.close()
    assert modes.count("incremental") >= 6, modes  # the runs counted what changed
    assert recomputed > 0  # and reverify made some recompute weeks


def _write(con):
    return lambda fn: fn(con)


def _later(data: dict, con, minutes: int = 10) -> dict:
    """Generated games stamped as received after everything in the store (as uploads are)."""
    last = con.execute("SELECT max(received_at) FROM games").fetchone()[0]
    g = data["games"]
    stamp = (
        pl.lit(last) + pl.duration(minutes=minutes) + pl.duration(seconds=pl.int_range(g.height))
    )
    return {**data, "games": g.with_columns(received_at=stamp)}


def _same_as_full(con) -> None:
    names = [
        t
        for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'agg_%' "
            "AND table_name <> 'agg_runs'"
        ).fetchall()
    ]
    before = tables(con, names)
    assert jobs.run(con, _write(con), full=True)["mode"] == "full"
    assert_same(before, tables(con, names))


def test_new_games_are_counted_alone_and_their_children_by_rowid(tmp_path):
    con, _ = sy.make_store(tmp_path / "s.duckdb", sy.Plan(n=2000, seed=1), quarantined=40)
    assert jobs.run(con, _write(con))["mode"] == "full"
    sy.insert(con, _later(sy.generate(sy.Plan(n=150, seed=2)), con), tag="new")
    lines: list[str] = []
    s = jobs.run(con, _write(con), progress=lines.append)
    assert s["mode"] == "incremental" and s["new_games"] == 150 and not s["weeks_recomputed"]
    assert s["games_read"] == 2150 and s["message"].startswith("150 new games since run 1; ")
    assert any(line.startswith("150 new games since run 1") for line in lines)
    marks = json.loads(
        con.execute("SELECT watermark FROM agg_runs ORDER BY run_id DESC LIMIT 1").fetchone()[0]
    )
    pieces = con.execute("SELECT count(*), max(rowid) FROM game_pieces").fetchone()
    assert marks["games"]["marks"]["game_pieces"] == list(pieces)
    assert jobs.run(con, _write(con))["skipped"]
    _same_as_full(con)


def test_late_rows_and_deleted_rows_recompute_their_weeks(tmp_path):
    con, _ = sy.make_store(tmp_path / "d.duckdb", sy.Plan(n=3000, seed=3), quarantined=60)
    jobs.run(con, _write(con))
    # a game goes away (reverify quarantines it) and one arrives with an old received_at
    (gone, week) = con.execute(
        "SELECT game_id, date_trunc('week', ended_at) FROM games ORDER BY received_at "
        "LIMIT 1 OFFSET 100"
    ).fetchone()
    for t in ("games", "game_pieces", "game_powers", "game_turns"):
        con.execute(f"DELETE FROM {t} WHERE game_id = ?", [gone])
    late = sy.generate(sy.Plan(n=1, seed=4))
    sy.insert(con, late, tag="late")
    s = jobs.run(con, _write(con))
    assert s["mode"] == "incremental" and 1 <= len(s["weeks_recomputed"]["games"]) <= 2
    assert week.date().isoformat() in s["weeks_recomputed"]["games"]
    _same_as_full(con)
    sy.quarantine_rows(con, 5, seed=9, tag="q-late")  # quarantined records, old times
    s = jobs.run(con, _write(con))
    assert s["mode"] == "incremental" and "quarantine" in s["weeks_recomputed"]
    _same_as_full(con)


def test_another_job_version_or_filter_is_a_full_run(tmp_path, monkeypatch):
    con, _ = sy.make_store(tmp_path / "v.duckdb", sy.Plan(n=800, seed=5))
    jobs.run(con, _write(con))
    monkeypatch.setattr(jobs, "JOB_VERSION", "9.9")
    s = jobs.run(con, _write(con))
    assert s["mode"] == "full" and "job version" in s["message"]
    assert jobs.run(con, _write(con))["skipped"]
    sy.insert(con, _later(sy.generate(sy.Plan(n=50, seed=6)), con), tag="more")
    assert jobs.run(con, _write(con))["mode"] == "incremental"
    assert "other filters" in jobs.run(con, _write(con), cut=Cut(board=5))["message"]


def test_cli_full_and_progress(tmp_path, capsys):
    path = tmp_path / "cli.duckdb"
    con, _ = sy.make_store(path, sy.Plan(n=700, seed=8), quarantined=20)
    con.close()
    assert cli.main(["jobs", "run", "--db", str(path), "--memory-limit", "256MB"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["mode"] == "full"
    assert "balance jobs run: full recompute (first run): 700 games" in out.err
    con = duckdb.connect(str(path))
    sy.insert(con, _later(sy.generate(sy.Plan(n=30, seed=9)), con), tag="cli")
    con.close()
    assert cli.main(["jobs", "run", "--db", str(path)]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["new_games"] == 30
    assert "30 new games since run 1" in out.err
    assert cli.main(["jobs", "run", "--db", str(path), "--full"]) == 0
    assert json.loads(capsys.readouterr().out)["mode"] == "full"


def test_the_adjusted_models_sample_is_kept_and_the_same_as_a_scan(tmp_path, monkeypatch):
    monkeypatch.setattr(sample, "SAMPLE", 400)  # the default cut has 2,000 games
    plan = sy.Plan(n=2000, seed=12, modes=(("online", 1),), versions=(("3.0.0", 1),))
    con, _ = sy.make_store(tmp_path / "a.duckdb", plan)
    jobs.run(con, _write(con))
    assert con.execute(
        "SELECT DISTINCT n_games FROM agg_adjusted WHERE term IN ('side_0', 'first_move')"
    ).fetchall() == [(400,)]
    kept = con.execute("SELECT h FROM jobs_sample").fetchall()
    more = sy.Plan(n=300, seed=13, modes=(("online", 1),), versions=(("3.0.0", 1),))
    sy.insert(con, _later(sy.generate(more), con), tag="more")
    assert jobs.run(con, _write(con))["mode"] == "incremental"
    now = con.execute("SELECT h FROM jobs_sample").fetchall()
    assert len(now) == 400 and now != kept  # some new games hash lower than kept ones
    _same_as_full(con)
