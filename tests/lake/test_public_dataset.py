"""`balance export`: the public dataset of verified games, from a stopped store, a server or a
lake (a PostgreSQL cluster of the test's own: lake_cluster.py; skipped, saying why, without one).

One row a game and one row a turn (and Slide's games, seats and rounds), partitioned by week,
with a README data dictionary that documents every column, a manifest whose row counts and
checksums match the files, and the same bytes whichever source the games were read from.
`balance export` runs in this process (support.balance), but where another process holds the
store.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from support import REPO, AppClient, balance, demo_copy, fresh_slow6, query


@pytest.fixture(scope="module")
def store(tmp_path_factory, demo_db) -> Path:
    return demo_copy(demo_db, tmp_path_factory.mktemp("export-store"))


@pytest.fixture(scope="module")
def exported(tmp_path_factory, store) -> Path:
    out = tmp_path_factory.mktemp("export") / "public"
    r = balance("export", "--db", str(store), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "games" in r.stdout and "turns" in r.stdout
    return out


def test_one_row_a_game_and_a_turn_with_counts_and_checksums(exported, store):
    manifest = json.loads((exported / "manifest.json").read_text())
    want = {
        "games": "SELECT count(*) FROM games",
        "turns": "SELECT count(*) FROM game_turns",
        "slide_games": "SELECT count(*) FROM slide_games",
        "slide_seats": "SELECT count(*) FROM slide_seats",
        "slide_rounds": "SELECT count(*) FROM slide_rounds",
    }
    for name, sql in want.items():
        table = manifest["tables"][name]
        assert table["rows"] == query(store, sql)[0][0] > 0, name
        assert sum(f["rows"] for f in table["files"]) == table["rows"]
        for f in table["files"]:
            path = exported / f["path"]
            assert hashlib.sha256(path.read_bytes()).hexdigest() == f["sha256"]
            assert path.stat().st_size == f["bytes"]
            assert pq.read_metadata(path).num_rows == f["rows"]
            assert f["path"] == f"{name}/week={f['week']}/part-0.parquet"
    sums = (exported / "SHA256SUMS").read_text().splitlines()
    assert len(sums) == sum(len(t["files"]) for t in manifest["tables"].values())
    check = subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=exported)
    assert check.returncode == 0
    assert manifest["source"]["kind"] == "db" and manifest["format"] == "parquet"


def test_the_rows_are_the_stores_games_by_week(exported, store):
    con = duckdb.connect()
    games = con.execute(
        f"SELECT * FROM read_parquet('{exported}/games/*/*.parquet', hive_partitioning = true)"
    ).to_arrow_table()
    # each row is in the partition of its week, a Monday
    for week, day in zip(games.column("week").to_pylist(), games.column("day").to_pylist(),
                         strict=True):  # fmt: skip
        assert week.weekday() == 0 and week <= day < week + timedelta(days=7)
    stored = {
        r[0]: r[1:]
        for r in query(
            store,
            "SELECT game_id::VARCHAR, lineup_0, lineup_1, powers_0, winner, reason, "
            "client_version FROM games",
        )
    }
    got = games.to_pylist()
    assert {g["game_id"] for g in got} == set(stored)
    for g in got:
        lineup_0, lineup_1, powers_0, winner, reason, version = stored[g["game_id"]]
        assert (g["lineup_0"], g["lineup_1"], g["winner"], g["reason"], g["client_version"]) == (
            lineup_0, lineup_1, winner, reason, version,
        )  # fmt: skip
        picks = set(powers_0 or [])
        assert (g["powers_0"].split() if g["powers_0"] else []) == list(powers_0 or [])
        for power in ("double", "dash", "leap", "shield", "freeze"):
            assert g[f"pick_0_{power}"] == (power in picks)
        assert g["draw"] == (winner is None)
    turns = con.execute(
        f"SELECT game_id, turn FROM read_parquet('{exported}/turns/*/*.parquet')"
    ).fetchall()
    assert len(turns) == len(set(turns)) == query(store, "SELECT count(*) FROM game_turns")[0][0]
    # nothing of the server's and nothing quarantined
    names = set(games.column_names)
    assert not names & {"received_at", "record", "ended_at", "content_hash"}
    quarantined = {r[0] for r in query(store, "SELECT game_id::VARCHAR FROM quarantine")}
    assert quarantined and not quarantined & {g["game_id"] for g in got}


def test_the_readme_documents_every_column(exported):
    readme = (exported / "README.md").read_text()
    manifest = json.loads((exported / "manifest.json").read_text())
    for name, table in manifest["tables"].items():
        section = readme.split(f"## {name}\n")[1].split("\n## ")[0]
        assert f"{table['rows']:,} rows" in section
        for col in table["columns"]:
            row = next(
                line for line in section.splitlines() if line.startswith(f"| {col['name']} |")
            )
            meaning = row.split("|")[3].strip()
            assert meaning, f"{name}.{col['name']} is not documented"
    assert "17lands" in readme and "hive_partitioning" in readme


def test_from_to_and_csv(tmp_path, store, exported):
    manifest = json.loads((exported / "manifest.json").read_text())
    weeks = manifest["weeks"]
    first = date.fromisoformat(weeks[1])
    last = first + timedelta(days=13)
    out = tmp_path / "csv"
    r = balance("export", "--db", str(store), "--out", str(out), "--format", "csv",
                "--from", first.isoformat(), "--to", last.isoformat())  # fmt: skip
    assert r.returncode == 0, r.stderr
    got = json.loads((out / "manifest.json").read_text())
    want = query(
        store,
        "SELECT count(*) FROM games WHERE ended_at >= ?::TIMESTAMP AND ended_at < ?::TIMESTAMP",
        [first.isoformat(), (last + timedelta(days=1)).isoformat()],
    )[0][0]
    assert got["tables"]["games"]["rows"] == want and got["from"] == first.isoformat()
    assert set(got["weeks"]) <= {weeks[1], weeks[2], weeks[3]}
    rows = 0
    for f in got["tables"]["games"]["files"]:
        lines = (out / f["path"]).read_text().splitlines()
        assert lines[0].startswith("game_id,week,day,board,")
        rows += len(lines) - 1
    assert rows == want
    # an earlier export is replaced; any other directory is left alone
    again = balance("export", "--db", str(store), "--out", str(out), "--to", weeks[0])
    assert again.returncode == 0 and not list(out.glob("games/*/*.csv"))
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    refused = balance("export", "--db", str(store), "--out", str(other))
    assert refused.returncode == 2 and "other files" in refused.stderr
    assert (other / "notes.txt").read_text() == "mine"
    bad = balance("export", "--db", str(store), "--out", str(tmp_path / "x"), "--from", "monday")
    assert bad.returncode == 2 and "YYYY-MM-DD" in bad.stderr


def test_a_running_server_gives_the_same_bytes(tmp_path, demo_db, exported):
    """--server reads every partition as a whole console download; a week over the download
    limit is fetched by halves, and the files are the same as from the stopped store."""
    work = tmp_path / "srv"
    env = {"SQL_WORKERS": 1, "SQL_DOWNLOAD_MAX_BYTES": "12000"}  # a week of turns is more
    app = AppClient(work, env=env, db=demo_copy(demo_db, work)).start().serve_http()
    try:
        out = tmp_path / "from-server"
        r = balance("export", "--server", app.url, "--out", str(out))
        assert r.returncode == 0, r.stderr
        log = app.output()
    finally:
        app.stop()
    assert "/sql/download.<fmt> 413" in log  # some parts were split
    assert (out / "SHA256SUMS").read_text() == (exported / "SHA256SUMS").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["source"]["kind"] == "server" and manifest["source"]["snapshot_at"]


def test_a_locked_or_missing_store_says_why(tmp_path, store):
    r = balance("export", "--db", str(tmp_path / "none.duckdb"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "no store" in r.stderr
    holder = duckdb.connect(str(store))  # as a running server holds it
    try:
        code = (
            "import sys; from ingest.cli import main; "
            f"sys.exit(main(['export', '--db', {str(store)!r}, '--out', {str(tmp_path / 'o')!r}]))"
        )
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           cwd=REPO, timeout=120)  # fmt: skip
    finally:
        holder.close()
    # DuckDB lets another process open the file read-only only when no one writes it
    assert r.returncode in (0, 2), r.stderr
    if r.returncode == 2:
        assert "--server" in r.stderr
    r = balance("export", "--server", "http://127.0.0.1:9", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "cannot reach" in r.stderr


def _summed(out: Path) -> dict[str, str]:
    """data file -> its SHA-256 (SHA256SUMS)."""
    return dict(
        reversed(line.split("  ", 1)) for line in (out / "SHA256SUMS").read_text().splitlines()
    )


def _counts(out: Path) -> dict[str, int]:
    manifest = json.loads((out / "manifest.json").read_text())
    return {name: t["rows"] for name, t in manifest["tables"].items()}


def test_the_lake_gives_the_same_dataset(tmp_path, demo_db, exported, lake, lake_extensions):
    """The demo store imported into a lake (`balance lake import`), then `balance export
    --lake`: the same files, byte for byte, as from the store file; and an export reads one
    lake snapshot, whatever is committed meanwhile."""
    env = {"BALANCE_LAKE_EXTENSIONS": str(lake_extensions)}
    copy = demo_copy(demo_db, tmp_path / "file")
    r = balance("lake", "import", "--lake", lake, "--db", str(copy), env=env)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "from-lake"
    r = balance("export", "--lake", lake, "--data-path", str(tmp_path / "data"), "--out",
                str(out), env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "games" in r.stdout and "turns" in r.stdout
    assert _counts(out) == _counts(exported) and all(_counts(out).values())
    assert _summed(out) == _summed(exported)  # the same rows, in the same files
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["source"]["kind"] == "lake" and manifest["source"]["snapshot_at"]
    assert isinstance(manifest["source"]["snapshot_id"], int)
    assert "from the lake (snapshot" in (out / "README.md").read_text()
    check = subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=out)
    assert check.returncode == 0

    # one snapshot for the whole export: games committed after it began are not in it
    from analysis.public_dataset import LakeSource, export
    from ingest.server.pipeline import Judge, utcnow
    from ingest.storage.lake import LakeStore

    source = LakeSource(lake)
    try:
        store = LakeStore(lake)
        try:
            judge = Judge()
            added = [fresh_slow6(i) for i in range(3)]
            items = [judge.judge(0, json.dumps(g).encode(), utcnow()).pending for g in added]
            assert store.ingest(items) == ["accepted"] * 3
        finally:
            store.close()
        pinned = export(source, tmp_path / "pinned")
    finally:
        source.close()
    assert manifest["source"]["snapshot_id"] == pinned["source"]["snapshot_id"]
    assert _summed(tmp_path / "pinned") == _summed(exported)
    later = tmp_path / "later"
    r = balance("export", "--lake", lake, "--out", str(later), env=env)
    assert r.returncode == 0, r.stderr
    assert _counts(later)["games"] == _counts(exported)["games"] + 3


def test_a_lake_that_cannot_be_read_says_why(tmp_path, store, lake, lake_extensions):
    env = {"BALANCE_LAKE_EXTENSIONS": str(lake_extensions)}
    out = str(tmp_path / "o")
    r = balance("export", "--lake", lake, "--data-path", str(tmp_path / "elsewhere"), "--out",
                out, env=env)  # fmt: skip
    assert r.returncode == 2 and "--data-path is not this lake's" in r.stderr, r.stderr
    nowhere = "host=127.0.0.1 port=9 dbname=lake user=postgres connect_timeout=5"
    r = balance("export", "--lake", nowhere, "--out", out, env=env)
    assert r.returncode == 2 and "balance export:" in r.stderr, r.stderr
    r = balance("export", "--db", str(store), "--data-path", str(tmp_path), "--out", out)
    assert r.returncode == 2 and "--data-path goes with --lake" in r.stderr
    assert not (tmp_path / "o").exists()
