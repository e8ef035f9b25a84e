"""Crash safety and concurrency: what the server acknowledged is stored exactly once."""

from __future__ import annotations

import json
import os
import random
import signal
import threading
from collections import Counter, defaultdict

import pytest
from support import (
    JUDGES,
    SLIDE,
    SLOW6,
    children,
    comm,
    descendants,
    dumps,
    ended,
    fresh,
    gone,
    query,
    wait_for,
)

pytestmark = pytest.mark.slow  # real servers, killed and restarted
# Every server here judges in processes (JUDGES), as deployed: the crashes are of that tree.


def pool(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [fresh(rng.choice(SLOW6 if i % 4 else SLIDE)) for i in range(n)]


def rows_per_game(db) -> dict[str, int]:
    """game_id -> rows in the game tables it should have exactly one set of."""
    out = Counter()
    for table in ("games", "slide_games"):
        for (gid,) in query(db, f"SELECT game_id::VARCHAR FROM {table}"):
            out[gid] += 1
    return out


def test_sigkill_loses_no_acknowledged_game_and_doubles_none(server_factory):
    server = server_factory(env=JUDGES)
    records = pool(1500, seed=1)
    acked: set[str] = set()  # answered 2xx accepted
    unsure: set[str] = set()  # sent when the server died: stored or not
    stop = threading.Event()

    def load():
        rng = random.Random(2)
        i = 0
        while not stop.is_set() and i < len(records):
            batch = records[i : i + rng.randint(1, 40)]
            i += len(batch)
            try:
                r = server.upload(batch, timeout=10)
            except OSError:
                unsure.update(x["game_id"] for x in batch)
                return
            if r.status != 200:
                unsure.update(x["game_id"] for x in batch)
                continue
            for rec, res in zip(batch, r.json()["results"], strict=True):
                assert res["verdict"] == "accepted", res
                acked.add(rec["game_id"])

    threads = [threading.Thread(target=load) for _ in range(1)]
    for t in threads:
        t.start()
    wait_for(lambda: len(acked) >= 150, 60, "150 games acknowledged", every=0.01)
    # the SQL console's workers too: forked from the judges' fork server, not children of the
    # process that holds the file, they must still not outlive it
    r = server.post("/sql/api", json.dumps({"sql": "SELECT 42 AS x"}), "application/json")
    assert r.status == 200 and r.json()["rows"] == [[42]], r.body[:300]
    workers = descendants(server.proc.pid)
    assert len(workers) >= 3  # the worker holding the file, and judges under it
    assert [p for p in workers if comm(p) == "balance-sql"], workers
    server.kill()  # SIGKILL mid-load: no checkpoint, no clean shutdown
    stop.set()
    for t in threads:
        t.join()
    assert len(acked) >= 150
    # its worker (which holds the DuckDB file), judges and SQL workers do not outlive it
    wait_for(lambda: gone(workers), 15, "the worker, judges and SQL workers gone")

    server.start()  # recovers from the WAL
    again = Counter()
    for i in range(0, len(records), 200):
        batch = records[i : i + 200]
        for rec, res in zip(batch, server.upload(batch).json()["results"], strict=True):
            again[res["verdict"]] += 1
            if rec["game_id"] in acked:
                assert res["verdict"] == "duplicate", (rec["game_id"], res)
            else:
                assert res["verdict"] in ("accepted", "duplicate"), res
    assert again["conflict"] == 0
    server.stop()

    stored = Counter(g for (g,) in query(server.db, "SELECT game_id::VARCHAR FROM raw_records"))
    assert set(stored) == {r["game_id"] for r in records}
    assert max(stored.values()) == 1
    per_game = rows_per_game(server.db)
    assert set(per_game) == set(stored) and max(per_game.values()) == 1
    turns = dict(query(server.db, "SELECT game_id::VARCHAR, count(*) FROM game_turns GROUP BY 1"))
    for rec in records:
        if rec["game"] == "slow6":
            assert turns[rec["game_id"]] == len(rec["turns"])


def test_concurrent_clients_with_overlapping_ids_lose_and_double_nothing(server_factory):
    server = server_factory(env=JUDGES, args=["--threads", "12"])
    records = pool(240, seed=3)
    # a conflicting twin for every tenth record: same id, different content
    twins = []
    for rec in records[::10]:
        twin = json.loads(json.dumps(rec))
        twin["client"]["version"] = "0.0.0-twin"
        twins.append(twin)
    results: dict[str, list[tuple[str, bytes]]] = defaultdict(list)  # id -> (verdict, content)
    lock = threading.Lock()
    errors = []

    def client(seed: int):
        rng = random.Random(seed)
        mine = records + twins
        rng.shuffle(mine)
        mine = mine[: len(mine) * 2 // 3]
        i = 0
        while i < len(mine):
            batch = mine[i : i + rng.choice([1, 1, 3, 10, 25])]
            i += len(batch)
            try:
                if len(batch) == 1:
                    r = server.post("/v1/games", dumps(batch[0]), "application/json")
                else:
                    r = server.upload(batch)
                assert r.status == 200, r.body
                with lock:
                    for rec, res in zip(batch, r.json()["results"], strict=True):
                        results[rec["game_id"]].append((res["verdict"], dumps(rec)))
            except Exception as exc:  # surfaced in the main thread
                errors.append(exc)
                return

    threads = [threading.Thread(target=client, args=(s,)) for s in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]

    winners = {}
    for gid, answers in results.items():
        first = [content for verdict, content in answers if verdict == "accepted"]
        assert len(first) == 1, (gid, answers)  # exactly one upload stored each game
        winners[gid] = first[0]
        for verdict, content in answers:
            if verdict != "accepted":
                assert verdict == ("duplicate" if content == first[0] else "conflict")
    server.stop()
    stored = dict(query(server.db, "SELECT game_id::VARCHAR, count(*) FROM raw_records GROUP BY 1"))
    assert set(stored) == set(results) and set(stored.values()) == {1}
    per_game = rows_per_game(server.db)
    assert set(per_game) == set(results) and set(per_game.values()) == {1}
    # the stored version of a twinned game is the one its accepted answer named
    versions = dict(query(server.db, "SELECT game_id::VARCHAR, client_version FROM games"))
    for gid, content in winners.items():
        if gid in versions:
            assert versions[gid] == json.loads(content)["client"]["version"]


def test_sigterm_stores_every_acknowledged_game_then_exits_cleanly(server_factory):
    """SIGTERM: the worker loads the journal into DuckDB, checkpoints, and every process of
    the server exits with status 0, leaving the file alone (no journal segment, no WAL)."""
    server = server_factory(env=JUDGES)
    records = pool(60, seed=3)
    assert {x["verdict"] for x in server.upload(records).json()["results"]} == {"accepted"}
    processes = descendants(server.proc.pid)
    assert server.stop() == 0
    wait_for(lambda: gone(processes), 15, "the server's processes gone")
    assert sorted(p.name for p in server.db.parent.glob(server.db.name + "*")) == [server.db.name]
    stored = {g for (g,) in query(server.db, "SELECT game_id::VARCHAR FROM raw_records")}
    assert stored == {r["game_id"] for r in records}
    assert set(rows_per_game(server.db)) == stored


def test_every_judge_killed_then_uploads_are_stored_and_one_sigterm_stops_cleanly(
    server_factory,
):
    """SIGKILL of every process under the worker (its judges and their fork server: what an
    out-of-memory kill or a careless `pkill python` leaves): the next uploads are judged and
    stored, and one SIGTERM still closes the store cleanly. The judge pool started again
    used to keep one judge that never got its stop sentinel, and the stop waited for it
    until BALANCE_STOP_TIMEOUT, then left without a clean close (workers.JudgePool.close)."""
    server = server_factory(env={**JUDGES, "BALANCE_STOP_TIMEOUT": "60"})  # past the harness's 30 s
    (worker,) = [p for p in children(server.proc.pid) if children(p)]
    under = descendants(worker)
    assert len(under) >= 3, under  # the fork server and its judges (and the tracker)
    for pid in under:
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: ended(under), 15, "the judges killed")
    records = pool(40, seed=5)
    for batch in (records[:1], records[1:2], records[2:]):  # judged here, then in the pool
        assert {x["verdict"] for x in server.upload(batch).json()["results"]} == {"accepted"}
    processes = [server.proc.pid, *descendants(server.proc.pid)]
    assert server.stop() == 0
    assert "without a clean close" not in server.output()
    wait_for(lambda: gone(processes), 15, "the server's processes gone")
    stored = {g for (g,) in query(server.db, "SELECT game_id::VARCHAR FROM raw_records")}
    assert stored == {r["game_id"] for r in records}
