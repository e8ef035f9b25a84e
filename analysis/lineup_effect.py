"""A lineup's own effect beyond its cells: the lineup model's random effect per lineup.

The lineup model (analysis.lineup_model) projects every lineup from its ranks' places; a lineup
whose strength is its own (one setup that happens to work) is invisible to that projection. So
each lineup l with games gets its own log-odds effect u_l on top of the projection eta_l:

    logit E[score | lineup l] = eta_l + u_l

read from its own sides: the one-step (score-test) estimate d_l = (y_l - p_l) / (p_l (1 - p_l))
with variance v_l = 1 / (n_l p_l (1 - p_l)) + se(eta_l)^2 (y_l its score rate, p_l = expit
eta_l); analysis.lineup_model pools each variant's d_l, v_l over the board by inverse variance
(one lineup, one effect a board). The effects have a two-group prior: most lineups are like the
rest, u ~ N(0, sigma^2), and a share PI (one in fifty) may be set apart, u ~ N(0, OUTLIER_SD^2).
sigma^2 is estimated by marginal likelihood (EM over the board's lineups, numpy, no loop over
rows): a board of even lineups gets sigma ~ 0. PI is fixed, not estimated: with one lineup at
0.60 among 120 its maximum-likelihood share collapses to 0 (the normal group absorbs it), and a
Gaussian prior alone flattens that lineup to its cells (one lineup among 120 barely moves
sigma^2); a fixed share lets its own games set it apart once they can (a few hundred sides of
5×5).

Each lineup's posterior is a mixture of two normals; `posterior` returns its mean and its 2.5%
and 97.5% quantiles (by bisection on the mixture's distribution function), so a lineup whose
games set it apart has an interval that reaches its own rate, and one with few games stays at
its cells with an interval that says how little it knows.
"""

from __future__ import annotations

import numpy as np

# scipy.special, not scipy.stats (norm.ppf is ndtri): importing scipy.stats costs every
# process that imports the jobs more than the rest of scipy they use
from scipy.special import ndtr, ndtri

OUTLIER_SD = 1.0  # log-odds: a lineup set apart may score up to about 0.25 beyond its cells
PI = 0.02  # the prior share of lineups set apart from the rest
EM_STEPS = 200
Z = 1.959963984540054


def one_step(n: np.ndarray, score: np.ndarray, eta: np.ndarray, eta_se: np.ndarray):
    """(d, v, seen): each lineup's own log-odds effect estimate, its variance, and which
    lineups have games (the others get d = 0, v = inf)."""
    p = 1 / (1 + np.exp(-eta))
    seen = n > 0
    info = n * p * (1 - p)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(seen, score / np.where(seen, n, 1), p)
        d = np.where(seen, (y - p) / (p * (1 - p)), 0.0)
        v = np.where(seen, 1 / np.where(seen, info, 1) + eta_se**2, np.inf)
    return d, v, seen


def fit_prior(d: np.ndarray, v: np.ndarray) -> tuple[float, float]:
    """(sigma^2, pi) of the two-group prior: sigma^2 by marginal likelihood (EM) over the rows
    with finite v, pi = PI."""
    d, v = d[np.isfinite(v)], v[np.isfinite(v)]
    pi = PI
    if d.size < 2:
        return 0.0, pi
    s2 = max(float(np.mean(d**2 - v)), 0.0)
    big = OUTLIER_SD**2
    for _ in range(EM_STEPS):
        t0, t1 = s2 + v, big + v
        l0 = (1 - pi) * np.exp(-0.5 * d**2 / t0) / np.sqrt(t0)
        l1 = pi * np.exp(-0.5 * d**2 / t1) / np.sqrt(t1)
        w = l1 / np.maximum(l0 + l1, 1e-300)
        # sigma^2: one Fisher-scoring step of the weighted normal likelihood (no closed form
        # with unequal v), from the lineups read as like the rest
        r = 1 - w
        grad = np.sum(r * (d**2 - t0) / t0**2)
        info = np.sum(r / t0**2)
        new_s2 = max(s2 + grad / max(info, 1e-12), 0.0)
        done = abs(new_s2 - s2) < 1e-10
        s2 = new_s2
        if done:
            break
    return s2, pi


def posterior(d: np.ndarray, v: np.ndarray, s2: float, pi: float):
    """(mean, lo, hi, w): each lineup's posterior mean of u, its 95% interval (the mixture's
    quantiles) and the posterior probability that it is set apart. A lineup without games has
    its prior: mean 0, the normal group's interval (its cells alone)."""
    big = OUTLIER_SD**2
    finite = np.isfinite(v)
    vv = np.where(finite, v, 1.0)
    t0, t1 = s2 + vv, big + vv
    l0 = (1 - pi) * np.exp(-0.5 * d**2 / t0) / np.sqrt(t0)
    l1 = pi * np.exp(-0.5 * d**2 / t1) / np.sqrt(t1)
    w = np.where(finite, l1 / np.maximum(l0 + l1, 1e-300), pi)
    # each group's normal posterior (a prior of variance 0 keeps u at 0)
    m0 = np.where(finite, d * s2 / t0, 0.0)
    sd0 = np.where(finite, np.sqrt(s2 * vv / t0), np.sqrt(s2))
    m1 = np.where(finite, d * big / t1, 0.0)
    sd1 = np.where(finite, np.sqrt(big * vv / t1), np.sqrt(big))
    mean = (1 - w) * m0 + w * m1
    # no games: its own effect is unknown beyond the normal group's spread (not the outliers')
    w_q = np.where(finite, w, 0.0)
    lo = _quantile(0.025, w_q, m0, sd0, m1, sd1)
    hi = _quantile(0.975, w_q, m0, sd0, m1, sd1)
    return np.where(finite, mean, 0.0), lo, hi, w


def _cdf(x, w, m0, sd0, m1, sd1):
    a = np.where(sd0 > 0, ndtr((x - m0) / np.where(sd0 > 0, sd0, 1)), (x >= m0).astype(float))
    b = ndtr((x - m1) / sd1)
    return (1 - w) * a + w * b


def _quantile(q: float, w, m0, sd0, m1, sd1) -> np.ndarray:
    """The q-quantile of (1 - w) N(m0, sd0^2) + w N(m1, sd1^2), elementwise, by bisection."""
    zq = float(ndtri(q))
    ends = np.stack([m0 + zq * sd0, m1 + zq * sd1])
    lo, hi = ends.min(axis=0) - 1e-9, ends.max(axis=0) + 1e-9
    for _ in range(60):
        mid = (lo + hi) / 2
        below = _cdf(mid, w, m0, sd0, m1, sd1) < q
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        if not np.any(hi - lo > 1e-12):  # every bracket as narrow as a float's last digits
            break
    return (lo + hi) / 2
