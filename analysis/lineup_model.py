"""Lineup strength from a model (agg_lineup_model, agg_lineup_model_terms), not from 5,040
separate rates.

A lineup is a permutation: the rank on each file of the back row ('31524': rank 3 on file a).
Per board and variant, a regularised logistic regression of each lineup's score rate on where
its ranks stand:

    logit E[score | lineup] = intercept + sum over files f of theta[rank on f, f]

fitted on agg_lineup's per-lineup counts of the default cut (at most 5,040 rows a board, so its
cost does not grow with the games; fractional logit: a draw counts 1/2, each side weighted by
its games). Every lineup holds each rank once and fills each file once, so a rank's or a file's
own effect is the same for every lineup and cannot be estimated: only theta's interaction part
can, the double-centred matrix (rows and columns summing to zero). theta[r, f] is then "rank r
on file f, against rank r on an average file and file f holding an average rank". The model has
(N-1)^2 + 1 coefficients, 17 on 5x5 and 37 on 7x7, so each rests on thousands of sides where a
7x7 lineup rests on a handful: a rank-file effect is found long before any lineup's own rate
can show it (benchmarks/lineup_model.py; docs/agg-tables.md has the figures).

The coefficients are fitted in an orthonormal basis of double-centred matrices (U' P U, U an
orthonormal basis of the vectors orthogonal to 1), each with a Gaussian prior of standard
deviation PRIOR_SD log-odds (ridge: a family of a few games stays finite and is pulled to 0);
the intercept is free. Intervals come from the posterior covariance (the penalised information's
inverse, binomial: conservative with draws, as the Wilson intervals are); theta's and each
lineup's prediction's by the linear map from the basis. `predicted` is that projection alone
(what the cells say); a lineup's own effect beyond its cells is a random effect per lineup with
a two-group prior whose spread is estimated from the board's lineups (analysis.lineup_effect),
read from the lineup's sides in every variant of its board (one lever, one effect a board),
and `rate` (with `rate_lo`, `rate_hi`) is the projection plus it: the lineup's own strength, a
lone lineup's quirk included once its games can tell it.
"""

from __future__ import annotations

from functools import cache
from itertools import permutations

import numpy as np
import polars as pl
from scipy.special import expit

from . import lineup_effect, logit, setups
from . import stats as st
from .cuts import Cut

PRIOR_SD = 0.5  # log-odds: the prior of each basis coefficient of theta
FAMILY = ("board", "variant")
LINEUP_SCHEMA = {
    "board": pl.UInt8,
    "variant": pl.String,
    "lineup": pl.String,
    "n": pl.Int64,
    "score": pl.Float64,
    "score_rate": pl.Float64,
    "predicted": pl.Float64,
    "predicted_lo": pl.Float64,
    "predicted_hi": pl.Float64,
    "p_value": pl.Float64,
    "q_value": pl.Float64,
    "flagged": pl.Boolean,
    "strength_rank": pl.Int64,
    "own_effect": pl.Float64,
    "set_apart": pl.Float64,
    "rate": pl.Float64,
    "rate_lo": pl.Float64,
    "rate_hi": pl.Float64,
    "lineup_source": pl.String,
}
TERM_SCHEMA = {
    "board": pl.UInt8,
    "variant": pl.String,
    "rank": pl.UInt8,
    "file": pl.UInt8,
    "n": pl.Int64,
    "estimate": pl.Float64,
    "se": pl.Float64,
    "lo": pl.Float64,
    "hi": pl.Float64,
    "score_effect": pl.Float64,
    "score_effect_lo": pl.Float64,
    "score_effect_hi": pl.Float64,
    "p_value": pl.Float64,
    "q_value": pl.Float64,
    "flagged": pl.Boolean,
    "n_sides": pl.Int64,
    "lineup_source": pl.String,
}


@cache
def lineups(size: int) -> tuple[list[str], np.ndarray]:
    """Every lineup of a board, as text and as ranks by file (size! rows, ranks 1..size)."""
    perms = np.array(list(permutations(range(1, size + 1))), dtype=np.int64)
    return ["".join(map(str, p)) for p in perms], perms


@cache
def basis(size: int) -> np.ndarray:
    """U: size x (size-1), orthonormal columns orthogonal to the vector of ones."""
    q, _ = np.linalg.qr(np.column_stack([np.ones(size), np.eye(size)[:, : size - 1]]))
    return q[:, 1:]


