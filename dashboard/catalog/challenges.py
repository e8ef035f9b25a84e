"""The Challenges page: solve rate per challenge (a solve is a win: a draw is no solve)."""

from __future__ import annotations

import numpy as np
import polars as pl

from ..render import Chart
from .base import OUT, Page, draw_rate, label_expr, sums

CHALLENGE = {"mode": "challenge"}


def shrunk_solves(k: np.ndarray, n: np.ndarray, families: np.ndarray) -> np.ndarray:
    """Solve rates shrunk towards their board's pooled rate (empirical Bayes, the prior fitted
    per board as `analysis.stats.shrink_grouped` does), except that the prior's mean is never
    exactly 0 or 1: a board where no challenge has been solved yet would otherwise shrink every
    set to 0.000 whatever its n (the prior Beta(0, m) is certain). The mean is taken as
    (solves + ½) / (attempts + 1), the prior strength as fitted."""
    from analysis import stats as st

    out = np.full(k.shape, np.nan)
    for g in np.unique(families):
        idx = np.flatnonzero(families == g)
        a, b = st.beta_prior_mom(k[idx], n[idx])
        if np.isnan(a):
            continue
        m = a + b
        mu = (k[idx].sum() + 0.5) / (n[idx].sum() + 1.0)
        out[idx] = (k[idx] + mu * m) / (n[idx] + m)
    return out


def _challenges(df: pl.DataFrame, ctx) -> pl.DataFrame:
    from analysis.opponents import challenge_rates

    out = challenge_rates(df)  # attempts, solves, draws, losses, solve_rate (+ _lo, _hi), shrunk
    shrunk = shrunk_solves(
        out["solves"].to_numpy().astype(float),
        out["attempts"].to_numpy().astype(float),
        out["board"].to_numpy(),
    )
    out = out.drop("solve_shrunk").with_columns(pl.Series("shrunk", shrunk))
    out = out.rename(
        {"attempts": "n", "solve_rate": "rate", "solve_rate_lo": "lo", "solve_rate_hi": "hi"}
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
