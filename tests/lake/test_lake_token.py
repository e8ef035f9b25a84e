"""The lake's commit token (ingest/storage/lake/token.py) on a real PostgreSQL catalog: one
holder at a time, a waiter that costs no CPU while it waits, a dead holder's token freed, a
stuck holder or an unreachable catalog never blocking a commit, and the store's commits
waiting for it. Skipped, with the reason, where PostgreSQL cannot be had (lake_cluster.py)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
import uuid

import orjson
import pytest
from support import examples_dir

from ingest.server.pipeline import Judge, utcnow
from ingest.storage.lake import LakeStore, connect, conninfo
from ingest.storage.lake import token as lake_token
from ingest.storage.lake.token import CommitToken

RECORD = json.loads((examples_dir() / "slow6-valid.ndjson").read_text().splitlines()[0])


@pytest.fixture
def stores(lake):
    """open(**kw) -> a LakeStore on the test's lake; all are closed at the end."""
    opened: list[LakeStore] = []

    def open_store(**kw) -> LakeStore:
        opened.append(LakeStore(lake, **kw))
        return opened[-1]

    yield open_store
    for store in opened:
        with contextlib.suppress(Exception):
            store.close()


def _stored(catalog: str) -> int:
    con = connect(catalog, claims=False)
    try:
        return con.execute("SELECT count(*) FROM raw_records").fetchone()[0]
    finally:
        con.close()


def _games(n: int):
    judge = Judge()
    out = []
    for _ in range(n):
        raw = orjson.dumps(dict(RECORD, game_id=str(uuid.uuid4())))
        out.append(judge.judge(0, raw, utcnow()).pending)
    return out


def _in_thread(fn) -> tuple[threading.Thread, dict]:
    result: dict = {}

    def run():
        began = time.perf_counter()
        cpu = time.thread_time()
        result["value"] = fn()
        result["seconds"] = time.perf_counter() - began
        result["cpu"] = time.thread_time() - cpu

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def _try_hold(token: CommitToken) -> bool:
    with token.held() as got:
        return got


def test_one_holder_at_a_time_and_the_waiter_spins_no_cpu(lake):
    holder, waiter = CommitToken(conninfo(lake)), CommitToken(conninfo(lake))
    try:
        with holder.held() as got:
            assert got
            thread, result = _in_thread(lambda: _try_hold(waiter))
            time.sleep(1.5)
            assert thread.is_alive(), "the second holder did not wait for the first"
        thread.join(10)
        assert result["value"] is True
        assert result["seconds"] >= 1.4
        # the wait is a blocked socket read: the old token's wait spun at a core's speed
        assert result["cpu"] < 0.2, result
        assert waiter.counters == {"held": 1, "missed": 0}
    finally:
        holder.close()
        waiter.close()


def test_a_killed_holders_token_is_free_at_once(lake):
    script = (
        "import sys, time, psycopg\n"
        "con = psycopg.connect(sys.argv[1])\n"
        f"con.execute('SELECT pg_advisory_xact_lock({lake_token.TOKEN_KEY})')\n"
        "print('held', flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, conninfo(lake)], stdout=subprocess.PIPE, text=True
    )
    token = CommitToken(conninfo(lake), wait=30)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        thread, result = _in_thread(lambda: _try_hold(token))
        time.sleep(1.0)
        assert thread.is_alive(), "the token was not held by the other process"
        proc.kill()  # kill -9: no unlock is ever sent
        thread.join(60)
        # True: it got the token before its own 30 s wait ran out, so it was freed with the
        # dead holder's session (waiting it out would have given False)
        assert result["value"] is True, "the dead holder's token was not freed with its session"
    finally:
        proc.kill()
        proc.wait()
        token.close()


