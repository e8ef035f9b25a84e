"""Real `balance serve --lake` processes on one lake (a PostgreSQL cluster of the test's own):
the same game_ids raced at two servers are stored once, and kill -9 of a server mid-load, in
several cycles, loses no acknowledged game. Skipped, with the reason, where PostgreSQL or the
ducklake extension cannot be had (lake_cluster.py)."""

from __future__ import annotations

import copy
import json
import threading
import time
import uuid

import pytest
from support import examples_dir

pytest.register_assert_rewrite("lake_cluster")
from lake_cluster import LakeServer  # noqa: E402

from ingest.storage.lake import connect  # noqa: E402
from ingest.storage.lake_admin import check  # noqa: E402

pytest_plugins = ["lake_cluster"]  # its fixtures: lake, pg_cluster, lake_extensions
pytestmark = pytest.mark.slow

EXAMPLES = examples_dir()
SLOW6 = [json.loads(x) for x in (EXAMPLES / "slow6-valid.ndjson").read_text().splitlines() if x]
FINAL = {"accepted", "quarantined", "duplicate", "conflict"}


def fresh(i: int) -> dict:
    out = copy.deepcopy(SLOW6[i % len(SLOW6)])
    out["game_id"] = str(uuid.uuid4())
    return out


def line(record: dict) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode()


@pytest.fixture
def servers(lake, tmp_path):
    """start(env=None) -> a started server on the test's lake; all are stopped at the end."""
    started: list[LakeServer] = []

    def start(env: dict | None = None) -> LakeServer:
        conf = {"BALANCE_WORKERS": "1", "BALANCE_LAKE_LEASE": "3", **(env or {})}
        server = LakeServer(tmp_path / f"server{len(started)}", lake, env=conf)
        server.args = ["--threads", "4"]
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


def send_until_final(server: LakeServer, records: list[dict], deadline: float) -> list[str]:
    """POST the records as one batch, again after a 503 (Retry-After), until every verdict is
    final; the verdicts."""
    while True:
        reply = server.upload([line(r) for r in records])
        if reply.status == 200:
            verdicts = [r["verdict"] for r in reply.json()["results"]]
            assert set(verdicts) <= FINAL, reply.body
            return verdicts
        assert reply.status == 503, (reply.status, reply.body)
        assert time.monotonic() < deadline, "503 for too long"
        time.sleep(min(2.0, float(reply.headers.get("retry-after", "1"))) / 4)


def stored_ids(catalog: str) -> list[str]:
    con = connect(catalog, claims=False)
    try:
        return [g for (g,) in con.execute("SELECT game_id::VARCHAR FROM raw_records").fetchall()]
    finally:
        con.close()


