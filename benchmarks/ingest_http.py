"""End-to-end upload throughput over HTTP: a real `balance serve`, verification and durable
commit included (a game counts once its 200 `accepted` answer is back).

    python -m benchmarks.ingest_http [--batch-games 20000] [--single-games 8000]

1. NDJSON batches of 500 records from 2 client connections (target >= 3,000 games/s).
2. Single-record POSTs (application/json) from 8 concurrent keep-alive clients
   (target >= 800 games/s, p99 latency < 50 ms).
Records: simulated games (benchmarks/ingest_pool.py) sent with fresh game_ids.

The load generator is `wrk` (benchmarks/ingest_wrk.lua) when installed (`apt-get install wrk`):
a Python client spends ~0.35 ms of CPU a request, a third of a core at the single-record target,
taken from the server on this 2-core machine. `--client python` forces the threaded Python one.
Each phase prints which client ran, its CPU, and the CPU per game of the server and every
process under it (its worker and the judges).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

from benchmarks.ingest_pool import ROOT, pool, pool_size, with_fresh_ids


def start_server(db: Path, threads: int) -> tuple[subprocess.Popen, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, BALANCE_RATE_LIMIT="0", BALANCE_JOBS_INTERVAL="0", PYTHONPATH=str(ROOT))
    cmd = [
        sys.executable,
        "-m",
        "ingest.cli",
        "serve",
        "--db",
        str(db),
        "--port",
        str(port),
        "--quiet",
        "--threads",
        str(threads),
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    for _ in range(600):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start")


def run_clients(port: int, bodies: list[bytes], ctype: str, clients: int):
    """Send `bodies` over `clients` keep-alive connections; (seconds, latencies, accepted)."""
    latencies: list[float] = []
    accepted = [0]
    lock = threading.Lock()
    chunks = [bodies[i::clients] for i in range(clients)]

    def client(mine: list[bytes]):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        local, ok = [], 0
        for body in mine:
            t0 = time.perf_counter()
            conn.request("POST", "/v1/games", body, {"Content-Type": ctype})
            resp = conn.getresponse()
            data = resp.read()
            local.append(time.perf_counter() - t0)
            assert resp.status == 200, (resp.status, data[:200])
            ok += sum(r["verdict"] == "accepted" for r in orjson.loads(data)["results"])
        conn.close()
        with lock:
            latencies.extend(local)
            accepted[0] += ok

    threads = [threading.Thread(target=client, args=(c,)) for c in chunks]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start, sorted(latencies), accepted[0]


def run_wrk(port: int, bodies: list[bytes], ctype: str, clients: int):
    """The same with wrk (one thread, `clients` connections, each body sent once)."""
    with tempfile.NamedTemporaryFile(suffix=".bodies") as f:
        f.write(b"\x1e".join(bodies))
        f.flush()
        env = dict(os.environ, BENCH_BODIES=f.name, BENCH_CTYPE=ctype)
        script = str(Path(__file__).with_name("ingest_wrk.lua"))
        cmd = ["wrk", "-t1", f"-c{clients}", "-d600s", "--timeout", "120s", "-s", script]
        wrk = subprocess.Popen(
            [*cmd, f"http://127.0.0.1:{port}/"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        line = wrk.stderr.readline()  # "all answered" (or EOF if wrk failed)
        wrk.send_signal(signal.SIGINT)
        stdout, stderr = wrk.communicate(timeout=60)
        if b"all answered" not in line:
            raise RuntimeError(f"wrk failed: {(line + stderr).decode(errors='replace')[-2000:]}")
    stats = json.loads(stdout.decode().strip().splitlines()[-1])
    assert stats["bad"] == 0 and stats["errors"] == 0, stats
    assert stats["responses"] >= len(bodies), stats  # (+ a few GET /v1/schema at the very end)
    return stats


def commit_totals(port: int) -> tuple[float, float, float]:
    """(commits, games committed, seconds writing) so far, from the server's /metrics."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    values = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in ("balance_commit_records_count", "balance_commit_records_sum",
                    "balance_commit_duration_seconds_sum"):  # fmt: skip
            values[name] = float(value)
    return (values.get("balance_commit_records_count", 0.0),
            values.get("balance_commit_records_sum", 0.0),
            values.get("balance_commit_duration_seconds_sum", 0.0))  # fmt: skip


def commit_line(before: tuple, after: tuple) -> str:
    commits, games, seconds = (a - b for a, b in zip(after, before, strict=True))
    if not commits:
        return "no group commit"
    return (f"{commits:.0f} group commits, {games / commits:.1f} games and "
            f"{seconds / commits * 1000:.1f} ms each")  # fmt: skip


