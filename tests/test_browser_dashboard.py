"""Real browser: headless Chromium loads every dashboard page of a server holding simulated data.

Driven over the Chrome DevTools Protocol with a minimal websocket client (stdlib only). For each
page: every chart renders (an SVG with marks), no request leaves 127.0.0.1, no console error or
uncaught exception; a screenshot of each page goes to tests/artifacts/ (and, with
BALANCE_UPDATE_SCREENSHOT=1, the overview to docs/img/dashboard.png). Skips, saying why, only
when chromium is not installed.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


# -- a minimal websocket + CDP client ------------------------------------------------------------


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


# -- the tests -----------------------------------------------------------------------------------

if CHROMIUM is None:
    pytest.skip(
        "chromium is not installed (apt-get install -y chromium chromium-driver)",
        allow_module_level=True,
    )

from support import PAGES, Server, demo_copy, demo_env  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_db):
    work = tmp_path_factory.mktemp("dash-server")
    s = Server(work, env=demo_env(), db=demo_copy(demo_db, work)).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def browser():
    b = Browser()
    yield b
    b.close()


LOCAL = ("data:", "blob:", "about:")

MARKS = """(() => Array.from(document.querySelectorAll('div.vis')).map(el => ({
  rendered: el.dataset.rendered || null,
  svg: !!el.querySelector('svg'),
  marks: el.querySelectorAll('svg g[class*="mark-"] > path, svg g[class*="mark-"] > line, '
    + 'svg g[class*="mark-"] > rect, svg g[class*="mark-"] > text').length,
})))()"""


def check_page(browser: Browser, server, path: str, ready: str, shot: str) -> None:
    browser.open(server.url + path, ready)
    outside = [
        u
        for u in browser.requests()
        if not u.startswith(server.url + "/") and not u.startswith(LOCAL)
    ]
    assert outside == [], f"{path} made requests outside the server: {outside}"
    assert browser.problems() == [], f"{path}: {browser.problems()}"
    browser.screenshot(ARTIFACTS / f"{shot}.png")


@pytest.mark.parametrize("path", PAGES)
def test_every_chart_renders_offline_without_errors(browser, server, path):
    name = "dashboard-" + (path.rstrip("/").rsplit("/", 1)[-1] or "overview")
    check_page(
        browser,
        server,
        path,
        "document.body.dataset.rendered && document.body.dataset.rendered !== undefined",
        name.replace("dashboard-dashboard", "dashboard-overview"),
    )
    charts = browser.evaluate(MARKS)
    assert charts, f"{path}: no chart"
    for i, chart in enumerate(charts):
        assert chart["rendered"] == "1" and chart["svg"], (path, i, chart)
        assert chart["marks"] > 0, (path, i, chart)
    if path == "/dashboard/" and os.environ.get("BALANCE_UPDATE_SCREENSHOT"):
        # (on request only: a test run must not change the checkout)
        target = ROOT / "docs" / "img" / "dashboard.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ARTIFACTS / "dashboard-overview.png", target)


def test_sql_console_page(browser, server):
    check_page(
        browser,
        server,
        "/sql?q=SELECT%20board%2C%20count(*)%20FROM%20games%20GROUP%20BY%201",
        "document.getElementById('sql-result')",
        "sql-console",
    )
    assert browser.evaluate("document.querySelectorAll('#sql-result tbody tr').length") >= 1


def test_explorer_and_replay_viewer_step_through_turns(browser, server):
    check_page(
        browser,
        server,
        "/dashboard/games?status=quarantined",
        "document.getElementById('games')",
        "explorer",
    )
    href = browser.evaluate("document.querySelector('#games a').getAttribute('href')")
    check_page(browser, server, href, "document.body.dataset.rendered === 'viewer'", "viewer")
    pieces = browser.evaluate("document.querySelectorAll('#board svg g.piece').length")
    assert pieces > 0
    start = browser.evaluate("document.getElementById('board').dataset.index")
    browser.evaluate("document.getElementById('first').click()")
    assert browser.evaluate("document.getElementById('board').dataset.index") == "0"
    browser.evaluate("document.getElementById('next').click()")
    assert browser.evaluate("document.getElementById('board').dataset.index") == "1"
    browser.evaluate("document.getElementById('last').click()")
    assert browser.evaluate("document.getElementById('board').dataset.index") == start
    assert browser.problems() == []


def _wait(browser: Browser, expression: str, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if browser.evaluate(f"document.readyState === 'complete' && !!({expression})"):
            return
        time.sleep(0.2)
    raise TimeoutError(expression)


VARIANT_CELLS = (
    "Array.from(document.querySelectorAll('#games tbody tr td:nth-child(4)'))"
    ".map(td => td.textContent)"
)


def test_explorer_facet_click_narrows_the_list(browser, server):
    check_page(
        browser,
        server,
        "/dashboard/games?status=verified&board=7",
        "document.getElementById('facets')",
        "explorer-facets",
    )
    before = browser.evaluate(VARIANT_CELLS)
    assert len(set(before)) > 1  # several variants listed: something to narrow
    # the rarest variant: its count is the facet's, and the list after the click is only it
    pick = browser.evaluate(
        """(() => {
          const links = Array.from(
            document.querySelectorAll('.facet[data-column=variant] a.facet-value'));
          const n = a => Number(a.nextElementSibling.textContent.replace(/,/g, ''));
          links.sort((a, b) => n(a) - n(b));
          links[0].id = 'picked';
          return {value: links[0].dataset.value, n: n(links[0])};
        })()"""
    )
    browser.evaluate("document.getElementById('picked').click()")
    _wait(browser, "location.search.includes('variant=') && document.getElementById('games')")
    after = browser.evaluate(VARIANT_CELLS)
    assert after and set(after) == {pick["value"]}
    assert len(after) == min(pick["n"], 200)
    assert "board=7" in browser.evaluate("location.search")  # the other filters kept
    total = browser.evaluate("document.querySelector('#totals b').textContent")
    assert int(total.replace(",", "")) == pick["n"]
    marked = "document.querySelector('.facet[data-column=variant] a.facet-value.on')"
    assert browser.evaluate(f"{marked}.dataset.value") == pick["value"]
    assert browser.problems() == []
    browser.screenshot(ARTIFACTS / "explorer-facet-clicked.png")