def test_same_game_ids_raced_at_two_servers_are_stored_once(servers, lake):
    a, b = servers(), servers()
    records = [fresh(i) for i in range(150)]
    chunks, i = [], 0
    while i < len(records):  # single records and batches
        n = (1, 5, 20)[len(chunks) % 3]
        chunks.append(records[i : i + n])
        i += n
    verdicts: dict[str, list[str]] = {r["game_id"]: [] for r in records}
    lock = threading.Lock()
    go = threading.Barrier(4)
    deadline = time.monotonic() + 300

    def client(server, mine):
        go.wait()
        for chunk in mine:
            out = send_until_final(server, chunk, deadline)
            with lock:
                for r, v in zip(chunk, out, strict=True):
                    verdicts[r["game_id"]].append(v)

    # both servers get every chunk at the same moment, two connections each
    threads = [
        threading.Thread(target=client, args=(s, chunks[k::2])) for s in (a, b) for k in (0, 1)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for gid, vs in verdicts.items():
        assert sorted(vs) == ["accepted", "duplicate"], (gid, vs)
    # a retry at either server is duplicate, an altered record conflict
    altered = copy.deepcopy(records[0])
    altered["client"]["version"] += ".1"
    assert send_until_final(a, [records[1], altered], deadline) == ["duplicate", "conflict"]
    assert send_until_final(b, [altered, records[2]], deadline) == ["conflict", "duplicate"]
    result = check(lake)
    assert result["ok"] and result["rows"]["raw_records"] == 150, result
    assert sorted(stored_ids(lake)) == sorted(verdicts)


def test_kill_9_mid_load_loses_no_acknowledged_game(servers, lake):
    """Server a is killed (SIGKILL) while loading, three times, and restarted; b stays. Every
    game a acknowledged is in the lake; every game whose answer was lost is then sent to b,
    which stores it or finds it stored (never a conflict): in the end each game once."""
    a, b = servers(), servers()
    sent: dict[str, dict] = {}
    acknowledged: set[str] = set()
    lost: list[dict] = []  # no answer: stored or not, unknown
    counter = iter(range(10**9))
    for cycle in range(3):
        stop = threading.Event()

        def load(server, stop=stop):
            while not stop.is_set():
                batch = [fresh(next(counter)) for _ in range(20)]
                for r in batch:
                    sent[r["game_id"]] = r
                try:
                    reply = server.upload([line(r) for r in batch], timeout=60)
                except OSError:
                    lost.extend(batch)
                    return
                if reply.status != 200:
                    lost.extend(batch)  # 503 while it stops: nothing stored, resent below
                    continue
                for r, res in zip(batch, reply.json()["results"], strict=True):
                    assert res["verdict"] == "accepted", res
                    acknowledged.add(r["game_id"])

        loaders = [threading.Thread(target=load, args=(a,)) for _ in range(2)]
        loaders.append(threading.Thread(target=load, args=(b,)))
        for t in loaders:
            t.start()
        time.sleep(2.0 + cycle)
        a.kill()
        stop.set()
        for t in loaders:
            t.join(120)
        held = set(stored_ids(lake))
        assert acknowledged <= held, f"cycle {cycle}: {len(acknowledged - held)} lost"
        a.start()
    assert len(acknowledged) > 100
    deadline = time.monotonic() + 300
    for start in range(0, len(lost), 25):  # answers lost in the kills: b settles them
        chunk = lost[start : start + 25]
        for v in send_until_final(b, chunk, deadline):
            assert v in ("accepted", "duplicate"), v
    result = check(lake)
    assert result["ok"], result
    ids = stored_ids(lake)
    assert len(ids) == len(set(ids)) == len(sent)
    assert set(ids) == set(sent)


def _sql(server: LakeServer, text: str) -> list:
    reply = server.request(
        "POST", "/sql/api", json.dumps({"sql": text}).encode(), {"Content-Type": "application/json"}
    )
    assert reply.status == 200, reply.body[:300]
    return json.loads(reply.body)["rows"]


def test_every_servers_dashboard_reads_the_tables_the_jobs_runner_published(servers, lake):
    """The jobs run apart from the servers (`balance jobs run --lake`); both servers' dashboards
    and SQL consoles read the same published run, and the next run reaches both."""
    from ingest import cli

    a, b = (servers({"BALANCE_SNAPSHOT_MAX_AGE": "1"}) for _ in range(2))
    deadline = time.monotonic() + 120
    first = [fresh(i) for i in range(40)]
    assert send_until_final(a, first[:20], deadline) == ["accepted"] * 20
    assert send_until_final(b, first[20:], deadline) == ["accepted"] * 20
    assert cli.main(["jobs", "run", "--lake", lake]) == 0

    def published(server: LakeServer, run_id: int) -> list:
        """(run, games) the server reads once its snapshot has caught up with `run_id`."""
        while time.monotonic() < deadline:
            rows = _sql(server, "SELECT max(run_id), max(games_read) FROM agg_runs")
            if rows[0][0] == run_id:
                return rows[0]
            time.sleep(0.5)
        raise AssertionError(f"{server.url} never showed run {run_id}")

    assert published(a, 1) == published(b, 1) == [1, 40]
    for server in (a, b):
        page = server.get("/dashboard/p/overview?mode=&client_version=").body.decode()
        assert '<b id="coverage">40</b>' in page, page[:2000]

    assert send_until_final(b, [fresh(i) for i in range(40, 55)], deadline) == ["accepted"] * 15
    assert cli.main(["jobs", "run", "--lake", lake]) == 0
    assert published(a, 2) == published(b, 2) == [2, 55]
