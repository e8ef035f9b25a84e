"""Rates and their uncertainty, vectorised over numpy arrays (one value per table row).

A *score* counts a win as 1 and a draw as 1/2, so k = wins + draws / 2 may be fractional. The
intervals and tests below treat k out of n as binomial: with draws the true variance is smaller,
so they are slightly conservative (wider) for score rates, and exact for win rates.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize
from scipy.special import gammaln, ndtr, ndtri

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
# The weakest prior the fit considers: worth a hundredth of a game.
MIN_PRIOR_STRENGTH = 1e-2
# Strengths tried before the maximum is refined: log-spaced, a factor of 2.8 apart.
_GRID = np.geomspace(MIN_PRIOR_STRENGTH, MAX_PRIOR_STRENGTH, 25)


def _lgamma_step(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    """ln Γ(x + d) − ln Γ(x) for x > 0, d ≥ 0. Past x = 1e4 by Stirling's series written with
    log1p: the plain difference of two gammaln values near 2e10 (a prior strength of 1e9) keeps
    no digit of a game's contribution, and the fit compares exactly those."""
    x, d = np.broadcast_arrays(_arr(x), _arr(d))
    big = x > 1e4
    xb = np.where(big, x, 1e4)
    stirling = (
        (xb - 0.5) * np.log1p(d / xb) + d * np.log(xb + d) - d + 1 / (12 * (xb + d)) - 1 / (12 * xb)
    )
    xs = np.where(big, 1.0, x)
    return np.where(big, stirling, gammaln(xs + d) - gammaln(xs))


def beta_binomial_loglik(k, n, mu: float, strength, weight=None) -> np.ndarray:
    """Marginal log-likelihood of the rows (k_i of n_i) under a Beta prior with mean `mu` and
    strength alpha + beta (one value per strength given), without the binomial coefficients
    (they do not depend on the prior). k may be fractional (a draw scores 1/2); `weight`: how
    many rows each (k, n) stands for (default 1)."""
    k, n = _arr(k)[None, :], _arr(n)[None, :]
    m = np.atleast_1d(_arr(strength))[:, None]
    ll = _lgamma_step(mu * m, k) + _lgamma_step((1 - mu) * m, n - k) - _lgamma_step(m, n)
    return ll @ (np.ones(k.shape[1]) if weight is None else _arr(weight))


def _ml_strength(k: np.ndarray, n: np.ndarray, mu: float) -> float:
    # rows with the same k of n count alike: many of a large family share them
    (k, n), w = np.unique(np.vstack([k, n]), axis=1, return_counts=True)
    ll = beta_binomial_loglik(k, n, mu, _GRID, w)
    # the strongest prior among the best: rows of one game each say nothing about the spread
    # (their likelihood is flat in the strength), and then every row goes to the pool
    top = float(ll.max())
    i = int(np.flatnonzero(ll >= top - 1e-9 * max(1.0, abs(top)))[-1])
    if i == len(_GRID) - 1:
        return MAX_PRIOR_STRENGTH  # the likelihood still rises: no spread beyond noise
    lo, hi = np.log(_GRID[max(i - 1, 0)]), np.log(_GRID[i + 1])
    best = optimize.minimize_scalar(
        lambda t: -beta_binomial_loglik(k, n, mu, np.exp(t), w)[0],
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-4},
    )
    return float(np.exp(best.x)) if -best.fun >= ll[i] else float(_GRID[i])


