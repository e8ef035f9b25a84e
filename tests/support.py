"""What tests import, under the names they have always had: the harness package
(tests/harness/) holds it, one module a job. Fixtures live in conftest.py.

    AppClient(workdir, env={...}).start()  # the app in this process, through Flask's test client
    Server(workdir, env={...}).start()     # a real `balance serve` subprocess on a loopback port

Both answer `get`/`post`/`upload`/`request` with a `Response` and have `db`, `stop()`,
`start()`, `restart()` and `output()`. Use a `Server` only for what needs a process or a
socket: a crash (kill -9), signals, `balance serve` itself, slow/idle sockets and connection
limits, headers on the wire, the browser, the full-disk tmpfs. `AppClient.serve_http()` gives
the in-process app a loopback URL for a command-line client (`balance sql`, `balance reverify
--server`). Wait for a state with `wait_for(predicate, within, what)`, never a fixed sleep.
"""

from __future__ import annotations

from harness.app import AppClient
from harness.browser import ARTIFACTS, CHROMIUM, NO_CHROMIUM, Browser, WebSocket, console
from harness.cli import Ran, balance
from harness.demo import (
    PAGES,
    agg_names,
    agg_tables,
    build_demo_db,
    demo_app,
    demo_copy,
    demo_env,
    page,
)
from harness.engines import buggy_verifier
from harness.http import Client, Response
from harness.processes import (
    children,
    comm,
    descendants,
    ended,
    free_bytes,
    free_port,
    gone,
)
from harness.records import (
    EXAMPLES,
    JSON,
    NDJSON,
    REPO,
    SLIDE,
    SLOW6,
    dumps,
    example_lines,
    example_records,
    examples_dir,
    fresh,
    fresh_slow6,
    padded,
    query,
    spec_dir,
    verdicts,
)
from harness.server import JUDGES, Server
from harness.snapshots import Snapshots
from harness.wait import wait_for, wait_until

__all__ = [
    "ARTIFACTS",
    "CHROMIUM",
    "EXAMPLES",
    "JSON",
    "NDJSON",
    "NO_CHROMIUM",
    "PAGES",
    "REPO",
    "SLIDE",
    "SLOW6",
    "AppClient",
    "Browser",
    "Client",
    "Ran",
    "Response",
    "JUDGES",
    "Server",
    "Snapshots",
    "WebSocket",
    "agg_names",
    "agg_tables",
    "balance",
    "build_demo_db",
    "buggy_verifier",
    "children",
    "comm",
    "console",
    "demo_app",
    "demo_copy",
    "demo_env",
    "descendants",
    "dumps",
    "ended",
    "example_lines",
    "example_records",
    "examples_dir",
    "free_bytes",
    "free_port",
    "fresh",
    "fresh_slow6",
    "gone",
    "padded",
    "page",
    "query",
    "spec_dir",
    "verdicts",
    "wait_for",
    "wait_until",
]
