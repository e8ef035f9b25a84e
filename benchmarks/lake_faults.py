"""Faults under single-game load on a lake with staging, each checked against the client's list
of acknowledged game_ids: 0 lost, 0 doubled, `balance lake check` clean (docs/lake.md).

    python -m benchmarks.lake_faults [--connections 16] [--seconds 6] [--pool 200]
        [--faults kill-loader,kill-other,pg-stop,pg-freeze,disk-full]

Real `balance serve --lake` processes (two), its own PostgreSQL cluster (tests/lake_cluster.py,
fsync on). Clients post one game a request from `--connections` connections spread over the
two servers; a 503 or a lost connection is sent again later (to either server) until it is
answered, as a game client would; an `accepted` or `duplicate` answer is an acknowledgement.
Faults, one after another, each in the middle of `--seconds` of load:

- kill-loader: kill -9 of the server that holds the loader's election (its lake commits come
  every second: repeated three times, one of them lands inside a commit), then restarted;
- kill-other: kill -9 of the other server, restarted;
- pg-stop: PostgreSQL stopped (pg_ctl stop -m fast) for 20 s, then started;
- pg-freeze: every PostgreSQL process SIGSTOPped for 30 s, then SIGCONTed;
- disk-full: the lake's data path (a tmpfs of its own, mounted here when run as root; the
  fault is skipped, saying so, where it cannot be) filled to its last byte for 10 s, then
  freed: the loader's commits fail meanwhile, staging in PostgreSQL keeps what was
  acknowledged (or uploads are refused at the free-space reserve).

After each: wait for the loader, then every acknowledged game must be in raw_records once, and
`lake check` must be clean. Prints one line a fault and exits nonzero on any loss or double.
"""

from __future__ import annotations

import argparse
import errno
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson

from benchmarks.ingest_pool import fresh_lines, pool, pool_size
from tests.harness.lake import Cluster, LakeServer, benchmark_extensions