@cache
def design(size: int) -> tuple[np.ndarray, np.ndarray]:
    """(X, M): every lineup's row (intercept, U' P U flattened) and the map from the
    coefficients to theta flattened by (rank - 1) * size + file (the intercept maps to 0)."""
    _, ranks = lineups(size)
    u = basis(size)
    z = np.einsum("lfa,fb->lab", u[ranks - 1], u).reshape(len(ranks), -1)
    x = np.column_stack([np.ones(len(ranks)), z])
    m = np.column_stack([np.zeros(size * size), np.kron(u, u)])
    return x, m


def fit_family(size: int, n: np.ndarray, score: np.ndarray, prior_sd: float = PRIOR_SD, keep=None):
    """Fit one family: n and score per lineup in lineups(size) order; `keep` (0..1 a lineup)
    scales each lineup's weight. Returns the LogitFit."""
    x, _ = design(size)
    w = n.astype(np.float64) * (1.0 if keep is None else keep)
    seen = w > 0
    ridge = np.full(x.shape[1], 1.0 / prior_sd**2)
    ridge[0] = 0.0
    y = np.where(seen, score / np.where(n > 0, n, 1), 0.5)
    return logit.fit(x[seen], y[seen], w[seen], ridge=ridge)


# the cells are fitted again without the lineups the first pass set apart: a lineup's own
# quirk is its own, not its cells' (else its cells, and every lineup holding them, take a
# share of it)
REFITS = 1


