"""Real `balance serve --lake` processes on one lake (a PostgreSQL cluster of the test's own):
the same game_ids raced at two servers are stored once, and kill -9 of a server mid-load, in
several cycles, loses no acknowledged game. Skipped, with the reason, where PostgreSQL or the
ducklake extension cannot be had (lake_cluster.py)."""

from __future__ import annotations

import copy
import json
import os
import random
import signal
import threading
import time
import uuid
from pathlib import Path

import pytest
from support import descendants, example_lines, examples_dir, wait_for

pytest.register_assert_rewrite("lake_cluster")
from lake_cluster import Cluster, LakeServer, Reply  # noqa: E402

from ingest.storage.lake import connect, conninfo  # noqa: E402
from ingest.storage.lake.admin import check, init_lake  # noqa: E402
from ingest.storage.lake.staging import wait_loaded  # noqa: E402

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


def loaded(catalog: str) -> str:
    """`catalog`, once the loader has moved every game acknowledged so far into the lake."""
    assert wait_loaded(conninfo(catalog), 120), "the lake's loader did not catch up"
    return catalog


def stored_ids(catalog: str) -> list[str]:
    con = connect(loaded(catalog), claims=False)
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
    result = check(loaded(lake))
    assert result["ok"] and result["rows"]["raw_records"] == 150, result
    assert sorted(stored_ids(lake)) == sorted(verdicts)


def _post_until_final(server: LakeServer, records: list[dict], deadline: float) -> list[dict]:
    """One record as application/json, several as NDJSON; again after a 503; the results."""
    body = line(records[0]) if len(records) == 1 else b"\n".join(map(line, records)) + b"\n"
    ctype = "application/json" if len(records) == 1 else "application/x-ndjson"
    while True:
        reply = server.request("POST", "/v1/games", body, {"Content-Type": ctype})
        if reply.status == 200:
            return reply.json()["results"]
        assert reply.status == 503, (reply.status, reply.body)
        assert time.monotonic() < deadline, "503 for too long"
        time.sleep(0.25)


def _records_total(server: LakeServer) -> dict[str, int]:
    out: dict[str, int] = {}
    for text in server.get("/metrics").body.decode().splitlines():
        if text.startswith("balance_records_total{"):
            verdict = text.split('verdict="', 1)[1].split('"', 1)[0]
            out[verdict] = int(float(text.split()[-1]))
    return out


