"""A real browser: headless Chromium driven over the DevTools protocol (a small WebSocket
client of its own: the standard library has none)."""

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

from .records import REPO
from .wait import wait_for

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
    """Headless Chromium with one page at a time (`new_page()`); records every request and
    console message of the page."""

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
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and ws_url is None:
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
        self.context: str | None = None
        self.session = ""
        self.new_page()

    def new_page(self) -> None:
        """A fresh page in a browser context of its own (no cookies, storage or cache of the
        pages before, which are closed): one Chromium serves many test modules."""
        if self.context is not None:
            self.call("Target.disposeBrowserContext", browserContextId=self.context)
        self.events.clear()
        self.context = self.call("Target.createBrowserContext")["browserContextId"]
        target = self.call("Target.createTarget", url="about:blank", browserContextId=self.context)
        self.session = self.call(
            "Target.attachToTarget", targetId=target["targetId"], flatten=True
        )["sessionId"]
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.viewport(1000)

    def downloads(self, directory: Path) -> None:
        """Let the page's downloads land in `directory` (events on: progress is reported)."""
        self.call(
            "Browser.setDownloadBehavior",
            behavior="allow",
            downloadPath=str(directory),
            browserContextId=self.context,
            eventsEnabled=True,
        )

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
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
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
        wait_for(lambda: self.evaluate(f"!!({expression})"), timeout, expression, every=0.2)

    def open(self, url: str, ready: str, timeout: float = 45) -> None:
        """Navigate and wait until the JS expression `ready` is truthy."""
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        wait_for(
            lambda: self.evaluate(f"document.readyState === 'complete' && !!({ready})"),
            timeout,
            f"{url}: ready ({ready})",
            every=0.2,
        )

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


def console(browser: Browser) -> list[str]:
    """Every console message and log entry of the page: warnings too, not only errors."""
    out = []
    for e in browser.events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.consoleAPICalled":
            out.append(f"{p.get('type')}: " + " ".join(str(a.get("value", a)) for a in p["args"]))
        elif m == "Log.entryAdded":
            out.append(f"log {p['entry'].get('level')}: {p['entry'].get('text', '')}")
    return out
