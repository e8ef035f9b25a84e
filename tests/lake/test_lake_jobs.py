"""The analysis jobs on a lake (issues 18 and 19): the same tables as the same jobs on a store
file holding the same games, after a full run, after incremental runs of new uploads, and
after the lake's maintenance compacted its files; `balance jobs run --lake` as the lake's
jobs runner. A real PostgreSQL catalog and Parquet files (lake_cluster.py); skipped, with the
reason, where they cannot be had."""

from __future__ import annotations

import gzip
import itertools
import json

import duckdb
import numpy as np
import polars as pl
import pytest
from support import agg_names, demo_copy, wait_for

from analysis import jobs
from ingest import cli
from ingest.server.demo import DATA_DIR, load_records, register_demo_rulesets
from ingest.storage import Store
from ingest.storage.lake import LakeStore, connect
from ingest.storage.lake.admin import import_store, maintain

pytestmark = pytest.mark.slow  # a PostgreSQL cluster, every job on two stores several times


def shipped(name: str, skip: int, take: int) -> list[bytes]:
    """Records of the shipped demo dataset (other game ids than the demo store's)."""
    with gzip.open(DATA_DIR / name, "rb") as f:
        return [line.rstrip(b"\n") for line in itertools.islice(f, skip, skip + take)]


def close(x: pl.Series, y: pl.Series) -> bool:
    """Floats equal to 1e-7 relative (1e-9 absolute; NaN and null alike on both sides), a
    list of them element by element; anything else exactly."""
    if isinstance(x.dtype, pl.List) and x.dtype.inner.is_float():
        return x.list.len().equals(y.list.len()) and close(x.explode(), y.explode())
    if not x.dtype.is_float():
        return x.equals(y)
    if not x.is_null().equals(y.is_null()):
        return False
    a, b = x.fill_null(0.0).to_numpy(), y.fill_null(0.0).to_numpy()
    with np.errstate(invalid="ignore"):
        near = np.abs(a - b) <= np.maximum(1e-7 * np.maximum(np.abs(a), np.abs(b)), 1e-9)
    return bool(np.all(near | (a == b) | (np.isnan(a) & np.isnan(b))))


def agg_frames(con) -> dict[str, pl.DataFrame]:
    """Every agg_* table but agg_runs, its rows sorted."""
    return {n: con.execute(f"SELECT * FROM {n} ORDER BY ALL").pl() for n in agg_names(con)}


def assert_same_tables(file_con, lake_con) -> None:
    ours, theirs = agg_frames(file_con), agg_frames(lake_con)
    assert sorted(theirs) == sorted(ours)
    assert len(ours) > 30
    for name, rows in ours.items():
        other = theirs[name]
        assert other.columns == rows.columns and other.height == rows.height, name
        bad = [c for c in rows.columns if not close(rows[c], other[c])]
        assert not bad, (name, bad, rows.select(bad).head(2), other.select(bad).head(2))


def run_file(db, **kw) -> dict:
    con = duckdb.connect(str(db))
    try:
        return jobs.run(con, lambda fn: fn(con), **kw)
    finally:
        con.close()


def run_lake(catalog: str, **kw) -> dict:
    con = connect(catalog, claims=False)
    try:
        return jobs.run(con, lambda fn: fn(con), **kw)
    finally:
        con.close()


def compare(db, catalog: str) -> None:
    file_con = duckdb.connect(str(db), read_only=True)
    lake_con = connect(catalog, read_only=True, claims=False)
    try:
        assert_same_tables(file_con, lake_con)
    finally:
        file_con.close()
        lake_con.close()


def upload_to_both(db, catalog: str, records: list[bytes]) -> None:
    """The records uploaded to both, the demo's rulesets registered first (its patch release's
    games play one: ingest/server/demo.py), so both count games of two rulesets."""
    quiet = {"echo": lambda _line: None}
    with Store(db) as file:
        register_demo_rulesets(file, **quiet)
        file_counts = load_records(file, records, **quiet)
    store = LakeStore(catalog)
    try:
        register_demo_rulesets(store, **quiet)
        lake_counts = load_records(store, records, **quiet)
    finally:
        store.close()
    assert lake_counts == file_counts and file_counts["accepted"] > 0


