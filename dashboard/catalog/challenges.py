"""The Challenges page: solve rate per challenge (a solve is a win: a draw is no solve)."""

from __future__ import annotations

import polars as pl

from ..render import Chart
from .base import OUT, Page, draw_rate, label_expr, sums

CHALLENGE = {"mode": "challenge"}


def _challenges(df: pl.DataFrame, ctx) -> pl.DataFrame:
    from analysis.opponents import challenge_rates

    out = challenge_rates(df)  # attempts, solves, draws, losses, solve_rate (+ _lo, _hi), shrunk
    out = out.rename(
        {
            "attempts": "n",
            "solve_rate": "rate",
            "solve_rate_lo": "lo",
            "solve_rate_hi": "hi",
            "solve_shrunk": "shrunk",
        }
    )
    out = out.with_columns(label_expr(out, ["board", "challenge_id"]).alias("label"))
    return out.select("label", *[c for c in out.columns if c != "label"]).sort(
        "lo", "n", descending=True
    )


challenges = Chart(
    "challenges",
    "Solve rate per challenge (a solve = the side to move in the set position won)",
    "agg_challenge",
    lambda ctx: sums(ctx, "agg_challenge", ["board", "challenge_id"], OUT, override=CHALLENGE),
    post=_challenges,
    draw=draw_rate(reference=None, x_title="solve rate (wins / attempts), Wilson 95% interval"),
    table_rows=50,
    note="Challenge games only. A draw is not a solve. n = attempts; shrunk = the solve rate "
    "pulled towards the board's pooled rate (a set tried once cannot top the chart). Sorted by "
    "the lower bound: the most reliably solved first.",
)

PAGE = Page("Challenges", [challenges], coverage_override=CHALLENGE)
