"""The Versions page: what changed between two client versions, or two rulesets
(analysis.versions).

Each side is a client version and a ruleset (rulesets.md RS6.1: never a silent mix). Version B
defaults to the live version (the rate tables' own: analysis.live_version) and A to the release
before it, each under its own ruleset (the one most of its human games played); pre-releases
only when chosen. A side may be a ruleset over every client version ("all" versions: releases
that share it pool, and the page says so) or, when the reader asks, a version's games of every
ruleset pooled. When the two rulesets differ, the page says which parameters changed next to
the differences measured ("What changed: freeze_turns 2 -> 1").

Each family's chart sums its agg_* table for the two sides under the page's other filters, and
analysis.versions turns the counts into differences B - A with intervals, tests and
Benjamini-Hochberg flags within the family; the first table is every family's rows at once
(the same numbers: BH runs within a family).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from analysis.cuts import version_key
from analysis.live_version import human_games_sql
from analysis.sql import sql_literal
from replays import rulesets as R

from ..console.sqlsafe import QueryError
from ..filters import RULESET, VERSION
from ..render import Chart, Ctx
from .base import OUT, Page, draw_rate
from .computer import COMPUTER
from .powers import POWER_SUMS

# per family: (its table, the keys it sums within, the counts)
SOURCES = {
    "first_move": ("agg_first_move", ["board", "variant"], OUT),
    "powers": ("agg_power", ["board", "power"], POWER_SUMS),
    "ai_levels": ("agg_vs_ai", ["board", "ai_level"], OUT),
    "end_reasons": ("agg_end_reasons", ["board", "variant", "reason"], "sum(games) AS games"),
    "game_length": ("agg_game_length", ["board", "variant", "turns"], "sum(games) AS games"),
    "lineup_cells": ("agg_lineup", ["board", "variant", "lineup"], OUT),
    "adjusted_powers": ("games", [], ""),  # each version's sample of games: adjusted_sql
}
# the rows a comparison may read: two versions' lineups (up to 2 x 5,040 a board and variant)
# and samples (2 x analysis.versions.ADJUSTED_SAMPLE games) stay far below it
ROW_LIMIT = 250_000
LABELS = {
    "version_a": "Version A (before)",
    "ruleset_a": "Ruleset A",
    "version_b": "Version B (after)",
    "ruleset_b": "Ruleset B",
}
ALL = "all"  # a side's version or ruleset: every one (a ruleset over every version; pooled)


def analysis_versions():
    # loads scipy (analysis.stats): on the first chart drawn, not when the dashboard loads
    from analysis import versions

    return versions


def _human_games(ctx: Ctx) -> dict[tuple[str, str], int]:
    """Verified human games by (client version, ruleset)."""
    if "ruleset" not in ctx.columns("agg_games_daily"):
        return {}
    sql = human_games_sql("agg_games_daily", count="sum(games)", ruleset=True)
    try:
        result = ctx.run(sql, limit=10_000)
    except QueryError:
        return {}
    rows = result.table.to_pydict().values()
    return {(v, r): int(n or 0) for v, r, n in zip(*rows, strict=True) if v}


def _main_ruleset(games: dict[tuple[str, str], int], version: str | None) -> str | None:
    """The ruleset most of a version's human games played (every version's: None)."""
    mine: dict[str, int] = {}
    for (v, r), n in games.items():
        if version is None or v == version:
            mine[r] = mine.get(r, 0) + n
    return max(mine, key=lambda r: (mine[r], r == "standard", r)) if mine else None


def side_label(version: str | None, ruleset: str | None) -> str:
    """How a side is named on the page and in the comparison's rows."""
    if version is None:
        return f"ruleset {ruleset} (every version)"
    return f"{version} ({ruleset if ruleset else 'every ruleset, pooled'})"


def side_cond(version: str | None, ruleset: str | None) -> str:
    conds = []
    if version is not None:
        conds.append(f"client_version = {sql_literal(version)}")
    if ruleset is not None:
        conds.append(f"ruleset = {sql_literal(ruleset)}")
    return " AND ".join(conds) or "TRUE"


def _choose(ctx: Ctx, args, key: str, options: list[str], pattern) -> tuple[str | None, bool]:
    """The side's chosen value ("all": every one), and whether it was chosen at all."""
    raw = (args.get(key) or "").strip()
    if not raw:
        return None, False
    if raw == ALL:
        return ALL, True
    if not pattern.fullmatch(raw):
        ctx.filters.errors.append(f"{LABELS[key]}: {raw!r} is not a valid value (ignored)")
        return None, False
    if raw not in options:
        ctx.filters.errors.append(
            f"{LABELS[key]}: {raw!r} has no games in the store (ignored): "
            f"choose one of {', '.join(options) or 'none yet'}"
        )
        return None, False
    return raw, True