class Load:
    """Clients uploading single games until stopped; every game is sent until answered."""

    def __init__(self, servers: list[LakeServer], lines: Iterator[bytes], connections: int):
        self.servers, self.lines = servers, lines
        self.acked: dict[str, int] = {}  # game_id -> answers accepted/duplicate
        self.unanswered: list[bytes] = []
        self.statuses: dict[str, int] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._client, args=(k,), daemon=True)
            for k in range(connections)
        ]

    def start(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def finish(self, timeout: float = 300.0) -> None:
        """Stop taking new games; send what is unanswered until it is answered."""
        self.stop.set()
        for t in self.threads:
            t.join(timeout)

    def _next(self) -> bytes | None:
        with self.lock:
            if self.unanswered:
                return self.unanswered.pop()
            if self.stop.is_set():
                return None
            return next(self.lines, None)

    def _client(self, k: int) -> None:
        conn = None
        turn = k
        while True:
            line = self._next()
            if line is None:
                if self.stop.is_set():
                    with self.lock:
                        if not self.unanswered:
                            return
                    time.sleep(0.2)
                    continue
                return
            server = self.servers[turn % len(self.servers)]
            turn += 1
            status = "error"
            try:
                conn = conn or http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
                conn.request("POST", "/v1/games", line, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                body = resp.read()
                status = str(resp.status)
            except OSError:
                if conn is not None:
                    conn.close()
                conn = None
            finally:
                if conn is not None and status != "200":
                    conn.close()
                    conn = None
            with self.lock:
                self.statuses[status] = self.statuses.get(status, 0) + 1
                if status == "200":
                    verdict = orjson.loads(body)["results"][0]["verdict"]
                    if verdict in ("accepted", "duplicate"):
                        gid = orjson.loads(line)["game_id"]
                        self.acked[gid] = self.acked.get(gid, 0) + 1
                        continue
                self.unanswered.append(line)
            time.sleep(0.1)


def lake_ids(catalog: str) -> list[str]:
    from ingest.storage.lake import connect, conninfo
    from ingest.storage.lake.staging import wait_loaded

    if not wait_loaded(conninfo(catalog), 300):
        raise RuntimeError("the loader did not catch up in 300 s")
    con = connect(catalog, claims=False)
    try:
        return [g for (g,) in con.execute("SELECT game_id::VARCHAR FROM raw_records").fetchall()]
    finally:
        con.close()


def loader_of(servers: list[LakeServer]) -> LakeServer | None:
    for s in servers:
        try:
            staging = json.loads(s.get("/healthz", timeout=5).body).get("staging") or {}
        except (OSError, ValueError):
            continue
        if staging.get("loader_here"):
            return s
    return None


def mount_tmpfs(where: Path, megabytes: int) -> bool:
    """A tmpfs of `megabytes` at `where` (root only); whether it is mounted."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(where)],
        capture_output=True,
    )
    return done.returncode == 0


def fill(directory: Path) -> Path:
    """Write a file into `directory` until its file system has no byte left; the file."""
    filler = directory / "filler.bin"
    with open(filler, "wb", buffering=0) as out:
        for size in (1 << 20, 1 << 14, 1 << 10, 1):
            block = b"\0" * size
            try:
                while True:
                    out.write(block)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    return filler


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--faults", default="kill-loader,kill-other,pg-stop,pg-freeze,disk-full")
    ap.add_argument("--full-seconds", type=float, default=10.0)
    ap.add_argument("--stop-seconds", type=float, default=20.0)
    ap.add_argument("--freeze-seconds", type=float, default=30.0)
    ap.add_argument("--pool", type=pool_size, default=200, help="simulated records (cached)")
    args = ap.parse_args()
    reason, own_extensions = benchmark_extensions("lake-faults-ext-")
    if reason:
        print(f"lake faults not run: {reason}", file=sys.stderr)
        return 2
    from ingest.storage.lake.admin import check, init_lake

    cluster = Cluster.for_benchmark(fsync=True)
    work = Path(tempfile.mkdtemp(prefix="lake-faults-"))
    servers: list[LakeServer] = []
    failed = mounted = False
    disk = work / "data"  # its own file system, to fill: the lake's data path only
    try:
        catalog = cluster.create_db("faults")
        faults = args.faults.split(",")
        mounted = "disk-full" in faults and mount_tmpfs(disk, 256)
        if "disk-full" in faults and not mounted:
            print("disk-full: skipped (mounting a tmpfs needs root)", file=sys.stderr)
            faults.remove("disk-full")
        init_lake(catalog, str(disk / "lake"))
        env = {"BALANCE_WORKERS": "1", "BALANCE_LAKE_STALL": "5"}
        servers = [LakeServer(work / f"s{k}", catalog, env=env).start() for k in range(2)]
        records = pool("slow6", args.pool)
        for n, fault in enumerate(faults):
            lines = fresh_lines(records, seed=time.time_ns() + n)
            load = Load(servers, lines, args.connections).start()
            began = time.monotonic()
            time.sleep(args.seconds / 2)
            if fault == "kill-loader":
                for _ in range(3):
                    victim = loader_of(servers) or servers[0]
                    victim.kill()
                    time.sleep(1.0)
                    victim.start()
                    time.sleep(1.3)
            elif fault == "kill-other":
                victim = next((s for s in servers if s is not loader_of(servers)), servers[1])
                victim.kill()
                time.sleep(1.0)
                victim.start()
            elif fault == "pg-stop":
                cluster.halt()
                time.sleep(args.stop_seconds)
                cluster.resume()
            elif fault == "pg-freeze":
                frozen = cluster.freeze()
                time.sleep(args.freeze_seconds)
                cluster.thaw(frozen)
            elif fault == "disk-full":
                filler = fill(disk)
                time.sleep(args.full_seconds)
                filler.unlink()
            time.sleep(args.seconds / 2)
            load.finish()
            elapsed = time.monotonic() - began
            ids = lake_ids(catalog)
            held = set(ids)
            lost = [g for g in load.acked if g not in held]
            doubled = len(ids) - len(held)
            result = check(catalog)
            ok = not lost and not doubled and result["ok"]
            failed |= not ok
            print(json.dumps({
                "fault": fault,
                "acknowledged": len(load.acked),
                "in_lake": len(held),
                "lost": len(lost),
                "doubled": doubled,
                "check_ok": result["ok"],
                "answers": load.statuses,
                "seconds": round(elapsed, 1),
                "load_avg_1m": round(os.getloadavg()[0], 1),
            }), flush=True)  # fmt: skip
    finally:
        for s in servers:
            s.stop()
        cluster.stop()
        if mounted:
            subprocess.run(["umount", str(disk)], check=False)
        shutil.rmtree(work, ignore_errors=True)
        if own_extensions is not None:
            shutil.rmtree(own_extensions, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
