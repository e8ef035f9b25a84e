"""The SQL console's worker process: one query at a time from a pipe, under an OS memory limit.

The parent's side (starting, timing and replacing workers) is sqlpool.py. Everything a worker
needs is imported at the top of this module, before the memory limit is set: a server's fork
server (ingest/server/workers.py `process_context`) imports it once, and each worker is then a
fork of that process rather than a fresh interpreter that imports DuckDB and Arrow again.
"""

from __future__ import annotations

import os
import signal
import threading

import orjson

from .. import export  # noqa: F401  (loaded before the limit is set; downloads use it)
from ..lifetime import leave_with
from . import sqlfuncs
from .sqlsafe import (
    Engine,
    QueryError,
    Replaced,
    is_file_source,
    out_of_memory_message,
    scrub,
)


def _status(field: str) -> int:
    """A Vm* figure of this process from /proc/self/status, in bytes (0 when unknown)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _limit_memory(extra: int) -> int:
    """Cap this process's data segment (heap and private mappings) at its size now + `extra`."""
    try:
        import resource
    except ImportError:  # not on a POSIX system: only DuckDB's own limit holds
        return 0
    which, base = getattr(resource, "RLIMIT_DATA", None), _status("VmData")
    if which is None or not base:
        which, base = resource.RLIMIT_AS, _status("VmSize")
    if not base:
        return 0
    limit = base + extra
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(which, (limit, hard))
    except (ValueError, OSError):
        return 0
    return limit


PROCESS_NAME = b"balance-sql"  # /proc/<pid>/comm of a worker, as ps and top show it
_PR_SET_NAME = 15


def _name_process() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_NAME, ctypes.c_char_p(PROCESS_NAME), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the name is only a convenience
        pass


def worker_main(conn, options: dict) -> None:
    """The worker's loop: one request at a time from the pipe, one reply (header, body)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent ends us, not a terminal's Ctrl-C
    if "environ" in options:
        # A fork server's environment is the one it started with: a worker takes the pool's,
        # as a spawned one would (the lake's extension directory, its S3 credentials)
        os.environ.clear()
        os.environ.update(options["environ"])
    _name_process()
    threading.Thread(target=leave_with, args=(options["parent"],), daemon=True).start()
    extra = int(options["memory_bytes"])
    base = _status("VmData")
    limit = _limit_memory(extra)
    conn.send_bytes(orjson.dumps({"ready": True, "pid": os.getpid(), "rlimit": limit}))
    engine = None
    while True:
        try:
            request = orjson.loads(conn.recv_bytes())
        except (EOFError, OSError):
            break
        op = request.get("op")
        if op == "exit":
            break
        body = b""
        header: dict[str, object]
        try:
            path = request["path"]
            if engine is None or engine.path != path:
                if engine is not None:
                    engine.close()
                    engine = None
                if is_file_source(path) and not os.path.exists(path):
                    raise Replaced("The snapshot was replaced; run the query again.")
                engine = Engine(
                    path,
                    snapshot_at=request.get("snapshot_at"),
                    threads=int(options["threads"]),
                    memory_limit=options["duckdb_memory"],
                    max_concurrent=1,
                    setup=sqlfuncs.register,
                    memory_label=options["memory_limit"],
                )
            if op == "open":
                header = {"ok": True}
            elif op == "check":  # the allow-list alone: nothing runs
                engine.check(request["sql"])
                header = {"ok": True, "meta": {}}
            elif op == "file":  # a download: the whole result, written to the file named
                meta = engine.write_file(
                    request["sql"],
                    request["format"],
                    request["out"],
                    timeout=float(request["timeout"]),
                    max_bytes=int(request["max_bytes"]),
                    params=request.get("params"),
                )
                header = {"ok": True, "meta": meta}
            else:
                payload = engine.run_encoded(
                    request["sql"],
                    request["format"],
                    limit=int(request["limit"]),
                    timeout=float(request["timeout"]),
                    max_bytes=int(request["max_bytes"]),
                    params=request.get("params"),
                )
                body = payload.body
                header = {"ok": True, "meta": payload.meta, "size": len(body)}
        except Replaced as exc:
            header = {"ok": False, "kind": "replaced", "message": exc.message}
        except QueryError as exc:
            header = {"ok": False, "kind": exc.kind, "message": exc.message}
            if exc.position is not None:
                header["position"] = exc.position
        except MemoryError:
            body = b""
            header = {
                "ok": False,
                "kind": "too_big",
                "message": out_of_memory_message(options["memory_limit"]),
            }
        except Exception as exc:  # a bug, or DuckDB failing to open the snapshot
            message = scrub(str(exc).strip() or type(exc).__name__, request.get("path"))
            if engine is not None:
                message = engine.scrub_message(message)
            header = {"ok": False, "kind": "error", "message": message}
        # Memory DuckDB's allocator keeps after a big query still counts against the limit:
        # a worker that grew past half of it answers, says so, and leaves for a fresh one.
        recycle = bool(base) and _status("VmData") > base + extra // 2
        if recycle:
            header["recycle"] = True
        try:
            conn.send_bytes(orjson.dumps(header))
            if body:
                conn.send_bytes(body)
        except (OSError, ValueError):
            break
        del body
        if recycle:
            break
    if engine is not None:
        engine.close()