def _registered(ctx: Ctx, names: set[str]) -> dict[str, R.Ruleset]:
    """The parameters of these Slow6 rulesets: `standard` is built in, the others are read
    from the store's registry (the snapshot's `rulesets` table)."""
    out: dict[str, R.Ruleset] = {}
    if R.STANDARD_NAME in names:
        out[R.STANDARD_NAME] = R.STANDARD["slow6"]
    rest = sorted(names - {R.STANDARD_NAME})
    if not rest or not ctx.has("rulesets"):
        return out
    sql = (
        "SELECT name, params::VARCHAR, description FROM rulesets WHERE game = 'slow6' "
        f"AND name IN ({', '.join(sql_literal(n) for n in rest)})"
    )
    try:
        result = ctx.run(sql, limit=1000)
    except QueryError:
        return out
    import orjson

    for name, params, description in zip(*result.table.to_pydict().values(), strict=True):
        try:
            out[name] = R.Ruleset.from_json(
                {"name": name, "game": "slow6", "description": description or "",
                 "params": orjson.loads(params)}
            )  # fmt: skip
        except (R.RulesetError, ValueError):
            continue  # a row the registry would not have written: its parameters unknown
    return out


def prepare(ctx: Ctx, args: Mapping[str, str]) -> None:
    """Versions A and B from the query (checked like every filter), else the defaults; the
    page's other filters apply as on every page, the client version filter does not."""
    ctx.filters.values.pop("client_version", None)
    ctx.filters.values.pop("ruleset", None)  # each side has its own (its version's)
    if "versions" not in ctx.params:  # a page request has them; a saved query's run not
        from . import client_versions

        ctx.params["versions"] = client_versions(ctx)
    versions = list(ctx.params["versions"] or [])
    games = _human_games(ctx)
    names = sorted({r for _, r in games} | _stored_rulesets(ctx))
    by_version: dict[str, int] = {}
    for (v, _), n in games.items():
        by_version[v] = by_version.get(v, 0) + n
    pair = analysis_versions().default_pair(by_version)
    chosen: dict[str, str | None] = {"version_a": pair.a, "version_b": pair.b}
    picked = False
    for key in ("version_a", "version_b"):
        value, given = _choose(ctx, args, key, versions, VERSION)
        if given:
            chosen[key], picked = value, True
    for side in "ab":
        value, given = _choose(ctx, args, f"ruleset_{side}", names, RULESET)
        version = chosen[f"version_{side}"]
        if given:
            chosen[f"ruleset_{side}"], picked = value, True
        else:  # the version's own ruleset (every version's, for "all" versions)
            chosen[f"ruleset_{side}"] = _main_ruleset(games, None if version == ALL else version)
    sides = {}
    for side in "ab":
        sv, sr = chosen[f"version_{side}"], chosen[f"ruleset_{side}"]
        sides[side] = (None if sv == ALL else sv, None if sr == ALL else sr)
    (va, ra), (vb, rb) = sides["a"], sides["b"]
    a = b = None
    rules = ""
    if len(versions) < 2 and not (picked and ra != rb):
        line = (
            f"Only one client version is in the store ({versions[0]}): nothing to compare yet."
            if versions
            else "No client version is in the store yet: nothing to compare."
        )
    elif chosen["version_a"] is None or chosen["version_b"] is None:
        line = f"No default pair: {pair.why}. Choose versions A and B above."
    elif (va is None and ra is None) or (vb is None and rb is None):
        line = "A side of every version and every ruleset is everything: choose one of the two."
    elif sides["a"] == sides["b"]:
        line = f"A and B are both {side_label(va, ra)}: choose two different sides."
    else:
        a, b = side_label(va, ra), side_label(vb, rb)
        how = "as chosen" if picked else f"the default: {pair.why}"
        line = f"Comparing A = {a} with B = {b} ({how}). Differences are B − A."
        if ra is not None and rb is not None:
            known = _registered(ctx, {ra, rb})
            rules = analysis_versions().rules_changed(known.get(ra), known.get(rb), ra, rb)
        else:
            pooled = [s for s, (_, r) in sides.items() if r is None]
            rules = (
                f"Side {' and '.join(p.upper() for p in pooled)} pools every ruleset of its "
                "version, as chosen: what changed in the rules cannot be said."
            )
        pools = [
            f"{s.upper()} pools client versions {', '.join(vs)} (they share ruleset {r})"
            for s, (v, r) in sides.items()
            if v is None and len(vs := _versions_of(games, r)) > 1
        ]
        if pools:
            rules += " " + "; ".join(pools) + "."
    ctx.params["pair"] = (a, b)
    ctx.params["sides"] = sides
    ctx.params["rules_changed"] = rules
    ctx.params["covers"] = rules
    ctx.params["form_line"] = f"{line} {rules}".strip()
    ctx.params["query"] = {k: v for k, v in chosen.items() if v and (args.get(k) or "").strip()}
    options = {"version": [ALL, *versions], "ruleset": [ALL, *names]}
    ctx.params["form_extra"] = [
        {"name": key, "label": LABELS[key], "options": options[key.split("_")[0]],
         "value": chosen[key]}
        for key in ("version_a", "ruleset_a", "version_b", "ruleset_b")
    ]  # fmt: skip