def test_the_jobs_on_a_lake_give_the_files_tables(lake, demo_db, tmp_path):
    db = demo_copy(demo_db, tmp_path / "file")
    imported = import_store(lake, db, echo=lambda _line: None)
    assert imported["imported"] > 400 and imported["conflicts"] == 0

    # the first run: full on both
    assert run_file(db, full=True)["mode"] == "full"
    first = run_lake(lake)
    assert first["mode"] == "full" and first["games_read"] == 300
    compare(db, lake)

    # new uploads on both: counted on their own and added in
    upload_to_both(db, lake, shipped("slow6.ndjson.gz", 0, 250) + shipped("slide.ndjson.gz", 0, 80))
    file_run, lake_run = run_file(db), run_lake(lake)
    assert lake_run["mode"] == "incremental", lake_run["message"]
    assert lake_run["new_games"] == file_run["new_games"] == 330
    compare(db, lake)

    # maintenance compacts the lake's files (rowids must survive it), then more uploads
    maintain(lake, echo=lambda _line: None)
    upload_to_both(db, lake, shipped("slow6.ndjson.gz", 250, 120))
    file_run, lake_run = run_file(db), run_lake(lake)
    assert lake_run["mode"] == "incremental" and lake_run["new_games"] == 120
    compare(db, lake)

    # and a full recompute on the lake gives the same tables again
    assert run_lake(lake, full=True)["mode"] == "full"
    compare(db, lake)


