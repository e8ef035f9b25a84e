"""The judge side of a batch upload, in-process: CPU per game of what a judge worker does.

A batch's lines go to the judge workers in chunks of 50 (`ingest/server/workers.py::_judge_chunk`):
each line is judged (parse, proof, replay, the game's rows, compression), the chunk's rows
become one `rows.Block` (`share_block`), and the process pool pickles the list of `Judged`.
This runs the same steps on the HTTP benchmark's corpus (`ingest_pool`: the same pool of
simulated Slow6 games, fresh game_ids) and reports µs of CPU (time.process_time) per game,
for each stage and in total, best and median of several passes, and the pickled bytes per
game. The server's side of the hand-off (unpickling, `rows.tables_of`) is shown apart: it
is not judge CPU, but a change here must not move cost onto the server process.

    PYTHONPATH=. nice -n 15 python -m benchmarks.ingest_judge [--games 5000] [--passes 7]
    PYTHONPATH=. nice -n 15 python -m benchmarks.ingest_judge --against /tmp/wt-base

`--against DIR` loads a second tree's code (a worktree of another commit) into the same
process and alternates the two chunk by chunk (ABBA), so that the machine's drift (15-40%
within an hour here) falls on both alike; it prints both, and new / old per stage.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import pickle
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from benchmarks.ingest_pool import ROOT, pool, pool_size, with_fresh_ids

CHUNK = 50  # ingest/server/workers.py::_CHUNK
STAGES = (
    "judge", "of which rows", "block", "pickle", "total", "server: unpickle", "server: tables",
)  # fmt: skip
PACKAGES = ("ingest", "replays")


def _ours(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def _first(*names: str):
    """The first of the modules `names` that this tree has."""
    for name in names:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(names[0])


def load(root: Path) -> SimpleNamespace:
    """The code of the tree at `root`: its modules (to put in sys.modules while it runs, so
    that pickling finds its classes) and a warmed-up Judge."""
    for name in [n for n in sys.modules if _ours(n)]:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        # the server's modules: ingest/server/ since the folder moves, ingest/ in older trees
        pipeline = _first("ingest.server.pipeline", "ingest.pipeline")
        workers = _first("ingest.server.workers", "ingest.workers")
        import ingest.storage.rows
        import replays.slide.verify
        import replays.slow6.verify  # noqa: F401  (the verifier imports them on first use)
    finally:
        sys.path.remove(str(root))
    tree = SimpleNamespace(
        root=root,
        modules={n: m for n, m in sys.modules.items() if _ours(n)},
        pipeline=pipeline,
        rows=ingest.storage.rows,
        chunk=getattr(workers, "_Chunk", list),  # what _judge_chunk returns
        judge=pipeline.Judge(),
        spent=[],
        sizes=[],
    )
    print(f"code: {root} (ingest from {ingest.__file__})", file=sys.stderr)
    return tree


def activate(tree: SimpleNamespace) -> None:
    sys.modules.update(tree.modules)


def run_chunk(tree, chunk: list[tuple[int, bytes]], received, spent: dict) -> int:
    """A judge worker's work on one chunk (and the server's unpickling): pickled bytes."""
    clock = time.process_time
    rows = tree.rows
    inner = rows.game_rows
    in_rows = 0.0

    def timed_rows(*args):  # the rows part of judging (inside Judge._pending)
        nonlocal in_rows
        t = clock()
        try:
            return inner(*args)
        finally:
            in_rows += clock() - t

    rows.game_rows = timed_rows
    try:
        judge = tree.judge
        t0 = clock()
        judged = [judge.judge(number, text, received) for number, text in chunk]
        t1 = clock()
        rows.share_block([j.pending for j in judged if j.pending is not None])
        t2 = clock()
        data = pickle.dumps(tree.chunk(judged), pickle.HIGHEST_PROTOCOL)  # as the pool does
        t3 = clock()
        back = pickle.loads(data)
        t4 = clock()
        rows.tables_of([j.pending.rows for j in back if j.pending is not None])
        t5 = clock()
    finally:
        rows.game_rows = inner
    spent["judge"] += t1 - t0
    spent["of which rows"] += in_rows
    spent["block"] += t2 - t1
    spent["pickle"] += t3 - t2
    spent["total"] += t3 - t0
    spent["server: unpickle"] += t4 - t3
    spent["server: tables"] += t5 - t4
    return len(data)


def one_pass(trees: list, lines: list[bytes], flip: int) -> None:
    received = trees[0].pipeline.utcnow()
    spent = [dict.fromkeys(STAGES, 0.0) for _ in trees]
    sizes = [0] * len(trees)
    gc.collect()
    for c, k in enumerate(range(0, len(lines), CHUNK)):
        chunk = list(enumerate(lines[k : k + CHUNK]))
        order = list(range(len(trees)))
        if (c + flip) % 2:  # ABBA: neither tree always runs first
            order.reverse()
        for i in order:
            activate(trees[i])
            sizes[i] += run_chunk(trees[i], chunk, received, spent[i])
    for tree, s, size in zip(trees, spent, sizes, strict=True):
        tree.spent.append({stage: secs / len(lines) * 1e6 for stage, secs in s.items()})
        tree.sizes.append(size / len(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=5000, help="lines per pass")
    ap.add_argument("--passes", type=int, default=7)
    ap.add_argument("--pool", type=pool_size, default=1000, help="as benchmarks/ingest_http.py")
    ap.add_argument("--against", type=Path, help="another tree's root, run alternately")
    args = ap.parse_args()
    lines = with_fresh_ids(pool("slow6", args.pool), args.games, seed=42)
    trees = [load(ROOT)]
    if args.against:
        trees.append(load(args.against.resolve()))
    for tree in trees:  # warm up: imports, caches
        activate(tree)
        run_chunk(tree, list(enumerate(lines[: 2 * CHUNK])), tree.pipeline.utcnow(),
                  dict.fromkeys(STAGES, 0.0))  # fmt: skip
        tree.spent.clear()
    for p in range(args.passes):
        one_pass(trees, lines, p)
    print(f"{args.games} slow6 games a pass, chunks of {CHUNK}, {args.passes} passes")
    head = f"{'µs CPU per game':<18}"
    for tree in trees:
        head += f" | {tree.root.name[:17]:>17}"
    print(head + ("  | new/old median" if len(trees) == 2 else ""))
    print(f"{'':<18}" + " | {:>8} {:>8}".format("best", "median") * len(trees))
    for stage in STAGES:
        line, medians = f"{stage:<18}", []
        for tree in trees:
            values = [s[stage] for s in tree.spent]
            medians.append(statistics.median(values))
            line += f" | {min(values):8.1f} {medians[-1]:8.1f}"
        if len(trees) == 2:
            line += f"  | {medians[0] / medians[1]:6.3f}"
        print(line)
    line = f"{'pickled B/game':<18}"
    for tree in trees:
        line += f" | {statistics.median(tree.sizes):17.0f}"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
