"""Rates and their uncertainty, vectorised over numpy arrays (one value per table row).

A *score* counts a win as 1 and a draw as 1/2, so k = wins + draws / 2 may be fractional. The
intervals and tests below treat k out of n as binomial: with draws the true variance is smaller,
so they are slightly conservative (wider) for score rates, and exact for win rates.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

Z95 = float(ndtri(0.975))  # 1.959963984540054


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def rate(k, n) -> np.ndarray:
    """k / n, NaN where n == 0."""
    k, n = _arr(k), _arr(n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, k / np.where(n > 0, n, 1), np.nan)


def wilson(k, n, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for k successes out of n (NaN where n == 0)."""
    k, n = _arr(k), _arr(n)
    safe = np.where(n > 0, n, 1.0)
    p = k / safe
    z2 = z * z
    centre = (p + z2 / (2 * safe)) / (1 + z2 / safe)
    spread = np.maximum(p * (1 - p) / safe + z2 / (4 * safe * safe), 0.0)
    half = z * np.sqrt(spread) / (1 + z2 / safe)
    lo = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    hi = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return lo, hi


def score_test(k, n, p0=0.5) -> np.ndarray:
    """Two-sided p-value of the score test of rate == p0: the test the Wilson interval inverts.

    p < 0.05 exactly when p0 lies outside the 95% Wilson interval.
    """
    k, n, p0 = _arr(k), _arr(n), _arr(p0)
    safe = np.where(n > 0, n, 1.0)
    se = np.sqrt(np.clip(p0 * (1 - p0), 1e-300, None) / safe)
    z = (k / safe - p0) / se
    return np.where(n > 0, 2 * ndtr(-np.abs(z)), np.nan)


def bh(p, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini–Hochberg over one family: (adjusted q-values, rejected at `alpha`).

    NaN p-values (rows without data) are left out of the family and are never rejected.
    """
    p = _arr(p)
    q = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m:
        pv = p[ok]
        order = np.argsort(pv, kind="stable")
        ranked = pv[order] * m / np.arange(1, m + 1)
        adj = np.minimum.accumulate(ranked[::-1])[::-1]
        out = np.empty(m)
        out[order] = np.minimum(adj, 1.0)
        q[ok] = out
    return q, ok & (q <= alpha)


def bh_grouped(p, groups, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini–Hochberg run separately within each family (`groups`: one label per row)."""
    p = _arr(p)
    groups = np.asarray(groups)
    q = np.full(p.shape, np.nan)
    flagged = np.zeros(p.shape, dtype=bool)
    if p.size == 0:
        return q, flagged
    _, inverse = np.unique(groups, return_inverse=True)
    for g in range(int(inverse.max()) + 1):
        idx = np.flatnonzero(inverse == g)
        q[idx], flagged[idx] = bh(p[idx], alpha)
    return q, flagged


# Prior strength used when the rows show no spread beyond binomial noise: every row is
# shrunk (almost) all the way to the family mean.
MAX_PRIOR_STRENGTH = 1e9


def beta_prior_mom(k, n) -> tuple[float, float]:
    """Method-of-moments fit of a Beta(alpha, beta) prior across the rows of one family.

    The spread of the observed rates k_i/n_i is binomial noise, mean(mu(1-mu)/n_i), plus the
    spread of the true rates tau^2; a Beta with mean mu has variance mu(1-mu)/(alpha+beta+1).
    Rows with n == 0 are ignored. Returns (nan, nan) without data.
    """
    k, n = _arr(k), _arr(n)
    ok = n > 0
    if not ok.any():
        return float("nan"), float("nan")
    k, n = k[ok], n[ok]
    mu = float(k.sum() / n.sum())
    if mu <= 0.0 or mu >= 1.0 or len(n) < 2:
        m = MAX_PRIOR_STRENGTH
    else:
        p = k / n
        s2 = float(np.var(p, ddof=1))
        tau2 = s2 - mu * (1 - mu) * float(np.mean(1.0 / n))
        if tau2 <= 0:
            m = MAX_PRIOR_STRENGTH
        else:
            m = min(max(mu * (1 - mu) / tau2 - 1.0, 1e-3), MAX_PRIOR_STRENGTH)
    return mu * m, (1 - mu) * m


def shrink(k, n, alpha: float, beta: float) -> np.ndarray:
    """Posterior mean (k + alpha) / (n + alpha + beta) under the Beta(alpha, beta) prior."""
    k, n = _arr(k), _arr(n)
    if np.isnan(alpha):
        return np.full(k.shape, np.nan)
    return (k + alpha) / (n + alpha + beta)


def shrink_grouped(k, n, groups) -> np.ndarray:
    """Empirical-Bayes shrunk rates, the prior fitted separately within each family."""
    k, n = _arr(k), _arr(n)
    groups = np.asarray(groups)
    out = np.full(k.shape, np.nan)
    if k.size == 0:
        return out
    _, inverse = np.unique(groups, return_inverse=True)
    for g in range(int(inverse.max()) + 1):
        idx = np.flatnonzero(inverse == g)
        a, b = beta_prior_mom(k[idx], n[idx])
        out[idx] = shrink(k[idx], n[idx], a, b)
    return out


def diff_newcombe(k1, n1, k2, n2, z: float = Z95):
    """Difference of two independent proportions p1 - p2 with Newcombe's hybrid score interval
    (his method 10, built from the two Wilson intervals). Returns (diff, lo, hi)."""
    p1, p2 = rate(k1, n1), rate(k2, n2)
    l1, u1 = wilson(k1, n1, z)
    l2, u2 = wilson(k2, n2, z)
    d = p1 - p2
    lo = d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    hi = d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return d, lo, hi


def diff_test(k1, n1, k2, n2) -> np.ndarray:
    """Two-sided p-value of the pooled two-proportion z-test of p1 == p2."""
    k1, n1, k2, n2 = map(_arr, (k1, n1, k2, n2))
    ok = (n1 > 0) & (n2 > 0)
    s1, s2 = np.where(ok, n1, 1.0), np.where(ok, n2, 1.0)
    pooled = (k1 + k2) / (s1 + s2)
    se = np.sqrt(np.clip(pooled * (1 - pooled), 1e-300, None) * (1 / s1 + 1 / s2))
    z = (k1 / s1 - k2 / s2) / se
    return np.where(ok, 2 * ndtr(-np.abs(z)), np.nan)


def normal_p(estimate, se) -> np.ndarray:
    """Two-sided p-value of estimate / se against a standard normal."""
    estimate, se = _arr(estimate), _arr(se)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 2 * ndtr(-np.abs(estimate / se))
