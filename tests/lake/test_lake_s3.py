"""A lake whose data path is on S3-compatible object storage: moto's S3 server on loopback
(a real HTTP server speaking the S3 protocol), the PostgreSQL catalog of lake_cluster.py, and
DuckDB's httpfs extension from its wheel. The same contract as on a directory: verdicts and
rows, a game_id stored once across two servers, the jobs' tables, the read-only console at a
pinned version, maintenance. Credentials come from AWS_* and BALANCE_S3_* (docs/lake.md)."""

from __future__ import annotations

import copy
import json
import uuid

import orjson
import pytest
from support import examples_dir

from ingest.server.pipeline import Judge, utcnow

pytestmark = pytest.mark.slow  # a PostgreSQL cluster and an S3 server

EXAMPLES = examples_dir()
SLOW6 = [json.loads(x) for x in (EXAMPLES / "slow6-valid.ndjson").read_text().splitlines() if x]
BAD = [json.loads(x) for x in (EXAMPLES / "slow6-invalid.ndjson").read_text().splitlines() if x]
JUDGE = Judge()
BUCKET = "balance-lake"


def fresh(record: dict) -> dict:
    out = copy.deepcopy(record)
    out["game_id"] = str(uuid.uuid4())
    return out


def pending(record: dict):
    return JUDGE.judge(0, orjson.dumps(record), utcnow()).pending


@pytest.fixture(scope="module")
def s3_server():
    """moto's S3 server on a free loopback port: (endpoint host:port, boto3 client)."""
    boto3 = pytest.importorskip("boto3")
    server_mod = pytest.importorskip("moto.server")
    from lake_cluster import free_port

    port = free_port()
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    client = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{port}",
        aws_access_key_id="test-key",
        aws_secret_access_key="test-secret",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=BUCKET)
    yield f"127.0.0.1:{port}", client
    server.stop()


@pytest.fixture
def s3_lake(pg_cluster, s3_server, monkeypatch):
    """A new lake with its data on the S3 server: (catalog, data path URL, boto3 client)."""
    from ingest.storage.lake.admin import init_lake

    endpoint, client = s3_server
    for name, value in {
        "AWS_ACCESS_KEY_ID": "test-key",
        "AWS_SECRET_ACCESS_KEY": "test-secret",
        "AWS_REGION": "us-east-1",
        "BALANCE_S3_ENDPOINT": endpoint,
        "BALANCE_S3_URL_STYLE": "path",
        "BALANCE_S3_USE_SSL": "false",
    }.items():
        monkeypatch.setenv(name, value)
    prefix = f"lake-{uuid.uuid4().hex[:8]}"
    catalog = pg_cluster.create_db(prefix.replace("-", "_"))
    data = f"s3://{BUCKET}/{prefix}/"
    init_lake(catalog, data)
    return catalog, data, client, prefix


def objects(client, prefix: str) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return [o["Key"] for page in pages for o in page.get("Contents", [])]


def test_servers_store_games_on_object_storage_once_each(s3_lake):
    from ingest.storage.lake import LakeStore, connect
    from ingest.storage.lake.admin import check

    catalog, data, client, prefix = s3_lake
    one, two = LakeStore(catalog), LakeStore(catalog)
    try:
        games = [fresh(r) for r in SLOW6[:6]]
        assert one.ingest([pending(g) for g in games]) == ["accepted"] * 6
        again = [pending(g) for g in games[:3]]
        assert two.ingest(again) == ["duplicate"] * 3  # the other server's claims
        bad = fresh(BAD[0])
        assert two.ingest([pending(bad)]) == ["quarantined"]
        altered = copy.deepcopy(games[4])
        altered["client"]["version"] += ".1"
        assert two.ingest([pending(altered)]) == ["conflict"]
        one.flush_rows()
        two.flush_rows()
    finally:
        two.close()
        one.close()
    keys = objects(client, prefix)
    # (a table of few rows a commit stays inlined in the catalog: game_turns has many)
    assert any("/game_turns/" in k for k in keys) and all(k.endswith(".parquet") for k in keys)
    con = connect(catalog, read_only=True, claims=False)
    try:
        (n,) = con.execute("SELECT count(DISTINCT game_id) FROM game_turns").fetchone()
        assert n == 6
        assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (1,)
        assert con.execute("SELECT count(*) FROM raw_records").fetchone() == (7,)
    finally:
        con.close()
    assert check(catalog)["ok"]


def test_jobs_console_and_maintenance_on_object_storage(s3_lake, capsys, tmp_path):
    """The jobs' tables on the S3 lake; `balance sql --lake` and a server's pinned snapshot
    read it locked (the bucket only through the lake's tables); maintenance compacts it and
    every count stays."""
    from dashboard.snapshot import Snapshots
    from ingest import cli
    from ingest.storage.lake import LakeStore, connect
    from ingest.storage.lake.admin import maintain

    catalog, data, client, prefix = s3_lake
    store = LakeStore(catalog, staging=False)  # a lake commit per upload: small files
    try:
        for start in range(0, 30, 5):  # six commits: six small files a table
            batch = [pending(fresh(SLOW6[i % len(SLOW6)])) for i in range(start, start + 5)]
            assert store.ingest(batch) == ["accepted"] * 5
        assert cli.main(["jobs", "run", "--lake", catalog]) == 0
        capsys.readouterr()
        count = "SELECT count(DISTINCT game_id) AS n FROM game_turns"
        assert cli.main(["sql", "--lake", catalog, "--csv", count]) == 0
        assert capsys.readouterr().out.splitlines() == ["n", "30"]
        hostile = f"SELECT * FROM read_parquet('{data}**/*.parquet')"
        assert cli.main(["sql", "--lake", catalog, hostile]) == 1
        err = capsys.readouterr().err
        assert "read_parquet" in err and "test-secret" not in err
        assert cli.main(["sql", "--lake", catalog, "SELECT which_secret('s3://x/y', 's3')"]) == 1
        capsys.readouterr()
        snaps = Snapshots(store, tmp_path / "snaps", workers=1, max_age=3600)
        try:
            runs = snaps.run("SELECT max(games_read) AS g FROM agg_runs").table.to_pylist()
            assert runs == [{"g": 30}]
            assert snaps.run(count).table.to_pylist() == [{"n": 30}]
        finally:
            snaps.close()
    finally:
        store.close()
    before = len([k for k in objects(client, prefix) if "/game_turns/" in k])
    assert before >= 6
    maintain(catalog, echo=lambda _: None)
    con = connect(catalog, read_only=True, claims=False)
    try:
        assert con.execute(count).fetchone() == (30,)
        (files,) = con.execute(
            "SELECT count(*) FROM ducklake_list_files('lake', 'game_turns')"
        ).fetchone()
        assert files < before  # merged
    finally:
        con.close()
