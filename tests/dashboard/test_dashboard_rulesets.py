"""The dashboard by ruleset (rulesets.md RS6.1), on the app in-process over a synthetic store
whose release 3.1.0 plays a registered ruleset `freeze-1` (freeze_turns 2 -> 1) and in which
shield, the strongest power before, is much weaker: the default cut is 3.1.0 under freeze-1,
every chart says which ruleset it covers, and the Versions page compares 3.0.0 (standard)
with 3.1.0 (freeze-1), saying what changed in the rules next to the differences measured; it
also compares two rulesets over every version (the releases that share one pool, and it says
so).
"""

from __future__ import annotations

import csv
import html as htmllib
import io
import re

import pytest
from support import AppClient, demo_env

from analysis import jobs
from analysis import synthetic as sy
from ingest.storage import registry
from replays import rulesets as R

OLD, MID, NEW = "2.5.0", "3.0.0", "3.1.0"
TOML = """name = "freeze-1"
game = "slow6"
description = "Freeze lasts one turn"
[params]
freeze_turns = 1
"""


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    work = tmp_path_factory.mktemp("rulesets")
    plan = sy.Plan(
        n=9_000, seed=8, modes=(("online", 3), ("computer", 1)), p_powers=0.9, p_hidden=0.0,
        versions=((OLD, 1), (MID, 1), (NEW, 1.4)), power_effects={"shield": 0.5},
        version_power_effects={NEW: {"shield": -0.9}},
    )  # fmt: skip
    con, _ = sy.make_store(str(work / "store.duckdb"), plan)
    try:
        con.execute("UPDATE games SET ruleset = 'freeze-1' WHERE client_version = ?", [NEW])
        registry.register(con, [R.parse_toml(TOML)])
        jobs.run(con, lambda fn: fn(con))
    finally:
        con.close()
    server = AppClient(work, env=demo_env(), db=work / "store.duckdb").start()
    yield server
    server.stop()


def page(server, name: str, query: str = "") -> str:
    r = server.get(f"/dashboard/p/{name}{query}")
    assert r.status == 200, r.body[:500]
    return htmllib.unescape(r.body.decode())


def table(server, chart: str, query: str = "") -> list[dict]:
    r = server.get(f"/dashboard/chart/{chart}.csv{query}")
    assert r.status == 200
    return list(csv.DictReader(io.StringIO(r.body.decode())))


def line(text: str, id_: str) -> str:
    return re.search(rf'id="{id_}">(.*?)</p>', text, re.S).group(1)


def test_the_versions_page_says_what_changed_next_to_the_effect(app):
    text = page(app, "versions")
    said = line(text, "page-line")
    assert f"A = {MID} (standard) with B = {NEW} (freeze-1)" in said
    assert "What changed: freeze_turns 2 -> 1." in said
    # next to the differences: above every chart of the page
    assert "What changed: freeze_turns 2 -> 1." in line(text, "covers-versions-all")
    rows = {r["label"]: r for r in table(app, "versions-adjusted-powers")}
    shield = rows["shield adjusted effect"]
    assert float(shield["rate"]) < 0 and float(shield["hi"]) < 0  # shrank, interval below 0
    assert shield["flagged"] == "true"
    assert float(shield["b_value"]) < float(shield["a_value"])


def test_two_rulesets_over_every_version(app):
    q = "?version_a=all&ruleset_a=standard&version_b=all&ruleset_b=freeze-1"
    said = line(page(app, "versions", q), "page-line")
    assert "A = ruleset standard (every version) with B = ruleset freeze-1 (every version)" in said
    assert f"A pools client versions {OLD}, {MID} (they share ruleset standard)" in said
    assert "What changed: freeze_turns 2 -> 1." in said
    rows = table(app, "versions-first-move", q)
    a_n = sum(int(r["a_n"]) for r in rows)
    b_n = sum(int(r["b_n"]) for r in rows)
    per_version = {
        v: sum(int(r["b_n"]) for r in table(app, "versions-first-move", f"?version_a={OLD}"
                                             f"&version_b={v}"))
        for v in (MID,)
    }  # fmt: skip
    assert a_n > per_version[MID] and b_n > 0  # A pooled 2.5.0 and 3.0.0


def test_a_side_that_pools_rulesets_says_so(app):
    said = line(page(app, "versions", f"?version_b={NEW}&ruleset_b=all"), "page-line")
    assert f"B = {NEW} (every ruleset, pooled)" in said
    assert "pools every ruleset of its version, as chosen" in said
    bad = page(app, "versions", "?ruleset_b=Nope")
    assert "Ruleset B: 'Nope' is not a valid value (ignored)" in bad
    same = page(app, "versions", f"?version_a={NEW}&version_b={NEW}")
    assert f"A and B are both {NEW} (freeze-1)" in line(same, "page-line")
    assert 'class="meta covers"' not in same  # no pair: no chart claims a ruleset


def test_every_chart_says_its_ruleset_and_pooling_is_a_choice(app):
    text = page(app, "powers")
    assert f"client version <b>{NEW}</b> under ruleset <b>freeze-1</b>" in text
    covers = dict(re.findall(r'class="meta covers" id="covers-([^"]+)">(.*?)</p>', text))
    assert covers and all(c.startswith("Ruleset: freeze-1") for c in covers.values())
    computed = [k for k, c in covers.items() if "computed by the analysis jobs" in c]
    assert computed and len(computed) < len(covers)  # agg_adjusted's: the default cut's
    # a ruleset over every version: the releases that share it are pooled, and said so
    shared = page(app, "powers", "?mode=human&client_version=all&ruleset=standard")
    assert f"Client versions {MID}, {OLD} share it and are pooled." in shared
    # every ruleset: pooled because the reader chose it
    pooled = page(app, "powers", "?mode=human&client_version=all&ruleset=")
    assert "Every ruleset pooled, as chosen (Ruleset: all): freeze-1, standard." in pooled
    for chart in computed:  # a table of the default cut still says it has that ruleset only
        assert line(pooled, f"covers-{chart}").startswith("Ruleset: freeze-1 (this table")