def _stored_rulesets(ctx: Ctx) -> set[str]:
    """The rulesets the page's tables hold games of (computer games too)."""
    if "ruleset" not in ctx.columns("agg_games_daily"):
        return set()
    try:
        result = ctx.run("SELECT DISTINCT ruleset FROM agg_games_daily", limit=10_000)
    except QueryError:
        return set()
    return {r for r in result.table.column(0).to_pylist() if r}


def _versions_of(games: dict[tuple[str, str], int], ruleset: str | None) -> list[str]:
    found = {v for (v, r), n in games.items() if r == ruleset and n}
    return sorted(found, key=version_key)


def adjusted_sql(ctx: Ctx) -> str:
    """Each version's sample of human games under the page's filters (the mode filter aside:
    the adjusted model is fitted on human games), as analysis.versions draws it."""
    a, b = ctx.params.get("pair", (None, None))
    if not (a and b):
        return "SELECT 'games' AS source WHERE false"
    where = ctx.where("games", "ended_at", None, {"mode": "human"}).removeprefix("WHERE ").strip()
    sample = analysis_versions().adjusted_sample_sql
    sides = ctx.params["sides"]
    # (without the hash, an unsigned 64-bit integer: the dashboard casts unsigned to Int64);
    # a side's rows carry its label as their client version (the comparison's key)
    parts = [
        f"SELECT 'games' AS source, * EXCLUDE (h, game_id, client_version), "
        f"{sql_literal(label)} AS client_version FROM ({sample(v, where or 'TRUE', r)})"
        for label, (v, r) in ((a, sides["a"]), (b, sides["b"]))
    ]
    return "\nUNION ALL\n".join(f"({p})" for p in parts)


def family_sql(ctx: Ctx, family: str) -> str:
    """The family's counts for versions A and B under the page's filters (computer levels:
    computer games, whatever the mode filter says)."""
    if family == "adjusted_powers":
        return adjusted_sql(ctx)
    table, keys, aggs = SOURCES[family]
    a, b = ctx.params.get("pair", (None, None))
    override = COMPUTER if family == "ai_levels" else None
    if not (a and b):  # no pair: no rows (the line above the charts says why)
        where = ctx.where(table, "week", ["false"], override)
        sides = [("", where)]
    else:  # each side's rows, named by its label (a row may belong to both sides)
        sides = [
            (label, ctx.where(table, "week", [side_cond(*ctx.params["sides"][s])], override))
            for label, s in ((a, "a"), (b, "b"))
        ]
    parts = [
        f"SELECT {sql_literal(table)} AS source, mode, {sql_literal(label)} AS client_version"
        f"{', ' + ', '.join(keys) if keys else ''}, {aggs}\nFROM {table}\n{where}\n"
        f"GROUP BY {', '.join(['mode', *keys])}"
        for label, where in sides
    ]
    return "\nUNION ALL\n".join(f"({p})" for p in parts) + "\nORDER BY ALL"


def all_sql(ctx: Ctx) -> str:
    parts = [family_sql(ctx, f) for f, (t, _, _) in SOURCES.items() if ctx.has(t)]
    return "\nUNION ALL BY NAME\n".join(f"({p})" for p in parts)


def comparison(df: pl.DataFrame, ctx: Ctx, families=None):
    """analysis.versions.compare on the summed counts (each table's rows by `source`)."""
    from analysis.cuts import Cut

    a, b = ctx.params["pair"]
    frames = {t: df.filter(pl.col("source") == t) for t in df["source"].unique()}

    def fetch(table: str, cut: Cut):
        frame = frames.get(table)
        return None if frame is None else cut.apply(frame)

    return analysis_versions().compare(fetch, a, b, Cut(), families=families)


