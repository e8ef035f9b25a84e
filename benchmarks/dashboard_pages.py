"""Server time and weight of every dashboard page at 1,000,000 games.

    python -m benchmarks.dashboard_pages [--games 1000000] [--repeat 5]

Store: synthetic rows with realistic distributions (analysis.synthetic, the analysis benchmark's
synthesizer; reuses its cached benchmarks/out/analysis_<N>.duckdb when present), then the real
analysis jobs write the agg_* tables. A real `balance serve` subprocess serves it on a free
loopback port; the script measures, over HTTP:
  - the first snapshot of the store (what the console and the pages read), and a refresh;
    and the copy of the store file itself, shutil.copyfile (what the snapshot used, which
    dropped DuckDB's lock) against ingest.storage.livefile.copy (what it uses);
  - per page: server time (median and max of --repeat requests after one warm-up; loopback
    round-trip included) and HTML bytes (uncompressed, data of every chart inlined);
  - the JavaScript bundle, plain and gzip (served once per browser: immutable cache).
Target: every page under 300 ms.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

from benchmarks.serving import start_server, stop_server

ROOT = Path(__file__).resolve().parents[1]
# cached corpora and stores; BALANCE_BENCH_OUT puts them elsewhere (the smoke runs: a tmp dir)
OUT = Path(os.environ.get("BALANCE_BENCH_OUT") or ROOT / "benchmarks" / "out")
PAGES = ["/dashboard/", "/dashboard/p/setups", "/dashboard/p/powers", "/dashboard/p/boards",
         "/dashboard/p/computer", "/dashboard/p/challenges", "/dashboard/p/quality",
         "/dashboard/p/trends", "/dashboard/?mode=&client_version=",
         "/dashboard/p/setups?board=7&mode=&client_version=", "/dashboard/games",
         "/sql"]  # fmt: skip
TARGET_MS = 300


def build(path: Path, games: int) -> None:
    import duckdb

    from analysis import jobs
    from analysis import synthetic as sy

    cached = OUT / f"analysis_{games}.duckdb"
    t = time.perf_counter()
    if cached.exists():
        shutil.copy(cached, path)
    else:
        con = duckdb.connect(str(path))
        sy.fill_store(con, games)
        con.close()
    con = duckdb.connect(str(path))
    summary = jobs.run(con, lambda fn: fn(con), force=True)
    con.execute("CHECKPOINT")
    con.close()
    print(
        f"store: {games:,} games, agg tables in {summary['seconds']:.1f} s; "
        f"built in {time.perf_counter() - t:.1f} s",
        flush=True,
    )


def copy_times(db: Path, work: Path, rounds: int = 3) -> None:
    """Median seconds to copy the store file, the two ways in turn (the page cache warm)."""
    from ingest.storage import livefile

    took: dict[str, list[float]] = {"shutil.copyfile": [], "livefile.copy": []}
    for _ in range(rounds):
        for name, copy in (("shutil.copyfile", shutil.copyfile), ("livefile.copy", livefile.copy)):
            out = work / "copy.duckdb"
            t = time.perf_counter()
            copy(str(db), str(out))
            took[name].append(time.perf_counter() - t)
            out.unlink()
    size = db.stat().st_size / 1e6
    print(
        f"store file copy ({size:,.0f} MB, median of {rounds}): "
        + ", ".join(f"{k} {statistics.median(v):.3f} s" for k, v in took.items()),
        flush=True,
    )


def request(port: int, method: str, path: str, headers=None, body=None, timeout=600):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        start = time.perf_counter()
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        headers = {k.lower(): v for k, v in resp.getheaders()}
        return resp.status, data, (time.perf_counter() - start) * 1000, headers
    finally:
        conn.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    db = OUT / f"dashboard_{args.games}.duckdb"
    if not db.exists():
        part = db.with_suffix(".partial")
        part.unlink(missing_ok=True)
        build(part, args.games)
        part.rename(db)
    work = OUT / "dashboard-serve"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    served = work / "store.duckdb"
    shutil.copy(db, served)
    copy_times(served, work)
    proc, port, log = start_server(served, work)
    try:
        status, body, ms, _ = request(port, "POST", "/sql/snapshot", body=b"")
        print(f"first snapshot of the store: {ms / 1000:.2f} s ({status})")
        status, body, ms, _ = request(port, "POST", "/sql/snapshot", body=b"")
        print(f"snapshot refresh:            {ms / 1000:.2f} s ({status})")
        print(f"\n{'page':<52} {'median ms':>10} {'max ms':>8} {'bytes':>9}  status")
        worst = 0.0
        for page in PAGES:
            request(port, "GET", page)  # warm-up: caches of columns / versions / bundle
            times, size, status = [], 0, 0
            for _ in range(args.repeat):
                status, body, ms, _ = request(port, "GET", page)
                times.append(ms)
                size = len(body)
            med = statistics.median(times)
            worst = max(worst, med)
            flag = "" if med < TARGET_MS else f"  over {TARGET_MS} ms"
            print(f"{page:<52} {med:>10.0f} {max(times):>8.0f} {size:>9,}  {status}{flag}")
        bundle = "/dashboard/assets/vega-bundle-" + __import__("vl_convert").__version__ + ".js"
        _, plain, _, _ = request(port, "GET", bundle)
        _, gz, _, h = request(port, "GET", bundle, headers={"Accept-Encoding": "gzip"})
        print(f"\nJS bundle (once per browser, immutable): {len(plain):,} bytes, "
              f"{len(gz):,} gzip ({h.get('cache-control')})")  # fmt: skip
        print(f"slowest page median: {worst:.0f} ms (target < {TARGET_MS} ms)")
        print(json.dumps({"games": args.games, "slowest_median_ms": round(worst, 1)}))
    finally:
        stop_server(proc, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