def test_balance_jobs_run_on_a_lake_skips_when_nothing_changed(lake, demo_db, tmp_path, capsys):
    db = demo_copy(demo_db, tmp_path / "file")
    import_store(lake, db, echo=lambda _line: None)
    assert cli.main(["jobs", "run", "--lake", lake]) == 0
    out = capsys.readouterr()
    first = json.loads(out.out)
    assert first["skipped"] is False and first["games_read"] == 300
    assert "full recompute (first run)" in out.err
    assert cli.main(["jobs", "run", "--lake", lake]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["skipped"] is True and again["run_id"] == first["run_id"]
    # what a lake server's dashboard reads: the tables are in the lake, stamped with the run
    con = connect(lake, read_only=True, claims=False)
    try:
        (n,) = con.execute("SELECT sum(n) FROM agg_first_move").fetchone()
        (runs,) = con.execute("SELECT count(*) FROM agg_runs").fetchone()
    finally:
        con.close()
    assert n == 300 and runs == 1


def test_balance_jobs_run_names_what_it_cannot_open(tmp_path, capsys):
    assert cli.main(["jobs", "run", "--db", str(tmp_path / "missing.duckdb")]) == 2
    assert "no store at" in capsys.readouterr().err


def test_load_demo_into_a_lake_then_its_tables(lake, capsys):
    """`balance load-demo --lake`: simulated games through the upload path into the lake,
    every claim settled, and the jobs' tables there for the servers' dashboards."""
    from ingest.storage.lake.admin import check

    assert cli.main(["load-demo", "--lake", lake, "-n", "12", "--slide", "4", "--level", "1"]) == 0
    out = capsys.readouterr().out
    assert "Slow6: 12 of 12 records" in out and "Slide: 4 of 4 records" in out
    result = check(lake)
    assert result["ok"] and result["rows"]["raw_records"] == 16, result
    con = connect(lake, read_only=True, claims=False)
    try:
        assert con.execute("SELECT sum(n) FROM agg_first_move").fetchone() == (12,)
        assert con.execute("SELECT count(*) FROM slide_games").fetchone() == (4,)
    finally:
        con.close()


def _consistent(con) -> None:
    """Every raw record's status matches the tables it is in: no game half moved."""
    ((bad,),) = con.execute(
        """SELECT count(*) FROM raw_records r
           WHERE (r.status = 'verified') <> (r.game_id IN (SELECT game_id FROM games)
                                              OR r.game_id IN (SELECT game_id FROM slide_games))
              OR (r.status = 'quarantined') <> (r.game_id IN (SELECT game_id FROM quarantine))"""
    ).fetchall()
    assert bad == 0


class Appender:
    """Another server uploading new games one at a time without a pause, as a client does:
    a 503 (StorageUnavailable) is sent again. `during` counts what was acknowledged while
    `busy` was set."""

    def __init__(self, store: LakeStore):
        import threading

        self.store, self.stored, self.during, self.unavailable = store, [], 0, 0
        self.busy, self._stop = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        import uuid

        from support import SLOW6

        from ingest.storage import StorageUnavailable

        i = 0
        while not self._stop.is_set() or i < 3:
            r = dict(SLOW6[i % len(SLOW6)], game_id=str(uuid.uuid4()))
            while True:
                try:
                    got = load_records(self.store, [r], echo=lambda _: None)
                    break
                except StorageUnavailable:
                    self.unavailable += 1
            if got.get("accepted"):
                self.stored.append(r["game_id"])
                self.during += self.busy.is_set()
            i += 1

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _quarantined_by_a_buggy_engine(store: LakeStore) -> tuple[list[dict], set[str]]:
    from support import SLOW6, buggy_verifier, fresh

    from ingest.server.pipeline import Judge

    recs = [fresh(r) for r in SLOW6[:8]]
    wrong = {recs[1]["game_id"], recs[5]["game_id"]}
    counts = load_records(store, recs, Judge(buggy_verifier(wrong)), echo=lambda _: None)
    assert counts == {"accepted": 6, "quarantined": 2}
    return recs, wrong


def _reverified(lake: str, recs: list[dict], wrong: set[str], appended: list[str]) -> None:
    """The games the buggy engine quarantined are verified with all their rows; nothing is
    half moved; every acknowledged game is stored."""
    from ingest.storage.lake.admin import check

    con = connect(lake, read_only=True, claims=False)
    try:
        assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (0,)
        for gid in wrong:
            (turns,) = con.execute(
                "SELECT count(*) FROM game_turns WHERE game_id = ?", [gid]
            ).fetchone()
            record = next(r for r in recs if r["game_id"] == gid)
            assert turns == len(record["turns"])
        _consistent(con)
        stored = {g for (g,) in con.execute("SELECT game_id::VARCHAR FROM games").fetchall()}
    finally:
        con.close()
    assert appended and set(appended) <= stored
    assert {r["game_id"] for r in recs} <= stored
    result = check(lake)
    assert result["ok"], result


def test_reverify_on_a_lake_finishes_beside_a_server_that_keeps_appending(lake, capsys):
    """`balance reverify --lake`: games a buggy engine quarantined go back to the verified
    tables with their rows, beside a server that uploads without a pause. DuckLake fails a
    batch whose deletes meet an insert committed meanwhile; after a few such tries the batch
    applies with every server's new commits paused (the commit gate), so it finishes, and the
    uploads go on around it: no game half moved, nothing acknowledged lost."""
    store = LakeStore(lake)
    try:
        recs, wrong = _quarantined_by_a_buggy_engine(store)
        with Appender(store) as appender:
            wait_for(lambda: len(appender.stored) >= 3, 60, "the uploads running")
            appender.busy.set()
            rc = cli.main(["reverify", "--lake", lake])
            appender.busy.clear()
        out = capsys.readouterr()
        assert rc == 0, out.err
        assert "checked" in out.out
    finally:
        store.close()
    assert appender.during > 0  # the server kept storing games while it ran
    _reverified(lake, recs, wrong, appender.stored)


def test_admin_reverify_on_a_lake_server_beside_another_that_keeps_appending(lake):
    """POST /v1/admin/reverify on a lake server (in-process app on a LakeStore): it runs on a
    connection of its own, batch by batch, while a second server on the same lake keeps
    uploading; the answer names both moved games."""
    from ingest.server.app import create_app

    first, second = LakeStore(lake), LakeStore(lake)
    try:
        recs, wrong = _quarantined_by_a_buggy_engine(first)
        client = create_app({"STORE": first, "BALANCE_TOKEN": "s3cret"}).test_client()
        with Appender(second) as appender:
            wait_for(lambda: len(appender.stored) >= 3, 60, "the uploads running")
            appender.busy.set()
            reply = client.post("/v1/admin/reverify", headers={"Authorization": "Bearer s3cret"})
            appender.busy.clear()
        assert reply.status_code == 200, reply.get_data(as_text=True)
        summary = reply.get_json()
        assert {c["game_id"] for c in summary["changes"]} == wrong
        assert summary["checked"] >= len(recs)
        assert client.post("/v1/admin/reverify").status_code == 401
    finally:
        second.close()
        first.close()
    assert appender.during > 0
    _reverified(lake, recs, wrong, appender.stored)
