"""Saved queries at their bounds: what a flood of the largest saves costs the store, and what
listing them costs the server's memory.

    python -m benchmarks.saved_queries [--saves 400] [--lists 6]

A real `balance serve` on a fresh store, the rate of saves off and the count and total bounds
raised so that every save lands: `--saves` saves of the largest query a save may hold
(BALANCE_SAVED_MAX_BYTES, 64 KiB), then `--lists` concurrent `GET /sql/saved` of the largest
page (500) and of the default one, repeated. Prints the store file's growth, the seconds the
saves took, each list answer's bytes, and the server worker's resident memory before and after
the lists (VmRSS and the high-water mark VmHWM of /proc). Before the bounds, 400 saves of
250 KiB grew the store by 95 MB, a list was a 105 MB answer and 6 concurrent lists added
1.5 GB to the server.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

from benchmarks.serving import start_server, stop_server

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(os.environ.get("BALANCE_BENCH_OUT") or ROOT / "benchmarks" / "out")
MAX_BYTES = 64 * 1024


def request(port: int, method: str, path: str, body: bytes | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def worker_pid(pid: int) -> int:
    """The granian worker (the process that holds the store): the server's child that has
    the most resident memory."""
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids += [int(c) for c in (task / "children").read_text().split()]
    return max(kids or [pid], key=lambda p: memory(p)[0])


def memory(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) in MB."""
    got = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            got[key] = int(value.split()[0]) // 1024
    return got.get("VmRSS", 0), got.get("VmHWM", 0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--saves", type=int, default=400)
    ap.add_argument("--lists", type=int, default=6)
    args = ap.parse_args(argv)
    work = OUT / "saved-queries"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    db = work / "store.duckdb"
    proc, port, log = start_server(db, work, {
        "BALANCE_SAVED_RATE": "0", "BALANCE_SAVED_MAX": str(args.saves + 10),
        "BALANCE_SAVED_TOTAL_BYTES": str((args.saves + 10) * MAX_BYTES)})  # fmt: skip
    try:
        size0 = db.stat().st_size
        start_rss, _ = memory(worker_pid(proc.pid))
        text = "SELECT 1 AS one -- "
        t = time.perf_counter()
        refused = 0
        for i in range(args.saves):
            title = f"query {i:05d}"
            sql = text + "x" * (MAX_BYTES - len(text) - len(title) - 200)
            body = json.dumps({"title": title, "sql": sql}).encode()
            status, _ = request(port, "POST", "/sql/saved", body)
            refused += status != 201
        took = time.perf_counter() - t
        big = request(port, "POST", "/sql/saved", json.dumps(
            {"title": "too big", "sql": text + "x" * MAX_BYTES}).encode())[0]  # fmt: skip
        request(port, "POST", "/sql/snapshot", b"")  # a checkpoint: the file holds them
        grown = (db.stat().st_size - size0) / 1e6
        print(
            f"saves: {args.saves} of {MAX_BYTES // 1024} KiB in {took:.1f} s, {refused} refused; "
            f"one over the size limit: {big}; store file grew {grown:.1f} MB"
        )
        worker = worker_pid(proc.pid)
        rss0, _ = memory(worker)
        sizes: dict[str, int] = {}

        def list_all(limit: int) -> None:
            offset = 0
            while True:
                status, body = request(port, "GET", f"/sql/saved?limit={limit}&offset={offset}")
                page = json.loads(body)
                sizes[f"page of {limit}"] = max(sizes.get(f"page of {limit}", 0), len(body))
                if not page["next"]:
                    return
                offset += limit

        for limit in (100, 500):
            threads = [threading.Thread(target=list_all, args=(limit,)) for _ in range(args.lists)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        rss1, hwm = memory(worker)
        print(
            "list answers: "
            + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sizes.items())
            + f"; {args.lists} concurrent listings of every page"
        )
        print(
            f"server memory: {start_rss} MB before the saves, {rss0} MB before the lists, "
            f"{rss1} MB after (high-water {hwm} MB)"
        )
    finally:
        stop_server(proc, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