def test_a_stuck_holder_delays_a_commit_by_the_wait_only(lake):
    holder, waiter = CommitToken(conninfo(lake)), CommitToken(conninfo(lake), wait=1.0)
    try:
        with holder.held():
            began = time.perf_counter()
            with waiter.held() as got:
                assert got is False  # given up while the holder still holds it
            assert time.perf_counter() - began >= 0.9  # after its wait, not before
        assert waiter.counters["missed"] == 1
        with waiter.held() as got:  # the same connection serves the next commit
            assert got is True
    finally:
        holder.close()
        waiter.close()


def test_an_unreachable_catalog_costs_one_try_then_nothing(monkeypatch):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = CommitToken(f"host=127.0.0.1 port={port} user=postgres dbname=none")
    with token.held() as got:
        assert got is False
    tries = []
    monkeypatch.setattr(lake_token.psycopg, "connect", lambda *a, **k: tries.append(a))
    with token.held() as got:  # within RECONNECT_AFTER: not tried again
        assert got is False
    assert tries == []
    assert token.counters == {"held": 0, "missed": 2}


def test_the_store_commits_only_with_the_token_or_after_the_wait(stores, lake):
    store = stores(staging=False)  # each upload waits for its own lake commit
    assert store._token is not None
    store._token.wait = 5.0
    holder = CommitToken(conninfo(lake))
    try:
        with holder.held():
            thread, result = _in_thread(lambda: store.ingest(_games(3)))
            time.sleep(1.0)
            assert thread.is_alive(), "the store committed while another held the token"
        thread.join(10)
        assert result["value"] == ["accepted"] * 3
        # it took the token once released, rather than going ahead after its own wait
        assert store._token.counters["missed"] == 0, "the store waited past the token's release"
        with holder.held():  # held past the store's wait: the commit goes ahead without
            thread, result = _in_thread(lambda: store.ingest(_games(2)))
            thread.join(15)
            assert result["value"] == ["accepted"] * 2
            assert result["seconds"] >= 4.9
        assert store._token.counters["missed"] == 1
    finally:
        holder.close()
    assert _stored(lake) == 5


def test_two_stores_share_the_token_and_store_every_game(stores):
    one, two = stores(staging=False), stores(staging=False)
    batches = {store: [_games(50) for _ in range(4)] for store in (one, two)}

    def send(store):
        return [outcome for batch in batches[store] for outcome in store.ingest(batch)]

    threads = [_in_thread(lambda s=s: send(s)) for s in (one, two)]
    for thread, _ in threads:
        thread.join(60)
    for _, result in threads:
        assert result["value"] == ["accepted"] * 200
    assert one._token is not None and two._token is not None
    assert one._token.counters["held"] >= 4 and two._token.counters["held"] >= 4
    assert one._token.counters["missed"] == two._token.counters["missed"] == 0
    assert _stored(one.catalog) == 400
    # operators see it in /metrics, as counters
    from ingest.server.app import create_app

    text = create_app({"STORE": one}).test_client().get("/metrics").get_data(as_text=True)
    assert "# TYPE balance_lake_commits_with_token_total counter" in text
    held = one._token.counters["held"]
    assert f"\nbalance_lake_commits_with_token_total {held}\n" in text
    assert "\nbalance_lake_commits_without_token_total 0\n" in text
    assert "# TYPE balance_stored_records gauge" in text


def test_the_token_can_be_turned_off(lake):
    from ingest.server.app import open_store
    from ingest.server.config import load

    store = open_store(load({"BALANCE_LAKE": lake}, environ={"BALANCE_LAKE_COMMIT_TOKEN": "0"}))
    try:
        assert isinstance(store, LakeStore) and store._token is None
        assert store.ingest(_games(2)) == ["accepted"] * 2
        assert store.gauges()["balance_lake_commits_without_token_total"][1] == 0
    finally:
        store.close()
    on = open_store(load({"BALANCE_LAKE": lake}, environ={}))
    try:
        assert isinstance(on, LakeStore) and on._token is not None  # on by default
    finally:
        on.close()
