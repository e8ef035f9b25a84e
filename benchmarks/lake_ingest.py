"""Upload throughput on a lake with 1, 2, 3 servers, against the embedded DuckDB file in the
same run: real `balance serve` processes, verification and durable acknowledgement included (a
game counts once its 200 `accepted` answer is back; on a lake that is once PostgreSQL holds
it, docs/lake.md "Staging"; every acknowledged game is then checked to be in the lake).

    python -m benchmarks.lake_ingest [--seconds 10] [--servers 1,2,3] [--connections 8,64,256]
        [--no-file] [--pool 1000] [--token on|off|both] [--staging on|off|both]

It starts its own PostgreSQL cluster (tests/lake_cluster.py; fsync on) and, per setup, a new
lake (or file). Phases, each for `--seconds`:

1. NDJSON batches of 500 records, 2 client connections per server;
2. for each of `--connections`: single-record POSTs (application/json) from that many
   connections in all, spread evenly over the servers (a 503 is counted, and its client
   waits 0.25 s, a short Retry-After, before its next upload).

Per phase: accepted games/s, answers by status, client latency p50/p99 (of every answer), the
servers' commit time p99 (from /metrics: the upper bound of the histogram bucket holding the
99th percentile), the CPU time per stored game of each server process tree (server, worker,
judges, and the loader in whichever server holds it; /proc), the games staged and the 1-minute
load average at the phase's end (the machine is shared: compare within one run). The load
generator is Python threads in this process and competes with the servers. At the end of a
lake setup: the games in raw_records against the games acknowledged (they must be equal).
Figures go to stdout and benchmarks/out/lake_ingest.json; the last lines say, per connection
count, whether 2 and 3 servers reach 1 server's total, 1 server 80% of the file's, p99 under
500 ms and CPU per game per server within 1.5x of the file's.
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

from benchmarks.ingest_pool import OUT, pool, pool_size, with_fresh_ids
from tests.harness.lake import Cluster, LakeServer, benchmark_extensions

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


def load(servers: list[LakeServer], lines: list[bytes], batch: int, clients_n: int, seconds):
    """`clients_n` connections spread over the servers, posting `batch` lines a request until
    `seconds` pass or the lines run out; (accepted, elapsed, latencies, statuses)."""
    bodies = [b"\n".join(lines[i : i + batch]) + b"\n" for i in range(0, len(lines), batch)]
    ctype = NDJSON if batch > 1 else JSON
    if batch == 1:
        bodies = lines
    clients = [servers[k % len(servers)] for k in range(clients_n)]
    lock = threading.Lock()
    latencies: list[float] = []
    accepted = [0]
    statuses: dict[int, int] = {}
    taken = iter(range(len(bodies)))
    stop_at = time.monotonic() + seconds

    def client(server: LakeServer):
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        mine, ok, seen = [], 0, {}
        while time.monotonic() < stop_at:
            with lock:
                i = next(taken, None)
            if i is None:
                break
            t0 = time.perf_counter()
            try:
                conn.request("POST", "/v1/games", bodies[i], {"Content-Type": ctype})
                resp = conn.getresponse()
                data = resp.read()
            except OSError:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
                seen[0] = seen.get(0, 0) + 1
                continue
            mine.append(time.perf_counter() - t0)
            seen[resp.status] = seen.get(resp.status, 0) + 1
            if resp.status == 200:
                ok += sum(r["verdict"] == "accepted" for r in orjson.loads(data)["results"])
            elif resp.status == 503:
                time.sleep(0.25)
        conn.close()
        with lock:
            latencies.extend(mine)
            accepted[0] += ok
            for k, v in seen.items():
                statuses[k] = statuses.get(k, 0) + v

    threads = [threading.Thread(target=client, args=(s,)) for s in clients]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return accepted[0], time.perf_counter() - started, sorted(latencies), statuses


def pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def staged(server: LakeServer) -> int | None:
    try:
        health = server.get("/healthz").json()
    except Exception:  # noqa: BLE001 - a figure only
        return None
    return (health.get("staging") or {}).get("staged_games")


def run_setup(name, servers, lines, args) -> list[dict]:
    out = []
    offset = 0
    phases = [("batch500", 500, 2 * len(servers))]
    phases += [(f"single{n}", 1, n) for n in (int(x) for x in args.connections.split(","))]
    for phase, batch, clients_n in phases:
        need = 100_000 if batch > 1 else args.single_lines
        chunk = lines[offset : offset + need]
        offset += need
        cpu0 = [tree_cpu(s.proc.pid) for s in servers]
        accepted, elapsed, lat, statuses = load(servers, chunk, batch, clients_n, args.seconds)
        cpu = [tree_cpu(s.proc.pid) - c for s, c in zip(servers, cpu0, strict=True)]
        row = {
            "setup": name,
            "phase": phase,
            "servers": len(servers),
            "connections": clients_n,
            "accepted": accepted,
            "games_per_s": round(accepted / elapsed, 1),
            "statuses": {str(k): v for k, v in sorted(statuses.items())},
            "latency_p50_ms": round(1000 * pct(lat, 0.5), 1),
            "latency_p99_ms": round(1000 * pct(lat, 0.99), 1),
            "commit_p99_s": [commit_p99(s) for s in servers],
            "cpu_ms_per_game_per_server": [
                round(1000 * c / max(1, accepted / len(servers)), 2) for c in cpu
            ],
            "staged_at_end": staged(servers[0]) if servers[0].catalog else None,
            "load_avg_1m": round(os.getloadavg()[0], 1),
        }
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def lake_count(catalog: str) -> int:
    from ingest.storage.lake import connect, conninfo
    from ingest.storage.lake.staging import wait_loaded

    wait_loaded(conninfo(catalog), 300)
    con = connect(catalog, claims=False)
    try:
        return con.execute("SELECT count(*) FROM raw_records").fetchone()[0]
    finally:
        con.close()


def verdicts(results: list[dict]) -> list[str]:
    """Per connection count: the issue's conditions, from this run's figures."""
    lines = []
    by = {(r["setup"], r["phase"]): r for r in results}
    phases = sorted({r["phase"] for r in results}, key=lambda p: (p != "batch500", len(p), p))
    for phase in phases:
        file = by.get(("filex1", phase))
        lakes = {int(r["setup"][5:]): r for (s, p), r in by.items()
                 if p == phase and s.startswith("lakex") and s[5:].isdigit()}  # fmt: skip
        if 1 not in lakes:
            continue
        one = lakes[1]["games_per_s"]
        parts = [f"{phase}: lake x1 {one:,.0f}"]
        for n in sorted(lakes)[1:]:
            more = lakes[n]["games_per_s"]
            parts.append(f"x{n} {more:,.0f} ({'>=' if more >= one else '<'} x1)")
        if file is not None:
            ratio = one / max(1e-9, file["games_per_s"])
            parts.append(f"file {file['games_per_s']:,.0f}: x1/file {ratio:.2f}")
            fcpu = max(file["cpu_ms_per_game_per_server"])
            worst = max(max(r["cpu_ms_per_game_per_server"]) for r in lakes.values())
            parts.append(f"CPU/game/server worst {worst:.2f} ms vs file {fcpu:.2f} "
                         f"({worst / max(1e-9, fcpu):.2f}x)")  # fmt: skip
        p99 = max(r["latency_p99_ms"] for r in lakes.values())
        parts.append(f"lake p99 <= {p99:.0f} ms")
        n503 = {n: r["statuses"].get("503", 0) for n, r in lakes.items()}
        parts.append(f"503s {n503}")
        lines.append("; ".join(parts))
    return lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--servers", default="1,2,3")
    ap.add_argument(
        "--connections", default="8,64,256", help="single-record connections in all, per phase"
    )
    ap.add_argument("--single-lines", type=int, default=60_000, help="lines a single phase")
    ap.add_argument("--no-file", action="store_true", help="skip the embedded-file reference")
    ap.add_argument("--pool", type=pool_size, default=1000, help="simulated records (cached)")
    ap.add_argument(
        "--token",
        choices=("on", "off", "both"),
        default="on",
        help="the lake servers' commit token (BALANCE_LAKE_COMMIT_TOKEN); both: each lake "
        "setup with it, then without",
    )
    ap.add_argument(
        "--staging",
        choices=("on", "off", "both"),
        default="on",
        help="BALANCE_LAKE_STAGING: acknowledge from staging (on) or after a lake commit (off)",
    )
    ap.add_argument("--max-uploads", type=int, default=0, help="BALANCE_MAX_UPLOADS (0: default)")
    args = ap.parse_args()
    reason, own_extensions = benchmark_extensions("lake-bench-ext-")
    if reason:
        print(f"lake benchmark not run: {reason}", file=sys.stderr)
        return 2
    records = pool("slow6", args.pool)
    # every client here is one address (127.0.0.1), which stands for many game clients: its
    # fair share of the upload slots (BALANCE_UPLOAD_SHARE, an eighth by default) would answer
    # 429 to most of them and measure that, not storing
    slots = args.max_uploads or 64
    env = {"BALANCE_WORKERS": "1", "BALANCE_UPLOAD_SHARE": str(slots)}
    if args.max_uploads:
        env["BALANCE_MAX_UPLOADS"] = str(args.max_uploads)
    results = []
    cluster = Cluster.for_benchmark(fsync=True)
    work = Path(tempfile.mkdtemp(prefix="lake-bench-"))
    try:
        from ingest.storage.lake.admin import init_lake

        tokens = {"on": ["1"], "off": ["0"], "both": ["1", "0"]}[args.token]
        stagings = {"on": ["1"], "off": ["0"], "both": ["1", "0"]}[args.staging]
        setups = [] if args.no_file else [("file", 0, "1", "1")]
        setups += [
            ("lake", int(n), t, st)
            for st in stagings
            for n in args.servers.split(",")
            for t in tokens
        ]
        for i, (kind, n, token, staging) in enumerate(setups):
            servers = []
            name = f"{kind}x{max(n, 1)}" + ("" if token == "1" else "-notoken")
            name += "" if staging == "1" else "-nostaging"
            lake_env = dict(env, BALANCE_LAKE_COMMIT_TOKEN=token, BALANCE_LAKE_STAGING=staging)
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
                phases = 1 + len(args.connections.split(","))
                total = 100_000 + phases * args.single_lines
                lines = with_fresh_ids(records, total, seed=time.time_ns() + i)
                rows = run_setup(name, servers, lines, args)
                results += rows
                if kind == "lake":
                    held = lake_count(catalog)
                    acked = sum(r["accepted"] for r in rows)
                    print(f"{name}: {acked} games acknowledged, {held} in the lake"
                          + ("" if held == acked else "  MISMATCH"), flush=True)  # fmt: skip
            finally:
                for s in servers:
                    s.stop()
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
        if own_extensions is not None:
            shutil.rmtree(own_extensions, ignore_errors=True)
    for line in verdicts(results):
        print(line)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "lake_ingest.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
