"""The console's SQL engines in worker processes, so that no query can take the server down.

A DuckDB instance lives in the process that runs it: an uncaught C++ exception aborts that
process, an allocation DuckDB does not count against its memory_limit grows it without bound,
and some functions never look at the interrupt flag. So the server (the parent) runs every
snapshot query in one of a few worker processes (sqlworker.py; a pipe each, forked from the
server's fork server or spawned) and holds the whole request to its time:

- each worker sets an OS memory limit on itself once its imports are done (RLIMIT_DATA: its
  baseline plus SQL_MEMORY_LIMIT, 1 GB by default) and gives DuckDB three quarters of that as
  memory_limit, so an allocation that would pass the limit fails inside the worker;
- the worker runs the query (allow-list, limits: sqlsafe.Engine), encodes the result (file,
  API JSON or Arrow) and sends it back in two messages, a small JSON header and the body; a
  body over the byte limit is refused by the worker and could not be received by the parent
  (recv_bytes has a maximum length), so the parent never holds more than the limit;
- the parent waits at most `timeout` + SQL_KILL_MARGIN (0.5 s) for the answer, then kills the
  worker (SIGKILL) and answers "timeout"; a worker that dies (abort, out of memory, killed)
  answers its query "too_big: stopped", and either way a new worker is started in the
  background, while uploads and /healthz never noticed.

A download (`op: "file"`) is answered differently: the worker writes the whole result, batch by
batch, into the file the parent names (sqlsafe.Engine.write_file) and sends only its facts, so
neither process holds the result and a slow client holds no worker (snapshot.Download streams
the file). `op: "check"` runs the allow-list alone (a saved query being saved).

Workers open the current snapshot file read-only (sqlsafe.Engine attaches it as `store`) on
their first query and reopen when the parent names a newer one (Snapshots.refresh asks the idle
ones at once, busy ones on their next query). A worker leaves when its pipe closes or the
process that started the pool is gone.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from multiprocessing.context import ForkServerContext, SpawnContext

import orjson

from ingest.storage.sizes import MiB, parse_size

from .sqlsafe import (
    Busy,
    TimedOut,
    TooBig,
    error_of,
    timed_out_message,
)

log = logging.getLogger("dashboard.sql")

Context = SpawnContext | ForkServerContext  # where workers start: never `fork` (threads, DuckDB)

DUCKDB_SHARE = 0.75  # of the worker's OS memory limit, for DuckDB's memory_limit
HEADER_MAX = 1 * MiB  # a reply header (JSON: columns, types, a message)


def stopped_message(memory_limit: str) -> str:
    return (
        f"The query was too big and was stopped: the SQL engine running it ran out of memory "
        f"(limit {memory_limit}) or failed, and has been restarted. Nothing else was affected; "
        f"select fewer rows or columns, or aggregate."
    )


# -- the parent's side ----------------------------------------------------------------------------


class _Worker:
    def __init__(self, proc, conn, pid: int):
        self.proc = proc
        self.conn = conn
        self.pid = pid

    @classmethod
    def start(cls, ctx: Context, options: dict, timeout: float) -> _Worker:
        from .sqlworker import worker_main  # DuckDB, Arrow, the console: not the parent's cost

        ours, theirs = ctx.Pipe(duplex=True)
        options = {**options, "environ": dict(os.environ)}  # now, not the fork server's
        proc = ctx.Process(
            target=worker_main, args=(theirs, options), name="balance-sql", daemon=True
        )
        proc.start()
        assert proc.pid is not None  # a started process has its pid
        theirs.close()
        try:
            if not ours.poll(timeout):
                raise TimeoutError(f"the SQL worker did not start within {timeout:g} s")
            hello = orjson.loads(ours.recv_bytes(HEADER_MAX))
            if not hello.get("rlimit"):
                log.warning("SQL worker %s runs without an OS memory limit", proc.pid)
        except BaseException:
            proc.kill()
            proc.join(5)
            ours.close()
            raise
        return cls(proc, ours, proc.pid)

    def alive(self) -> bool:
        return self.proc.is_alive()

    def kill(self) -> None:
        try:
            self.proc.kill()
            self.proc.join(5)
        except Exception:  # already reaped
            pass
        try:
            self.conn.close()
        except OSError:
            pass


class _Dead(Exception):
    """The worker stopped answering (it died, or sent something it should not)."""


class _Overran(Exception):
    """The worker did not answer in time."""


class Pool:
    """`size` SQL worker processes; run() hands a request to an idle one and waits for it.

    `context`: where workers start (a multiprocessing context). By default each is spawned, a
    fresh interpreter that imports DuckDB and Arrow (about a third of a second of CPU); a server
    passes its fork server (ingest/server/workers.py `process_context`), which has imported the
    worker's modules once, so that a worker, or the replacement of one a query killed, is a
    fork of it.
    """

    def __init__(
        self,
        size: int = 2,
        *,
        threads: int = 2,
        memory_limit: str = "1GB",
        kill_margin: float = 0.5,
        startup_timeout: float = 60.0,
        context: Context | None = None,
    ):
        self.context = context or multiprocessing.get_context("spawn")
        self.size = max(1, int(size))
        self.memory_limit = str(memory_limit)
        memory = parse_size(memory_limit)
        self.kill_margin = float(kill_margin)
        self.startup_timeout = float(startup_timeout)
        self.options = {
            "parent": os.getpid(),
            "threads": int(threads),
            "memory_limit": self.memory_limit,
            "memory_bytes": memory,
            "duckdb_memory": f"{max(64, int(memory * DUCKDB_SHARE) // MiB)}MiB",
        }
        self._cond = threading.Condition(threading.RLock())
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._starting = 0
        self._failures = 0
        self._closed = False
        self.restarts = 0
        for _ in range(self.size):
            self._start_one()

    # -- workers coming and going ---------------------------------------------------------------
    def _start_one(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._starting += 1
        threading.Thread(target=self._spawn, name="sql-worker-start", daemon=True).start()

    def _spawn(self) -> None:
        worker: _Worker | None = None
        try:
            worker = _Worker.start(self.context, self.options, self.startup_timeout)
        except Exception:
            log.exception("could not start an SQL worker")
        with self._cond:
            self._starting -= 1
            keep = worker is not None and not self._closed
            if worker is None:
                self._failures += 1
            elif keep:
                self._all.add(worker)
                self._idle.append(worker)
                self._failures = 0
            failures = self._failures
            self._cond.notify_all()
        if worker is not None and not keep:
            worker.kill()
        if worker is None and not self._closed:
            retry = threading.Timer(min(30.0, 2.0**failures), self._start_one)
            retry.daemon = True
            retry.start()

    def _discard(self, worker: _Worker) -> None:
        """Kill a worker that overran or died, and start its replacement."""
        worker.kill()
        with self._cond:
            self._all.discard(worker)
            self.restarts += 1
        self._start_one()

    def _acquire(self, wait: float) -> _Worker:
        """An idle, live worker. Waits `wait` s for a busy one, longer for one that is starting."""
        start = time.monotonic()
        busy_until, start_until = start + wait, start + self.startup_timeout
        with self._cond:  # an RLock: _start_one may take it again
            while True:
                # every idle worker that died (killed, out of memory) is replaced now, not when
                # its turn comes: the others would otherwise serve alone until then
                for worker in [w for w in self._idle if not w.alive()]:
                    self._idle.remove(worker)
                    self._all.discard(worker)
                    self.restarts += 1
                    threading.Thread(target=worker.kill, daemon=True).start()
                    self._start_one()
                if self._idle:
                    return self._idle.pop()
                if self._closed:
                    raise Busy("The SQL console is shutting down.")
                now = time.monotonic()
                until = start_until if self._starting else busy_until
                if now >= until:
                    raise Busy(
                        "Every SQL engine is busy; try again in a few seconds "
                        f"(waited {now - start:.0f} s)."
                    )
                self._cond.wait(min(until - now, 0.5))

    def _release(self, worker: _Worker) -> None:
        with self._cond:
            if self._closed:
                keep = False
            else:
                keep = True
                self._idle.append(worker)
                self._cond.notify()
        if not keep:
            worker.kill()

    # -- requests ---------------------------------------------------------------------------------
    def _exchange(self, worker: _Worker, request: dict, wait: float, max_body: int):
        """Send a request and read the reply within `wait` s: (header, body), or raises."""
        deadline = time.monotonic() + wait
        try:
            worker.conn.send_bytes(orjson.dumps(request))
            if not worker.conn.poll(max(0.0, deadline - time.monotonic())):
                raise _Overran
            header = orjson.loads(worker.conn.recv_bytes(HEADER_MAX))
            body = b""
            size = int(header.get("size") or 0)
            if size:
                if size > max_body:
                    raise _Dead(f"the worker sent {size} bytes, more than {max_body}")
                # the body follows the header at once: it was complete before the header went
                if not worker.conn.poll(max(1.0, deadline - time.monotonic())):
                    raise _Overran
                body = worker.conn.recv_bytes(max_body)
            return header, body
        except (EOFError, OSError, ValueError, orjson.JSONDecodeError) as exc:
            raise _Dead(str(exc)) from None

    def run(self, request: dict, *, timeout: float, max_bytes: int) -> tuple[dict, bytes]:
        """Run one request: {"op": "query", "path", "sql", "params", "format", "limit"} (the
        result encoded, as the body), or {"op": "file", ..., "out"} (the whole result written to
        the file `out`: a download)."""
        worker = self._acquire(timeout)
        request = {**request, "timeout": timeout, "max_bytes": max_bytes}
        ok = False
        try:
            header, body = self._exchange(
                worker, request, timeout + self.kill_margin, max_bytes + 64 * 1024
            )
            ok = True
        except _Overran:
            log.warning("SQL worker %s overran %.1f s: killed", worker.pid, timeout)
            raise TimedOut(timed_out_message(timeout)) from None
        except _Dead as exc:
            log.warning("SQL worker %s stopped during a query (%s)", worker.pid, exc)
            raise TooBig(stopped_message(self.memory_limit)) from None
        finally:
            if ok and not header.get("recycle"):
                self._release(worker)
            else:
                self._discard(worker)
        if not header.get("ok"):
            raise error_of(
                header.get("kind", "error"), header.get("message", "failed"), header.get("position")
            )
        return header.get("meta") or {}, body

    def reopen_idle(self, path: str, snapshot_at: str | None) -> None:
        """Have the idle workers open a new snapshot now (busy ones do on their next query)."""
        with self._cond:
            idle, self._idle = self._idle, []
        for worker in idle:
            request = {"op": "open", "path": path, "snapshot_at": snapshot_at}
            try:
                header, _ = self._exchange(worker, request, 30.0, 0)
            except (_Overran, _Dead):
                self._discard(worker)
                continue
            if header.get("recycle"):
                self._discard(worker)
            else:
                self._release(worker)

    def pids(self) -> list[int]:
        with self._cond:
            return sorted(w.pid for w in self._all)

    def wait_ready(self, timeout: float = 60.0) -> bool:
        """Block until every worker is started (tests, and a server warming up)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._all) < self.size and time.monotonic() < deadline:
                self._cond.wait(0.2)
            return len(self._all) >= self.size

    def close(self) -> None:
        with self._cond:
            self._closed = True
            workers, self._idle = list(self._all), []
            self._all.clear()
            self._cond.notify_all()
        for worker in workers:
            try:
                worker.conn.send_bytes(orjson.dumps({"op": "exit"}))
            except OSError:
                pass
        for worker in workers:
            worker.proc.join(2)
            worker.kill()
