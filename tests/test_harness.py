"""The harness itself: its one way to wait (tests/harness/wait.py), for a state, never for a
time; its ports; the run's shared PostgreSQL cluster; DuckDB's threads in the test processes."""

from __future__ import annotations

import itertools
import socket
import time

import duckdb
import pytest
from harness.processes import LOWEST_PORT, ephemeral_ports, free_port
from support import wait_for


def test_wait_for_returns_what_the_predicate_gave_once_it_holds():
    calls = itertools.count(1)
    assert wait_for(lambda: next(calls) >= 3 and "ready", 5, "the third call", every=0) == "ready"
    assert next(calls) == 4  # called exactly three times: no call after it held


def test_wait_for_names_what_never_came():
    with pytest.raises(TimeoutError, match=r"^the impossible: not within 0.1 s$"):
        wait_for(lambda: False, 0.1, "the impossible", every=0.01)


def test_wait_for_tries_once_more_at_the_deadline():
    """A machine so loaded that the first call returns after the deadline still gets the state
    it reached (order, not speed)."""
    seen = []

    def slow_then_true():
        seen.append(time.monotonic())
        if len(seen) == 1:
            time.sleep(0.2)  # the only call before the deadline outlives it
            return False
        return True

    assert wait_for(slow_then_true, 0.05, "the second call", every=1) is True
    assert len(seen) == 2


def test_wait_for_ignores_only_the_errors_it_is_told_to():
    attempts = itertools.count()

    def refused_then_up():
        if next(attempts) < 2:
            raise ConnectionRefusedError  # a server still starting
        return True

    assert wait_for(refused_then_up, 5, "up", every=0, ignore=(OSError,)) is True
    with pytest.raises(ValueError):
        wait_for(lambda: int("x"), 5, "a number", ignore=(OSError,))


@pytest.mark.slow  # a PostgreSQL cluster of its own
def test_the_runs_cluster_left_by_a_dead_worker_is_stopped_by_the_controller(tmp_path):
    """The xdist workers share one cluster, noted under the run's temp directory; a worker
    killed while it used it never counts itself out, so the controller stops what is noted
    once every worker is done (lake_cluster.pytest_unconfigure), and nothing is left."""
    from harness.lake import Cluster, unavailable
    from harness.processes import ended
    from lake_cluster import shared_dir, stop_left_behind

    if unavailable():
        pytest.skip(unavailable())
    cluster = Cluster.start()
    try:
        postmaster = cluster.processes()[0]
        shared = shared_dir(tmp_path)
        shared.mkdir()
        (shared / "cluster").write_text(str(cluster.directory))
        (shared / "users").write_text("1")  # the dead worker's count, never taken back
        stop_left_behind(tmp_path)
        assert ended([postmaster]) and not cluster.directory.exists()
        assert not (shared / "cluster").exists()
        stop_left_behind(tmp_path)  # nothing noted: nothing to do
    finally:
        cluster.stop()


def test_a_free_port_is_outside_the_range_outgoing_connections_take():
    """A server's port chosen from the ephemeral range was once taken by an outgoing
    connection before the server bound it (`127.0.0.1:48231 is in use`)."""
    low, high = ephemeral_ports()
    ports = {free_port() for _ in range(20)}
    assert all(LOWEST_PORT <= p < low for p in ports), (sorted(ports), low, high)
    assert len(ports) > 1  # random, not one port every worker would race for
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # and free


def test_a_test_process_opens_duckdb_with_one_thread_unless_a_connection_asks_for_more(tmp_path):
    """tests/harness/duckdb_threads.py, set by tests/conftest.py: every database a test opens
    runs one DuckDB thread (the suite's processes already fill the cores); a connection that
    names its threads, as the product's console does, keeps them, and SET still changes them."""

    def threads(con) -> int:
        return con.execute("SELECT current_setting('threads')").fetchone()[0]

    plain = duckdb.connect()
    on_file = duckdb.connect(str(tmp_path / "x.duckdb"), read_only=False)
    asked = duckdb.connect(":memory:", config={"threads": 2, "memory_limit": "100MB"})
    try:
        assert threads(plain) == 1 and threads(on_file) == 1
        assert threads(asked) == 2
        asked.execute("SET threads = 3")
        assert threads(asked) == 3
    finally:
        plain.close()
        on_file.close()
        asked.close()
