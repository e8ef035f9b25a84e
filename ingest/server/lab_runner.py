"""Running a lab comparison: the pairs of replays/lab.py played in worker processes, each
finished pair appended to the run's file as it arrives, so that a run killed at any moment
keeps what it finished and the same command continues it.

The run file (NDJSON) is named by the run's key: a digest of everything that decides its games
(both rulesets' full parameters, board, powers, levels, seed, engine version), not of the
number of games, since pair `i` is the same whatever N is. Its first line is the run's
settings; every other line one finished pair. A line cut short by a kill is ignored (and
played again). The result is computed from the pairs sorted by index, so it is the same
whether the pairs came in one go or many, in any order, from any number of workers.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replays import lab
from replays.rulesets import Ruleset


@dataclass
class LabRun:
    base: Ruleset
    candidate: Ruleset
    board: int = 5
    powers: bool = True
    levels: tuple[int, ...] = (1, 2)
    seed: int = 0
    games: int = 1000
    engine_version: str = field(default=lab.ENGINE_VERSION)

    def settings(self) -> dict[str, Any]:
        """What decides the games (not their number)."""
        return {
            "base": self.base.to_json(),
            "candidate": self.candidate.to_json(),
            "board": self.board,
            "powers": self.powers,
            "levels": list(self.levels),
            "seed": self.seed,
            "engine_version": self.engine_version,
        }

    @property
    def key(self) -> str:
        text = json.dumps(self.settings(), sort_keys=True, default=list)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def run_id(self) -> str:
        """The stored run's id: the key and the number of pairs."""
        return f"{self.key}-{self.games}"


class WorkerDied(Exception):
    """A worker process ended without its result (killed, out of memory)."""


class Cancelled(Exception):
    def __init__(self, kept: int) -> None:
        super().__init__(f"cancelled: {kept} pairs kept")
        self.kept = kept


def read_pairs(path: Path, run: LabRun) -> dict[int, dict[str, Any]]:
    """The finished pairs in a run file (index -> pair), those below run.games; a file of
    another run (its settings line differs) is refused."""
    out: dict[int, dict[str, Any]] = {}
    if not path.exists():
        return out
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[0].strip():
        try:
            head = json.loads(lines[0])
        except ValueError:
            head = None
        if head is not None and head != json.loads(json.dumps(run.settings(), default=list)):
            raise ValueError(f"{path} holds another run's games")
    for line in lines[1:]:
        try:
            pair = json.loads(line)
        except ValueError:
            continue  # (empty, or cut short by a kill: played again)
        if isinstance(pair, dict) and isinstance(pair.get("i"), int) and pair["i"] < run.games:
            out[pair["i"]] = pair
    return out


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle


_ARGS: tuple = ()


def _pairs(indices: Sequence[int]) -> list[dict[str, Any]]:
    seed, base, candidate, board, powers, levels = _ARGS
    return [lab.play_pair(seed, i, base, candidate, board, powers, levels) for i in indices]


# Pairs per task handed to a worker: enough that the hand-off (a future, two pickles, a wake-up
# of this process) is a small part of the task, few enough that progress stays smooth and a
# cancelled or killed run loses little; a small run goes one pair a task.
CHUNK = 8


def _set_args(args: tuple) -> None:
    global _ARGS
    _ARGS = args
    _worker_init()


def play(
    run: LabRun,
    path: Path,
    jobs: int = 1,
    progress: Callable[[int, int, float], None] | None = None,
) -> list[dict[str, Any]]:
    """Every pair of the run, sorted by index: those in `path` kept, the rest played (in
    `jobs` worker processes) and appended to it as each finishes. Ctrl-C (KeyboardInterrupt)
    stops the workers and raises Cancelled with what is kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    done = read_pairs(path, run)
    todo = [i for i in range(run.games) if i not in done]
    kept = len(done)
    start = time.monotonic()
    if todo:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                os.write(fd, json.dumps(run.settings(), default=list).encode() + b"\n")
            else:
                with open(path, "rb") as f:  # a line cut short: start on a line of our own
                    f.seek(size - 1)
                    if f.read(1) != b"\n":
                        os.write(fd, b"\n")
            played = 0
            try:
                for batch in _results(run, todo, jobs):
                    # (one write a batch: a kill leaves at most its last line cut short)
                    lines = [json.dumps(pair, separators=(",", ":")) + "\n" for pair in batch]
                    os.write(fd, "".join(lines).encode())
                    for pair in batch:
                        done[pair["i"]] = pair
                    played += len(batch)
                    if progress:
                        progress(len(done), run.games, played / (time.monotonic() - start))
            except KeyboardInterrupt:
                raise Cancelled(len(done)) from None
        finally:
            os.close(fd)
    if progress and not todo:
        progress(kept, run.games, 0.0)
    return [done[i] for i in range(run.games)]


def _results(run: LabRun, todo: Sequence[int], jobs: int) -> Iterator[list[dict[str, Any]]]:
    """The pairs of `todo` as they finish, in batches (one a task)."""
    args = (run.seed, run.base, run.candidate, run.board, run.powers, tuple(run.levels))
    if jobs <= 1:
        for i in todo:
            yield [
                lab.play_pair(
                    run.seed, i, run.base, run.candidate, run.board, run.powers, run.levels
                )
            ]
        return
    size = max(1, min(CHUNK, len(todo) // (8 * jobs)))
    chunks = [todo[k : k + size] for k in range(0, len(todo), size)]
    # (concurrent.futures, not multiprocessing.Pool: a worker that dies, killed or out of
    # memory, breaks the executor and stops the run, where a Pool would wait for its result
    # for ever)
    ctx = multiprocessing.get_context("spawn" if sys.platform != "linux" else "fork")
    pool = ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_set_args, initargs=(args,))
    pending: set[Future] = set()
    queue = iter(chunks)
    broken = False  # a worker died: submit no more, hand over what finished, then stop
    try:
        while True:
            for chunk in () if broken else queue:  # a few tasks a worker ahead, never all
                try:
                    pending.add(pool.submit(_pairs, chunk))
                except BrokenProcessPool:  # it died while the last results were written
                    broken = True
                    break
                if len(pending) >= 4 * jobs:
                    break
            if not pending:
                break
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                try:
                    batch = future.result()
                except BrokenProcessPool:
                    broken = True
                    continue
                yield batch
        if broken:
            raise WorkerDied()
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


def parse_levels(text: str) -> tuple[int, ...] | None:
    """Bot levels "1,2" as a tuple; None unless each is 1..4 (the command line's and the
    Lab page's form's one reading)."""
    try:
        levels = tuple(int(x) for x in text.split(","))
    except ValueError:
        return None
    return levels if levels and all(1 <= lv <= 4 for lv in levels) else None
