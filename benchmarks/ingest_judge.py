"""The judge side of a batch upload, in-process: CPU per game of what a judge worker does.

A batch's lines go to the judge workers in chunks of 50 (`ingest/workers.py::_judge_chunk`):
each line is judged (parse, proof, replay, the game's rows, compression), the chunk's rows
become one `rows.Block` (`share_block`), and the process pool pickles the list of `Judged`.
This runs the same steps on the HTTP benchmark's corpus (`ingest_pool`: the same pool of
simulated Slow6 games, fresh game_ids) and reports µs of CPU (time.process_time) per game,
for each stage and in total, best and median of several passes, and the pickled bytes per
game. The server's side of the hand-off (unpickling, `rows.tables_of`) is shown apart: it
is not judge CPU, but a change here must not move cost onto the server process.

    PYTHONPATH=. nice -n 15 python benchmarks/ingest_judge.py [--games 5000] [--passes 7]

For an A/B, run a copy of this file inside a worktree of the other commit (ingest_pool puts
its own tree first on sys.path), interleaving runs: the machine's speed drifts.
"""

from __future__ import annotations

import argparse
import gc
import pickle
import statistics
import sys
import time

from ingest_pool import ROOT, pool, with_fresh_ids  # noqa: E402  (puts ROOT on sys.path)

import ingest  # noqa: E402
from ingest import pipeline, rows  # noqa: E402
from ingest.pipeline import Judge, utcnow  # noqa: E402
from ingest.rows import share_block  # noqa: E402

CHUNK = 50  # ingest/workers.py::_CHUNK
STAGES = (
    "judge", "of which rows", "block", "pickle", "total", "server: unpickle", "server: tables",
)  # fmt: skip


def one_pass(lines: list[bytes], judge: Judge) -> tuple[dict[str, float], int]:
    """CPU seconds per stage over all of `lines`, and the pickled bytes."""
    spent = dict.fromkeys(STAGES, 0.0)
    clock = time.process_time
    inner = rows.game_rows
    in_rows = [0.0]

    def timed_rows(*args):  # the rows part of judging (inside Judge._pending)
        t = clock()
        try:
            return inner(*args)
        finally:
            in_rows[0] += clock() - t

    pipeline.rows.game_rows = timed_rows
    size = 0
    try:
        received = utcnow()
        for k in range(0, len(lines), CHUNK):
            chunk = list(enumerate(lines[k : k + CHUNK]))
            t0 = clock()
            judged = [judge.judge(number, text, received) for number, text in chunk]
            t1 = clock()
            share_block([j.pending for j in judged if j.pending is not None])
            t2 = clock()
            data = pickle.dumps(judged, pickle.HIGHEST_PROTOCOL)  # what the pool sends
            t3 = clock()
            back = pickle.loads(data)
            t4 = clock()
            rows.tables_of([j.pending.rows for j in back if j.pending is not None])
            t5 = clock()
            size += len(data)
            spent["judge"] += t1 - t0
            spent["block"] += t2 - t1
            spent["pickle"] += t3 - t2
            spent["total"] += t3 - t0
            spent["server: unpickle"] += t4 - t3
            spent["server: tables"] += t5 - t4
    finally:
        pipeline.rows.game_rows = inner
    spent["of which rows"] = in_rows[0]
    return spent, size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=5000, help="lines per pass")
    ap.add_argument("--passes", type=int, default=7)
    ap.add_argument("--pool", type=int, default=1000, help="as benchmarks/ingest_http.py")
    args = ap.parse_args()
    print(f"code: {ROOT} (ingest from {ingest.__file__})", file=sys.stderr)
    lines = with_fresh_ids(pool("slow6", args.pool), args.games, seed=42)
    judge = Judge()
    one_pass(lines[: 10 * CHUNK], judge)  # warm up: imports, caches
    per_game: dict[str, list[float]] = {s: [] for s in STAGES}
    sizes = []
    for _ in range(args.passes):
        gc.collect()
        spent, size = one_pass(lines, judge)
        for stage, secs in spent.items():
            per_game[stage].append(secs / len(lines) * 1e6)
        sizes.append(size / len(lines))
    print(f"{args.games} slow6 games a pass, chunks of {CHUNK}, {args.passes} passes")
    print(f"{'µs CPU per game':<18} {'best':>8} {'median':>8}")
    for stage in STAGES:
        values = per_game[stage]
        print(f"{stage:<18} {min(values):8.1f} {statistics.median(values):8.1f}")
    print(f"pickled bytes per game: {statistics.median(sizes):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
