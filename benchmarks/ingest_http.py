"""End-to-end upload throughput over HTTP: a real `balance serve`, verification and durable
commit included (a game counts once its 200 `accepted` answer is back).

    python benchmarks/ingest_http.py [--batch-games 20000] [--single-games 8000]

1. NDJSON batches of 500 records from 2 client connections (target >= 3,000 games/s).
2. Single-record POSTs (application/json) from 8 concurrent keep-alive clients
   (target >= 800 games/s, p99 latency < 50 ms).
Records: simulated games (benchmarks/ingest_pool.py) sent with fresh game_ids.
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest_pool import ROOT, pool, with_fresh_ids  # noqa: E402


def start_server(db: Path, threads: int) -> tuple[subprocess.Popen, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, BALANCE_RATE_LIMIT="0", BALANCE_JOBS_INTERVAL="0", PYTHONPATH=str(ROOT))
    cmd = [
        sys.executable,
        "-m",
        "replays.cli",
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


def pct(sorted_values: list[float], p: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(p * len(sorted_values)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-games", type=int, default=20_000)
    ap.add_argument("--single-games", type=int, default=8_000)
    ap.add_argument("--pool", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=16, help="waitress threads")
    args = ap.parse_args()
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
        secs, lat, ok = run_clients(port, batches, "application/x-ndjson", 2)
        assert ok == len(batch_lines), (ok, len(batch_lines))
        print(
            f"NDJSON batches of 500, 2 clients: {ok} games in {secs:.2f}s = "
            f"{ok / secs:,.0f} accepted games/s (target >= 3,000); "
            f"batch p50 {pct(lat, 0.5) * 1000:.0f} ms, p99 {pct(lat, 0.99) * 1000:.0f} ms"
        )
        secs, lat, ok = run_clients(port, single_lines, "application/json", 8)
        assert ok == len(single_lines), (ok, len(single_lines))
        print(
            f"single-record POSTs, 8 clients: {ok} games in {secs:.2f}s = "
            f"{ok / secs:,.0f} accepted games/s (target >= 800); latency p50 "
            f"{pct(lat, 0.5) * 1000:.1f} ms, p95 {pct(lat, 0.95) * 1000:.1f} ms, "
            f"p99 {pct(lat, 0.99) * 1000:.1f} ms (target < 50 ms)"
        )
    finally:
        proc.terminate()
        proc.wait(60)
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} (other work shares them)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
