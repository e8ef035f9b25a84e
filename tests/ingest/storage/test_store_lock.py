"""The server holds DuckDB's lock on its store file for its whole life.

POSIX record locks belong to a process and go when the process closes ANY descriptor of the
file: a snapshot that copied the store through a file it opened and closed dropped the lock
DuckDB took, and a second writer (`balance jobs run --db`, `balance load-demo --db`) then got
in beside the live server and what it wrote was lost at the server's next checkpoint. Here a
real server serves pages, snapshots and jobs runs, and after each a real second process tries
the file: an exclusive lock and both commands are refused every time, in one line each."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from support import REPO, SLOW6, Server, fresh, query

pytestmark = pytest.mark.slow  # real servers and second processes

PROBE = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError:
    sys.exit(3)  # refused: someone holds it
sys.exit(0)
"""


def _run(server: Server, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        env=server.environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_refused(server: Server, when: str, commands: bool = True) -> None:
    """A second process can take neither the file's lock nor (`commands`) the store, and
    says so in one line; the server is still up."""
    db = str(server.db)
    probe = _run(server, "-c", PROBE, db)
    assert probe.returncode == 3, f"{when}: another process took the store's lock"
    for cmd in (
        () if not commands else (["jobs", "run", "--db", db], ["load-demo", "--db", db, "-n", "2"])
    ):
        ran = _run(server, "-m", "ingest.cli", *cmd)
        assert ran.returncode != 0, f"{when}: `balance {' '.join(cmd)}` ran beside the server"
        lines = ran.stderr.strip().splitlines()
        assert len(lines) == 1 and "another process" in lines[0], ran.stderr
        assert "Traceback" not in ran.stdout + ran.stderr
    assert server.get("/healthz").status == 200


def test_no_second_writer_gets_the_store_while_the_server_runs(tmp_path):
    server = Server(tmp_path / "srv", env={"BALANCE_JOBS_INTERVAL": "1"}).start()
    sent = []
    try:
        assert_refused(server, "before any page", commands=False)
        for round_ in range(2):
            records = [fresh(SLOW6[i % len(SLOW6)]) for i in range(3)]
            assert server.upload(records).status == 200
            sent += [r["game_id"] for r in records]
            assert server.get("/dashboard/").status in (200, 302)
            assert server.get("/sql?q=SELECT+count(*)+FROM+games").status == 200
            assert_refused(server, f"after pages, round {round_}", commands=False)
            time.sleep(1.5)  # a jobs run of the server's schedule
            assert server.post("/sql/snapshot", b"").status == 200
            assert_refused(server, f"after a jobs run and a snapshot, round {round_}", False)
        assert_refused(server, "after pages, jobs runs and snapshots")
    finally:
        assert server.stop() == 0
    stored = {g for (g,) in query(server.db, "SELECT game_id::VARCHAR FROM raw_records")}
    assert stored == set(sent)  # nothing a second writer did, nothing of the server's lost
    assert "analysis run: " in server.output()  # the server's own jobs ran meanwhile
    assert "Traceback" not in server.output()


def test_a_command_on_a_store_another_process_holds_says_so_in_one_line(tmp_path):
    """`balance jobs run` and `load-demo` on a file any other process holds (not only a
    server): one line, nonzero, no traceback."""
    import duckdb

    db = tmp_path / "held.duckdb"
    con = duckdb.connect(str(db))  # this process holds it
    try:
        server = Server(tmp_path / "none", db=db)  # only for its environment
        for cmd in (["jobs", "run", "--db", str(db)], ["load-demo", "--db", str(db), "-n", "2"]):
            ran = _run(server, "-m", "ingest.cli", *cmd)
            assert ran.returncode != 0
            lines = ran.stderr.strip().splitlines()
            assert len(lines) == 1 and "another process" in lines[0], ran.stderr
    finally:
        con.close()
