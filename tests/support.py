"""What tests (and benchmarks) import: the spec examples, records, store look-ups, and the two ways
to reach the app. Fixtures live in conftest.py; this module imports neither pytest nor the app at
module level, so a benchmark can use `examples_dir()` cheaply.

    AppClient(workdir, env={...}).start()  # the app in this process, through Flask's test client
    Server(workdir, env={...}).start()     # a real `balance serve` subprocess on a loopback port

Both answer `get`/`post`/`upload`/`request` with a `Response` and have `db`, `stop()`,
`start()`, `restart()` and `output()`. Use a `Server` only for what needs a process or a
socket: a crash (kill -9), signals, `balance serve` itself, slow/idle sockets and connection
limits, headers on the wire, the browser, the full-disk tmpfs. `AppClient.serve_http()` gives
the in-process app a loopback URL for a command-line client (`balance sql`, `balance reverify
--server`).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import http.client
import io
import json
import logging
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[1]

# -- the spec -------------------------------------------------------------------------------------


def spec_dir() -> Path:
    """The spec: tests/spec/ (its copy in the checkout) first, else ../shared/spec/ next to it."""
    for candidate in (REPO / "tests" / "spec", REPO.parent / "shared" / "spec"):
        if (candidate / "examples" / "slow6-valid.ndjson").exists():
            return candidate
    raise FileNotFoundError(f"spec not found in {REPO / 'tests' / 'spec'} or ../shared/spec")


def examples_dir() -> Path:
    """The spec's example records (slow6-valid.ndjson, malformed.expected.ndjson, ...)."""
    return spec_dir() / "examples"


EXAMPLES = examples_dir()

# -- records --------------------------------------------------------------------------------------

NDJSON, JSON = "application/x-ndjson", "application/json"


def example_lines(name: str) -> list[str]:
    return [line for line in (EXAMPLES / f"{name}.ndjson").read_text().splitlines() if line]


def example_records(name: str) -> list[dict]:
    return [json.loads(line) for line in example_lines(name)]


SLOW6 = example_records("slow6-valid")
SLIDE = example_records("slide-valid")


def fresh(record: dict, **changes) -> dict:
    """A copy with a new game_id (still a valid game: the id is not part of the rules)."""
    out = copy.deepcopy(record)
    out["game_id"] = str(uuid.uuid4())
    out.update(changes)
    return out


def fresh_slow6(i: int = 0) -> dict:
    return fresh(SLOW6[i % len(SLOW6)])


def dumps(record: dict) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode()


def padded(record: dict, size: int) -> bytes:
    """The record as JSON text of exactly `size` bytes (spaces before the final brace)."""
    text = dumps(record)
    assert len(text) <= size, (len(text), size)
    return text[:-1] + b" " * (size - len(text)) + b"}"


def query(db: Path, sql: str, params=None) -> list[tuple]:
    """Read the store file (the server must be stopped: DuckDB has one writer process)."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def verdicts(response) -> list[str]:
    return [r["verdict"] for r in response.json()["results"]]


# -- processes ------------------------------------------------------------------------------------


def children(pid: int) -> list[int]:
    """The processes `pid` started (Linux /proc)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def descendants(pid: int) -> list[int]:
    """Every process under `pid`: a server's worker and its judge processes."""
    return [p for child in children(pid) for p in (child, *descendants(child))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the `balance` command, in this process --------------------------------------------------


@dataclass
class Ran:
    """What a `balance` run gave: as subprocess.CompletedProcess (text) has them."""

    returncode: int
    stdout: str
    stderr: str


def balance(*args: str, env: dict | None = None) -> Ran:
    """`balance ARGS` run in this process (ingest.cli.main), its output captured: the command's
    own code path without a new interpreter's start. It sees this process's environment without
    its BALANCE_* variables, plus `env` (as a `Server` does); the environment is put back after.

    Use a subprocess instead where the process is the point: a file another process holds
    locked (DuckDB shares one open file between the connections of a process), a pipe that
    closes, a signal."""
    from ingest.cli import main

    saved = dict(os.environ)
    out, err = io.StringIO(), io.StringIO()
    try:
        for key in [k for k in os.environ if k.startswith("BALANCE_")]:
            del os.environ[key]
        os.environ.update(env or {})
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors, and commands that exit
                if isinstance(exc.code, str):
                    print(exc.code, file=sys.stderr)
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return Ran(code, out.getvalue(), err.getvalue())


# -- reaching the app -----------------------------------------------------------------------------


@dataclass
class Response:
    status: int
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self):
        return json.loads(self.body)


