"""The browser tests' fixtures. Chromium itself is the session's (`chromium`, a fresh page a
module: `browser`, tests/conftest.py: the lab's and the quick start's tests drive it too);
here, the real server the dashboard and phone modules open their pages on."""

from __future__ import annotations

import pytest
from support import Server, demo_copy, demo_env


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_db):
    """A real `balance serve` on a copy of the session's demo store, charts checked: one a
    module (a module's clicks never reach another's pages)."""
    work = tmp_path_factory.mktemp("browser-server")
    s = Server(work, env=demo_env(), db=demo_copy(demo_db, work)).start()
    yield s
    s.stop()
