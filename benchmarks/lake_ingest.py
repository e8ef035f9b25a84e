"""Upload throughput on a lake with 1, 2 (or more) servers, against the embedded DuckDB file in the
same run: real `balance serve` processes, verification and durable commit included (a game
counts once its 200 `accepted` answer is back).

    python benchmarks/lake_ingest.py [--seconds 20] [--servers 1,2] [--single-clients 8]
        [--single-per-server N] [--no-file] [--pool 1000] [--token on|off|both]

It starts its own PostgreSQL cluster (tests/lake_cluster.py; fsync on) and, per setup, a new
lake (or file). Phases, each for `--seconds`:

1. NDJSON batches of 500 records, 2 client connections per server;
2. single-record POSTs (application/json) from `--single-clients` connections spread over
   the servers (or `--single-per-server` connections to each: the load grows with them).

Per phase: accepted games/s, client latency p50/p99, the servers' commit time p99 (from
/metrics: the upper bound of the histogram bucket holding the 99th percentile), and the CPU
time per stored game of each server process tree (server, worker, judges; /proc). The load
generator is Python threads in this process: on a 2-core machine it competes with the
servers, and the machine's other load shows in every figure (run alternating, compare within
one run). Figures go to stdout and benchmarks/out/lake_ingest.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from ingest_pool import OUT, pool, with_fresh_ids  # noqa: E402
from lake_cluster import Cluster, LakeServer, lake_unavailable  # noqa: E402

JSON, NDJSON = "application/json", "application/x-ndjson"


def tree_cpu(pid: int) -> float:
    """CPU seconds of `pid` and every process under it."""
    total, todo = 0.0, [pid]
    tick = os.sysconf("SC_CLK_TCK")
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in os.listdir(f"/proc/{p}/task"):
                todo += [
                    int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()
                ]
        except (OSError, IndexError, ValueError):
            continue
    return total


def commit_p99(server: LakeServer) -> float | None:
    text = server.get("/metrics").body.decode()
    buckets = []
    for line in text.splitlines():
        if line.startswith("balance_commit_duration_seconds_bucket"):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            buckets.append((float("inf") if le == "+Inf" else float(le), float(line.split()[-1])))
    if not buckets or buckets[-1][1] == 0:
        return None
    total = buckets[-1][1]
    for le, count in buckets:
        if count >= 0.99 * total:
            return le
    return None


def load(servers: list[LakeServer], lines: list[bytes], batch: int, per_server: int, seconds):
    """Clients posting `batch` lines a request until `seconds` pass; (accepted, elapsed,
    latencies)."""
    bodies = [b"\n".join(lines[i : i + batch]) + b"\n" for i in range(0, len(lines), batch)]
    ctype = NDJSON if batch > 1 else JSON
    if batch == 1:
        bodies = lines
    clients = [(s, k) for s in servers for k in range(per_server)]
    lock = threading.Lock()
    latencies: list[float] = []
    accepted = [0]
    taken = iter(range(len(bodies)))
    stop_at = time.monotonic() + seconds

    def client(server: LakeServer):
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        mine, ok = [], 0
        while time.monotonic() < stop_at:
            with lock:
                i = next(taken, None)
            if i is None:
                break
            t0 = time.perf_counter()
            conn.request("POST", "/v1/games", bodies[i], {"Content-Type": ctype})
            resp = conn.getresponse()
            data = resp.read()
            mine.append(time.perf_counter() - t0)
            if resp.status == 200:
                ok += sum(r["verdict"] == "accepted" for r in orjson.loads(data)["results"])
        conn.close()
        with lock:
            latencies.extend(mine)
            accepted[0] += ok

    threads = [threading.Thread(target=client, args=(s,)) for s, _ in clients]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return accepted[0], time.perf_counter() - started, sorted(latencies)


def pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def run_setup(name, servers, lines, args) -> list[dict]:
    out = []
    offset = 0
    for phase, batch, per_server in (
        ("batch500", 500, 2),
        ("single", 1, args.single_per_server or max(1, args.single_clients // len(servers))),
    ):
        need = 100_000 if batch > 1 else 20_000
        chunk = lines[offset : offset + need]
        offset += need
        cpu0 = [tree_cpu(s.proc.pid) for s in servers]
        accepted, elapsed, lat = load(servers, chunk, batch, per_server, args.seconds)
        cpu = [tree_cpu(s.proc.pid) - c for s, c in zip(servers, cpu0, strict=True)]
        row = {
            "setup": name,
            "phase": phase,
            "servers": len(servers),
            "accepted": accepted,
            "games_per_s": round(accepted / elapsed, 1),
            "latency_p50_ms": round(1000 * pct(lat, 0.5), 1),
            "latency_p99_ms": round(1000 * pct(lat, 0.99), 1),
            "commit_p99_s": [commit_p99(s) for s in servers],
            "cpu_ms_per_game_per_server": [
                round(1000 * c / max(1, accepted / len(servers)), 2) for c in cpu
            ],
        }
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--servers", default="1,2")
    ap.add_argument("--single-clients", type=int, default=8)
    ap.add_argument(
        "--single-per-server",
        type=int,
        default=0,
        help="single-record connections per server instead (the load grows with the servers)",
    )
    ap.add_argument("--no-file", action="store_true", help="skip the embedded-file reference")
    ap.add_argument("--pool", type=int, default=1000, help="simulated records (cached)")
    ap.add_argument(
        "--token",
        choices=("on", "off", "both"),
        default="on",
        help="the lake servers' commit token (BALANCE_LAKE_COMMIT_TOKEN); both: each lake "
        "setup with it, then without",
    )
    args = ap.parse_args()
    ext = Path(tempfile.mkdtemp(prefix="lake-bench-ext-"))
    os.environ["BALANCE_LAKE_EXTENSIONS"] = str(ext)
    reason = lake_unavailable(ext)
    if reason:
        shutil.rmtree(ext, ignore_errors=True)
        print(f"lake benchmark not run: {reason}", file=sys.stderr)
        return 2
    records = pool("slow6", args.pool)
    env = {"BALANCE_WORKERS": "1"}
    results = []
    cluster = Cluster.start(fsync=True)
    work = Path(tempfile.mkdtemp(prefix="lake-bench-"))
    try:
        from ingest.storage.lake_admin import init_lake

        tokens = {"on": ["1"], "off": ["0"], "both": ["1", "0"]}[args.token]
        setups = [] if args.no_file else [("file", 0, "1")]
        setups += [("lake", int(n), t) for n in args.servers.split(",") for t in tokens]
        for i, (kind, n, token) in enumerate(setups):
            servers = []
            name = f"{kind}x{max(n, 1)}" + ("" if token == "1" else "-notoken")
            lake_env = dict(env, BALANCE_LAKE_COMMIT_TOKEN=token)
            try:
                if kind == "file":
                    servers = [LakeServer(work / f"file{i}", None, env=env).start()]
                else:
                    catalog = cluster.create_db(f"bench{i}")
                    init_lake(catalog, str(work / f"data{i}"))
                    servers = [
                        LakeServer(work / f"lake{i}_{k}", catalog, env=lake_env).start()
                        for k in range(n)
                    ]
                lines = with_fresh_ids(records, 120_000, seed=time.time_ns() + i)
                results += run_setup(name, servers, lines, args)
            finally:
                for s in servers:
                    s.stop()
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(ext, ignore_errors=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "lake_ingest.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
