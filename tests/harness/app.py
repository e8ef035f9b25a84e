"""The app `balance serve` runs, in this process, reached through Flask's test client: no
process to start, no socket. What most tests use."""

from __future__ import annotations

import io
import logging
import threading
from pathlib import Path

from .duckdb_threads import CONSOLE_THREADS
from .http import Client, Response


class AppClient(Client):
    """The app `balance serve` runs (ingest.server.app.create_app), in this process, reached through
    Flask's test client: no process to start, no socket. start/stop/restart keep the same file.

    `env` holds the same BALANCE_* settings a Server takes (they go to create_app as its
    config, over the defaults: the test process's environment is not read). Defaults as a
    Server's: rate limiting and the analysis schedule off, the console's DuckDB on one thread
    (duckdb_threads.py); and judging on the request threads
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
        conf["BALANCE_SQL_THREADS"] = CONSOLE_THREADS
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
