"""A soak: uploads, console queries and hostile clients against one `balance serve` at once.

    python -m benchmarks.soak [--seconds 180] [--uploaders 3] [--silent 16] [--trickle 8]
                              [--idle 300] [--flood 70] [--slow-console 6] [--never-read 4]
                              [--pool 1000]

For `--seconds`, on a fresh store with the default limits (docs/ingest.md, "Limits and
timeouts"):

- uploaders: keep-alive clients sending single records (4 in 5) and batches of 20 simulated
  Slow6 games with fresh ids, from 127.0.0.2; a game counts as acknowledged once its
  `accepted` answer is in, and each upload's time to its answer is kept (p50 / p99);
- the console, from 127.0.0.3: a SQL query (POST /sql/api) every 0.5 s, the dashboard page
  every 5 s and a small CSV download every 10 s; one query in four is hostile (a setting that
  would kill DuckDB, a file read, a query past the memory or time limit) and counts with the
  hostile clients;
- hostile clients, all from 127.0.0.1, each kept up for the whole run (reopened when the
  server answers or closes them): `--silent` upload connections that send headers declaring
  60,000 bytes and then nothing, `--trickle` ones sending one byte a second, the `--flood`
  (the same, 70 of them: more than the 64 upload slots), `--slow-console` `POST /sql/api`
  bodies sent a byte a second, `--never-read` console downloads whose answer is never read,
  `--idle` connections that never send a byte,
  a declared 100 MiB upload every 2 s, and a request with an invented method or a path folded
  onto the upload route (`//v1/games`) every 0.1 s;
- a prober: GET /healthz every 0.25 s (10 s timeout); the server's RSS (every process under
  `balance serve`, from /proc) every 0.5 s.

Then the server is stopped (SIGTERM) and the store read: it prints acknowledged against
stored games (a missing acknowledged game is a failure: exit 1), the legitimate uploads'
success rate and p50/p99 time to their answer (the goal while one address floods: 99%
accepted, p99 under a second), the 5xx answers the legitimate clients got, the p50/p99/max
of /healthz, the peak RSS, and what the hostile clients were answered.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import itertools
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from pathlib import Path

import orjson

from benchmarks.ingest_pool import ROOT, fresh_lines, pool, pool_size

HOST = "127.0.0.1"
UPLOADERS, CONSOLE = "127.0.0.2", "127.0.0.3"  # the legitimate clients' own addresses
DOWNLOAD = "/sql/download.csv?" + urllib.parse.urlencode(
    {"q": "SELECT game_id, board, winner FROM games LIMIT 2000"}
)
BIG_DOWNLOAD = "/sql/download.csv?" + urllib.parse.urlencode(
    {"q": "SELECT repeat('x', 1000) AS x FROM range(20000)"}
)


def start_server(db: Path, log: Path) -> tuple[subprocess.Popen, int]:
    with socket.socket() as s:
        s.bind((HOST, 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("BALANCE_")}
    env.update(BALANCE_RATE_LIMIT="0", BALANCE_JOBS_INTERVAL="60", PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "ingest.cli", "serve", "--db", str(db), "--port", str(port)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*cmd, "--quiet"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    for _ in range(900):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()[-2000:]}")
        try:
            conn = http.client.HTTPConnection(HOST, port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start")


def tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and every process under it (Linux /proc)."""
    total = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
        for task in os.listdir(f"/proc/{pid}/task"):
            for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split():
                total += tree_rss(int(child))
    except OSError:
        pass
    return total


