"""Where one single-game upload's time goes, on a lake and on the file, in one process.

    python -m benchmarks.lake_latency [--uploads 3000] [--connections 8] [--pool 1000] [--no-file]

The server's path without HTTP: `--connections` threads each call the gatherer
(ingest/server/gather.py) with one fresh record at a time, as granian's request threads do,
on a LakeStore with staging (a PostgreSQL cluster of its own, fsync on) and on a file Store.
The steps are timed by wrapping the functions that mark them (no change to the code):

- queued: the request queued until the gatherer sends its chunk to the judge process;
- judged: sent until the judged chunk is back and handed over (judging and the wait behind
  the previous chunk);
- to storer: handed over until a storer thread (or the gatherer) starts storing it;
- store: `store.ingest` of the chunk, and inside it on a lake the staging statement
  (`Stager.stage_new`, one PostgreSQL round trip and commit) and everything else (rows
  packed, the hand-off to the committer thread and back);
- answered: `store.ingest` returned until the request's thread runs again.

Per step the mean and p50 per upload (ms), the chunks' mean size, and the uploads a second.
The loader runs as on a server (a lake commit every second), so its competition is in the
figures. Compare within one run: the machine is shared.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.ingest_pool import pool, pool_size, with_fresh_ids
from ingest.server import gather as gather_mod
from ingest.server.pipeline import Judge
from ingest.server.workers import JudgePool
from ingest.storage import Store
from ingest.storage.lake import staging as staging_mod
from tests.harness.lake import Cluster, benchmark_extensions

clock = time.perf_counter


class Stamps:
    """Per request (by id) the time of each step; per chunk the store's own times."""

    def __init__(self) -> None:
        self.req: dict[int, dict[str, float]] = {}  # by the id of a live request
        self.records: list[dict[str, float]] = []
        self.chunks: list[tuple[int, float, float]] = []  # (size, ingest s, statement s)
        self.packs: list[float] = []  # a group's tables as Arrow IPC (in the statement's time)

    def mark(self, request, step: str) -> None:
        self.req[id(request)][step] = clock()

    def begin(self, request) -> None:
        """A new request: a record of its own (an id is reused once its object is gone)."""
        self.req[id(request)] = record = {"queued": clock()}
        self.records.append(record)


def instrument(stamps: Stamps) -> list:
    """Wrap the functions that mark each step; returns what undoes it."""
    G = gather_mod.Gatherer
    saved = [
        (G, "_send", G._send),
        (G, "_hand_over", G._hand_over),
        (G, "_store_and_answer", G._store_and_answer),
        (staging_mod.Stager, "stage_new", staging_mod.Stager.stage_new),
    ]
    send, hand, store_answer = G._send, G._hand_over, G._store_and_answer
    stage_new = staging_mod.Stager.stage_new

    def _send(self, requests):
        for r in requests:
            stamps.mark(r, "sent")
        return send(self, requests)

    def _hand_over(self, requests, judged):
        for r in requests:
            stamps.mark(r, "judged")
        return hand(self, requests, judged)

    current = threading.local()  # the requests of the chunk this thread stores

    def _store_and_answer(self, requests, judged):
        for r in requests:
            stamps.mark(r, "storing")
        if "ingest" not in vars(self.store):  # wrapped once per store, for every storer
            inner = self.store.ingest

            def ingest(items, timeout=None):
                t0 = clock()
                try:
                    return inner(items, timeout=timeout)
                finally:
                    current.took = clock() - t0
                    for r in current.requests:
                        stamps.mark(r, "stored")

            self.store.ingest = ingest
        current.requests, current.took = requests, 0.0
        try:
            return store_answer(self, requests, judged)
        finally:
            stamps.chunks.append((len(requests), current.took, _last_statement[0]))

    _last_statement = [0.0]

    def _stage_new(self, *a, **kw):
        t0 = clock()
        try:
            return stage_new(self, *a, **kw)
        finally:
            _last_statement[0] = clock() - t0

    pack = staging_mod.pack
    saved.append((staging_mod, "pack", pack))

    def _pack(tables):
        t0 = clock()
        try:
            return pack(tables)
        finally:
            stamps.packs.append(clock() - t0)

    staging_mod.pack = _pack
    G._send, G._hand_over, G._store_and_answer = _send, _hand_over, _store_and_answer
    staging_mod.Stager.stage_new = _stage_new
    return saved


def undo(saved: list) -> None:
    for owner, name, fn in saved:
        setattr(owner, name, fn)


