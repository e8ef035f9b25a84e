"""The Lab page's prediction against observation: each stored lab run whose candidate ruleset
is registered (with the run's parameters) and has players' games, its predicted rows beside
the observed change between the base's and the candidate's games, and the lab's track record
over those releases (docs/lab.md).

The observation is computed on the snapshot from the games (analysis.lab: the same families,
the same code as `balance lab check`), once per run and snapshot: a bootstrap of a few
thousand games is too slow to repeat on every page view.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any

import polars as pl

from analysis import lab as predictions
from analysis.sql import sql_literal

from .. import charts
from ..render import Chart, Ctx

# the observed games a run is checked on, a side (a release's players' games on its board):
# beyond this, a fixed sample of them (by a hash of the game id), so that a page view never
# bootstraps more; `balance lab check` reads them all
MAX_GAMES = 50_000
_CACHE: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def _rows_sql(ctx: Ctx) -> str:
    modes = ", ".join(sql_literal(m) for m in predictions.OBSERVED_MODES)
    return (
        "WITH released AS (SELECT ruleset, count(*) AS games FROM games WHERE NOT hidden "
        f"AND mode IN ({modes}) AND game = 'slow6' GROUP BY ruleset) "
        "SELECT r.id AS run_id, r.candidate->>'name' AS candidate, r.base->>'name' AS base, "
        "r.board, r.powers, r.seed, (r.candidate->'params')::VARCHAR AS run_params, "
        "rs.params::VARCHAR AS registered_params, x.family, x.row, x.unit, "
        "x.change AS predicted, x.lo AS predicted_lo, x.hi AS predicted_hi, "
        "b.games AS base_games, c.games AS candidate_games "
        "FROM lab_rows x JOIN lab_runs r ON r.id = x.run_id "
        "JOIN rulesets rs ON rs.game = 'slow6' AND rs.name = (r.candidate->>'name') "
        "JOIN released c ON c.ruleset = (r.candidate->>'name') "
        "JOIN released b ON b.ruleset = (r.base->>'name') "
        "WHERE NOT starts_with(r.id, 'worth-') "
        "ORDER BY r.created_at DESC, r.id, x.ord"
    )


def _observed(ctx: Ctx, run: dict) -> tuple[dict, int, int]:
    """The run's observation on this snapshot: (family, row) -> observed, with the games
    before and after; computed once per run and snapshot."""
    # (the games of the two rulesets, not the snapshot: a snapshot taken for other uploads
    # changes nothing here)
    key = (run["run_id"], run["tested"], run["base_games"], run["candidate_games"])
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    sides = []
    for name in (run["base"], run["candidate"]):
        sql = predictions.observed_sql(name, run["board"], run["powers"], sample=MAX_GAMES)
        result = ctx.run(sql, limit=MAX_GAMES, timeout=30)
        rows = list(zip(*(c.to_pylist() for c in result.table.columns), strict=True))
        sides.append(predictions.observed_from_rows(rows, run["powers"]))
    seen = predictions.observe(sides[0], sides[1], powers=run["powers"], board=run["board"],
                               seed=run["seed"], tested=run["tested"])  # fmt: skip
    out = (seen, len(sides[0]), len(sides[1]))
    with _LOCK:
        if len(_CACHE) > 64:
            _CACHE.clear()
        _CACHE[key] = out
    return out


def checked(frame: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    """The predicted rows of every checked run beside their observation (a row each)."""
    if "checked" in ctx.params:
        return ctx.params["checked"]
    out: list[dict] = []
    games: dict[str, tuple[int, int]] = {}
    for (run_id,), part in frame.group_by(["run_id"], maintain_order=True):
        first = part.row(0, named=True)
        # a run whose candidate has the registered name but other rules predicted another
        # release: not checked against it
        if json.loads(first["run_params"]) != json.loads(first["registered_params"]):
            continue
        rows = [{"family": r["family"], "row": r["row"], "unit": r["unit"],
                 "change": r["predicted"], "lo": r["predicted_lo"], "hi": r["predicted_hi"]}
                for r in part.iter_rows(named=True)]  # fmt: skip
        run = {**first, "tested": predictions.hypotheses(rows)}
        seen, before, after = _observed(ctx, run)
        games[str(run_id)] = (before, after)
        label = f"{first['candidate']} vs {first['base']} ({str(run_id)[:8]})"
        for r in predictions.compare(rows, seen):
            out.append({"run": label, "label": f"{r['family']}: {r['row']}", **r,
                        "tested": run["tested"], "before_games": before,
                        "after_games": after})  # fmt: skip
    result = pl.DataFrame(out, infer_schema_length=None) if out else pl.DataFrame()
    ctx.params["checked"] = result
    ctx.params["checked_games"] = games
    return result


CHECK_COLUMNS = (
    "run", "label", "family", "row", "predicted", "predicted_lo", "predicted_hi",
    "observed", "observed_lo", "observed_hi", "inside", "consistent", "missed",
)  # fmt: skip


def _check_post(frame: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    out = checked(frame, ctx)
    return out.select(CHECK_COLUMNS) if out.height else out


def _check_draw(rows: list[dict], ctx: Ctx) -> dict | None:
    drawn = [r for r in rows if r["observed"] is not None and not r["family"] == "game_length"]
    return charts.paired_intervals(
        drawn,
        "label",
        ("predicted", "observed"),
        facet="run",
        x_title="change, candidate minus base (score or share), 95% intervals",
    )


def _check_summary(frame: pl.DataFrame, ctx: Ctx) -> str:
    if not frame.height:
        return ""
    games = ctx.params.get("checked_games", {})
    tested = frame.group_by("run").agg(pl.col("predicted_lo").is_not_null().sum())
    n = int(tested[:, 1].max() or 0)  # type: ignore[arg-type]
    before = sum(b for b, _ in games.values())
    after = sum(a for _, a in games.values())
    return (
        f"Each run's predicted rows (up to {n} a run) are its release's pre-registered "
        "hypotheses: only they are tested, never every family of the tables. missed: the "
        "observed interval at 1 - 0.05/k (Bonferroni over the run's k rows) lies wholly "
        "outside the predicted one, so a release whose predictions all hold has at most a 5% "
        f"chance of any row called missed. Observed: {before:,} players' games under the "
        f"bases, {after:,} under the candidates (online and friend games on the run's board "
        f"and variant; beyond {MAX_GAMES:,} a side, a fixed sample of them)."
    )


check = Chart(
    "lab-check",
    "Prediction against observation: each released candidate's predicted changes beside "
    "what players did",
    "lab_runs",
    _rows_sql,
    post=_check_post,
    draw=_check_draw,
    summary=_check_summary,
    table_rows=400,
    wide=True,
    empty="No stored lab run's candidate has been released yet: once a registered ruleset "
    "that a run predicted receives players' games, its predictions are checked here.",
    note="Predicted: the lab's paired interval; observed: the change between the base "
    "ruleset's and the candidate's players' games, each release's games resampled apart. "
    "inside: the observed change lies in the predicted interval; consistent: the two 95% "
    "intervals overlap. Game length (turns) is in the table, not on this scale.",
)


def _wilson(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    z, p = 1.96, k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (mid - half, mid + half)


def _record_post(frame: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    rows = checked(frame, ctx)
    if not rows.height:
        return rows
    out = []
    totals = {"compared": 0, "inside": 0, "consistent": 0, "missed": 0}
    for (run,), part in rows.group_by(["run"], maintain_order=True):
        tally = predictions.record(part.to_dicts())
        if not tally["compared"]:
            continue
        for k in totals:
            totals[k] += tally[k]
        out.append({"label": str(run), **tally})
    if len(out) > 1:
        out.append({"label": f"all {len(out)} releases", **totals})
    for r in out:
        r["n"] = r["compared"]
        r["rate"] = r["inside"] / r["compared"]
        r["lo"], r["hi"] = _wilson(r["inside"], r["compared"])
    return pl.DataFrame(out) if out else pl.DataFrame()


record = Chart(
    "lab-record",
    "The lab's track record: how often the observed change fell inside the predicted interval",
    "lab_runs",
    _rows_sql,
    post=_record_post,
    draw=lambda rows, ctx: charts.rate_chart(
        rows,
        "label",
        reference=None,
        min_n=1,
        x_title="share of predicted rows the observation fell inside, 95% interval",
    ),
    table_rows=100,
    empty="No release of a lab run's candidate has players' games yet.",
    note="Over every stored run whose candidate was released: compared, the rows with both a "
    "predicted and an observed change; inside, consistent and missed as in the chart above. "
    "Bots stand in for players, so a release where people played differently from the bots "
    "shows here. The interval treats a run's rows as independent, which they are not (they "
    "share games): read it as a guide.",
)
