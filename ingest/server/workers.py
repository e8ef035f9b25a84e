"""Judging uploads in worker processes, so that the server process stays free for I/O.

Replaying a game is pure-Python CPU work. Done on the request threads, it holds the GIL that
the store's commits need between DuckDB calls: a commit that takes 30 ms alone took
150-600 ms next to busy request threads. In worker processes it also runs on every core.
"""

from __future__ import annotations

import datetime as dt
import logging
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import fields
from itertools import repeat
from operator import attrgetter
from typing import cast

from dashboard.lifetime import leave_with

from ..storage import Pending
from ..storage.rows import Block, Part, share_block
from .pipeline import Judge, Judged, TooLong

log = logging.getLogger("ingest.workers")

_worker_judge: Judge | None = None
_CHUNK = 50  # lines per task: enough to amortise the hand-off, small enough to spread
# Requests this small are judged on the request thread: for one record the hand-off (pickling,
# the executor's feeder and result threads, the worker's side) cost ~0.9 ms of CPU, twice the
# replay itself (8 single-record clients: 4.5 -> 3.7 ms of server CPU a game).
_LOCAL_MAX = 2


# What the fork server imports once: the judges' module and the SQL console's worker.
PRELOAD = [__name__, "dashboard.console.sqlworker"]


def process_context() -> multiprocessing.context.ForkServerContext:
    """Where the server's processes start: forked from a fork server that imported, once, what
    they run (PRELOAD): the judges, and the SQL console's workers (dashboard/console/sqlpool.py).

    Not `fork`: the server has threads and an open DuckDB database. Spawning each process paid
    a fresh interpreter and its imports (Arrow, DuckDB, the engines) every time; the fork
    server pays them once, at the first judge or SQL worker, and every one after is a fork of
    it (a server's pool and its gatherer's judge, an SQL worker, a replacement for one that
    died or that a query killed). One fork server per process (multiprocessing's), so one list
    of modules for all of them."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def _init(server: int) -> None:
    global _worker_judge
    # A terminal's Ctrl-C reaches the whole process group: the pool, not the signal, ends a
    # judge (the server shuts it down), so that the server closes cleanly and quietly.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_judge = Judge()
    # a killed server's judges would wait forever: their task pipe stays open (every judge
    # holds both ends), so each leaves when the server does (dashboard/lifetime.py)
    threading.Thread(target=leave_with, args=(server,), daemon=True).start()


def _judge(rulesets: tuple | None = None) -> Judge:
    """This judge process's Judge (made by `_init`), judging by the server's `rulesets`."""
    if _worker_judge is None:
        raise RuntimeError("not a judge process: its initializer has not run")
    _worker_judge.registry.adopt(rulesets)
    return _worker_judge


def _judge_chunk(
    lines: list[tuple[int, bytes]], received: dt.datetime, rulesets: tuple | None = None
) -> _Chunk:
    """The Judged lines, as a `_Chunk`: a list that pickles compactly (the pool hands the
    server the plain list `_unchunk` rebuilds). `rulesets`: the server's Registry.state(), the
    rulesets to judge by (adopted when they changed)."""
    return _judge_rowed(lines, [received] * len(lines), rulesets)


def _judge_light(
    lines: list[tuple[int, bytes]], received: list[dt.datetime], rulesets: tuple | None = None
) -> list[tuple[dict, tuple | None, bool]]:
    """Judged lines without a verified game's rows (the store rebuilds them in a batch, see
    gather.py), as plain tuples: a few µs to unpickle, where Judged objects with their rows
    took ~110 µs a game and a chunk's Arrow block ~750 µs to build for one game."""
    out = []
    judge = _judge(rulesets)
    for (number, text), at in zip(lines, received, strict=True):
        judged = judge.judge(number, text, at, with_rows=False)
        pending = judged.pending
        fields_ = None if pending is None else tuple(map(pending.__getattribute__, _PENDING))
        out.append((judged.result, fields_, judged.json_ok))
    return out


def _judge_rowed(
    lines: list[tuple[int, bytes]], received: list[dt.datetime], rulesets: tuple | None = None
) -> _Chunk:
    """Judged lines with a verified game's rows (one replay a game), each received at its own
    time, as a `_Chunk`: the pool's chunks of a batch (`_judge_chunk`), and the gatherer's for
    a store that writes the rows at once (GameStore.rows_when_judged)."""
    judge = _judge(rulesets)
    judged = [
        judge.judge(number, text, at) for (number, text), at in zip(lines, received, strict=True)
    ]
    # Arrow tables here, not tuples: unpickling and converting a batch's ~40 row tuples a
    # game took a third of the server process's time (its GIL bounds batch uploads).
    share_block([j.pending for j in judged if j.pending is not None])
    return _Chunk(judged)


def _rows_chunk(
    lines: list[tuple[int, bytes]], received: list[dt.datetime], rulesets: tuple | None = None
) -> list[tuple]:
    """(status, rows) a line (Judge.rows_of), the rows as Parts of one Block."""
    out = _judge(rulesets).rows_many(lines, received)
    games = [_Rowed(rows) for _, rows in out if rows is not None]
    share_block(games)
    parts = iter(games)
    return [(status, None if rows is None else next(parts).rows) for status, rows in out]


class _Rowed:
    __slots__ = ("rows",)

    def __init__(self, rows):
        self.rows = rows


