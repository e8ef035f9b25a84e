"""Rates for any cut, from the additive counts of an agg_* table.

The jobs use these same functions to fill the `*_rates` tables (the default cut), and the
dashboard calls them on `Cut.apply(agg table)` for any other cut, so a number means the same
thing wherever it is shown:

    frame = Cut(board=5, mode="online").apply(con.sql("FROM agg_lineup").pl())  # or any cut
    rates(frame, by=["board", "variant", "lineup"], family=["board", "variant"])

A *family* is the set of rows tested together: the empirical-Bayes prior is fitted across the
rows of one family, and Benjamini–Hochberg runs within it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from scipy.special import expit, logit

from . import stats as st

OUTCOME = ("n", "wins", "draws", "losses")


def _labels(df: pl.DataFrame, family: Sequence[str]) -> np.ndarray:
    if not family:
        return np.zeros(df.height, dtype=np.int64)
    return df.select(pl.struct(list(family)).rank("dense")).to_series().to_numpy()


def summed(frame, by: Sequence[str], columns: Sequence[str]) -> pl.DataFrame:
    """Sum additive `columns` within `by` (the GROUP BY / SUM any cut is away from)."""
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    out = lf.group_by(list(by)).agg(pl.col(c).sum() for c in columns).sort(list(by))
    return out.collect()


def add_proportion(df: pl.DataFrame, k: str, n: str, name: str) -> pl.DataFrame:
    """name = k / n with its Wilson 95% interval (name_lo, name_hi)."""
    kk, nn = df[k].to_numpy(), df[n].to_numpy()
    lo, hi = st.wilson(kk, nn)
    return df.with_columns(
        pl.Series(name, st.rate(kk, nn)),
        pl.Series(f"{name}_lo", lo),
        pl.Series(f"{name}_hi", hi),
    )


def add_score_rates(
    df: pl.DataFrame,
    family: Sequence[str] = (),
    p0: float | str | None = 0.5,
    prefix: str = "",
    shrink: bool = True,
) -> pl.DataFrame:
    """Score rate (win 1, draw 1/2), Wilson interval, EB-shrunk rate and BH flag for the
    {prefix}n/wins/draws/losses columns. p0: the rate tested against (a number, 'family' for
    the family's pooled rate, or None for no test)."""
    n = df[f"{prefix}n"].to_numpy().astype(float)
    k = df[f"{prefix}wins"].to_numpy() + df[f"{prefix}draws"].to_numpy() / 2
    labels = _labels(df, family)
    lo, hi = st.wilson(k, n)
    cols = [
        pl.Series(f"{prefix}score", k),
        pl.Series(f"{prefix}score_rate", st.rate(k, n)),
        pl.Series(f"{prefix}wilson_lo", lo),
        pl.Series(f"{prefix}wilson_hi", hi),
    ]
    if shrink:
        cols.append(pl.Series(f"{prefix}shrunk", st.shrink_grouped(k, n, labels)))
    if p0 is not None:
        if p0 == "family":
            tot = pl.DataFrame({"g": labels, "k": k, "n": n}).with_columns(
                p=pl.col("k").sum().over("g") / pl.col("n").sum().over("g")
            )
            null = tot["p"].to_numpy()
            cols.append(pl.Series(f"{prefix}tested_against", null))
        else:
            null = np.full(len(n), float(p0))
        p = st.score_test(k, n, null)
        q, flagged = st.bh_grouped(p, labels)
        cols += [
            pl.Series(f"{prefix}p_value", p),
            pl.Series(f"{prefix}q_value", q),
            pl.Series(f"{prefix}flagged", flagged),
        ]
    return df.with_columns(cols)


def rates(
    frame,
    by: Sequence[str],
    *,
    family: Sequence[str] | None = None,
    p0: float | str | None = 0.5,
    min_n: int = 0,
    extra: Sequence[str] = (),
) -> pl.DataFrame:
    """Sum n/wins/draws/losses (and `extra` additive columns) within `by`, then add score rate,
    Wilson 95% interval, shrunk estimate, p-value vs p0, BH q-value and `flagged`.

    family: the columns naming a family (default: all of `by` but the last). Rows with
    n < min_n are dropped before the prior fit and the multiple-testing correction.
    """
    by = list(by)
    family = by[:-1] if family is None else list(family)
    df = summed(frame, by, [*OUTCOME, *extra]).filter(pl.col("n") >= max(min_n, 1))
    return add_score_rates(df, family, p0)


def first_move_rates(frame, by=("board", "variant")) -> pl.DataFrame:
    """Score rate of the side that moved first, tested against 1/2; one family."""
    df = summed(frame, list(by), OUTCOME).filter(pl.col("n") > 0)
    return add_score_rates(df, (), 0.5, shrink=False)


PICKED = ("picked_n", "picked_wins", "picked_draws", "picked_losses")
NOT = ("not_n", "not_wins", "not_draws", "not_losses")
USED = ("used_n", "used_wins", "used_draws", "used_losses")
HELD = ("held_n", "held_wins", "held_draws", "held_losses")


def power_rates(frame, by=("board", "power"), family=("board",)) -> pl.DataFrame:
    """Per power: pick rate; score picked vs not picked (difference, Newcombe interval, BH
    over the family); used rate and mean round of use; score used vs held to the end."""
    cols = ["sides_n", *PICKED, *NOT, *USED, *HELD, "used_round_sum"]
    df = summed(frame, list(by), cols).filter(pl.col("sides_n") > 0)
    df = add_proportion(df, "picked_n", "sides_n", "pick_rate")
    df = add_score_rates(df, family, None, prefix="picked_")
    df = add_score_rates(df, family, None, prefix="not_", shrink=False)
    df = add_proportion(df, "used_n", "picked_n", "used_rate")
    df = df.with_columns(
        mean_used_round=pl.when(pl.col("used_n") > 0).then(
            pl.col("used_round_sum") / pl.col("used_n")
        )
    )
    df = add_score_rates(df, family, None, prefix="used_", shrink=False)
    df = add_score_rates(df, family, None, prefix="held_", shrink=False)
    labels = _labels(df, family)
    for a, b, name in (("picked_", "not_", "pick_effect"), ("used_", "held_", "use_effect")):
        k1, n1 = df[f"{a}score"].to_numpy(), df[f"{a}n"].to_numpy()
        k2, n2 = df[f"{b}score"].to_numpy(), df[f"{b}n"].to_numpy()
        d, lo, hi = st.diff_newcombe(k1, n1, k2, n2)
        p = st.diff_test(k1, n1, k2, n2)
        q, flagged = st.bh_grouped(p, labels)
        df = df.with_columns(
            pl.Series(name, d),
            pl.Series(f"{name}_lo", lo),
            pl.Series(f"{name}_hi", hi),
            pl.Series(f"{name}_p", p),
            pl.Series(f"{name}_q", q),
        )
        if name == "pick_effect":
            df = df.with_columns(pl.Series("flagged", flagged))
    return df


def pair_rates(pairs, powers, by=("board",)) -> pl.DataFrame:
    """Synergy of two powers picked together: the pair's observed score rate against the one
    expected from the two singles, adding their log-odds effects over the family's pooled rate
    (expected = expit(logit sA + logit sB - logit s)). The test treats the expected rate as
    known (the singles rest on far more games than one pair); BH over the pairs of a family."""
    by = list(by)
    pr = summed(pairs, [*by, "power_a", "power_b"], OUTCOME).filter(pl.col("n") > 0)
    pr = add_score_rates(pr, by, None)
    singles = summed(powers, [*by, "power"], [*PICKED, "sides_n"]).with_columns(
        s=(pl.col("picked_wins") + pl.col("picked_draws") / 2) / pl.col("picked_n")
    )
    pooled = summed(powers, by, ["picked_n", "picked_wins", "picked_draws"]).select(
        *by, base=(pl.col("picked_wins") + pl.col("picked_draws") / 2) / pl.col("picked_n")
    )
    a = singles.select(*by, power_a=pl.col("power"), s_a=pl.col("s"))
    b = singles.select(*by, power_b=pl.col("power"), s_b=pl.col("s"))
    pr = pr.join(a, on=[*by, "power_a"], how="left").join(b, on=[*by, "power_b"], how="left")
    pr = pr.join(pooled, on=by, how="left")

    def lg(c):
        return logit(np.clip(pr[c].to_numpy(), 1e-6, 1 - 1e-6))

    expected = expit(lg("s_a") + lg("s_b") - lg("base"))
    k, n = pr["score"].to_numpy(), pr["n"].to_numpy()
    obs = pr["score_rate"].to_numpy()
    p = st.score_test(k, n, expected)
    q, flagged = st.bh_grouped(p, _labels(pr, by))
    return pr.drop("base").with_columns(
        pl.Series("expected", expected),
        pl.Series("synergy", obs - expected),
        pl.Series("synergy_lo", pr["wilson_lo"].to_numpy() - expected),
        pl.Series("synergy_hi", pr["wilson_hi"].to_numpy() - expected),
        pl.Series("p_value", p),
        pl.Series("q_value", q),
        pl.Series("flagged", flagged),
    )


def piece_rates(frame, by=("board", "variant", "rank")) -> pl.DataFrame:
    """Promotion rate, crowns alive at the end (of those promoted), home wins per piece."""
    cols = ["pieces", "promoted", "crowns_alive", "home_wins", "never_moved", "removed",
            "promoted_turn_sum", "stunned_sum", "moves_sum"]  # fmt: skip
    df = summed(frame, list(by), cols).filter(pl.col("pieces") > 0)
    df = add_proportion(df, "promoted", "pieces", "promotion_rate")
    df = add_proportion(df, "crowns_alive", "promoted", "crown_survival")
    df = add_proportion(df, "home_wins", "pieces", "home_rate")
    df = add_proportion(df, "never_moved", "pieces", "never_moved_rate")
    return df.with_columns(
        mean_promoted_turn=pl.when(pl.col("promoted") > 0).then(
            pl.col("promoted_turn_sum") / pl.col("promoted")
        ),
        stuns_per_crown=pl.when(pl.col("promoted") > 0).then(
            pl.col("stunned_sum") / pl.col("promoted")
        ),
    )
