"""Facets of the game explorer: counts of every game its filters select (not only the page
shown) by status, board, variant, mode, client version and broken rule, each value one click
to add that filter, the others kept.

The app runs in this process (Flask's test client) on a copy of the session's demo store; every
count is checked against SQL of the test's own on the store file itself.
"""

from __future__ import annotations

import html as htmllib
import re

import pytest
from support import demo_app, page, query

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@pytest.fixture(scope="module")
def dash(tmp_path_factory, demo_db):
    app = demo_app(tmp_path_factory.mktemp("explorer-facets"), demo_db)
    yield app
    app.stop()


def facet(html: str, column: str) -> str:
    m = re.search(rf'<div class="facet[^"]*" data-column="{column}">(.*?)</div>', html, re.S)
    assert m, f"no {column} facet"
    return m.group(1)


def counts(html: str, column: str) -> dict[str, int]:
    """value -> count, as the facet shows them (links or plain text)."""
    box = facet(html, column)
    found = re.findall(r'data-value="([^"]*)">[^<]*</(?:a|span)> <small>([\d,]+)</small>', box)
    return {htmllib.unescape(v): int(n.replace(",", "")) for v, n in found}


def link(html: str, column: str, value: str) -> str:
    box = facet(html, column)
    m = re.search(
        rf'<a href="([^"]+)" class="facet-value[^"]*" data-value="{re.escape(value)}"', box
    )
    assert m, (column, value, box[:500])
    return htmllib.unescape(m.group(1))


def listed(html: str) -> list[str]:
    return re.findall(rf'<td><a href="/dashboard/games/({UUID})[?"]', html)


def matched(html: str) -> int:
    m = re.search(r"<b>([\d,]+)</b> games? match", html)
    assert m, "no totals"
    return int(m.group(1).replace(",", ""))


def by(db, sql: str) -> dict[str, int]:
    return {str(v): n for v, n in query(db, sql)}


def test_facets_count_every_matching_game_not_the_page(dash, demo_db, monkeypatch):
    monkeypatch.setattr("dashboard.pages.PER_PAGE", 25)  # the facets count past the page
    html = page(dash, "/dashboard/games?game=slow6")  # (the explorer lists Slide games too)
    verified = query(demo_db, "SELECT count(*) FROM games")[0][0]
    quarantined = query(demo_db, "SELECT count(*) FROM quarantine WHERE game = 'slow6'")[0][0]
    assert len(listed(html)) == 25 < verified
    assert counts(html, "status") == {"verified": verified, "quarantined": quarantined}
    assert counts(html, "rule") == by(
        demo_db, "SELECT rule, count(*) FROM quarantine WHERE game = 'slow6' GROUP BY rule"
    )
    # the verified games alone: every facet is the games table's own count
    html = page(dash, "/dashboard/games?game=slow6&status=verified")
    for column in ("board", "variant", "mode", "client_version"):
        want = by(demo_db, f"SELECT {column}, count(*) FROM games GROUP BY ALL")
        assert counts(html, column) == want, column
    assert 'data-column="rule"' not in html  # verified games broke no rule
    # under filters: the counts of the games those filters select
    html = page(dash, "/dashboard/games?status=verified&board=7&mode=human")
    want = by(
        demo_db,
        "SELECT variant, count(*) FROM games WHERE board = 7 AND mode IN ('online', 'friend') "
        "GROUP BY ALL",
    )
    assert counts(html, "variant") == want and sum(want.values()) == matched(html)
    assert set(counts(html, "mode")) <= {"online", "friend"}


def test_a_facet_click_adds_its_filter_and_keeps_the_others(dash, demo_db):
    start = page(dash, "/dashboard/games?status=verified&board=7")
    variants = counts(start, "variant")
    value = min(variants, key=lambda v: variants[v])  # the rarest: a real narrowing
    href = link(start, "variant", value)
    assert "board=7" in href and "status=verified" in href and f"variant={value}" in href
    html = page(dash, href)
    want = query(demo_db, "SELECT count(*) FROM games WHERE board = 7 AND variant = ?", [value])[0][
        0
    ]
    assert matched(html) == want == variants[value] < sum(variants.values())
    ids = set(listed(html))
    assert len(ids) == min(want, 200)
    stored = {
        gid
        for (gid,) in query(
            demo_db,
            "SELECT game_id::VARCHAR FROM games WHERE board = 7 AND variant = ?",
            [value],
        )
    }
    assert ids <= stored
    # the facet says it is filtered, marks the value, and offers the way back
    box = facet(html, "variant")
    assert f'class="facet-value on" data-value="{value}"' in box
    back = re.search(r'<a href="([^"]+)" class="facet-off"', box).group(1)
    back = htmllib.unescape(back)
    assert "variant=" not in back and "board=7" in back
    assert matched(page(dash, back)) == sum(variants.values())
    # another facet's value replaces nothing else: board 7, this variant, one client version
    versions = counts(html, "client_version")
    version = next(iter(versions))
    narrowed = page(dash, link(html, "client_version", version))
    assert matched(narrowed) == versions[version]
    assert counts(narrowed, "variant") == {value: versions[version]}


def test_a_rule_click_lists_exactly_that_rules_games(dash, demo_db):
    start = page(dash, "/dashboard/games?status=quarantined")
    rules = counts(start, "rule")
    assert rules and "verified" not in counts(start, "status")
    rule = max(rules, key=lambda r: (rules[r], r))
    html = page(dash, link(start, "rule", rule))
    want = {
        gid
        for (gid,) in query(
            demo_db,
            "SELECT game_id::VARCHAR FROM quarantine WHERE game = 'slow6' AND rule = ?",
            [rule],
        )
    }
    assert set(listed(html)) == want and matched(html) == rules[rule]
