"""The Powers page: pick and use rates and effects, round of use, pairs, power against power."""

from __future__ import annotations

import polars as pl

from replays.vocabulary import POWERS

from .. import charts
from ..render import Chart, Ctx, frame_of
from . import power_worth
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
    # the axis spans the rates (near 0.3), not 0-1: differences between powers are visible
    draw=draw_rate(reference=0.3, domain=None, x_title="pick rate, 95% interval (3 of 10 = 0.3)"),
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

# the adjusted model's power terms beside the raw difference over the same games (both tables
# are on the default cut; the raw one is summed over the boards, as the model pools them)
ADJUSTED_SQL = f"""WITH raw AS (
    SELECT power, {POWER_SUMS}
    FROM agg_power_rates GROUP BY power)
SELECT replace(a.term, 'power:', '') AS power, a.estimate, a.se, a.lo AS estimate_lo,
       a.hi AS estimate_hi, a.p_value, a.q_value, a.flagged, a.n_games, a.note,
       raw.* EXCLUDE (power)
FROM agg_adjusted a LEFT JOIN raw ON a.term = 'power:' || raw.power
WHERE a.family = 'power'
ORDER BY a.estimate DESC NULLS LAST"""
ADJUSTED = "adjusted: against the average power"
RAW = "raw: picked − not picked"


def _adjusted(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    """Two rows a power: the model's contrast on the score scale (the change in the score of an
    even game, expit(log-odds) − 1/2, interval mapped the same way: the map is monotone) and
    the raw difference of the same games, in the model's order."""
    from scipy.special import expit

    order = df["power"].to_list()
    raw = analysis_views().power_rates(df, by=("power",), family=())
    adj = df.select(
        "power", "n_games", "estimate", "se", "p_value", "q_value", "flagged", "note",
        kind=pl.lit(ADJUSTED),
        rate=pl.Series(expit(df["estimate"].cast(pl.Float64).to_numpy()) - 0.5),
        lo=pl.Series(expit(df["estimate_lo"].cast(pl.Float64).to_numpy()) - 0.5),
        hi=pl.Series(expit(df["estimate_hi"].cast(pl.Float64).to_numpy()) - 0.5),
        n=pl.col("n_games"),
    ).with_columns(pl.col("rate", "lo", "hi").fill_nan(None))  # fmt: skip
    raw = raw.select(
        "power",
        kind=pl.lit(RAW),
        rate=pl.col("pick_effect"),
        lo=pl.col("pick_effect_lo"),
        hi=pl.col("pick_effect_hi"),
        n=pl.col("picked_n"),
        p_value=pl.col("pick_effect_p"),
        q_value=pl.col("pick_effect_q"),
        flagged=pl.col("flagged"),
    )
    out = pl.concat([adj, raw], how="diagonal_relaxed")
    rank = {p: i for i, p in enumerate(order)}
    return out.with_columns(label=pl.col("power")).sort(
        pl.col("kind") != ADJUSTED, pl.col("power").replace_strict(rank, default=len(rank))
    )


adjusted_effect = Chart(
    "power-adjusted",
    "Adjusted effect of each power (against the average power) next to the raw difference",
    "agg_adjusted",
    lambda ctx: ADJUSTED_SQL,
    post=_adjusted,
    draw=draw_rate(
        "label",
        facet="kind",
        reference=0.0,
        domain=None,
        width=300,
        x_title="score change, 95% interval",
    ),
    table_rows=20,
    note="Adjusted: the logistic model of agg_adjusted, holding first move, board, centre rank "
    "and the opponent's picks fixed, on the default cut (one client version; the page's filters "
    "do not apply). Every side picks three, so only differences between powers exist: each "
    "effect is against the average power and the ten sum to zero (intervals from the model's "
    "covariance). One strong power therefore puts the other nine a ninth of its effect below "
    "the average: a small negative bar beside one strong power is its shadow, not a weakness. "
    "Shown as the score of an even game, expit(log-odds) − ½. "
    "Why the two differ: the raw difference also carries who picks the power (a power the "
    "side moving first favours looks stronger) and the other picks (a side with it lacks "
    "whatever else it would have picked); the model holds those fixed. Flagged: BH at 5% "
    "across the ten.",
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
    out = out.with_columns(board_label=board_label(out)).sort("synergy_lo", descending=True)
    # the matrix both ways (a pair is stored once, a before b): every cell of a row and of a
    # column filled, the axes in the same order
    swapped = out.rename({"power_a": "power_b", "power_b": "power_a"}).select(out.columns)
    return pl.concat([out, swapped.filter(pl.col("power_a") != pl.col("power_b"))])


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
        order=list(POWERS),
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
    [
        pick_rate,
        pick_effect,
        power_worth.worth,
        adjusted_effect,
        use_rate,
        use_effect,
        used_round,
        pair_synergy,
        power_vs,
    ],
    "Games with powers only.",
)
