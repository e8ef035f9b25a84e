"""Every dashboard page and its charts: one module a page, and this registry of them.

The SQL of a chart sums an additive agg_* table (docs/agg-tables.md) within the chart's keys
under the page's filters; `analysis.views` then adds rates, Wilson intervals, empirical-Bayes
shrinkage and Benjamini-Hochberg flags exactly as the jobs do for the default cut, so a number
means the same on every page. Columns are renamed for drawing: rate / lo / hi (`base`).
Besides the pages: the furniture every page shows (freshness, coverage, default cut).
"""

from __future__ import annotations

from analysis.live_version import LiveVersion, human_games_sql, live_cut

from ..console.sqlsafe import QueryError
from ..filters import Filters
from ..render import Chart, Ctx
from . import (
    boards,
    challenges,
    computer,
    findings,
    lab,
    overview,
    powers,
    quality,
    setups,
    slide,
    trends,
    versions,
)
from .base import Page, sums

# in the order of the navigation bar; the key is the page's URL (/dashboard/p/<key>)
PAGES: dict[str, Page] = {
    "overview": overview.PAGE,
    "findings": findings.PAGE,
    "setups": setups.PAGE,
    "powers": powers.PAGE,
    "boards": boards.PAGE,
    "computer": computer.PAGE,
    "challenges": challenges.PAGE,
    "quality": quality.PAGE,
    "trends": trends.PAGE,
    "versions": versions.PAGE,
    "slide": slide.PAGE,
    "lab": lab.PAGE,
}

CHARTS: dict[str, Chart] = {c.id: c for p in PAGES.values() for c in p.charts}


def page_of(chart_id: str) -> Page | None:
    """The page a chart is on (its filters' defaults are that page's)."""
    return next((p for p in PAGES.values() if any(c.id == chart_id for c in p.charts)), None)


def chart(ctx: Ctx, chart_id: str) -> Chart | None:
    return CHARTS.get(chart_id)


# -- page furniture ------------------------------------------------------------------------------


def _one(ctx: Ctx, sql: str):
    try:
        result = ctx.snapshots.run(sql, limit=1000, timeout=5)
    except QueryError:
        return None
    return result


def freshness(ctx: Ctx, page: Page | None = None) -> dict:
    out = {"snapshot_at": ctx.snapshots.snapshot_at, "finished": None}
    games_key = page.games_read if page is not None else "games_read"
    label = page.game_label if page is not None else ""
    out["games_label"] = f"verified {label} games" if label else "verified games"
    if not ctx.has("agg_runs"):
        return out
    cols = ctx.columns("agg_runs")
    order = next((c for c in ("finished", "finished_at", "started", "run_id") if c in cols), None)
    result = _one(
        ctx, f"SELECT * FROM agg_runs {'ORDER BY ' + order + ' DESC' if order else ''} LIMIT 1"
    )
    if result is None or not result.row_count:
        return out
    row = {k: v[0] for k, v in result.table.to_pydict().items()}
    finished = row.get("finished") or row.get("finished_at") or row.get("started")
    out["finished"] = str(finished)[:19] if finished else None
    out["version"] = row.get("job_version")
    out["games"] = row.get(games_key) if games_key in row else row.get("games")
    return out


def client_versions(ctx: Ctx, table: str = "agg_games_daily") -> list[str]:
    """Client versions in `table`, latest first (Slow6 and Slide each have their own)."""
    if not ctx.has(table):
        return []
    result = _one(ctx, f"SELECT DISTINCT client_version FROM {table}")
    if result is None:
        return []
    from analysis.cuts import version_key

    return sorted(result.table.column(0).to_pylist(), key=version_key, reverse=True)


def live(ctx: Ctx, page: Page | None = None) -> LiveVersion:
    """The live client version of the page's game and its ruleset, as the jobs choose them for
    the rate tables (analysis.live_version), from the human games by version and ruleset of
    the page's versions table."""
    table = page.versions_table if page is not None else "agg_games_daily"
    count = page.versions_games if page is not None else "sum(games)"
    by_ruleset = "ruleset" in ctx.columns(table)  # (a snapshot from before rulesets: none)
    sql = human_games_sql(table, count=count, ruleset=by_ruleset)
    result = _one(ctx, sql) if ctx.has(table) else None
    rows = [] if result is None else list(zip(*result.table.to_pydict().values(), strict=True))
    if not by_ruleset:
        rows = [(v, None, n) for v, n in rows]
    return live_cut(rows)


