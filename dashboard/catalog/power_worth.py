"""The Powers page's lab view: what each power is worth to a bot of one level (`balance lab
worth`, restricted play: docs/lab.md), beside the observed pick effect of the page's cut. The
two answer different questions: the worth is free of who picks a power (a bot barred from it
takes its next choice, the same seeds otherwise), the pick effect is what players who picked
it scored, selection and all."""

from __future__ import annotations

import polars as pl

from .. import charts
from ..console.sqlsafe import QueryError
from ..render import Chart, Ctx, frame_of
from .base import analysis_views


def _sql(ctx: Ctx) -> str:
    # each power's newest worth row (a run of one power does not hide an --all run's others)
    return (
        "SELECT x.row AS power, r.base->>'name' AS ruleset, r.levels[1] AS level, r.board, "
        "-x.change AS worth, -x.hi AS worth_lo, -x.lo AS worth_hi, x.n, x.confident, "
        "r.id AS run_id FROM lab_rows x JOIN lab_runs r ON r.id = x.run_id "
        "WHERE starts_with(r.id, 'worth-') AND x.family = 'power_worth' "
        "QUALIFY row_number() OVER (PARTITION BY x.row ORDER BY r.created_at DESC, r.id) = 1 "
        "ORDER BY worth DESC NULLS LAST"
    )


def _post(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    from .powers import power_sql

    level = pl.col("level").cast(pl.String)
    out = df.with_columns(
        label=pl.col("power") + " (lab: " + pl.col("ruleset") + ", bots level " + level + ")"
    )
    effect = ("pick_effect", "pick_effect_lo", "pick_effect_hi")
    try:
        counts = frame_of(ctx.run(power_sql(ctx)).table)
    except QueryError:  # (no agg_power yet: the worth alone)
        counts = pl.DataFrame()
    if not counts.height:
        return out.with_columns(pl.lit(None, pl.Float64).alias(c) for c in effect)
    seen = analysis_views().power_rates(counts.with_columns(pl.col("power").cast(pl.String)))
    seen = seen.select(pl.col("board").cast(pl.Int64), "power", *effect)
    return out.with_columns(pl.col("board").cast(pl.Int64)).join(
        seen, on=["board", "power"], how="left"
    )


def _draw(rows: list[dict], ctx: Ctx) -> dict | None:
    return charts.paired_intervals(
        rows,
        "label",
        ("worth", "pick_effect"),
        names=("lab worth (restricted play)", "observed pick effect"),
        x_title="points of score (win 1, draw ½), 95% intervals",
    )


worth = Chart(
    "power-lab-worth",
    "What a power is worth to a bot (lab, restricted play), beside the observed pick effect",
    "lab_runs",
    _sql,
    post=_post,
    draw=_draw,
    table_rows=20,
    empty="No worth measured yet: `balance lab worth --all` plays it (docs/lab.md).",
    note="Lab worth: the score a bot of the level named loses when barred from the power it "
    "would pick (it takes its next preferred one; same seeds otherwise), under the ruleset "
    "named, each power's newest run. Observed pick effect: picked minus not picked in the "
    "page's cut, players' own choices and all. Bots stand in for players here.",
)