def unlight(light: list[tuple[dict, tuple | None, bool]]) -> list[Judged]:
    return [Judged(res, None if p is None else Pending(*p), ok) for res, p, ok in light]


_PENDING = tuple(f.name for f in fields(Pending))
_ROWS = _PENDING.index("rows")


class _Chunk(list[Judged]):
    """A chunk's Judged as the process pool pickles them: field by field, each a list over
    the chunk, and the rows as the one Block their Parts share. Pickled one by one, the
    Judged and Pending dataclasses cost the judge ~8 µs of CPU a game, more than the Block
    (and the server ~4 to unpickle)."""

    __slots__ = ()

    def __reduce__(self):
        pending = [j.pending for j in self if j.pending is not None]
        columns = [list(map(attrgetter(name), pending)) for name in _PENDING]
        parts = columns[_ROWS]
        if parts and all(type(p) is Part and p.block is parts[0].block for p in parts):
            if [p.index for p in parts] == list(range(len(parts))):
                columns[_ROWS] = parts[0].block  # the Parts are rebuilt from it
        flags = [(j.result, j.pending is not None, j.json_ok) for j in self]
        return _unchunk, (flags, columns)


def _unchunk(flags: list, columns: list) -> list[Judged]:
    rows = columns[_ROWS]
    if isinstance(rows, Block):
        columns[_ROWS] = list(map(Part, repeat(rows), range(len(columns[0]))))
    pending = map(Pending, *columns)
    return [Judged(result, next(pending) if has else None, ok) for result, has, ok in flags]


def _ready() -> bool:
    return _worker_judge is not None


class JudgePool:
    """Judges lines in `workers` processes (0: in this process, with `judge`)."""

    def __init__(self, workers: int, judge: Judge):
        self.workers = workers
        self.judge = judge
        self._lock = threading.Lock()
        self._pool = self._start() if workers > 0 else None

    def _start(self) -> ProcessPoolExecutor:
        ctx = process_context()
        pool = ProcessPoolExecutor(
            self.workers, mp_context=ctx, initializer=_init, initargs=(os.getpid(),)
        )
        for future in [pool.submit(_ready) for _ in range(self.workers)]:
            future.result()  # start them now, not on the first upload
        return pool

    def judge_many(self, lines: list, received: dt.datetime) -> list[Judged]:
        """Judged `lines` (one request's), in order."""
        pool = self._pool
        if pool is None or len(lines) <= _LOCAL_MAX:
            return self._judge_here(lines, received)
        out: list[Judged | None] = [None] * len(lines)
        remote = [
            (i, n, text) for i, (n, text) in enumerate(lines) if not isinstance(text, TooLong)
        ]
        for i, (n, text) in enumerate(lines):
            if isinstance(text, TooLong):  # nothing to parse: judged here
                out[i] = self.judge.judge(n, text, received)
        chunks = [remote[k : k + _CHUNK] for k in range(0, len(remote), _CHUNK)]
        rulesets = self.judge.registry.state()
        try:
            futures = [
                pool.submit(_judge_chunk, [(n, t) for _, n, t in c], received, rulesets)
                for c in chunks
            ]
            for chunk, future in zip(chunks, futures, strict=True):
                for (i, _, _), judged in zip(chunk, future.result(), strict=True):
                    out[i] = judged
        except BrokenProcessPool:
            log.error("a judge worker died; restarting the pool, judging this request here")
            self._restart(pool)
            return self._judge_here(lines, received)
        return cast("list[Judged]", out)  # every line judged: here, or in its chunk

    def rows_many(self, lines: list, received: list[dt.datetime]) -> list[tuple]:
        """(status, rows) for each line (Judge.rows_of), in chunks on the judge processes."""
        pool = self._pool
        if pool is not None and len(lines) > _LOCAL_MAX:
            rulesets = self.judge.registry.state()
            chunks = [
                (lines[k : k + _CHUNK], received[k : k + _CHUNK], rulesets)
                for k in range(0, len(lines), _CHUNK)
            ]
            try:
                futures = [pool.submit(_rows_chunk, *chunk) for chunk in chunks]
                return [got for future in futures for got in future.result()]
            except BrokenProcessPool:
                log.error("a judge worker died; restarting the pool, building rows here")
                self._restart(pool)
        return self.judge.rows_many(lines, received)

    def _judge_here(self, lines: list, received: dt.datetime) -> list[Judged]:
        return [self.judge.judge(n, text, received) for n, text in lines]

    def _restart(self, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is broken:
                broken.shutdown(wait=False, cancel_futures=True)
                self._pool = self._start()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the judges: each leaves at its stop sentinel, and one still there after
        `timeout` is killed. A judge holds nothing: every upload it judged was answered.

        Not `shutdown(wait=True)` alone: in a pool started again after a judge died, one judge
        sometimes never got its sentinel (Python 3.11; seen after a SIGKILL of every judge
        and the fork server), and the server's stop then waited for it until
        BALANCE_STOP_TIMEOUT and left without a clean close (tests/ingest/test_ingest_crash.py).
        Python 3.14's `terminate_workers` would do this; the pool's processes are read from
        its private `_processes` until then."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        judges = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + timeout
        for judge in judges:
            judge.join(max(0.0, deadline - time.monotonic()))
        stuck = [judge for judge in judges if judge.exitcode is None]
        for judge in stuck:
            judge.kill()
            judge.join(timeout)
        if stuck:
            log.warning("%d judge process(es) did not stop when asked; killed", len(stuck))