def run_phase(client: str, port: int, server: int, bodies: list[bytes], ctype: str, clients: int):
    """(stats dict, client CPU seconds, server CPU seconds) for one phase."""
    commits = commit_totals(port)
    mine = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    srv = server_cpu(server)
    if client == "wrk":
        stats = run_wrk(port, bodies, ctype, clients)
    else:
        secs, lat, ok = run_clients(port, bodies, ctype, clients)
        stats = dict(
            seconds=secs, accepted=ok, **{f"p{p}": pct(lat, p / 100) for p in (50, 95, 99)}
        )
    srv = tuple(after - before for after, before in zip(server_cpu(server), srv, strict=True))
    stats["commits"] = commit_line(commits, commit_totals(port))
    used = resource.getrusage(
        resource.RUSAGE_SELF if client == "python" else resource.RUSAGE_CHILDREN
    )
    before = mine if client == "python" else kids
    cpu = used.ru_utime + used.ru_stime - before.ru_utime - before.ru_stime
    return stats, cpu, srv


def server_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds of (the server's own processes: `balance serve` and the worker that runs
    the app, their judge processes under them), from Linux /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    own = [0.0, 0.0]

    def tree(p: int, depth: int) -> None:
        fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        own[depth >= 2] += (int(fields[11]) + int(fields[12])) / tick
        for task in os.listdir(f"/proc/{p}/task"):
            for child in Path(f"/proc/{p}/task/{task}/children").read_text().split():
                tree(int(child), depth + 1)

    try:
        tree(pid, 0)
    except OSError:
        return float("nan"), float("nan")
    return own[0], own[1]


def pct(sorted_values: list[float], p: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(p * len(sorted_values)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-games", type=int, default=20_000)
    ap.add_argument("--single-games", type=int, default=8_000)
    ap.add_argument("--pool", type=pool_size, default=1000)
    ap.add_argument("--threads", type=int, default=8, help="balance serve --threads")
    ap.add_argument("--client", choices=("auto", "wrk", "python"), default="auto")
    args = ap.parse_args()
    client = args.client
    if client == "auto":
        client = "wrk" if shutil.which("wrk") else "python"
    records = pool("slow6", args.pool)
    lines = with_fresh_ids(records, args.batch_games + args.single_games + 1000, seed=42)
    warm, lines = lines[:1000], lines[1000:]
    batch_lines, single_lines = lines[: args.batch_games], lines[args.batch_games :]
    db = Path(tempfile.mkdtemp(prefix="ingest-http-")) / "bench.duckdb"
    proc, port = start_server(db, args.threads)
    try:
        run_clients(
            port,
            [b"\n".join(warm[i : i + 100]) for i in range(0, 1000, 100)],
            "application/x-ndjson",
            2,
        )  # warm-up: imports, caches
        batches = [
            b"\n".join(batch_lines[i : i + 500]) + b"\n" for i in range(0, len(batch_lines), 500)
        ]
        stats, cpu, srv = run_phase(client, port, proc.pid, batches, "application/x-ndjson", 2)
        ok, secs = stats["accepted"], stats["seconds"]
        assert ok == len(batch_lines), (ok, len(batch_lines))
        print(
            f"NDJSON batches of 500, 2 clients: {ok} games in {secs:.2f}s = "
            f"{ok / secs:,.0f} accepted games/s (target >= 3,000); "
            f"batch p50 {stats['p50'] * 1000:.0f} ms, p99 {stats['p99'] * 1000:.0f} ms"
        )
        print(f"  {_cpu_line(client, cpu, srv, ok, secs)}; {stats['commits']}")
        # The answers come once a game is journaled; its rows reach DuckDB a moment later (the
        # rows thread). Start the next phase on an idle server: /healthz reads the store,
        # which first waits for every journaled game to be in DuckDB.
        lag = wait_for_rows(port)
        print(f"  every game of the phase in DuckDB {lag:.2f} s after its last answer")
        stats, cpu, srv = run_phase(client, port, proc.pid, single_lines, "application/json", 8)
        ok, secs = stats["accepted"], stats["seconds"]
        assert ok == len(single_lines), (ok, len(single_lines))
        print(
            f"single-record POSTs, 8 clients: {ok} games in {secs:.2f}s = "
            f"{ok / secs:,.0f} accepted games/s (target >= 800); latency p50 "
            f"{stats['p50'] * 1000:.1f} ms, p95 {stats['p95'] * 1000:.1f} ms, "
            f"p99 {stats['p99'] * 1000:.1f} ms (target < 50 ms)"
        )
        print(f"  {_cpu_line(client, cpu, srv, ok, secs)}; {stats['commits']}")
    finally:
        proc.terminate()
        proc.wait(60)
        shutil.rmtree(db.parent, ignore_errors=True)
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} (other work shares them)")
    return 0


def wait_for_rows(port: int) -> float:
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", "/healthz")
        answer = conn.getresponse()
        answer.read()
        assert answer.status == 200, answer.status
    finally:
        conn.close()
    return time.perf_counter() - started


def _cpu_line(client: str, cpu: float, srv: tuple[float, float], games: int, secs: float) -> str:
    app, judges = srv
    return (
        f"client {client}: {cpu / secs * 100:.0f}% of a core ({cpu / games * 1e6:.0f} us/game); "
        f"server: {app / secs * 100:.0f}% ({app / games * 1e6:.0f} us/game), judge processes: "
        f"{judges / secs * 100:.0f}% ({judges / games * 1e6:.0f} us/game)"
    )


if __name__ == "__main__":
    sys.exit(main())
