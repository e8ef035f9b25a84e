"""The Powers page: pick and use rates and effects, round of use, pairs, power against power."""

from __future__ import annotations

import polars as pl

from .. import charts
from ..render import Chart, Ctx, frame_of
from .base import OUT, Page, analysis_views, board_label, draw_rate, label_expr, scored, sums

POWER_SUMS = (
    "sum(sides_n) AS sides_n, "
    + ", ".join(
        f"sum({p}_{k}) AS {p}_{k}"
        for p in ("picked", "not", "used", "held")
        for k in ("n", "wins", "draws", "losses")
    )
    + ", sum(used_round_sum) AS used_round_sum"
)


def _power(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    out = analysis_views().power_rates(df.with_columns(pl.col("power").cast(pl.String)))
    return out.with_columns(label_expr(out, ["board", "power"]).alias("label"))


def power_sql(ctx: Ctx) -> str:
    return sums(ctx, "agg_power", ["board", "power"], POWER_SUMS)


def _drawn_as_rate(metric: str, n: str, flagged: pl.Expr | bool):
    """The post step of a chart of one of power_rates' metrics (with its _lo, _hi): drawn as
    the rate over `n` sides, best lower bound first. flagged: True keeps power_rates' flags,
    False drops them, an expression sets them."""

    def post(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
        out = _power(df, ctx).rename({metric: "rate", f"{metric}_lo": "lo", f"{metric}_hi": "hi"})
        out = out.with_columns(n=pl.col(n))
        if flagged is False:
            out = out.drop("flagged")
        elif isinstance(flagged, pl.Expr):
            out = out.with_columns(flagged=flagged)
        return out.sort("lo", descending=True)

    return post


pick_rate = Chart(
    "power-pick-rate",
    "Pick rate: share of sides (in games with powers) that picked each power",
    "agg_power",
    power_sql,
    post=_drawn_as_rate("pick_rate", "sides_n", flagged=False),
    draw=draw_rate(reference=0.3, x_title="pick rate, 95% interval (3 of 10 = 0.3)"),
)

pick_effect = Chart(
    "power-pick-effect",
    "Score when picked minus score when not picked",
    "agg_power",
    power_sql,
    post=_drawn_as_rate("pick_effect", "picked_n", flagged=True),
    draw=draw_rate(
        reference=0.0,
        domain=None,
        x_title="score picked − not picked, Newcombe 95% interval",
    ),
    note="Flagged: the difference survives Benjamini-Hochberg at 5% within each board. Raw "
    "difference: a power picked mostly by the side moving first looks stronger (see the "
    "adjusted view in docs/agg-tables.md).",
)

use_rate = Chart(
    "power-use",
    "Used rate (of the sides that picked it) and mean round of use",
    "agg_power",
    power_sql,
    post=_drawn_as_rate("used_rate", "picked_n", flagged=False),
    draw=draw_rate(reference=None, x_title="used before the end, 95% interval"),
)

use_effect = Chart(
    "power-use-effect",
    "Score when used minus score when held to the end",
    "agg_power",
    power_sql,
    post=_drawn_as_rate("use_effect", "used_n", flagged=pl.col("use_effect_q") < 0.05),
    draw=draw_rate(reference=0.0, domain=None, x_title="score used − held, Newcombe 95% interval"),
)

used_round = Chart(
    "power-used-round",
    "When powers are used: uses per round",
    "agg_power_used_turn",
    lambda ctx: sums(ctx, "agg_power_used_turn", ["board", "power", "round"], "sum(uses) AS uses"),
    post=lambda df, ctx: df.with_columns(
        pl.col("power").cast(pl.String),
        share=pl.col("uses") / pl.col("uses").sum().over("board", "power"),
        n=pl.col("uses").sum().over("board", "power"),
        board_label=board_label(df),
    ),
    draw=lambda rows, ctx: charts.heatmap(
        rows,
        "round",
        "power",
        value="share",
        facet="board_label",
        domain=None,
        scheme="blues",
        text=None,
        cell=24,
    ),
    note="share = uses of that power in that round / all its uses (round = a turn of each side).",
)


def _pairs(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    powers = ctx.params.get("_power_frame")
    out = analysis_views().pair_rates(
        df.with_columns(pl.col("power_a", "power_b").cast(pl.String)), powers
    )
    return out.with_columns(board_label=board_label(out)).sort("synergy_lo", descending=True)


def pair_sql(ctx: Ctx) -> str:
    # the singles the synergy is measured against come from agg_power under the same filters
    result = ctx.run(power_sql(ctx))
    ctx.params["_power_frame"] = frame_of(result.table).with_columns(
        pl.col("power").cast(pl.String)
    )
    return sums(ctx, "agg_power_pair", ["board", "power_a", "power_b"], OUT)


pair_synergy = Chart(
    "power-pairs",
    "Pair synergy: observed score of two powers picked together minus expected from the singles",
    "agg_power_pair",
    pair_sql,
    post=_pairs,
    draw=lambda rows, ctx: charts.heatmap(
        rows,
        "power_b",
        "power_a",
        value="synergy",
        facet="board_label",
        domain=(-0.1, 0.1),
        scheme="redblue",
        cell=30,
    ),
    note="Expected = expit(logit sA + logit sB − logit s̄). Red ring: flagged by BH at 5%.",
)


def _vs(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    out = scored(
        df.with_columns(pl.col("power", "opp_power").cast(pl.String)),
        ["board", "power", "opp_power"],
        ["board"],
    )
    return out.with_columns(board_label=board_label(out))


power_vs = Chart(
    "power-vs",
    "Power against power: score of a side that picked the row's power against one that picked "
    "the column's",
    "agg_power_vs",
    lambda ctx: sums(ctx, "agg_power_vs", ["board", "power", "opp_power"], OUT),
    post=_vs,
    draw=lambda rows, ctx: charts.heatmap(
        rows, "opp_power", "power", facet="board_label", domain=(0.4, 0.6), cell=30
    ),
)

PAGE = Page(
    "Powers",
    [pick_rate, pick_effect, use_rate, use_effect, used_round, pair_synergy, power_vs],
    "Games with powers only.",
)
