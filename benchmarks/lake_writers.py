"""CPU per stored game of 1, 2 and 3 writer processes on one lake, against the same number of
writers each on a lake of its own: the control that tells the lake's cost of more writers
(DuckLake's snapshot conflicts, the claims) from the machine's (processes sharing its cores).

    python -m benchmarks.lake_writers [--writers 1,2,3] [--batches 12] [--batch 500]

Each writer is a process with a LakeStore (ingest/storage/lake/store.py) committing batches of
`--batch` games that were judged, with their rows, before the clock starts (no HTTP, no
judging: only the store's path); all writers of a setup start together, after one warm-up
commit each. It prints, per setup, each writer's CPU milliseconds per stored game (its
process: every thread, DuckDB's included) and the games per second of the setup. The lake's
share of the growth is the shared-lake figure over the separate-lakes one at the same number
of writers. Its own PostgreSQL cluster (tests/lake_cluster.py; fsync on); figures also go to
benchmarks/out/lake_writers.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks.analysis_full import OUT
from tests.harness.lake import Cluster, lake_unavailable


def _records(n: int) -> list[bytes]:
    import orjson

    from tests.harness.records import SLOW6

    return [orjson.dumps(dict(SLOW6[i % len(SLOW6)], game_id=str(uuid.uuid4()))) for i in range(n)]


def writer(catalog: str, token: bool, batches: int, batch: int, start, results) -> None:
    """One writer process: judge its games, wait for the others, store them; its figures."""
    from ingest.server.pipeline import Judge, utcnow
    from ingest.storage.lake import LakeStore

    judge = Judge()
    items = [judge.judge(0, r, utcnow()).pending for r in _records(batches * batch + 10)]
    store = LakeStore(catalog, commit_token=token)
    try:
        store.ingest(items[-10:])  # warm: the first commit loads the lake's catalog
        start.wait()
        before = resource.getrusage(resource.RUSAGE_SELF)
        began = time.perf_counter()
        for i in range(batches):
            outcomes = store.ingest(items[i * batch : (i + 1) * batch])
            assert set(outcomes) == {"accepted"}, set(outcomes)
        seconds = time.perf_counter() - began
        after = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        store.close()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    results.put({"games": batches * batch, "cpu_s": cpu, "seconds": seconds})


def run_setup(catalogs: list[str], token: bool, batches: int, batch: int) -> dict:
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(len(catalogs))
    results = ctx.Queue()
    procs = [
        ctx.Process(target=writer, args=(c, token, batches, batch, start, results))
        for c in catalogs
    ]
    for p in procs:
        p.start()
    got: list[dict] = []
    while len(got) < len(procs):  # a writer that died fails the run, never hangs it
        try:
            got.append(results.get(timeout=5))
        except queue.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead:
                for p in procs:
                    p.kill()
                raise RuntimeError(f"a writer failed (exit {dead[0]})") from None
    for p in procs:
        p.join()
    games = sum(g["games"] for g in got)
    return {
        "cpu_ms_per_game": sorted(round(g["cpu_s"] * 1000 / g["games"], 3) for g in got),
        "games_per_s": round(games / max(g["seconds"] for g in got), 1),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writers", default="1,2,3")
    ap.add_argument("--batches", type=int, default=12, help="commits per writer")
    ap.add_argument("--batch", type=int, default=500, help="games per commit")
    args = ap.parse_args(argv)
    counts = [int(x) for x in args.writers.split(",")]
    out: dict = {"batch": args.batch, "batches": args.batches, "setups": []}
    with tempfile.TemporaryDirectory(prefix="lake-writers-") as tmp:
        os.environ.setdefault("BALANCE_LAKE_EXTENSIONS", str(Path(tmp) / "extensions"))
        reason = lake_unavailable(Path(os.environ["BALANCE_LAKE_EXTENSIONS"]))
        if reason:
            print(f"no lake here: {reason}")
            return 1
        from ingest.storage.lake.admin import init_lake

        cluster = Cluster.for_benchmark(fsync=True)
        made = 0

        def new_lake() -> str:
            nonlocal made
            made += 1
            catalog = cluster.create_db(f"writers{made}")
            init_lake(catalog, str(Path(tmp) / f"data{made}"))
            return catalog

        try:
            for n in counts:  # alternating, so the machine's load falls on both alike
                for kind, catalogs, token in (
                    ("one lake", [new_lake()] * n, True),
                    ("one lake, no token", [new_lake()] * n, False),
                    ("a lake each", [new_lake() for _ in range(n)], True),
                ):
                    row = {
                        "writers": n,
                        "kind": kind,
                        **run_setup(catalogs, token, args.batches, args.batch),
                    }
                    out["setups"].append(row)
                    print(
                        f"{n} writer(s), {kind:18s}  CPU ms/game {row['cpu_ms_per_game']}  "
                        f"{row['games_per_s']:,.0f} games/s",
                        flush=True,
                    )
        finally:
            cluster.stop()
    out["load"] = os.getloadavg()[0]
    print(f"load average {out['load']:.2f}")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "lake_writers.json").write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
