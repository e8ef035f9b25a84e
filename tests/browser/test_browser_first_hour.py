"""A designer's first hour, in headless Chromium: no console warning on any page (bug 9), and
the replay viewer's turn list and broken-turn highlight (bug 11).

The app runs in this process on a copy of the session's demo store and serves HTTP on a
loopback port (`AppClient.serve_http`); the browser is support.Browser (conftest.py `browser`).
"""

from __future__ import annotations

import duckdb
import pytest
from support import PAGES, AppClient, console, demo_copy, demo_env

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory, demo_db):
    work = tmp_path_factory.mktemp("first-hour-browser")
    app = AppClient(work, env=demo_env(), db=demo_copy(demo_db, work)).start().serve_http()
    yield app
    app.stop()


def test_bug9_chart_pages_log_no_console_warning(browser, served):
    for path in [*PAGES, "/dashboard/p/trends?mode=&client_version="]:
        browser.open(served.url + path, "document.body.dataset.rendered")
        assert browser.evaluate("document.body.dataset.rendered") not in ("0", "error"), path
        assert console(browser) == [], path


def test_bug11_viewer_lists_turns_once_and_marks_the_square_the_rule_is_about(
    browser, served, demo_db
):
    con = duckdb.connect(str(demo_db), read_only=True)
    try:
        gid, turn, message = con.execute(
            "SELECT game_id::VARCHAR, turn, message FROM quarantine WHERE rule = 'R8.8' "
            "AND message LIKE '%trap on%' ORDER BY turn DESC LIMIT 1"
        ).fetchone()
    finally:
        con.close()
    trap = message.split("trap on ")[1][:2]  # "turn 21: trap on d2, which holds a piece"
    browser.open(served.url + f"/dashboard/games/{gid}", "document.body.dataset.rendered")
    assert console(browser) == []
    # opens on the broken turn: the trap's square is the one marked, not the move's
    focus = browser.evaluate(
        "Array.from(document.querySelectorAll('#board rect.focus')).map(r => r.dataset.square)"
    )
    assert focus == [trap], (focus, message)
    # one number per turn: a plain list whose items say their turn
    kind = browser.evaluate(
        "(() => { const l = document.getElementById('turns'); return [l.tagName, "
        "getComputedStyle(l).listStyleType, l.children[1].textContent]; })()"
    )
    assert kind[0] == "UL" and kind[1] == "none", kind
    assert kind[2].startswith("turn 0: "), kind
