"""What a lake server pays to see rulesets registered at another server (docs/lake.md,
"Rulesets on a lake"): reading the `rulesets` table from the lake, against checking the
registry's counter in the catalog's PostgreSQL, which is all an upload naming an unknown
ruleset (RS5.1) costs while nothing was registered; and judging such uploads in a burst.

    python -m benchmarks.lake_registry [--reads 100] [--burst 2000]

Its own PostgreSQL cluster and lake (tests/lake_cluster.py), the five rulesets of the spec's
examples registered; a LakeStore as a server has it. The burst judges `--burst` records naming
a ruleset that is not registered, 50 to a chunk as the upload path does (pipeline.
recheck_unknown after each chunk), and prints its rate with the counter and with a full read
per chunk (what it would cost without the counter).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from tests.harness.lake import Cluster, lake_unavailable

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "tests" / "spec" / "examples"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reads", type=int, default=100, help="reads of each kind")
    ap.add_argument("--burst", type=int, default=2000, help="RS5.1 records judged in the burst")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lake-registry-") as tmp:
        os.environ.setdefault("BALANCE_LAKE_EXTENSIONS", str(Path(tmp) / "extensions"))
        reason = lake_unavailable(Path(os.environ["BALANCE_LAKE_EXTENSIONS"]))
        if reason:
            print(f"no lake here: {reason}")
            return 1
        from ingest.server import rulesets as ops
        from ingest.server.pipeline import Judge, recheck_unknown
        from ingest.storage.lake import LakeStore
        from ingest.storage.lake.admin import init_lake

        cluster = Cluster.for_benchmark(fsync=False)
        try:
            catalog = cluster.create_db("registry")
            init_lake(catalog, str(Path(tmp) / "data"))
            files = [
                (p.name, p.read_text()) for p in sorted((EXAMPLES / "rulesets").glob("*.toml"))
            ]
            ops.register_lake(catalog, files)
            store = LakeStore(catalog, work_dir=Path(tmp) / "work")
            try:
                reg = store.registry
                started = time.perf_counter()
                for _ in range(args.reads):
                    reg.reload()
                full = (time.perf_counter() - started) / args.reads
                started = time.perf_counter()
                for _ in range(args.reads):
                    reg.refresh(time.time())
                check = (time.perf_counter() - started) / args.reads
                print(f"rulesets registered: {len(reg.all())}")
                print(f"full read of the rulesets from the lake: {full * 1000:.2f} ms")
                print(f"registry counter check:                  {check * 1000:.3f} ms")
                rates = burst(store, Judge(registry=reg), recheck_unknown, args.burst)
                for what, rate in rates.items():
                    print(f"RS5.1 burst, {what}: {rate:,.0f} records/s judged")
            finally:
                store.close()
        finally:
            cluster.stop()
    return 0


def burst(store, judge, recheck, n: int) -> dict[str, float]:
    """Records naming an unknown ruleset judged in chunks of 50, each chunk rechecked as the
    upload path does: with the counter, and with a full read each time (counter removed)."""
    base = json.loads((EXAMPLES / "rulesets" / "rulesets-valid.ndjson").read_text().split("\n")[0])
    base["ruleset"] = "never-registered"
    lines = []
    for i in range(n):
        rec = dict(base, game_id=f"00000000-0000-4000-8000-{i:012d}")
        lines.append((i, json.dumps(rec).encode()))
    out = {}
    for what, version in (
        ("counter checked", judge.registry._version),
        ("a lake read a chunk", None),
    ):
        judge.registry._version = version
        started = time.perf_counter()
        for k in range(0, n, 50):
            chunk = lines[k : k + 50]
            at = dt.datetime.now(dt.UTC).replace(tzinfo=None)
            judged = [judge.judge(num, text, at) for num, text in chunk]
            judged = recheck(judge, judged, chunk, [at] * len(chunk))
            assert all(j.result["rule"] == "RS5.1" for j in judged)
        out[what] = n / (time.perf_counter() - started)
    return out


if __name__ == "__main__":
    sys.exit(main())
