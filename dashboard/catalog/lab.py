"""The Lab page: the balance lab's stored runs (`balance lab run`, docs/lab.md), each with what
changed in the rules and its predicted changes as dots with their paired intervals, largest
first; then each released candidate's prediction against what players did (lab_check.py).
Worth runs (`balance lab worth`) are on the Powers page. Runs are started from the command
line, or from the page's form with the token (ingest/server/lab_routes.py)."""

from __future__ import annotations

import polars as pl

from .. import charts
from ..render import Chart, Ctx
from .base import Page
from .lab_check import check, record

RUNS_SHOWN = 5  # the newest runs drawn (the table lists every run)


def _runs_sql(ctx: Ctx) -> str:
    return (
        "SELECT id, strftime(timezone('UTC', created_at), '%Y-%m-%d %H:%M') AS created_utc, "
        "candidate->>'name' AS candidate, base->>'name' AS base, board, powers, "
        "array_to_string(levels, ',') AS bot_levels, games AS pairs, seed, engine_version, "
        "picks_differ, "
        "(SELECT count(*) FROM lab_rows x WHERE x.run_id = r.id AND x.confident) AS confident, "
        "(candidate->'params')::VARCHAR AS candidate_params, (base->'params')::VARCHAR "
        "AS base_params FROM lab_runs r WHERE NOT starts_with(id, 'worth-') "
        "ORDER BY created_at DESC, id"
    )


def _changed(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    """What changed in the rules, from the two rulesets' parameters (as Ruleset.changes_from)."""
    import json

    from replays.rulesets import PARAMS

    def diff(base: str, cand: str) -> str:
        b, c = json.loads(base), json.loads(cand)
        out = [f"{k} {b.get(k)} -> {c.get(k)}" for k in PARAMS["slow6"] if b.get(k) != c.get(k)]
        return "; ".join(out) or "nothing"

    if df.is_empty():
        return df
    what = [diff(b, c) for b, c in zip(df["base_params"], df["candidate_params"], strict=True)]
    return df.with_columns(what_changed=pl.Series(what)).drop("base_params", "candidate_params")


runs = Chart(
    "lab-runs",
    "Lab runs: candidate rulesets tried on bots against a base",
    "lab_runs",
    _runs_sql,
    post=_changed,
    table_rows=200,
    empty="No lab runs yet: `balance lab run --candidate FILE --powers` plays one (docs/lab.md).",
    note="Bots of the levels listed stood in for players; each pair is one game under each "
    "ruleset from the same setting and random streams (common random numbers).",
)


def _rows_sql(ctx: Ctx) -> str:
    return (
        "WITH newest AS (SELECT id, candidate->>'name' AS candidate, base->>'name' AS base "
        "FROM lab_runs WHERE NOT starts_with(id, 'worth-') "
        f"ORDER BY created_at DESC, id LIMIT {RUNS_SHOWN}) "
        "SELECT n.candidate || ' vs ' || n.base || ' (' || left(n.id, 8) || ')' AS run, "
        "x.family || ': ' || x.row AS label, x.family, x.row, x.unit, x.base AS base_value, "
        "x.candidate AS candidate_value, x.change AS rate, x.lo, x.hi, x.confident, x.n "
        "FROM lab_rows x JOIN newest n ON n.id = x.run_id "
        "WHERE x.change IS NOT NULL AND x.unit <> 'turns' "
        "ORDER BY n.id, abs(x.change) DESC"
    )


rows = Chart(
    "lab-changes",
    f"Predicted changes, candidate minus base (the newest {RUNS_SHOWN} runs, largest first)",
    "lab_rows",
    _rows_sql,
    draw=lambda rows, ctx: charts.rate_chart(
        rows,
        "label",
        reference=0.0,
        domain=None,
        min_n=30,
        facet="run",
        columns=1,
        x_title="predicted change in score or share, 95% paired interval",
    ),
    table_rows=400,
    empty="No lab runs yet.",
    note="confident: the interval clear of the run's minimum effect (default 0.02) on at least "
    "30 games or sides. Game length (turns) is in the table and the CSV, not on this scale.",
    wide=True,
)

PAGE = Page(
    "Lab",
    [runs, rows, check, record],
    intro="What the balance lab predicted for candidate rulesets: bots play each candidate "
    "against the base, and every balance row's change is shown with its paired interval. "
    "Bots stand in for players: people adapt to a new rule, bots do not. Once a candidate is "
    "registered and released, its predictions are checked against what players did, and the "
    "lab's track record over its releases is kept. Runs are started from the command line "
    "(`balance lab run`), or below with the server's token.",
    coverage_table="",
    selects=(),
    version_select=False,
    cut="records",  # runs of bots: no cut of players' games applies
    cut_why="every stored lab run: bots, not players' games, so no balance cut applies",
    dates=False,
)
