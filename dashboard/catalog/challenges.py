"""The Challenges page: solve rate per challenge."""

from __future__ import annotations

from ..render import Chart
from .base import OUT, Page, analysis_views, draw_rate, label_expr, proportion, sums

CHALLENGE = {"mode": "challenge"}


def _challenges(df, ctx):
    out = analysis_views().rates(df, ["board", "challenge_id"], family=["board"], p0=None)
    out = proportion(out.rename({"wins": "solves"}), "solves", "n")
    return out.with_columns(label_expr(out, ["board", "challenge_id"]).alias("label")).sort(
        "lo", descending=True
    )


challenges = Chart(
    "challenges",
    "Solve rate per challenge (a solve = the side to move in the set position won)",
    "agg_challenge",
    lambda ctx: sums(ctx, "agg_challenge", ["board", "challenge_id"], OUT, override=CHALLENGE),
    post=_challenges,
    draw=draw_rate(reference=None, x_title="solve rate, Wilson 95% interval"),
    table_rows=50,
    note="Challenge games only. Sorted by the lower bound: the most reliably solved first.",
)

PAGE = Page("Challenges", [challenges], coverage_override=CHALLENGE)
