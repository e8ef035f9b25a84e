"""Real browser, the dashboard on a phone and from a chart to its games.

Headless Chromium (support.Browser) on one `balance serve` of the session's demo store:
- at 390 px every page's document is as wide as the screen (charts size to their card, tables
  scroll inside theirs, legends below), and Versions at 1,400 px too;
- a point of a rate chart opens the explorer on the same cut and row, a game of it opens the
  replay (two clicks), and the replay's "back" returns to the explorer with its filters;
- on request only (BALANCE_UPDATE_SCREENSHOT=1), the README's screenshot: the overview of a
  fresh `balance serve --demo`, written to docs/img/dashboard.png.
"""

from __future__ import annotations

import os

import pytest
from support import PAGES, REPO, Browser, Server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PHONE = 390
READY = "document.body.dataset.rendered !== undefined"


def screen(browser: Browser, width: int, height: int = 900) -> None:
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        session=True,
        width=width,
        height=height,
        deviceScaleFactor=1,
        mobile=False,
    )


WIDTHS = """(() => {
  const wide = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.right > window.innerWidth + 1 && !el.closest('.vis, .scroll, .chart-table')) {
      wide.push(el.tagName + '.' + el.className + ' ' + Math.round(r.right));
    }
  }
  const spill = Array.from(document.querySelectorAll('div.vis'))
    .filter(el => el.scrollWidth > el.clientWidth + 1)
    .map(el => el.closest('section').id + ' ' + el.scrollWidth);
  const broken = Array.from(document.querySelectorAll('div.vis'))
    .filter(el => el.dataset.rendered !== '1').map(el => el.closest('section').id);
  return {doc: document.documentElement.scrollWidth, view: document.documentElement.clientWidth,
          screen: window.innerWidth, wide: wide.slice(0, 5), spill: spill, broken: broken};
})()"""


def test_every_page_is_as_wide_as_a_phone_screen(browser, server):
    screen(browser, PHONE)
    try:
        wrong = {}
        for path in [*PAGES, "/dashboard/games", "/sql"]:
            ready = READY if path.startswith("/dashboard/p") or path == "/dashboard/" else "1"
            browser.open(server.url + path, ready)
            got = browser.evaluate(WIDTHS)
            if path == "/dashboard/":  # on the default cut: the address names its release
                pin = browser.evaluate("document.getElementById('filters').dataset.pin")
                assert pin and browser.evaluate("location.search") == f"?live={pin}"
            assert got["screen"] == PHONE and got["broken"] == [], (path, got)
            # the page is as wide as the screen, and no chart needs its card's scroll bar
            if got["doc"] != got["view"] or got["wide"] or got["spill"]:
                wrong[path] = got
        assert wrong == {}, wrong
        # Versions at a desktop width too (it was wider than 1,400 px)
        screen(browser, 1400)
        browser.open(server.url + "/dashboard/p/versions", READY)
        got = browser.evaluate(WIDTHS)
        assert got["doc"] == got["view"] and got["screen"] == 1400 and not got["spill"], got
    finally:
        screen(browser, 1400, 1000)


def click(browser: Browser, selector: str) -> None:
    """A real mouse click (press and release) at the middle of the element."""
    box = browser.evaluate(
        f"""(() => {{ const el = document.querySelector({selector!r});
        el.scrollIntoView({{block: 'center'}}); const r = el.getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2]; }})()"""
    )
    for kind in ("mousePressed", "mouseReleased"):
        browser.call(
            "Input.dispatchMouseEvent",
            session=True,
            type=kind,
            x=box[0],
            y=box[1],
            button="left",
            clickCount=1,
        )


def wait_path(browser: Browser, path: str) -> str:
    browser.wait_for(f"location.pathname.startsWith({path!r}) && document.readyState == 'complete'")
    return browser.evaluate("location.pathname + location.search")


def test_a_chart_point_opens_its_games_and_a_replay_in_two_clicks_and_back(browser, server):
    cut = "?mode=all&client_version=all&platform=web"
    browser.open(server.url + "/dashboard/" + cut, READY)
    rows = browser.evaluate(
        "JSON.parse(document.getElementById('spec-first-move').textContent).data.values"
    )
    assert rows and all("_href" in r for r in rows)
    # click 1: a point of the first-move chart (Vega draws it as a symbol with its link)
    point = "#chart-first-move svg g.mark-symbol path"
    click(browser, point)
    explorer = wait_path(browser, "/dashboard/games")
    row = next(r for r in rows if explorer.endswith(r["_href"].split("/dashboard/games")[1]))
    # the same cut (the page's filters) and the same row (its board and variant)
    assert "platform=web" in explorer and f"board={row['board']}" in explorer
    assert f"variant={row['variant']}" in explorer
    verified = browser.evaluate("document.querySelector('#totals b:nth-of-type(2)').textContent")
    assert int(verified.replace(",", "")) == row["n"]  # the games behind the point, all of them
    # click 2: a game of the list opens the replay viewer
    click(browser, "#games a.game-link")
    wait_path(browser, "/dashboard/games/")
    browser.wait_for("document.getElementById('back')")
    # back: the explorer with the same filters
    click(browser, "#back")
    browser.wait_for(
        "location.pathname === '/dashboard/games' && document.readyState == 'complete'"
    )
    assert browser.evaluate("location.pathname + location.search") == explorer


@pytest.mark.skipif(
    not os.environ.get("BALANCE_UPDATE_SCREENSHOT"),
    reason="writes docs/img/dashboard.png only when asked (BALANCE_UPDATE_SCREENSHOT=1)",
)
def test_readme_screenshot_of_a_fresh_demo(browser, tmp_path):
    """The README's picture is today's first screen: a fresh `balance serve --demo` (the
    shipped demo set through the upload path, the jobs run), its overview at 1,400 px."""
    demo = Server(tmp_path, args=("--demo",)).start(timeout=1200)
    try:
        screen(browser, 1400, 1000)
        browser.open(demo.url + "/dashboard/", READY)
        assert browser.evaluate(WIDTHS)["broken"] == []
        assert browser.evaluate("document.getElementById('default-cut').textContent")
        browser.screenshot(REPO / "docs" / "img" / "dashboard.png")
    finally:
        demo.stop()