class _Client:
    """The requests both ways of reaching the app share; `request` is each one's own."""

    def request(self, method, path, body=None, headers=None, timeout=60.0) -> Response:
        raise NotImplementedError

    def get(self, path: str, **kw) -> Response:
        return self.request("GET", path, **kw)

    def post(
        self,
        path: str,
        body: bytes | str,
        content_type: str | None = None,
        headers: dict | None = None,
        **kw,
    ) -> Response:
        if isinstance(body, str):
            body = body.encode()
        headers = dict(headers or {})
        if content_type is not None:
            headers["Content-Type"] = content_type
        return self.request("POST", path, body, headers, **kw)

    def upload(self, records: list, **kw) -> Response:
        """NDJSON batch of records (dicts are dumped; bytes/str lines are sent as they are)."""
        lines = [
            r
            if isinstance(r, bytes)
            else r.encode()
            if isinstance(r, str)
            else json.dumps(r).encode()
            for r in records
        ]
        return self.post("/v1/games", b"\n".join(lines) + b"\n", "application/x-ndjson", **kw)

    def restart(self):
        self.stop()
        return self.start()


class Server(_Client):
    """One `balance serve` process; start/stop/kill/restart keep the same file and port.

    It runs from this working tree (`python -m ingest.cli serve`), with rate limiting and the
    analysis schedule off unless `env` says otherwise; its stdout/stderr go to files in
    `workdir` (`output()`)."""

    def __init__(self, workdir: Path, env: dict | None = None, args=(), db: Path | None = None):
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.db = Path(db) if db else workdir / "store.duckdb"
        self.host = "127.0.0.1"
        self.port = free_port()
        self.extra_env = dict(env or {})
        self.args = list(args)
        self.proc: subprocess.Popen | None = None
        self.stdout_path = workdir / "server.stdout"
        self.stderr_path = workdir / "server.stderr"
        self.starts = 0
        self.new_session = False  # True: its own process group, to signal it as a terminal does

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "ingest.cli",
            "serve",
            "--db",
            str(self.db),
            "--host",
            self.host,
            "--port",
            str(self.port),
            *self.args,
        ]

    def environment(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BALANCE_")}
        env.update(
            {"BALANCE_RATE_LIMIT": "0", "BALANCE_JOBS_INTERVAL": "0", "PYTHONUNBUFFERED": "1"}
        )
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        env.update(self.extra_env)
        return env

    def start(self, timeout: float = 90.0) -> Server:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.starts += 1
        with open(self.stdout_path, "ab") as out, open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(
                self.command(),
                cwd=REPO,
                env=self.environment(),
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=self.new_session,
            )
        self.wait_healthy(timeout)
        return self

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.output()}")
            try:
                if self.get("/healthz", timeout=2).status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        self.kill()
        raise TimeoutError(f"server not healthy after {timeout}s:\n{self.output()}")

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait: the server checkpoints and closes the store."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill(self) -> None:
        """SIGKILL: a crash, nothing flushed or checkpointed."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def output(self) -> str:
        parts = []
        for path in (self.stdout_path, self.stderr_path):
            if path.exists():
                parts.append(path.read_bytes().decode("utf-8", "replace"))
        return "\n".join(parts)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict | None = None,
        timeout: float = 60.0,
        source: str | None = None,
    ) -> Response:
        """One request on a connection of its own; `source`: the loopback address it comes
        from (127.0.0.2, ...: another client to the server's per-address limits)."""
        where = (source, 0) if source else None
        conn = http.client.HTTPConnection(
            self.host, self.port, timeout=timeout, source_address=where
        )
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
        finally:
            conn.close()


class AppClient(_Client):
    """The app `balance serve` runs (ingest.server.app.create_app), in this process, reached through
    Flask's test client: no process to start, no socket. start/stop/restart keep the same file.

    `env` holds the same BALANCE_* settings a Server takes (they go to create_app as its
    config, over the defaults: the test process's environment is not read). Defaults as a
    Server's: rate limiting and the analysis schedule off; and judging on the request threads
    (BALANCE_WORKERS=0) unless `env` asks for judge processes (then the gatherer and the judge
    pool run as on the server). `output()` is what the app logged meanwhile (the server's
    log: INFO, access lines included)."""

    _METHODS_WITH_BODY = ("PATCH", "POST", "PUT")

    def __init__(self, workdir: Path, env: dict | None = None, db: Path | None = None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.db = Path(db) if db else self.workdir / "store.duckdb"
        self.extra_env = dict(env or {})
        self.host = "127.0.0.1"
        self.port: int | None = None  # set by serve_http()
        self.app = None
        self.client = None
        self.starts = 0
        self._log = io.StringIO()
        self._handler: logging.Handler | None = None
        self._levels: dict = {}
        self._http = None
        self._validate = None

    @property
    def url(self) -> str:
        assert self.port is not None, "serve_http() first"
        return f"http://{self.host}:{self.port}"

    def config(self) -> dict:
        from ingest.server.config import SETTINGS

        conf = {name: default for name, (default, _) in SETTINGS.items()}
        conf.update(BALANCE_DB=str(self.db), BALANCE_RATE_LIMIT=0, BALANCE_JOBS_INTERVAL=0)
        conf["BALANCE_WORKERS"] = 0
        conf.update(self.extra_env)
        return conf

    def start(self) -> AppClient:
        assert self.app is None, "already running"
        from ingest.server.app import create_app

        self.starts += 1
        self._capture_log()
        if "BALANCE_VALIDATE_CHARTS" in self.extra_env:  # read once, when dashboard.charts loads
            from dashboard import charts

            self._validate = charts.VALIDATE
            charts.VALIDATE = self.extra_env["BALANCE_VALIDATE_CHARTS"] not in ("", "0")
            if charts.VALIDATE and not self._validate:
                charts._SPECS.clear()  # specs built unchecked by an earlier app: check them too
        try:
            self.app = create_app(self.config())
        except BaseException:
            self._release()
            raise
        self.client = self.app.test_client(use_cookies=False)  # as http.client: no cookie jar
        return self

    def stop(self) -> int:
        """Close the app as the server's worker does when it stops: the store is checkpointed
        and closed (the file can be read), the judge and SQL processes end."""
        if self.app is None:
            return 0
        from dashboard import EXT_SNAPSHOTS
        from ingest.server.app import close_app

        app, self.app, self.client = self.app, None, None
        try:
            if self._http is not None:
                self._http.shutdown()
                self._http.server_close()
                self._http = None
            snaps = app.extensions.get(EXT_SNAPSHOTS)
            if snaps is not None:
                snaps.close()
            close_app(app)
        finally:
            self._release()
        return 0

    def serve_http(self) -> AppClient:
        """Serve the app on a loopback port too (a thread of this process), for clients that
        need a URL; `url` and `port` say where."""
        from werkzeug.serving import WSGIRequestHandler, make_server

        class Quiet(WSGIRequestHandler):
            def log_request(self, *args, **kwargs):  # the app logs its own access lines
                pass

        assert self.app is not None and self._http is None
        self._http = make_server(self.host, 0, self.app, threaded=True, request_handler=Quiet)
        self.port = self._http.server_port
        threading.Thread(target=self._http.serve_forever, name="app-http", daemon=True).start()
        return self

    def output(self) -> str:
        return self._log.getvalue()

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict | None = None,
        timeout: float = 60.0,  # Server's signature: nothing to wait for in-process
    ) -> Response:
        assert self.client is not None, "not started"
        headers = dict(headers or {})
        if not any(k.lower() == "content-length" for k in headers):  # as http.client sends it
            if body is not None:
                headers["Content-Length"] = str(len(body))
            elif method.upper() in self._METHODS_WITH_BODY:
                headers["Content-Length"] = "0"
        resp = self.client.open(path, method=method, data=body, headers=headers)
        try:
            data = resp.get_data()
            return Response(resp.status_code, {k.lower(): v for k, v in resp.headers.items()}, data)
        finally:
            resp.close()

    # -- the log, as the server's worker sets it up (ingest.server.serve.configure_logging) ------

    def _capture_log(self) -> None:
        handler = logging.StreamHandler(self._log)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler.setLevel(logging.INFO)
        root, access = logging.getLogger(), logging.getLogger("ingest.access")
        self._levels = {root: root.level, access: access.level}
        root.setLevel(min(root.level or logging.INFO, logging.INFO))
        on = self.extra_env.get("BALANCE_ACCESS_LOG", "1") != "0"
        access.setLevel(logging.INFO if on else logging.WARNING)
        root.addHandler(handler)
        self._handler = handler

    def _release(self) -> None:
        if self._handler is not None:
            logging.getLogger().removeHandler(self._handler)
            self._handler = None
        for logger, level in self._levels.items():
            logger.setLevel(level)
        self._levels = {}
        if self._validate is not None:
            from dashboard import charts

            charts.VALIDATE, self._validate = self._validate, None


# -- a real browser: headless Chromium over the DevTools protocol (tests/test_browser_*.py) ------

ARTIFACTS = REPO / "tests" / "artifacts"  # the browser tests' screenshots
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_CHROMIUM = "chromium is not installed (apt-get install -y chromium chromium-driver)"


class WebSocket:
    def __init__(self, url: str, timeout: float = 30.0):
        u = urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("websocket handshake failed")
            head += chunk
        status, _, rest = head.partition(b"\r\n\r\n")
        if b" 101 " not in status.split(b"\r\n")[0]:
            raise ConnectionError(status.decode(errors="replace"))
        self.buf = rest

    def send(self, text: str) -> None:
        data = text.encode()
        header = bytearray([0x81])
        n = len(data)
        if n < 126:
            header.append(0x80 | n)
        elif n < 65536:
            header.append(0x80 | 126)
            header += struct.pack("!H", n)
        else:
            header.append(0x80 | 127)
            header += struct.pack("!Q", n)
        mask = os.urandom(4)
        header += mask
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(bytes(header) + masked)

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self) -> str:
        parts = []
        while True:
            b0, b1 = self._read(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(n)
            if opcode == 0x9:  # ping: answer, keep reading
                continue
            if opcode == 0x8:
                raise ConnectionError("websocket closed by peer")
            parts.append(payload)
            if b0 & 0x80:
                return b"".join(parts).decode()

    def close(self) -> None:
        self.sock.close()


class Browser:
    """Headless Chromium with one page; records every request and console message."""

    FLAGS = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--disable-extensions",
        "--remote-debugging-port=0",
        "--window-size=1400,1000",
    ]

    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="balance-chromium-")
        self.proc = subprocess.Popen(
            [CHROMIUM, *self.FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        ws_url = None
        deadline = time.time() + 30
        while time.time() < deadline and ws_url is None:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                break
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                ws_url = m.group(1)
        if ws_url is None:
            self.close()
            raise RuntimeError("chromium did not start")
        self.ws = WebSocket(ws_url)
        self._id = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.viewport(1000)

    def viewport(self, height: int) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=1400,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def call(self, method: str, session: bool = False, timeout: float = 60, **params) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        deadline = time.time() + timeout
        while time.time() < deadline:
            got = json.loads(self.ws.recv())
            if got.get("id") == self._id:
                if "error" in got:
                    raise RuntimeError(f"{method}: {got['error']}")
                return got.get("result", {})
            self.events.append(got)
        raise TimeoutError(method)

    def evaluate(self, expression: str):
        r = self.call(
            "Runtime.evaluate",
            session=True,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        return r.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 30) -> None:
        """Until the JavaScript `expression` is truthy on the page (TimeoutError after)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.evaluate(f"!!({expression})"):
                return
            time.sleep(0.2)
        raise TimeoutError(expression)

    def open(self, url: str, ready: str, timeout: float = 45) -> None:
        """Navigate and wait until the JS expression `ready` is truthy."""
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.evaluate(f"document.readyState === 'complete' && !!({ready})"):
                return
            time.sleep(0.2)
        raise TimeoutError(f"{url}: not ready ({ready})")

    def requests(self) -> list[str]:
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]

    def problems(self) -> list[str]:
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a)) for a in p["args"]))
            elif m == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log: " + p["entry"].get("text", "") + " " + p["entry"].get("url", ""))
            elif m == "Network.loadingFailed" and not p.get("canceled"):
                out.append("network: " + p.get("errorText", ""))
        return out

    def screenshot(self, path: Path) -> None:
        height = int(self.evaluate("document.documentElement.scrollHeight") or 1000)
        self.viewport(min(max(height, 600), 8000))
        shot = self.call("Page.captureScreenshot", session=True, format="png")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        self.viewport(1000)

    def close(self) -> None:
        try:
            if getattr(self, "ws", None):
                self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            shutil.rmtree(self.profile, ignore_errors=True)


# -- the demo store: simulated games, as production fills it ---------------------------------------

PAGES = [
    "/dashboard/",
    *(
        f"/dashboard/p/{n}"
        for n in (
            "findings",
            "setups",
            "powers",
            "boards",
            "computer",
            "challenges",
            "quality",
            "trends",
            "versions",
            "slide",
        )
    ),
]


def build_demo_db(path: Path, games: int = 300, slide: int = 150) -> Path:
    """Simulated games and the spec's quarantined examples through the ingest path
    (`ingest.server.demo.load_records`), then the analysis jobs write the agg_* tables."""
    import duckdb

    from analysis import jobs
    from ingest.server.demo import load_records, simulated_records
    from ingest.storage import Store

    store = Store(path)
    try:
        load_records(store, simulated_records(games, slide, seed=0, level=2), echo=lambda _: None)
        load_records(store, example_records("slow6-invalid"), echo=lambda _: None)
    finally:
        store.close()
    con = duckdb.connect(str(path))
    try:
        jobs.run(con, lambda fn: fn(con))
    finally:
        con.close()
    return path


def demo_copy(demo_db: Path, workdir: Path) -> Path:
    """A copy of the demo store in `workdir` (each server or app gets its own file)."""
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "store.duckdb"
    shutil.copy(demo_db, db)
    return db


def demo_env(env: dict | None = None) -> dict:
    """A dashboard server's settings: every chart spec checked by Altair."""
    return {"BALANCE_VALIDATE_CHARTS": "1", **(env or {})}


def free_bytes(disk: Path) -> int:
    st = os.statvfs(disk)
    return st.f_bavail * st.f_frsize


def demo_app(work: Path, demo_db: Path) -> AppClient:
    """A started in-process app on a copy of the session's demo store, charts checked."""
    return AppClient(work, env=demo_env(), db=demo_copy(demo_db, work)).start()


def page(app, path: str) -> str:
    """The HTML of a page that must answer 200."""
    r = app.get(path)
    assert r.status == 200, (path, r.status, r.body[:300])
    return r.body.decode()


def agg_tables(con) -> dict[str, list[tuple]]:
    """Every agg_* table of the connection's database but agg_runs, its rows sorted."""
    names = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'agg_%' "
            "AND table_name <> 'agg_runs' AND table_catalog = current_database()"
        ).fetchall()
    ]
    return {n: con.execute(f"SELECT * FROM {n} ORDER BY ALL").fetchall() for n in sorted(names)}
