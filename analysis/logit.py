"""Logistic regression by iteratively reweighted least squares (numpy only).

The response may be fractional (a draw is 1/2): that is the quasi-binomial "fractional logit",
whose estimating equations are the same as the binomial ones. Standard errors are the sandwich
(robust, HC0) ones, which stay valid when the variance is not exactly binomial.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit


@dataclass
class LogitFit:
    coef: np.ndarray
    cov: np.ndarray  # sandwich covariance
    cov_model: np.ndarray  # inverse Fisher information
    iterations: int
    converged: bool
    n: int
    step: np.ndarray  # the last IRLS step: a coefficient still moving did not converge

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))


def fit(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None, *, max_iter: int = 50,
    tol: float = 1e-10, ridge: float | np.ndarray = 0.0,
) -> LogitFit:  # fmt: skip
    """Fit P(y=1) = expit(x @ coef). `weights` are frequency weights (a row counted w times).

    `ridge` adds ridge * I to the information matrix to keep a degenerate design solvable; the
    jobs use 0 and drop columns that carry no information instead. A vector gives each
    coefficient its own (0 = unpenalised): a Gaussian prior of variance 1 / ridge, centred on 0,
    whose posterior mode the fit is and whose posterior covariance `cov_model` approximates.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    k = x.shape[1]
    penalty = np.diag(np.broadcast_to(np.asarray(ridge, dtype=np.float64), (k,)))
    beta = np.zeros(k)
    converged = False
    iterations = 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 (reported after the loop)
        eta = x @ beta
        mu = expit(eta)
        var = np.clip(mu * (1 - mu), 1e-12, None)
        info = _gram(x, w * var) + penalty
        score = x.T @ (w * (y - mu)) - penalty @ beta
        step = _solve(info, score)
        beta = beta + step
        if np.max(np.abs(step)) < tol * (1 + np.max(np.abs(beta))):
            converged = True
            break
    mu = expit(x @ beta)
    var = np.clip(mu * (1 - mu), 1e-12, None)
    info = _gram(x, w * var) + penalty
    bread = _inverse(info)
    resid = (y - mu) * w
    # HC0 meat: sum_i w_i (y_i - mu_i)^2 x_i x_i' (frequency weights: w_i copies of row i)
    meat = _gram(x, resid * resid / w)
    cov = bread @ meat @ bread
    return LogitFit(beta, cov, bread, iterations, converged, int(w.sum()), step)


# OpenBLAS spreads one large product over every core; on a machine busy with other work its
# threads wait on each other and a 5,040 x 37 product took 20-400 ms instead of 2. Products of
# at most this many rows stay on one thread: the sum of the blocks' products is the same matrix.
GRAM_BLOCK = 512


def _gram(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """x' diag(v) x, summed over blocks of rows."""
    out = np.zeros((x.shape[1], x.shape[1]))
    for i in range(0, len(x), GRAM_BLOCK):
        xb = x[i : i + GRAM_BLOCK]
        out += (xb * v[i : i + GRAM_BLOCK, None]).T @ xb
    return out


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # a separated design drives the weights of some rows to ~0 and the information matrix to
    # singular: take the least-squares step there instead of failing (the caller checks
    # convergence and standard errors; analysis.adjusted reports such terms as not estimable)
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(a, b, rcond=None)[0]


def _inverse(a: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        return np.linalg.pinv(a)


def independent_columns(x: np.ndarray, tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Which columns of x to fit, and how the others depend on them.

    Columns are taken in order; one is kept when it is not (numerically) a linear combination
    of those kept before it: its squared distance to their span is more than `tol` of its own
    squared norm. Returns (keep, alias): the kept column indices, and for every column the
    coefficients expressing it in the kept ones (alias[:, j] for column j, the identity on the
    kept columns), so that x == x[:, keep] @ alias up to rounding.

    A column left out is *aliased*: in these games its effect cannot be told apart from the
    others' (e.g. 7x7 centre ranks when only a few 7x7 games were played). Like R's glm, the
    fit drops it; a reported contrast c is estimable when c == c[keep] @ alias (analysis.adjusted).
    """
    x = np.asarray(x, dtype=np.float64)
    g = x.T @ x
    k = x.shape[1]
    keep: list[int] = []
    for j in range(k):
        if g[j, j] <= 0:
            continue  # a column of zeros
        resid = g[j, j]
        if keep:
            kk = np.ix_(keep, keep)
            resid = g[j, j] - g[keep, j] @ np.linalg.solve(g[kk], g[keep, j])
        if resid > tol * g[j, j]:
            keep.append(j)
    kept = np.array(keep, dtype=np.int64)
    alias = np.zeros((len(kept), k))
    if len(kept):
        alias = np.linalg.solve(g[np.ix_(kept, kept)], g[kept, :])
        alias[np.abs(alias) < 1e-12] = 0.0
    return kept, alias


def loglik(beta: np.ndarray, x: np.ndarray, y: np.ndarray, weights=None) -> float:
    """The (quasi-)binomial log-likelihood the fit maximises."""
    eta = np.asarray(x) @ beta
    w = 1.0 if weights is None else np.asarray(weights)
    return float(np.sum(w * (y * eta - np.logaddexp(0.0, eta))))
