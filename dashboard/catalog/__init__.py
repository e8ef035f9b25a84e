"""Every dashboard page and its charts: one module a page, and this registry of them.

The SQL of a chart sums an additive agg_* table (docs/agg-tables.md) within the chart's keys
under the page's filters; `analysis.views` then adds rates, Wilson intervals, empirical-Bayes
shrinkage and Benjamini-Hochberg flags exactly as the jobs do for the default cut, so a number
means the same on every page. Columns are renamed for drawing: rate / lo / hi (`base`).
Besides the pages: the furniture every page shows (freshness, coverage, default cut).
"""

from __future__ import annotations

from analysis.live_version import LiveVersion, human_games_sql, live_version

from ..render import Chart, Ctx
from ..sqlsafe import QueryError
from . import (
    boards,
    challenges,
    computer,
    findings,
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
    """The live client version of the page's game, as the jobs choose it for the rate tables
    (analysis.live_version), from the human games by version of the page's versions table."""
    table = page.versions_table if page is not None else "agg_games_daily"
    count = page.versions_games if page is not None else "sum(games)"
    result = _one(ctx, human_games_sql(table, count=count)) if ctx.has(table) else None
    games = {} if result is None else dict(zip(*result.table.to_pydict().values(), strict=True))
    return live_version({v: int(n or 0) for v, n in games.items()})


def defaults(live: LiveVersion, page: Page | None = None) -> dict[str, str]:
    """The cut a page opens on. The balance cut (analysis.live_version.default_cut): human
    against human on the live client version ("" = every version, when there is no release
    yet); pages about other questions than how the live game plays choose theirs (Page.cut)."""
    cut = page.cut if page is not None else "balance"
    if cut == "records":
        return {}
    if cut == "human":
        return {"mode": "human"}
    if cut == "computer":
        return {"mode": "computer", "client_version": live.version or ""}
    return {"mode": "human", "client_version": live.version or ""}


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
