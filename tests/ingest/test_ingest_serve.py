"""`balance serve` as an operator runs it: it refuses, with a clear message, what would make it
fail or misbehave later (a port another server listens on: granian's SO_REUSEPORT would share
it silently; a store file another process holds), and it stops cleanly however it is told to."""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys

import pytest
from support import (
    JUDGES,
    REPO,
    SLOW6,
    Server,
    children,
    descendants,
    free_port,
    fresh,
    gone,
    query,
    wait_for,
)

pytestmark = pytest.mark.slow  # `balance serve` itself, and signals


def serve(server, db, port) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "ingest.cli", "serve", "--db", str(db), "--port", str(port)]
    return subprocess.run(
        cmd, cwd=REPO, env=server.environment(), capture_output=True, text=True, timeout=60
    )


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    """One server for the tests that only try to start a second one next to it."""
    s = Server(tmp_path_factory.mktemp("running")).start()
    yield s
    s.stop()


def test_a_second_server_on_a_busy_port_refuses_to_start(running, tmp_path):
    server = running
    second = serve(server, tmp_path / "other.duckdb", server.port)
    assert second.returncode == 2
    assert f"127.0.0.1:{server.port} is in use" in second.stderr
    assert not (tmp_path / "other.duckdb").exists()  # refused before touching anything
    assert server.get("/healthz").status == 200


def test_db_wins_over_the_lake_variable_as_in_every_other_command(tmp_path):
    """`balance serve --db F` with $BALANCE_LAKE set serves the file F, as every other command
    lets --db win (it took the lake, and failed on this unreachable catalog)."""
    server = Server(tmp_path, env={"BALANCE_LAKE": "postgresql://127.0.0.1:1/nowhere"})
    try:
        server.start(timeout=60)
        assert server.db.exists()
        assert server.upload([fresh(SLOW6[0])]).status == 200
    finally:
        server.stop()


def test_a_second_server_on_the_same_store_refuses_to_start(running):
    server = running
    second = serve(server, server.db, free_port())
    assert second.returncode == 2
    assert "is open in another process" in second.stderr
    assert server.get("/healthz").status == 200


@pytest.mark.parametrize(
    "signum",
    [signal.SIGINT, signal.SIGTERM],
    ids=["ctrl-c in a terminal", "systemd stop (every process of the unit)"],
)
def test_a_signal_to_the_whole_process_group_stops_it_cleanly(tmp_path, signum):
    """Both reach every process at once, and the supervisor then signals its worker again:
    granian's worker hung on that second signal, and the judges died with tracebacks."""
    server = Server(tmp_path / "srv", env=JUDGES)  # the judges too get the signals
    server.new_session = True
    server.start()
    try:
        records = [fresh(SLOW6[i]) for i in range(5)]
        assert {x["verdict"] for x in server.upload(records).json()["results"]} == {"accepted"}
        processes = [server.proc.pid, *descendants(server.proc.pid)]
        os.killpg(server.proc.pid, signum)
        assert server.proc.wait(30) == 0
        wait_for(lambda: gone(processes), 15, "the server's processes gone")
    finally:
        server.kill()
    assert "Traceback" not in server.output()
    assert "closing the store" in server.output()
    assert sorted(p.name for p in server.db.parent.glob(server.db.name + "*")) == [server.db.name]
    stored = {g for (g,) in query(server.db, "SELECT game_id::VARCHAR FROM raw_records")}
    assert stored == {r["game_id"] for r in records}


def test_a_worker_signalled_twice_still_stops_and_closes_the_store(tmp_path):
    """What a terminal's Ctrl-C or systemd does to the worker, deterministically: two signals.
    granian 2.8.9 blocks forever on the second unless the worker sets its shutdown once."""
    server = Server(tmp_path / "srv", env=JUDGES)  # the judges too get the signals
    server.new_session = True
    server.start()
    try:
        assert server.upload([fresh(SLOW6[0])]).json()["results"][0]["verdict"] == "accepted"
        # the granian worker: the server's child that has children (the judges)
        (worker,) = [p for p in children(server.proc.pid) if children(p)]
        os.kill(worker, signal.SIGINT)
        os.kill(worker, signal.SIGTERM)
        wait_for(lambda: gone([worker]), 30, "the worker stopped after the second signal")
        assert "closing the store" in server.output()
        # the server did not ask it to stop: it starts a new worker, which serves the store
        server.wait_healthy(60)
        assert server.proc.poll() is None
        assert worker not in children(server.proc.pid)
        assert server.upload([fresh(SLOW6[1])]).json()["results"][0]["verdict"] == "accepted"
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(60) == 0
    finally:
        server.kill()
    assert sorted(p.name for p in server.db.parent.glob(server.db.name + "*")) == [server.db.name]
    assert len(query(server.db, "SELECT game_id FROM raw_records")) == 2


def _worker(pid: int) -> int:
    """The server's granian worker: its child with children (the judges)."""
    (worker,) = [p for p in children(pid) if children(p)]
    return worker


def test_a_killed_worker_is_started_again_and_keeps_every_acknowledged_game(tmp_path):
    """SIGKILL of the worker alone (an out-of-memory kill picks the largest process): the
    server starts a new worker on the same store and port; nothing acknowledged is lost."""
    server = Server(tmp_path / "srv", env=JUDGES)  # the worker is the child with children
    server.start()
    try:
        first = [fresh(SLOW6[i]) for i in range(5)]
        assert {x["verdict"] for x in server.upload(first).json()["results"]} == {"accepted"}
        worker = _worker(server.proc.pid)
        os.kill(worker, signal.SIGKILL)
        wait_for(lambda: gone([worker]), 60, "the killed worker gone")
        server.wait_healthy(60)
        assert server.proc.poll() is None, server.output()
        assert _worker(server.proc.pid) != worker
        again = server.upload(first + [fresh(SLOW6[5])]).json()["results"]
        assert [x["verdict"] for x in again] == ["duplicate"] * 5 + ["accepted"]
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(60) == 0
    finally:
        server.kill()
    assert "Unexpected exit from worker" in server.output()
    assert len(query(server.db, "SELECT game_id FROM raw_records")) == 6


def test_one_sigterm_taken_by_any_thread_of_the_server_stops_it(tmp_path):
    """A process-directed signal may be handed to any thread that does not block it; Python
    runs handlers on the main thread only, and granian's main thread waited on an event that
    a signal taken elsewhere never set: the server kept serving until a second signal. Here
    the SIGTERM goes to another thread than the main one (tgkill)."""
    if platform.machine() != "x86_64":
        pytest.skip("tgkill's syscall number here is x86_64's")
    server = Server(tmp_path / "srv")
    server.start()
    try:
        pid = server.proc.pid
        others = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid)
        assert others
        # the worker's watcher (waiting for it in waitpid) is the last Python thread made
        assert _tgkill(pid, others[-1], signal.SIGTERM) == 0
        assert server.proc.wait(60) == 0
    finally:
        server.kill()
    assert "closing the store" in server.output()


def _tgkill(tgid: int, tid: int, signum: int) -> int:
    import ctypes

    sys_tgkill = 234  # x86_64
    return ctypes.CDLL(None, use_errno=True).syscall(sys_tgkill, tgid, tid, int(signum))