def test_every_example_gets_its_verdict_at_any_of_three_servers(servers, lake):
    """The spec's examples (fresh ids), single records and batches spread over three servers
    at once: every verdict right (quarantine's rule and turn, a rejection's field), every
    stored game in the lake once with its rule and turn, nothing of a rejected line stored;
    every retry, at another server, duplicate; /metrics counts what each server answered."""
    trio = [servers() for _ in range(3)]
    cases: list[tuple[dict, dict]] = []  # (record, expected)
    for name in ("slow6-valid", "slide-valid"):
        cases += [(json.loads(x), {"verdict": "accepted"}) for x in example_lines(name)]
    for name in ("slow6-invalid", "slide-invalid"):
        expected = [json.loads(x) for x in example_lines(f"{name}.expected")]
        records = [json.loads(x) for x in example_lines(name)]
        cases += [
            (r, {"verdict": "quarantined", **e}) for r, e in zip(records, expected, strict=True)
        ]
    cases = [({**r, "game_id": str(uuid.uuid4())}, e) for r, e in cases]
    random.Random(19).shuffle(cases)
    chunks, i = [], 0
    while i < len(cases):
        n = (1, 7, 1, 3)[len(chunks) % 4]
        chunks.append(cases[i : i + n])
        i += n
    results: dict[str, dict] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + 300

    def client(k: int, shift: int) -> None:
        for chunk in chunks[k::3]:
            out = _post_until_final(trio[(k + shift) % 3], [r for r, _ in chunk], deadline)
            with lock:
                for (r, _), res in zip(chunk, out, strict=True):
                    results.setdefault(r["game_id"], {})[shift] = res

    for shift in (0, 1):  # then every chunk again, each at another server than the first time
        threads = [threading.Thread(target=client, args=(k, shift)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    quarantined = set()
    for record, exp in cases:
        first, again = results[record["game_id"]][0], results[record["game_id"]][1]
        assert first["verdict"] == exp["verdict"], (exp, first)
        assert first["game_id"] == record["game_id"]
        if exp["verdict"] == "quarantined":
            assert first["rule"] in [exp["rule"], *exp["also_acceptable"]], (exp, first)
            assert first["turn"] == exp["turn"], (exp, first)
            quarantined.add((record["game_id"], first["rule"], first["turn"]))
        assert again["verdict"] == "duplicate", (exp, again)

    malformed = example_lines("malformed")
    expected = [json.loads(x) for x in example_lines("malformed.expected")]
    body = ("\n".join(malformed) + "\n").encode()
    reply = trio[2].request("POST", "/v1/games", body, {"Content-Type": "application/x-ndjson"})
    assert reply.status == 200, reply.body
    for res, exp in zip(reply.json()["results"], expected, strict=True):
        assert res["verdict"] == "rejected" and res["field"] == exp["field"], (exp, res)

    con = connect(loaded(lake), claims=False)
    try:
        counts = {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("raw_records", "games", "slide_games", "quarantine")
        }
        held = {
            (g, rule, turn)
            for g, rule, turn in con.execute(
                "SELECT game_id::VARCHAR, rule, turn FROM quarantine"
            ).fetchall()
        }
    finally:
        con.close()
    accepted = {
        name: sum(1 for r, e in cases if e["verdict"] == "accepted" and r.get("game") == name)
        for name in ("slow6", "slide")
    }
    assert counts == {
        "raw_records": len(cases),  # the rejected lines left nothing
        "games": len(cases) - len(quarantined) - accepted["slide"],
        "slide_games": accepted["slide"],
        "quarantine": len(quarantined),
    }, (counts, accepted)
    assert held == quarantined
    assert check(loaded(lake))["ok"]
    totals: dict[str, int] = {}
    for server in trio:
        for verdict, n in _records_total(server).items():
            totals[verdict] = totals.get(verdict, 0) + n
    assert {v: n for v, n in totals.items() if n} == {
        "accepted": len(cases) - len(quarantined),
        "quarantined": len(quarantined),
        "duplicate": len(cases),
        "rejected": len(malformed),
    }, totals


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
        # killed mid-load: once this cycle's uploads are acknowledged (a later point each cycle)
        enough = len(acknowledged) + 40 * (cycle + 1)
        wait_for(lambda n=enough: len(acknowledged) >= n, 120, "uploads under way")
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
    result = check(loaded(lake))
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

        def caught_up():
            rows = _sql(server, "SELECT max(run_id), max(games_read) FROM agg_runs")
            return rows[0] if rows[0][0] == run_id else None

        within = max(0.0, deadline - time.monotonic())
        return wait_for(caught_up, within, f"{server.url} showing run {run_id}", every=0.5)

    assert published(a, 1) == published(b, 1) == [1, 40]
    for server in (a, b):
        page = server.get("/dashboard/p/overview?mode=&client_version=").body.decode()
        assert '<b id="coverage">40</b>' in page, page[:2000]

    assert send_until_final(b, [fresh(i) for i in range(40, 55)], deadline) == ["accepted"] * 15
    assert cli.main(["jobs", "run", "--lake", lake]) == 0
    assert published(a, 2) == published(b, 2) == [2, 55]


def test_a_catalog_outage_is_a_503_that_names_no_catalog_and_uploads_resume(
    lake_extensions, tmp_path
):
    """PostgreSQL stopped under a running server: uploads get 503 + Retry-After, and neither
    that answer nor /healthz shows the catalog's host, port, user, password or the data path
    (the server's log has the error, the password masked); PostgreSQL back, the same upload
    is stored."""
    cluster = Cluster.start()  # its own: this test stops it
    server = None
    try:
        # trust authentication ignores the password; it must reach no client and no log
        catalog = cluster.create_db("outage") + " password=hunter2secret"
        data = tmp_path / "lakedata"
        init_lake(catalog, str(data))
        server = LakeServer(tmp_path / "server", catalog, env={"BALANCE_WORKERS": "1"}).start()
        deadline = time.monotonic() + 120
        assert send_until_final(server, [fresh(0)], deadline) == ["accepted"]
        cluster.halt()
        record = fresh(1)
        reply = server.upload([line(record)])
        assert reply.status == 503, reply.body
        assert int(reply.headers["retry-after"]) >= 1
        health = server.get("/healthz")
        assert health.status == 503
        for body in (reply.body.decode(), health.body.decode()):
            assert "unavailable" in body
            for secret in ("hunter2", str(cluster.port), "dbname", "user=", str(data)):
                assert secret not in body, (secret, body)
        cluster.resume()
        assert send_until_final(server, [record], deadline) == ["accepted"]
        assert server.get("/healthz").status == 200
        log = server.log.read_text()
        assert "hunter2secret" not in log
        assert f"port={cluster.port}" in log  # the operator's log names the catalog
    finally:
        if server is not None:
            server.stop()
        cluster.stop()


def _answered(server: LakeServer, path: str) -> Reply:
    """An answer at all while the catalog is frozen (it is thawed only after) is the proof
    that the request did not wait on the lake; no time bound (a loaded machine is slower)."""
    return server.get(path, timeout=60)


def test_a_frozen_catalog_is_a_quick_503_and_healthz_says_so_then_nothing_is_lost(
    lake_extensions, tmp_path
):
    """PostgreSQL frozen (SIGSTOP: connections open, nothing answered), twice. First under an
    idle server with designers' pages and console queries open: /healthz and /metrics answer
    all along, /healthz turns 503 "the lake is not answering" within seconds, an upload is 503
    at once, and the pages, stuck on their queries, never hold every thread (past the
    dashboard's slots they are 503 at once). Then with uploads in flight: each is answered 503
    within seconds instead of hanging. Thawed, every record sent again is stored once
    (`duplicate` where its stuck commit had landed)."""
    from ingest import cli

    cluster = Cluster.start()
    server, frozen = None, []
    pages: list[threading.Thread] = []
    try:
        catalog = cluster.create_db("frozen")
        init_lake(catalog, str(tmp_path / "lakedata"))
        env = {"BALANCE_WORKERS": "1", "BALANCE_LAKE_STALL": "3", "BALANCE_SNAPSHOT_MAX_AGE": "1",
               "BALANCE_STOP_TIMEOUT": "5"}  # fmt: skip
        server = LakeServer(tmp_path / "server", catalog, env=env).start()
        deadline = time.monotonic() + 240
        assert send_until_final(server, [fresh(i) for i in range(500, 530)], deadline)
        assert cli.main(["jobs", "run", "--lake", catalog]) == 0
        assert server.get("/dashboard/p/overview").status == 200
        assert send_until_final(server, [fresh(0)], deadline) == ["accepted"]
        time.sleep(1.5)  # past the snapshot's max age: the next page asks for a new one

        # 1. an idle server, designers and analysts waiting on it
        frozen = cluster.freeze()
        page_answers: list[tuple[int, str]] = []

        def ask(method: str, path: str, body: bytes | None = None) -> None:
            headers = {"Content-Type": "application/json"} if body else {}
            try:
                reply = server.request(method, path, body, headers, timeout=200)
                page_answers.append((reply.status, reply.body.decode(errors="replace")))
            except OSError as exc:
                page_answers.append((0, repr(exc)))

        query = json.dumps({"sql": "SELECT count(*) FROM game_turns"}).encode()
        pages = [
            threading.Thread(target=ask, args=("GET", "/dashboard/p/overview")) for _ in range(12)
        ]
        pages += [threading.Thread(target=ask, args=("POST", "/sql/api", query)) for _ in range(4)]
        for t in pages:
            t.start()
        until = time.monotonic() + 30
        while True:  # /healthz answers all along, and soon says why
            health = _answered(server, "/healthz")
            assert _answered(server, "/metrics").status == 200
            if health.status == 503:
                assert "not answering" in health.body.decode(), health.body
                break
            assert time.monotonic() < until, "the frozen catalog never showed in /healthz"
            time.sleep(0.5)
        # answered while the catalog is still frozen: it did not wait on the lake
        assert server.upload([line(fresh(998))]).status == 503
        cluster.thaw(frozen)
        frozen = []
        for t in pages:
            t.join(200)
        assert len(page_answers) == len(pages), "a page was never answered"
        # past the slots (or one address's share of them) 503 "busy" at once
        assert any('"error":"busy"' in body for _, body in page_answers), page_answers
        assert {status for status, _ in page_answers} <= {200, 500, 503}, page_answers
        within = max(0.0, deadline - time.monotonic())
        wait_for(lambda: _answered(server, "/healthz").status == 200, within, "healthy", every=0.5)

        # 2. uploads in flight
        frozen = cluster.freeze()
        sent = [[fresh(i)] for i in range(1, 13)] + [[fresh(100 + i) for i in range(20)]]
        answers: list[tuple[int, float]] = []
        lock = threading.Lock()

        def upload(records: list[dict]) -> None:
            began = time.monotonic()
            reply = server.upload([line(r) for r in records], timeout=120)
            with lock:
                answers.append((reply.status, time.monotonic() - began))

        threads = [threading.Thread(target=upload, args=(chunk,)) for chunk in sent]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert len(answers) == len(sent), "an upload was never answered"
        # every one answered 503 while the catalog was still frozen (thawed only below)
        assert {status for status, _ in answers} == {503}, answers
        health = _answered(server, "/healthz")
        assert health.status == 503 and "not answering" in health.body.decode(), health.body
        cluster.thaw(frozen)
        frozen = []
        for chunk in sent:
            for verdict in send_until_final(server, chunk, deadline):
                assert verdict in ("accepted", "duplicate"), verdict
        assert server.get("/healthz").status == 200
        assert server.get("/dashboard/p/overview").status == 200
        result = check(loaded(catalog))
        assert result["ok"], result
        ids = stored_ids(catalog)
        assert len(ids) == len(set(ids)) == 31 + sum(len(chunk) for chunk in sent)

        # 3. one SIGTERM while the catalog is frozen: the worker's close waits on PostgreSQL
        # (the loader's last load, the fence), so it leaves after BALANCE_STOP_TIMEOUT
        # without it; the server exits, and what it acknowledged is staged all the same
        last = [fresh(300 + i) for i in range(10)]
        assert send_until_final(server, last, deadline) == ["accepted"] * 10
        processes = [server.proc.pid, *descendants(server.proc.pid)]
        frozen = cluster.freeze()
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(120) == 0
        assert all(_gone(p, 30) for p in processes)
        assert "leaving without a clean close" in server.output()
        cluster.thaw(frozen)
        frozen = []
        server.start()  # the lake's loader again
        assert set(r["game_id"] for r in last) <= set(stored_ids(catalog))
        assert check(loaded(catalog))["ok"]
    finally:
        cluster.thaw(frozen)
        for t in pages:
            t.join(200)
        if server is not None:
            server.stop()
        cluster.stop()


def _worker(server: LakeServer) -> int:
    """The granian worker of `server`: its child that runs the app (not multiprocessing's
    resource tracker)."""
    from support import children

    (worker,) = [
        p for p in children(server.proc.pid)
        if "resource_tracker" not in Path(f"/proc/{p}/cmdline").read_bytes().decode()
    ]  # fmt: skip
    return worker


def _gone(pid: int, seconds: float) -> bool:
    """Whether process `pid` is gone within `seconds` (a liveness bound, generous)."""
    until = time.monotonic() + seconds
    while Path(f"/proc/{pid}").exists() and time.monotonic() < until:
        time.sleep(0.2)
    return not Path(f"/proc/{pid}").exists()


def test_a_killed_worker_comes_back_and_one_sigterm_stops_two_busy_servers(servers, lake):
    """The operator's scenario: two servers on a fresh lake, four batches of 250 each, then
    the same 200 games at both at the same moment. Then the worker of one is SIGKILLed (what
    an out-of-memory kill picks): its server starts a new one and serves again. Then one
    SIGTERM each: both exit 0, every process of theirs gone, and every game acknowledged is in
    the lake once, `lake check` clean."""
    a, b = servers(), servers()
    acknowledged: set[str] = set()
    lock = threading.Lock()
    deadline = time.monotonic() + 300

    def batches(server: LakeServer, records: list[dict]) -> None:
        for start in range(0, len(records), 250):
            chunk = records[start : start + 250]
            verdicts = send_until_final(server, chunk, deadline)
            with lock:
                acknowledged.update(r["game_id"] for r in chunk)
            assert set(verdicts) <= {"accepted", "duplicate"}, verdicts

    own = {a: [fresh(i) for i in range(1000)], b: [fresh(i) for i in range(1000)]}
    same = [fresh(i) for i in range(200)]
    for work in (own, {a: same, b: same}):
        threads = [threading.Thread(target=batches, args=(s, work[s])) for s in (a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(acknowledged) == 2200

    worker = _worker(a)
    os.kill(worker, signal.SIGKILL)
    assert _gone(worker, 30)
    while True:  # a new worker, on the same port
        try:
            if a.get("/healthz", timeout=5).status == 200:
                break
        except OSError:
            pass
        assert a.proc.poll() is None, a.output()
        assert time.monotonic() < deadline, "the worker was not started again"
        time.sleep(0.3)
    assert _worker(a) != worker
    more = [fresh(i) for i in range(30)]
    assert send_until_final(a, more, deadline) == ["accepted"] * 30
    acknowledged.update(r["game_id"] for r in more)

    processes = {s: [s.proc.pid, *descendants(s.proc.pid)] for s in (a, b)}
    for s in (a, b):
        s.proc.send_signal(signal.SIGTERM)
    for s in (a, b):
        assert s.proc.wait(120) == 0, s.output()[-3000:]
        assert all(_gone(p, 30) for p in processes[s]), processes[s]
    assert "leaving without a clean close" not in a.output() + b.output()
    result = check(loaded(lake))
    assert result["ok"], result
    ids = stored_ids(lake)
    assert len(ids) == len(set(ids)) == len(acknowledged)