def defaults(live: LiveVersion, page: Page | None = None) -> dict[str, str]:
    """The cut a page opens on. The balance cut (analysis.live_version.default_cut): human
    against human on the live client version ("" = every version, when there is no release
    yet) and its ruleset (rulesets.md RS6.1: never pooled with another unless chosen); pages
    about other questions than how the live game plays choose theirs (Page.cut)."""
    cut = page.cut if page is not None else "balance"
    if cut == "records":
        return {}
    if cut == "human":
        return {"mode": "human"}
    version, ruleset = live.version or "", live.ruleset or ""
    if cut == "computer":
        return {"mode": "computer", "client_version": version, "ruleset": ruleset}
    return {"mode": "human", "client_version": version, "ruleset": ruleset}


def rulesets(ctx: Ctx, page: Page | None = None) -> dict[str, list[str]]:
    """The rulesets of the page's games under its filters (the ruleset filter aside), each
    with its client versions, newest first."""
    from analysis.cuts import version_key

    table = page.versions_table if page is not None else "agg_games_daily"
    cols = ctx.columns(table)
    if "ruleset" not in cols:
        return {}
    others = Filters({k: v for k, v in ctx.filters.values.items() if k != "ruleset"})
    where, _ = others.where(cols, "day" if "day" in cols else "week")
    sql = (
        f"SELECT ruleset, list(DISTINCT client_version) FROM {table} {where} "
        "GROUP BY ruleset ORDER BY ruleset"
    )
    result = _one(ctx, sql)
    if result is None:
        return {}
    names, versions = result.table.to_pydict().values()
    return {
        r: sorted(v or [], key=version_key, reverse=True)
        for r, v in zip(names, versions, strict=True)
    }


def covers(ctx: Ctx, page: Page, table: str) -> str:
    """What a chart says of the ruleset(s) its numbers cover (rulesets.md RS6.1): the one
    chosen (and the releases it pools, when they share it), or that every ruleset is pooled
    because the reader chose "all"."""
    if "ruleset" not in ctx.columns(table):
        return ""
    from analysis.tables import ADDITIVE

    if table.startswith("agg_") and table not in ADDITIVE:  # a table the jobs computed whole
        result = _one(ctx, f"SELECT DISTINCT ruleset FROM {table} ORDER BY 1")
        names = [] if result is None else [r for r in result.table.column(0).to_pylist() if r]
        if names:
            return (
                f"Ruleset: {', '.join(names)} (this table is computed by the analysis jobs on "
                "the default cut: other rulesets have no rows in it)."
            )
        return ""
    if "_rulesets" not in ctx.params:
        ctx.params["_rulesets"] = rulesets(ctx, page)
    present: dict[str, list[str]] = ctx.params["_rulesets"]
    chosen = ctx.filters.get("ruleset")
    if chosen:
        line = f"Ruleset: {chosen}."
        versions = present.get(chosen, [])
        if not ctx.filters.get("client_version") and len(versions) > 1:
            line += f" Client versions {', '.join(versions)} share it and are pooled."
        return line
    if len(present) == 1:
        (only,) = present
        return f"Ruleset: {only} (the only one under these filters)."
    if present:
        return (
            f"Every ruleset pooled, as chosen (Ruleset: all): {', '.join(present)}. Games played "
            "under different rules are summed here: choose a ruleset to keep them apart."
        )
    return ""


def coverage(ctx: Ctx, page: Page) -> int | None:
    if not page.coverage_table or not ctx.has(page.coverage_table):
        return None
    sql = sums(
        ctx,
        page.coverage_table,
        [],
        f"{page.coverage_sum} AS games",
        override=page.coverage_override,
        extra=list(page.coverage_extra),
    )
    result = _one(ctx, sql)
    if result is None or not result.row_count:
        return None
    return int(result.table.column(0)[0].as_py() or 0)