def _all(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    c = comparison(df, ctx)
    ctx.params["comparison"] = c
    return c.table


def _summary(df: pl.DataFrame, ctx: Ctx) -> str:
    c = ctx.params.get("comparison")
    if c is None:
        return "" if ctx.params.get("pair", (None, None))[0] is None else "No games of A or B."
    notes = f" Not compared: {'; '.join(c.notes)}." if c.notes else ""
    return c.summary() + notes


def _family_post(family: str):
    def post(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
        c = comparison(df, ctx, families=[family])
        ctx.params[f"notes:{family}"] = c.notes
        t = c.table.rename({"diff": "rate"})
        series = pl.col("measure") if family == "powers" else pl.lit(TITLE_OF[family])
        if family in ("end_reasons", "lineup_cells"):  # a panel per board and variant
            b = pl.col("board").cast(pl.String)
            series = pl.concat_str(b, pl.lit("×"), b, pl.lit(" "), pl.col("variant"))
        return t.with_columns(n=pl.min_horizontal("a_n", "b_n"), series=series).sort(
            "series", "p_value", nulls_last=True
        )

    return post


def _family_summary(family: str):
    def summary(df: pl.DataFrame, ctx: Ctx) -> str:
        notes = ctx.params.get(f"notes:{family}") or []
        flagged = int(df["flagged"].sum()) if "flagged" in df.columns else 0
        head = (
            f"{flagged} of {df.height} differences changed by more than their minimum "
            "(always-valid interval beyond it; the page's error budget)."
        )
        return (
            head + (f" Not compared: {'; '.join(notes)}." if notes else "")
            if df.height
            else ("; ".join(notes))
        )

    return summary


TITLE_OF = {
    "first_move": "first-mover score",
    "powers": "powers",
    "ai_levels": "human score against the computer",
    "end_reasons": "share of games",
    "game_length": "mean turns",
    "lineup_cells": "rank-in-file effect",
    "adjusted_powers": "adjusted power effect",
}
X_TITLES = {
    "first_move": "first mover's score rate, B − A (Newcombe 95% interval)",
    "powers": "B − A, 95% interval (pick and used rates: Newcombe; pick effect: MOVER)",
    "ai_levels": "human score rate, B − A (Newcombe 95% interval)",
    "end_reasons": "share of the games ending so, B − A (Newcombe 95% interval)",
    "game_length": "mean turns per game, B − A (Welch 95% interval)",
    "lineup_cells": "lineup model's rank-in-file effect, log-odds, B − A (95% interval)",
    "adjusted_powers": "adjusted effect against the median power, log-odds, B − A (95% interval)",
}
CHART_TITLES = {
    "first_move": "First-move advantage: B − A",
    "powers": "Powers: pick rate, pick effect (score picked − not) and used rate, B − A",
    "ai_levels": "Human score against each computer level: B − A",
    "end_reasons": "How games end: share of each reason, B − A",
    "game_length": "Game length: mean turns, B − A",
    "lineup_cells": "Lineups: the lineup model's rank-in-file effects, B − A",
    "adjusted_powers": "Powers, adjusted (first move, board and the opponent's picks held "
    "fixed): B − A",
}


def _chart(family: str) -> Chart:
    table = SOURCES[family][0]
    facet = family in ("powers", "end_reasons", "lineup_cells")
    return Chart(
        f"versions-{family.replace('_', '-')}",
        CHART_TITLES[family],
        table,
        lambda ctx: family_sql(ctx, family),
        post=_family_post(family),
        draw=draw_rate(
            "label",
            reference=0.0,
            domain=None,
            x_title=X_TITLES[family],
            facet="series" if facet else None,
            width=300 if facet else 420,
            columns=3,
        ),
        summary=_family_summary(family),
        empty="No games of both versions in this family under these filters.",
        row_limit=ROW_LIMIT,
    )


everything = Chart(
    "versions-all",
    "What changed from A to B: every difference, strongest evidence first",
    "agg_first_move",
    all_sql,
    post=_all,
    summary=_summary,
    table_rows=25,
    note="diff = B − A with its one-look 95% interval (lo, hi), p_value of the test named in "
    "`test` and q_value (Benjamini–Hochberg within the family), for drill-down; flagged: a "
    "change that matters, its always-valid interval (always_lo, always_hi, valid however often "
    "the page is read) wholly beyond minimum, the smallest change worth acting on. Score "
    "rates count a draw as ½. Computer levels are read from computer games, the rest from the "
    "mode filter (default: human against human).",
    empty="Nothing to compare under these filters (the line above says why).",
    row_limit=ROW_LIMIT,
)

PAGE = Page(
    "Versions",
    [everything, *(_chart(f) for f in SOURCES)],
    intro="Did a client version change balance? Every difference between version A and "
    "version B, with its interval and a test; a change is counted only when its always-valid "
    "interval clears the smallest change that matters, under one error budget for the page "
    "(identical versions read 0 things changed), across first move, powers, the adjusted power "
    "effects, computer levels, end reasons, game length and the lineup model's rank-in-file "
    "effects. When nothing changed, the line says how many games a version needs to see a "
    "change of twice the minimum.",
    coverage_table="",
    selects=("board", "variant", "mode", "platform"),
    prepare=prepare,
    params=("version_a", "version_b"),
    version_select=False,
    cut_why="human against human (online + friend), version B the live release and A the "
    "release before it: what the latest release changed",
)
