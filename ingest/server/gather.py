"""Small uploads from concurrent requests, judged as one chunk and committed as one group.

A single-record upload judged on its own request thread held the server's GIL ~300 µs
(replay, rows, compression), and handing its commit to another thread and back cost wake-ups,
~50 µs of CPU each on this VM. Here a request queues its lines and waits. One thread, the
gatherer, takes everything queued, sends it to its judge process as one chunk (the rows come
back as Arrow, as a batch's do), commits the chunk's games as one group and wakes each request
once. While a chunk is judged and committed, the next requests queue, so under load chunks
grow and every fixed cost is shared; one request alone is judged and committed at once.
The next chunk goes out before the previous one is committed: judging overlaps the fdatasync.

A store that commits several groups at once (a lake with staging: a PostgreSQL transaction
each, on committer threads of their own) gets up to that many chunks at once, each stored and
answered on a thread of `_storers`: the gatherer goes on gathering and judging meanwhile. With
one chunk at a time a lake server's single-game uploads waited for each staging round trip in
turn, its committer threads idle ~80% of the time.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import queue
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

from . import workers
from .pipeline import Judge, Judged, recheck_unknown

if TYPE_CHECKING:
    from ..storage.interface import GameStore

log = logging.getLogger("ingest.gather")

_STOP = None  # in the queue: the gatherer stops
_READY = "ready"
# Starting a judge process (spawn, imports) takes ~0.3 s here; one that is not up in this long
# is not coming.
_START_TIMEOUT = 60.0


class _Request:
    """One request's lines in the gatherer's queue; `wake` is released once it is answered."""

    __slots__ = ("lines", "received", "wake", "judged", "outcomes", "error", "answered")

    def __init__(self, lines: list[tuple[int, bytes]], received: dt.datetime):
        self.lines = lines
        self.received = received
        self.wake = threading.Lock()
        self.wake.acquire()
        self.judged: list[Judged] = []
        self.outcomes: list[str] = []
        self.error: BaseException | None = None
        self.answered = False

    def answer(self, error: BaseException | None = None) -> None:
        """Wake the requester, once (a second answer, after a failure, is dropped)."""
        if self.answered:
            return
        self.answered = True
        if error is not None:
            self.error = error
        self.wake.release()


def _serve(conn: Connection, server: int) -> None:
    """The judge process: chunks of (lines, received) in, judged chunks out, until EOF.

    A thread of its own reads the chunks, so that the gatherer's send of the next chunk never
    waits on this process: with both sides sending more than a socket buffer holds (large
    records), each would wait for the other to read."""
    workers._init(server)
    conn.send(_READY)
    inbox: queue.SimpleQueue = queue.SimpleQueue()

    def read() -> None:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                message = None
            inbox.put(message)
            if message is None:
                return

    threading.Thread(target=read, name="judge-inbox", daemon=True).start()
    while (message := inbox.get()) is not None:
        lines, received, rulesets, with_rows = message
        if with_rows:
            conn.send(workers._judge_rowed(lines, received, rulesets))
        else:
            conn.send(workers._judge_light(lines, received, rulesets))


class Gatherer:
    """Judges and stores small uploads (see the module docstring); `judge` is the fallback
    when the judge process fails, and judges on this process's threads meanwhile."""

    def __init__(
        self,
        store: GameStore,
        judge: Judge,
        commit_timeout: float = 60.0,
        judge_timeout: float = 10.0,
    ):
        self.store = store
        self.judge = judge
        # the judge process builds verified games' rows in the replay that judges them
        self.with_rows = bool(store.rows_when_judged)
        self.commit_timeout = commit_timeout
        # A chunk is a few records, judged in milliseconds: a judge process silent this long
        # is stuck (stopped, swapping) and is replaced, its chunk judged here.
        self.judge_timeout = judge_timeout
        self._queue: deque[_Request | None] = deque()  # requests, or _STOP
        self._gate = threading.Lock()  # guards _queue, _sleeping, _closed
        self._doorbell = threading.Lock()  # released to wake the gatherer when it sleeps
        self._doorbell.acquire()
        self._sleeping = False
        self._closed = False
        self._ctx = workers.process_context()
        self._process, self._conn = self._start_judge()
        parallel = max(1, store.parallel_groups)
        self._storers: ThreadPoolExecutor | None = None
        self._storing = threading.BoundedSemaphore(parallel)  # chunks handed to the store
        if parallel > 1:
            self._storers = ThreadPoolExecutor(parallel, thread_name_prefix="store-answer")
        self._thread = threading.Thread(target=self._run, name="store-gather", daemon=True)
        self._thread.start()

    def judge_and_store(
        self, lines: list[tuple[int, bytes]], received: dt.datetime
    ) -> tuple[list[Judged], list[str]]:
        """Judged lines and the store's outcome for each well-formed one, after the commit.
        Raises what Store.ingest raises (busy: TimeoutError; closed: RuntimeError)."""
        request = _Request(lines, received)
        with self._gate:
            if self._closed:
                raise RuntimeError("the server is shutting down")
            self._queue.append(request)
            if self._sleeping:
                self._sleeping = False
                self._doorbell.release()
        request.wake.acquire()
        if request.error is not None:
            raise request.error
        return request.judged, request.outcomes

    def close(self) -> None:
        with self._gate:
            if self._closed:
                return
            self._closed = True
            self._queue.append(_STOP)
            if self._sleeping:
                self._sleeping = False
                self._doorbell.release()
        self._thread.join()
        if self._storers is not None:
            self._storers.shutdown(wait=True)  # every chunk handed over is answered
        self._stop_judge()

    # -- the gatherer thread ----------------------------------------------------------------

    def _take(self, wait: bool) -> list[_Request | None]:
        """Everything queued; when `wait`, sleep until something is."""
        while True:
            with self._gate:
                if self._queue or not wait:
                    taken = list(self._queue)
                    self._queue.clear()
                    return taken
                self._sleeping = True
            self._doorbell.acquire()

    def _run(self) -> None:
        in_flight: list[_Request] = []  # sent to the judge process, not answered yet
        stopping = False
        while True:
            taken: list[_Request] = []
            try:
                queued = self._take(wait=not in_flight and not stopping)
                if _STOP in queued:
                    stopping = True
                taken = [r for r in queued if r is not _STOP]
                if taken and not self._send(taken):
                    self._judge_failed(in_flight + taken)
                    in_flight, taken = [], []
                if in_flight:
                    judged = self._receive()
                    if judged is None:
                        self._judge_failed(in_flight + taken)
                        taken = []
                    else:
                        self._hand_over(in_flight, judged)
            except BaseException as exc:  # noqa: BLE001 - answered; the thread must go on
                # A bug here must cost its requests a 500, not leave every later upload
                # waiting on a dead thread. The judge process may be mid-chunk: a new one.
                log.error("the gatherer failed: %s", type(exc).__name__)
                for request in in_flight + taken:
                    request.answer(exc)
                taken = []
                self._restart_judge()
            in_flight = taken
            if stopping and not in_flight:
                return

    def _send(self, requests: list[_Request]) -> bool:
        lines = [line for r in requests for line in r.lines]
        received = [r.received for r in requests for _ in r.lines]
        try:
            self._conn.send((lines, received, self.judge.registry.state(), self.with_rows))
            return True
        except (OSError, ValueError):
            return False

    def _receive(self) -> list[Judged] | None:
        try:
            if not self._conn.poll(self.judge_timeout):
                log.error("the gatherer's judge process is silent; replacing it")
                self._process.kill()
                return None
            judged = self._conn.recv()
            return judged if self.with_rows else workers.unlight(judged)
        except (OSError, EOFError, ValueError):
            return None

    def _judge_failed(self, requests: list[_Request]) -> None:
        """Judge the requests sent to a failed judge process here, and start a new one."""
        log.error("the gatherer's judge process failed; judging here and restarting it")
        for request in requests:
            try:
                received = request.received
                judged = [self.judge.judge(n, text, received, False) for n, text in request.lines]
            except Exception as exc:  # the record that broke the judge process, likely
                log.error("a gathered upload could not be judged: %s", type(exc).__name__)
                request.answer(exc)
                continue
            self._store_and_answer([request], judged)
        self._restart_judge()

    def _restart_judge(self) -> None:
        self._stop_judge()
        try:
            self._process, self._conn = self._start_judge()
        except Exception as exc:  # the next chunk fails too, and is judged here
            log.error("could not restart the judge process: %s", type(exc).__name__)

    def _hand_over(self, requests: list[_Request], judged: list[Judged]) -> None:
        """Store and answer the chunk: here, or on a storer thread once one is free (the
        gatherer waits for that, so chunks grow while every committer is busy)."""
        if self._storers is None:
            self._store_and_answer(requests, judged)
            return
        self._storing.acquire()
        try:
            self._storers.submit(self._store_then_free, requests, judged)
        except BaseException:
            self._storing.release()
            raise

    def _store_then_free(self, requests: list[_Request], judged: list[Judged]) -> None:
        try:
            self._store_and_answer(requests, judged)
        except BaseException as exc:  # noqa: BLE001 - each request is answered, always
            log.error("a gathered chunk could not be stored: %s", type(exc).__name__)
            for request in requests:
                request.answer(exc)
        finally:
            self._storing.release()

    def _store_and_answer(self, requests: list[_Request], judged: list[Judged]) -> None:
        try:
            lines = [line for r in requests for line in r.lines]
            received = [r.received for r in requests for _ in r.lines]
            judged = recheck_unknown(self.judge, judged, lines, received, with_rows=self.with_rows)
            pending = [j.pending for j in judged if j.pending is not None]
            outcomes = self.store.ingest(pending, timeout=self.commit_timeout)
        except Exception as exc:  # busy, closed, a failed write: each request answers it
            for request in requests:
                request.answer(exc)
            return
        at, stored = 0, iter(outcomes)
        for request in requests:
            mine = judged[at : at + len(request.lines)]
            at += len(request.lines)
            request.judged = mine
            request.outcomes = [next(stored) for j in mine if j.pending is not None]
            request.answer()

    # -- the judge process ------------------------------------------------------------------

    def _start_judge(self):
        mine, theirs = self._ctx.Pipe()
        process = self._ctx.Process(
            target=_serve, args=(theirs, os.getpid()), name="balance-judge", daemon=True
        )
        process.start()
        theirs.close()
        # Wait until it is up, ignoring Ctrl-C: a terminal's Ctrl-C reaches the whole process
        # group, and one in the middle of its imports would end it with a traceback.
        if not mine.poll(_START_TIMEOUT) or mine.recv() != _READY:
            process.kill()
            process.join()
            mine.close()
            raise RuntimeError("the gatherer's judge process did not start")
        return process, mine

    def _stop_judge(self) -> None:
        try:
            self._conn.send(None)
        except (OSError, ValueError):
            pass
        self._conn.close()
        self._process.join(5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