def cpu_seconds() -> float:
    """CPU of this process and its ended children (the judge process, once closed); the
    PostgreSQL cluster's is not counted."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run(store, judge: Judge, lines: list[bytes], connections: int) -> dict:
    stamps = Stamps()
    saved = instrument(stamps)
    gatherer = gather_mod.Gatherer(store, judge)
    taken = iter(range(len(lines)))
    lock = threading.Lock()
    totals: list[float] = []

    def client() -> None:
        mine = []
        while True:
            with lock:
                i = next(taken, None)
            if i is None:
                break
            received = dt.datetime.now(dt.UTC).replace(tzinfo=None)
            t0 = clock()
            gatherer.judge_and_store([(0, lines[i])], received)
            mine.append(clock() - t0)
        with lock:
            totals.extend(mine)

    # stamp each request as queued and answered: wrap _Request's creation and wake
    R = gather_mod._Request
    init, answer = R.__init__, R.answer

    def r_init(self, lines_, received_):
        init(self, lines_, received_)
        stamps.begin(self)

    def r_answer(self, error=None):
        stamps.mark(self, "answered")
        return answer(self, error)

    R.__init__, R.answer = r_init, r_answer  # type: ignore[method-assign]
    threads = [threading.Thread(target=client) for _ in range(connections)]
    began = clock()
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        elapsed = clock() - began
        R.__init__, R.answer = init, answer  # type: ignore[method-assign]
        gatherer.close()
        undo(saved)
    steps = {
        "queued": ("queued", "sent"),
        "judged": ("sent", "judged"),
        "to storer": ("judged", "storing"),
        "store": ("storing", "stored"),
        "answered": ("stored", "answered"),
    }
    out: dict = {
        "uploads_per_s": round(len(totals) / elapsed, 1),
    }
    complete = [s for s in stamps.records if all(k in s for pair in steps.values() for k in pair)]
    for name, (a, b) in steps.items():
        values = [1000 * (s[b] - s[a]) for s in complete]
        out[name] = (round(statistics.fmean(values), 3), round(statistics.median(values), 3))
    out["total"] = (
        round(1000 * statistics.fmean(totals), 3),
        round(1000 * statistics.median(totals), 3),
    )
    out["wake and rest"] = round(out["total"][0] - sum(out[n][0] for n in steps), 3)
    sizes = [c[0] for c in stamps.chunks]
    out["chunk_mean"] = round(statistics.fmean(sizes), 2)
    statements = [c[2] for c in stamps.chunks if c[2]]
    if statements:
        out["statement_ms"] = round(1000 * statistics.fmean(statements), 3)
        out["pack_ms"] = round(1000 * statistics.fmean(stamps.packs), 3)
        out["ingest_ms"] = round(1000 * statistics.fmean(c[1] for c in stamps.chunks), 3)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--uploads", type=int, default=3000)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--pool", type=pool_size, default=1000, help="simulated records to send again")
    ap.add_argument("--no-file", action="store_true")
    ap.add_argument("--stagers", type=int, default=0, help="the lake's (0: its default)")
    ap.add_argument(
        "--no-loader", action="store_true", help="no loader: staging alone, no lake commits"
    )
    args = ap.parse_args()

    reason, own_extensions = benchmark_extensions("lake-lat-ext-")
    if reason:
        print(f"lake latency not measured: {reason}", file=sys.stderr)
        return 2
    records = pool("slow6", args.pool)
    work = Path(tempfile.mkdtemp(prefix="lake-lat-"))
    cluster = Cluster.for_benchmark(fsync=True)
    try:
        from ingest.storage.lake import LakeStore
        from ingest.storage.lake.admin import init_lake

        setups = [] if args.no_file else ["file"]
        setups.append("lake")
        for i, kind in enumerate(setups):
            judge = Judge()
            lines = with_fresh_ids(records, args.uploads, seed=time.time_ns() + i)
            if kind == "file":
                store = Store(work / "f.duckdb", judge=judge)
            else:
                catalog = cluster.create_db(f"lat{i}")
                init_lake(catalog, str(work / "data"))
                more: dict = {"stagers": args.stagers} if args.stagers else {}
                if args.no_loader:
                    more["loader"] = False
                store = LakeStore(catalog, judge=judge, work_dir=work / "lakework", **more)
            judges = JudgePool(1, judge)
            store.rebuild = judges.rows_many
            cpu0 = cpu_seconds()
            try:
                row = run(store, judge, lines, args.connections)
            finally:
                store.close()  # its loader's last load counted with the run's
                judges.close()  # judge processes end: their CPU is counted as children's
            row["cpu_ms_per_upload"] = round(1000 * (cpu_seconds() - cpu0) / len(lines), 3)
            print(kind, row, f"load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
        if own_extensions is not None:
            shutil.rmtree(own_extensions, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