def beta_prior(k, n) -> tuple[float, float]:
    """Empirical-Bayes Beta(alpha, beta) prior across the rows of one family.

    Its mean is the family's pooled rate sum(k) / sum(n); its strength alpha + beta maximises
    the marginal (beta-binomial) likelihood of the rows. Each row weighs in by what it can
    tell: a lineup that won 9 of 9 games is not much less likely under a tight prior than
    under a loose one, so it barely moves the strength (a moment fit, which weighs every
    observed rate alike, let it cut the strength tenfold). Rows with n == 0 are ignored.

    No spread beyond binomial noise (the likelihood rises all the way): MAX_PRIOR_STRENGTH,
    every row shrunk to the pooled rate; the same for a single row. When no row scored at all
    (or every row scored every game) the rows show no spread either, but a prior mean of
    exactly 0 would be certain and pin every row at 0 whatever its n: the mean is then
    (sum(k) + 1/2) / (sum(n) + 1), Jeffreys' estimate of the pooled rate.
    Returns (nan, nan) without data.
    """
    k, n = _arr(k), _arr(n)
    ok = n > 0
    if not ok.any():
        return float("nan"), float("nan")
    k, n = k[ok], n[ok]
    total_k, total_n = float(k.sum()), float(n.sum())
    if total_k <= 0.0 or total_k >= total_n:
        mu = (total_k + 0.5) / (total_n + 1.0)
        m = MAX_PRIOR_STRENGTH
    else:
        mu = total_k / total_n
        m = MAX_PRIOR_STRENGTH if len(n) < 2 else _ml_strength(k, n, mu)
    return mu * m, (1 - mu) * m


def shrink(k, n, alpha: float, beta: float) -> np.ndarray:
    """Posterior mean (k + alpha) / (n + alpha + beta) under the Beta(alpha, beta) prior."""
    k, n = _arr(k), _arr(n)
    if np.isnan(alpha):
        return np.full(k.shape, np.nan)
    return (k + alpha) / (n + alpha + beta)


# The two-group prior's share of rows that are not like the rest: a row is read as one of them
# only when its own games make that about 10,000 times likelier than the family's prior does
# (a lineup truly at 0.60 from about 700 games on; a lucky 9 of 9 never).
OUTLIER_SHARE = 1e-4
OUTLIER_STRENGTH = 2.0  # the outliers' prior: as strong as two games, centred on the pool


def shrink_robust(k, n, alpha: float, beta: float) -> np.ndarray:
    """Posterior mean under a two-group prior: the family's Beta(alpha, beta) with weight
    1 - OUTLIER_SHARE, and a nearly flat Beta of strength OUTLIER_STRENGTH with the same mean.
    A row the family's prior explains is shrunk as `shrink` does; a row its games set apart
    (a lineup at 0.60 over 40,000 games) keeps about its own rate instead of being flattened
    to the pool (one Beta prior fitted to a family of even rows has a strength of 1e9)."""
    k, n = _arr(k), _arr(n)
    if np.isnan(alpha):
        return np.full(k.shape, np.nan)
    mu = alpha / (alpha + beta)
    a2, b2 = mu * OUTLIER_STRENGTH, (1 - mu) * OUTLIER_STRENGTH

    def loglik(a: float, b: float) -> np.ndarray:
        a_, b_ = np.full(k.shape, a), np.full(k.shape, b)
        return _lgamma_step(a_, k) + _lgamma_step(b_, n - k) - _lgamma_step(a_ + b_, n)

    log_odds = loglik(a2, b2) - loglik(alpha, beta) + np.log(OUTLIER_SHARE / (1 - OUTLIER_SHARE))
    w = 1 / (1 + np.exp(-np.clip(log_odds, -700, 700)))
    return (1 - w) * (k + alpha) / (n + alpha + beta) + w * (k + a2) / (n + a2 + b2)


def shrink_grouped(k, n, groups) -> np.ndarray:
    """Empirical-Bayes shrunk rates, the prior fitted separately within each family, with the
    two-group prior of `shrink_robust` (a real outlier is not flattened to the pool)."""
    k, n = _arr(k), _arr(n)
    groups = np.asarray(groups)
    out = np.full(k.shape, np.nan)
    if k.size == 0:
        return out
    _, inverse = np.unique(groups, return_inverse=True)
    for g in range(int(inverse.max()) + 1):
        idx = np.flatnonzero(inverse == g)
        a, b = beta_prior(k[idx], n[idx])
        out[idx] = shrink_robust(k[idx], n[idx], a, b)
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