def _counts(size: int, counts: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    names, _ = lineups(size)
    full = pl.DataFrame({"lineup": names}).join(counts, on="lineup", how="left")
    n = full["n"].fill_null(0).to_numpy().astype(np.int64)
    score = full["score"].fill_null(0.0).to_numpy().astype(np.float64)
    return n, score


def pool(d: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each lineup's own effect over the variants (rows of d, v), inverse-variance weighted:
    the same lineup is one lever in every variant; v = inf where no variant has its games."""
    w = np.where(np.isfinite(v), 1 / np.where(np.isfinite(v), v, 1.0), 0.0)
    total = w.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        d_pool = np.where(total > 0, (w * d).sum(axis=0) / np.where(total > 0, total, 1), 0.0)
        v_pool = np.where(total > 0, 1 / np.where(total > 0, total, 1), np.inf)
    return d_pool, v_pool


def board_tables(size: int, variants: list[pl.DataFrame], prior_sd: float = PRIOR_SD):
    """[(lineup rows, term rows)] of one board, one pair a variant (`variants`: lineup, n,
    score each). Each variant has its own cells and projection; a lineup's own effect is one
    a board, read from its sides in every variant (`pool`), so a lone lineup's quirk has all
    its games behind it, not a third of them a variant."""
    x, m = design(size)
    data = [_counts(size, c) for c in variants]
    keep = None
    for _ in range(REFITS + 1):
        fits = [fit_family(size, n, score, prior_sd, keep) for n, score in data]
        etas = [x @ f.coef for f in fits]
        eta_ses = [np.sqrt(np.maximum(((x @ f.cov_model) * x).sum(axis=1), 0.0)) for f in fits]
        # each lineup's own effect beyond its cells (analysis.lineup_effect), pooled over
        # the variants: its rate in a variant is that variant's projection plus the effect
        steps = [
            lineup_effect.one_step(n, score, eta, se)
            for (n, score), eta, se in zip(data, etas, eta_ses, strict=True)
        ]
        d, v = pool(np.stack([s[0] for s in steps]), np.stack([s[1] for s in steps]))
        s2, pi = lineup_effect.fit_prior(d, v)
        u, u_lo, u_hi, apart = lineup_effect.posterior(d, v, s2, pi)
        keep = 1 - np.maximum(apart - pi, 0.0) / (1 - pi)
    return [
        _frames(size, n, score, f, eta, eta_se, (u, u_lo, u_hi, apart))
        for (n, score), f, eta, eta_se in zip(data, fits, etas, eta_ses, strict=True)
    ]


def family_tables(size: int, counts: pl.DataFrame, prior_sd: float = PRIOR_SD):
    """(lineup rows, term rows) of one board and variant alone; `counts`: lineup, n, score."""
    return board_tables(size, [counts], prior_sd)[0]


def _frames(size, n, score, f, eta, eta_se, own_effect):
    names, ranks = lineups(size)
    _, m = design(size)
    cov = f.cov_model
    u, u_lo, u_hi, apart = own_effect
    p_line = st.normal_p(eta, eta_se)
    q_line, flag_line = st.bh(p_line)
    own = eta + u
    rate_lo = own - np.sqrt((u - u_lo) ** 2 + (st.Z95 * eta_se) ** 2)
    rate_hi = own + np.sqrt((u_hi - u) ** 2 + (st.Z95 * eta_se) ** 2)
    order = np.argsort(-own, kind="stable")
    strength = np.empty(len(eta), dtype=np.int64)
    strength[order] = np.arange(1, len(eta) + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.where(n > 0, score / np.maximum(n, 1), np.nan)
    lines = pl.DataFrame(
        {
            "lineup": names,
            "n": n,
            "score": score,
            "score_rate": pl.Series(observed).fill_nan(None),
            "predicted": expit(eta),
            "predicted_lo": expit(eta - st.Z95 * eta_se),
            "predicted_hi": expit(eta + st.Z95 * eta_se),
            "p_value": p_line,
            "q_value": q_line,
            "flagged": flag_line,
            "strength_rank": strength,
            "own_effect": u,
            "set_apart": apart,
            "rate": expit(own),
            "rate_lo": expit(rate_lo),
            "rate_hi": expit(rate_hi),
        }
    )
    theta = m @ f.coef
    se = np.sqrt(np.maximum(((m @ cov) * m).sum(axis=1), 0.0))
    p = st.normal_p(theta, se)
    q, flagged = st.bh(p)
    lo, hi = theta - st.Z95 * se, theta + st.Z95 * se
    # sides that put each rank on each file: the games behind each cell
    by_cell = np.zeros((size, size), dtype=np.int64)
    for col in range(size):
        by_cell[:, col] = np.bincount(ranks[:, col] - 1, weights=n, minlength=size)
    cell_rank, cell_file = np.divmod(np.arange(size * size), size)
    terms = pl.DataFrame(
        {
            "rank": (cell_rank + 1).astype(np.uint8),
            "file": cell_file.astype(np.uint8),
            "n": by_cell.reshape(-1),
            "estimate": theta,
            "se": se,
            "lo": lo,
            "hi": hi,
            "score_effect": expit(theta) - 0.5,
            "score_effect_lo": expit(lo) - 0.5,
            "score_effect_hi": expit(hi) - 0.5,
            "p_value": p,
            "q_value": q,
            "flagged": flagged,
            "n_sides": np.full(size * size, int(n.sum()), dtype=np.int64),
        }
    )
    return lines, terms


def tables(lineup_counts: pl.DataFrame, prior_sd: float = PRIOR_SD):
    """agg_lineup_model and agg_lineup_model_terms of agg_lineup rows (any cut of them)."""
    lines, terms = [], []
    if lineup_counts.height:
        fams = lineup_counts.group_by([*FAMILY, "lineup"]).agg(pl.col("n", "score").sum())
        by_board: dict[int, list[tuple[str, pl.DataFrame]]] = {}
        for (board, variant), counts in sorted(fams.group_by(FAMILY), key=lambda g: g[0]):
            if counts["n"].sum() > 0:
                by_board.setdefault(int(board), []).append((variant, counts))
        for board, fam in by_board.items():
            out = board_tables(board, [c.select("lineup", "n", "score") for _, c in fam], prior_sd)
            for (variant, _), (ln, tm) in zip(fam, out, strict=True):
                keys = [
                    pl.lit(board).cast(pl.UInt8).alias("board"),
                    pl.lit(variant).alias("variant"),
                ]
                lines.append(ln.with_columns(keys))
                terms.append(tm.with_columns(keys))
    source = setups.source(pl.col("variant")).cast(pl.String)
    if not lines:
        return pl.DataFrame(schema=LINEUP_SCHEMA), pl.DataFrame(schema=TERM_SCHEMA)
    out_l = pl.concat(lines).with_columns(source).select(list(LINEUP_SCHEMA)).cast(LINEUP_SCHEMA)
    out_t = pl.concat(terms).with_columns(source).select(list(TERM_SCHEMA)).cast(TERM_SCHEMA)
    return out_l, out_t


def rate_tables(fetch, cut: Cut) -> dict[str, pl.DataFrame]:
    lines, terms = tables(fetch("agg_lineup", cut))
    return {"agg_lineup_model": lines, "agg_lineup_model_terms": terms}
