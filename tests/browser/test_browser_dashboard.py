"""Real browser: headless Chromium loads every dashboard page of a server holding simulated data.

Driven over the Chrome DevTools Protocol (support.Browser). For each page: every chart renders
(an SVG with marks), no request leaves 127.0.0.1, no console error or uncaught exception; a
screenshot of each page goes to tests/artifacts/ (the README's, of a fresh demo, is
tests/browser/test_browser_phone.py's, on request). Skips, saying why, only when chromium is
not installed (conftest.py).
"""

from __future__ import annotations

import pytest
from support import ARTIFACTS, PAGES, Browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # slow: a real `balance serve`


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
    browser.wait_for(
        "document.readyState === 'complete' && location.search.includes('variant=') "
        "&& document.getElementById('games')"
    )
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