class Soak:
    def __init__(self, port: int, server_pid: int, args):
        self.port = port
        self.server_pid = server_pid
        self.args = args
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acked: set[str] = set()
        self.statuses: Counter = Counter()  # (client kind, status or error)
        self.healthz: list[float] = []
        self.upload_seconds: list[float] = []  # each legitimate upload's time to its answer
        self.healthz_failed = 0
        self.peak_rss = 0
        self.hostile: Counter = Counter()
        self.unexpected: list[str] = []  # answers to legitimate uploads other than 200/503
        self.records = pool("slow6", args.pool)
        self.lines = fresh_lines(self.records, seed=int(time.time()))

    def count(self, kind: str, what) -> None:
        with self.lock:
            self.statuses[kind, what] += 1

    def hit(self, kind: str, what) -> None:
        with self.lock:
            self.hostile[kind, what] += 1

    def take(self, n: int) -> list[bytes]:
        with self.lock:
            return list(itertools.islice(self.lines, n))

    def conn(self, timeout: float = 60, source: str = CONSOLE) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(
            HOST, self.port, timeout=timeout, source_address=(source, 0)
        )

    # -- legitimate clients --------------------------------------------------------------------

    def uploader(self, seed: int) -> None:
        rng = random.Random(seed)
        conn = self.conn(source=UPLOADERS)
        while not self.stop.is_set():
            batch = rng.random() < 0.2
            lines = self.take(20 if batch else 1)
            body = b"\n".join(lines) + b"\n" if batch else lines[0]
            ctype = "application/x-ndjson" if batch else "application/json"
            started = time.perf_counter()
            try:
                conn.request("POST", "/v1/games", body, {"Content-Type": ctype})
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException) as exc:
                self.count("upload", type(exc).__name__)
                conn.close()
                conn = self.conn(source=UPLOADERS)
                continue
            with self.lock:
                self.upload_seconds.append(time.perf_counter() - started)
            self.count("upload", resp.status)
            if resp.status not in (200, 503) and len(self.unexpected) < 5:
                with self.lock:  # what a legitimate client should never see: keep the answer
                    self.unexpected.append(f"{resp.status} {data[:300]!r}")
            if resp.status == 200:
                results = orjson.loads(data)["results"]
                with self.lock:
                    self.acked.update(r["game_id"] for r in results if r["verdict"] == "accepted")
            elif resp.status in (429, 503):
                time.sleep(float(resp.getheader("Retry-After") or 1))
            if resp.will_close:
                conn.close()
                conn = self.conn(source=UPLOADERS)
        conn.close()

    def console(self) -> None:
        queries = [
            "SELECT count(*) FROM games",
            "SELECT board, count(*) AS n FROM games GROUP BY ALL ORDER BY ALL",
            "SELECT winner, count(*) FROM games GROUP BY ALL",
        ]
        # refused (400), or stopped at the time / memory limit (408 / 413): never a crash
        hostile = [
            "FROM enable_logging(storage='file', storage_path='x')",
            "SELECT len(list_sort(range(200000000)))",
            "SELECT repeat('x', 2000000000)",
            "SELECT * FROM read_csv('/etc/passwd')",
        ]
        i = 0
        while not self.stop.wait(0.5):
            i += 1
            conn = self.conn()
            kind = "console"
            try:
                if i % 20 == 0:
                    kind = "download"
                    conn.request("GET", DOWNLOAD)
                elif i % 10 == 0:
                    conn.request("GET", "/dashboard/")
                else:
                    if i % 4 == 0:
                        sql, kind = hostile[(i // 4) % len(hostile)], "hostile_sql"
                    else:
                        sql = queries[i % len(queries)]
                    body = orjson.dumps({"sql": sql, "limit": 100})
                    conn.request("POST", "/sql/api", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                (self.hit if kind == "hostile_sql" else self.count)(kind, resp.status)
            except (OSError, http.client.HTTPException) as exc:
                (self.hit if kind == "hostile_sql" else self.count)(kind, type(exc).__name__)
            finally:
                conn.close()

    def prober(self) -> None:
        while not self.stop.wait(0.25):
            conn = self.conn(timeout=10)
            started = time.perf_counter()
            try:
                conn.request("GET", "/healthz")
                resp = conn.getresponse()
                resp.read()
                ok = resp.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
            finally:
                conn.close()
            with self.lock:
                if ok:
                    self.healthz.append(time.perf_counter() - started)
                else:
                    self.healthz_failed += 1

    def rss(self) -> None:
        while not self.stop.wait(0.5):
            self.peak_rss = max(self.peak_rss, tree_rss(self.server_pid))

    # -- hostile clients -----------------------------------------------------------------------

    def held(self, n: int, first: bytes, drip: bool, kind: str) -> None:
        """Keep `n` connections that send `first`, then nothing (or a byte a second)."""
        socks: list[socket.socket] = []
        while not self.stop.is_set():
            while len(socks) < n and not self.stop.is_set():
                try:
                    s = socket.create_connection((HOST, self.port), timeout=5)
                    if first:
                        s.sendall(first)
                    s.setblocking(False)
                    socks.append(s)
                except OSError:
                    self.hit(kind, "connect failed")
                    time.sleep(0.5)
                    break
            self.stop.wait(1.0)
            for s in list(socks):
                try:
                    data = s.recv(65536)
                except BlockingIOError:
                    if drip:
                        with contextlib.suppress(OSError):
                            s.send(b" ")
                    continue
                except OSError:
                    data = b""
                if data.startswith(b"HTTP/1.1 "):
                    self.hit(kind, int(data[9:12]))
                else:
                    self.hit(kind, "closed")
                s.close()
                socks.remove(s)
        for s in socks:
            s.close()

    def never_read(self, n: int) -> None:
        """`n` connections that ask for a large console download and never read a byte of
        it; one the server closes is opened again."""
        socks: list[socket.socket] = []
        head = f"GET {BIG_DOWNLOAD} HTTP/1.1\r\nHost: {HOST}:{self.port}\r\n\r\n".encode()
        while not self.stop.is_set():
            while len(socks) < n and not self.stop.is_set():
                try:
                    s = socket.socket()
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                    s.settimeout(5)
                    s.connect((HOST, self.port))
                    s.sendall(head)
                    socks.append(s)
                except OSError:
                    self.hit("never-read download", "connect failed")
                    break
            self.stop.wait(1.0)
            for s in list(socks):  # closed by the server? (a peek reads nothing)
                try:
                    s.setblocking(False)
                    gone = s.recv(1, socket.MSG_PEEK) == b""
                except BlockingIOError:
                    gone = False
                except OSError:
                    gone = True
                if gone:
                    self.hit("never-read download", "closed")
                    s.close()
                    socks.remove(s)
        for s in socks:
            s.close()

    def huge(self) -> None:
        head = (
            b"POST /v1/games HTTP/1.1\r\nHost: s\r\nContent-Type: application/x-ndjson\r\n"
            b"Content-Length: 104857600\r\n\r\n"
        )
        while not self.stop.wait(2.0):
            try:
                with socket.create_connection((HOST, self.port), timeout=5) as s:
                    s.sendall(head)
                    data = s.recv(4096)
                self.hit("declared 100 MiB", int(data[9:12]) if data else "closed")
            except (OSError, ValueError):
                self.hit("declared 100 MiB", "error")

    def junk(self) -> None:
        i = 0
        while not self.stop.wait(0.1):
            i += 1
            conn = self.conn(timeout=10)
            try:
                if i % 2:
                    conn.request(f"M{i}", "/healthz")
                else:
                    body = self.take(1)[0]
                    conn.request("POST", "//v1/games", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                self.hit("invented method" if i % 2 else "//v1/games", resp.status)
            except (OSError, http.client.HTTPException) as exc:
                self.hit("junk", type(exc).__name__)
            finally:
                conn.close()

    def run(self, seconds: float) -> None:
        upload = (
            b"POST /v1/games HTTP/1.1\r\nHost: s\r\nContent-Type: application/x-ndjson\r\n"
            b"Content-Length: 60000\r\n\r\n"
        )
        a = self.args
        jobs = [(self.uploader, (i,)) for i in range(a.uploaders)]
        jobs += [(self.console, ()), (self.prober, ()), (self.rss, ()), (self.huge, ())]
        jobs += [(self.junk, ())]
        jobs += [(self.held, (a.silent, upload, False, "silent upload"))]
        jobs += [(self.held, (a.trickle, upload, True, "trickling upload"))]
        jobs += [(self.held, (a.idle, b"", False, "idle connection"))]
        jobs += [(self.held, (a.flood, upload, True, "flood upload"))]
        slow_sql = (
            b"POST /sql/api HTTP/1.1\r\nHost: s\r\nContent-Type: application/json\r\n"
            b"Content-Length: 5000\r\n\r\n"
        )
        jobs += [(self.held, (a.slow_console, slow_sql, True, "slow console body"))]
        jobs += [(self.never_read, (a.never_read,))]
        threads = [threading.Thread(target=f, args=x, daemon=True) for f, x in jobs]
        for t in threads:
            t.start()
        self.stop.wait(seconds)
        self.stop.set()
        for t in threads:
            t.join(30)


def stored_ids(db: Path) -> set[str]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return {g for (g,) in con.execute("SELECT game_id::VARCHAR FROM raw_records").fetchall()}
    finally:
        con.close()


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))] if values else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=180)
    ap.add_argument("--uploaders", type=int, default=3)
    ap.add_argument("--silent", type=int, default=16)
    ap.add_argument("--trickle", type=int, default=8)
    ap.add_argument("--idle", type=int, default=300)
    ap.add_argument("--flood", type=int, default=70, help="slow upload bodies from one address")
    ap.add_argument("--slow-console", type=int, default=6, help="slow POST /sql/api bodies")
    ap.add_argument("--never-read", type=int, default=4, help="downloads never read")
    ap.add_argument(
        "--pool", type=pool_size, default=1000, help="distinct simulated games uploaded"
    )
    args = ap.parse_args()
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.idle + args.silent + args.trickle + args.flood + args.slow_console + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        db = Path(tmp) / "soak.duckdb"
        proc, port = start_server(db, Path(tmp) / "server.log")
        try:
            soak = Soak(port, proc.pid, args)
            started = time.monotonic()
            soak.run(args.seconds)
            took = time.monotonic() - started
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
        stored = stored_ids(db)
        log = (Path(tmp) / "server.log").read_text(errors="replace")
    acked = soak.acked
    missing = acked - stored
    legit = Counter()
    for (kind, what), n in soak.statuses.items():
        legit[kind, what] = n
    five = {k: n for k, n in legit.items() if isinstance(k[1], int) and k[1] >= 500}
    errors = {k: n for k, n in legit.items() if not isinstance(k[1], int)}
    print(f"soak: {took:.0f} s, server exit {code}")
    print(
        f"games: {len(acked):,} acknowledged, {len(acked & stored):,} of them stored, "
        f"{len(missing)} missing; {len(stored):,} stored in all"
    )
    print(
        "legitimate answers: "
        + ", ".join(f"{k} {w}: {n:,}" for (k, w), n in sorted(legit.items(), key=str))
    )
    uploads = sum(n for (kind, _), n in legit.items() if kind == "upload")
    ok = legit["upload", 200]
    t = soak.upload_seconds
    print(
        f"legitimate uploads: {ok:,} of {uploads:,} accepted "
        f"({100 * ok / max(1, uploads):.2f}%); time to the answer p50 "
        f"{pct(t, 0.5) * 1000:.1f} ms, p99 {pct(t, 0.99) * 1000:.1f} ms, "
        f"max {max(t, default=float('nan')) * 1000:.1f} ms; acknowledged games lost: "
        f"{len(missing)}"
    )
    print(f"5xx to legitimate clients: {sum(five.values())} {dict(five) or ''}".rstrip())
    if errors:
        print(f"connection errors of legitimate clients: {dict(errors)}")
    for answer in soak.unexpected:
        print(f"unexpected answer to a legitimate upload: {answer}")
    h = soak.healthz
    print(
        f"/healthz: {len(h)} answered, {soak.healthz_failed} failed or over 10 s; "
        f"p50 {pct(h, 0.5) * 1000:.1f} ms, p99 {pct(h, 0.99) * 1000:.1f} ms, "
        f"max {max(h, default=float('nan')) * 1000:.1f} ms"
    )
    print(f"server peak RSS (all its processes): {soak.peak_rss / 2**20:.0f} MiB")
    print(
        "hostile clients were answered: "
        + ", ".join(f"{k} {w}: {n:,}" for (k, w), n in sorted(soak.hostile.items(), key=str))
    )
    if "Traceback" in log:
        print("the server log holds a traceback:\n" + log[log.index("Traceback") :][:2000])
    return 1 if missing or code != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
