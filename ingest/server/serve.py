"""Running the app on granian, with logs that never carry a client address or header.

granian does the HTTP I/O in Rust threads and calls the WSGI app on a few Python threads of
one worker process (see wsgi.py). On waitress, whose I/O loop is Python, reading requests and
writing answers took the GIL that judging and the store's commits need: 8 single-record
clients got 455-570 games/s there, 800-990 here (benchmarks/ingest_http.py).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import resource
import signal
import socket
import sys
import threading
import time

from . import config

PORT_ENV = "BALANCE_SERVER_PORT"  # set for the worker: the port whose connections it reaps
PARENT_ENV = "BALANCE_SERVER_PID"  # set for the worker: the process it dies with (wsgi.py)


def configure_logging(access_log: bool = True) -> None:
    """Our own lines only: method, route, status, time. granian logs no access lines (its
    access log stays off), and nothing request-derived is logged anywhere else."""
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("ingest.access").setLevel(logging.INFO if access_log else logging.WARNING)


def run(settings: dict[str, str], host: str, port: int, threads: int = 8) -> int:
    """Serve until SIGTERM or SIGINT; `settings` (BALANCE_* values) reach the worker through
    its environment. `threads`: Python threads calling the app. A small upload waiting for its
    chunk to be judged and committed (gather.py) holds one and little GIL: with 8 clients, 3
    threads gave 1,412 and 1,449 games/s, 5 gave 1,616 and 1,730, 8 gave 1,592 and 1,784
    (benchmarks/ingest_http.py, alternating). (When requests judged on their own thread, 8
    and 16 lost to 2-4.)"""
    from granian import Granian
    from granian.constants import Interfaces
    from granian.http import HTTP1Settings
    from granian.log import LogLevels

    os.environ.update(settings)
    # dashboard pages waiting on a hung store must leave threads to /healthz and the rest
    os.environ.setdefault("BALANCE_DASHBOARD_SLOTS", str(max(1, threads - 2)))
    os.environ[PARENT_ENV] = str(os.getpid())
    os.environ[PORT_ENV] = str(port)
    conf = config.load()
    connections = max(16, conf["BALANCE_MAX_CONNECTIONS"])
    raise_open_files(connections + 512)  # the worker inherits it
    # spawn, not fork: the worker starts clean (no threads, no open file inherited) and
    # leaves through multiprocessing's exit, whose finalizer closes the store (wsgi.py)
    multiprocessing.set_start_method("spawn", force=True)
    server = Granian(
        "ingest.server.wsgi:create",
        factory=True,
        address=host,
        port=port,
        interface=Interfaces.WSGI,
        workers=1,  # one process owns the DuckDB file
        # uploads wait for their bodies on threads of their own (guard.py): at most
        # BALANCE_MAX_UPLOADS of them, so `threads` are always left for the rest
        blocking_threads=threads + max(1, conf["BALANCE_MAX_UPLOADS"]),
        # granian's limit of connections served at once (it accepts no more past it); the
        # reaper (reaper.py) sheds idle ones before it is reached
        backpressure=connections,
        # closes a connection that sends no complete request headers for this long, between
        # keep-alive requests too (but not one that never sends a byte: reaper.py)
        http1_settings=HTTP1Settings(
            header_read_timeout=max(1, int(conf["BALANCE_IDLE_TIMEOUT"] * 1000))
        ),
        websockets=False,
        log_level=LogLevels.warning,
        log_access=False,
        # a worker that dies on its own (an out-of-memory kill picks it: the largest process)
        # is started again; one that dies again within granian's 5.5 s of its restart makes
        # the server exit 1 (a crash loop), for its own supervisor to see
        respawn_failed_workers=True,
        # the worker leaves by itself after BALANCE_STOP_TIMEOUT (wsgi.py); SIGKILL it if it
        # cannot even do that (stuck in C holding the GIL). Nothing acknowledged is lost.
        workers_kill_timeout=int(conf["BALANCE_STOP_TIMEOUT"] + 10)
        if conf["BALANCE_STOP_TIMEOUT"] > 0
        else None,
    )
    # granian warns at every start when the threads outnumber 2 x cores + 1; the default of
    # 8 is what measured best here (above), so the warning would only alarm whoever reads it.
    logging.getLogger("_granian").addFilter(_ThreadsWarning())
    print(f"Serving on http://{host}:{port}", flush=True)
    announce_when_ready(host, port)
    stop_on_any_thread(server)
    server.serve()
    return 0


def stop_on_any_thread(server) -> threading.Thread:
    """Make one SIGTERM or SIGINT stop the server, whichever of its threads the kernel hands
    it to.

    granian's main thread waits on a threading.Event for its signal handler to set it. Python
    runs handlers on the main thread only, and a signal taken by another thread (the worker's
    watcher, a DuckDB or Polars thread: any may get a process-directed signal) does not wake
    a main thread blocked in that wait: the server sat in its serve loop with the worker still
    serving until a second signal came. The interpreter writes every caught signal to a wakeup
    pipe, whichever thread took it; this thread reads it and sets granian's interrupt, again
    whenever its serve loop clears the event (a worker respawn racing the stop)."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("serve from the main thread: signals are delivered there")
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    stops = {int(signal.SIGINT), int(signal.SIGTERM)}

    def watch() -> None:
        while not set(os.read(wake_r, 64)) & stops:
            pass  # SIGHUP and the rest: granian's own handlers
        while True:
            server.interrupt_signal = True
            server.main_loop_interrupt.set()
            time.sleep(0.5)

    thread = threading.Thread(target=watch, name="stop-signals", daemon=True)
    thread.start()
    return thread


def announce_when_ready(host: str, port: int, timeout: float = 300.0) -> threading.Thread:
    """Print the dashboard's address once the worker answers (the last line of the start-up
    log: the worker's own start-up lines come before it)."""
    base = f"http://{'[' + host + ']' if ':' in host else host}:{port}"

    def wait() -> None:
        import time
        import urllib.request

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:  # not listening yet, or a 503 while storage is unavailable
                pass
            time.sleep(0.2)
        else:
            return
        print(
            f"Ready. Dashboard: {base}/dashboard/  (SQL console: {base}/sql)",
            flush=True,
        )

    thread = threading.Thread(target=wait, name="announce-ready", daemon=True)
    thread.start()
    return thread


def raise_open_files(wanted: int) -> None:
    """Raise the soft limit of open files towards `wanted` (at most the hard limit): every
    connection is a file, and systemd's default soft limit is 1,024."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            logging.getLogger("ingest.serve").warning("could not raise the open-files limit")


class _ThreadsWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "Python threads, which seems quite high" not in record.getMessage()


def port_in_use(host: str, port: int) -> bool:
    """Whether something listens on host:port. granian binds with SO_REUSEPORT, so a second
    server on a busy port would start and silently take half of its connections."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no user
        try:
            probe.bind(address)
        except OSError:
            return True
    return False
