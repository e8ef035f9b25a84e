"""Adjusted view: a logistic regression of the result on first move, board size, lineup and
power picks, so each effect is estimated holding the others fixed.

One row per game, from side 0's view: y = 1 win, 1/2 draw, 0 loss (a fractional logit; draws
count as half, as in every score rate). Every regressor is a difference between the sides, so
the sides are symmetric by construction:
  side_0          intercept (side 0 against side 1; ~0 on a symmetric board)
  first_move      +1 if side 0 moved first, -1 if side 1 did
  first_move_x_board7   the same on 7x7 only: how much the first-move edge changes there
  power:X         picked by side 0 minus picked by side 1. Each side picks exactly three, so
                  only differences between powers are identified: effects are against the
                  average power (they sum to zero).
  centre_rank:NxN:r  the rank each side put on the centre file (one-hot difference), per board,
                  against the average rank (sum to zero within a board)
A power that looks strong only because the side moving first tends to pick it gets its own,
smaller, effect here: first_move takes the rest.

Small or lopsided cuts (a few 7x7 games among many 5x5, a centre rank seen in three games that
one side won) must not fail the run, nor print a number that means nothing. So:
  - aliased columns are dropped before the fit (logit.independent_columns, as R's glm does),
    and a term whose contrast the remaining columns cannot express is reported with
    estimable = false, note 'aliased' and no estimate;
  - a term whose coefficient does not settle (separation: its games all went one way) or whose
    standard error or estimate is beyond MAX_SE / MAX_LOGODDS is reported the same way, note
    'no information'. Every other term keeps the estimate of the full model.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.special import expit

from . import logit, sample
from . import stats as st
from .cuts import Cut
from .frames import POWERS, Base

MIN_GAMES = 200  # fewer games in the cut: no model (the table is left empty)
# at most this many games are fitted: a bigger cut is sampled (analysis.sample: the games
# whose ids hash lowest, the same whichever runs read them), so the model's cost does not
# grow with the store; its standard errors are those of the sample
SAMPLE = sample.SAMPLE
MAX_SE = 10.0  # log-odds: a 95% interval wider than +-20 says nothing
MAX_LOGODDS = 10.0  # an odds ratio beyond e^10 (22,000) is separation, not an effect
ALIASED = "aliased: these games cannot tell it apart from other terms"
NO_INFORMATION = "no information: too few games, or they all went one way"


def design(games: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """(X, y, term names, C): the fitted columns, the response, and the contrast matrix whose
    row t maps the coefficients to reported term t (effect coding reports the reference level
    of a group as minus the sum of the others). Levels that never differ between the sides in
    these games carry no information and are left out."""
    n = games.height
    first0 = (games["first"].to_numpy() == 0).astype(float) * 2 - 1
    board7 = (games["board"].to_numpy() == 7).astype(float)
    y = (games["res0"].to_numpy().astype(float) + 1) / 2
    cols: list[np.ndarray] = [np.ones(n), first0]
    names = ["side_0", "first_move"]
    if board7.any() and not board7.all():
        cols.append(first0 * board7)
        names.append("first_move_x_board7")
    rows: list[tuple[str, dict[int, float]]] = [(nm, {i: 1.0}) for i, nm in enumerate(names)]
    groups: list[tuple[list[str], list[np.ndarray]]] = []
    if games["mask_0"].is_not_null().any():
        m0 = games["mask_0"].fill_null(0).to_numpy().astype(np.int64)
        m1 = games["mask_1"].fill_null(0).to_numpy().astype(np.int64)
        diffs = [((m0 >> i) & 1).astype(float) - ((m1 >> i) & 1) for i in range(len(POWERS))]
        groups.append(([f"power:{p}" for p in POWERS], diffs))
    for size in (5, 7):
        on = games["board"].to_numpy() == size
        if not on.any():
            continue
        centre = size // 2
        # the rank on the centre file: the middle digit of the integer lineup
        r0 = games["lineup_0"].to_numpy().astype(np.int64) // 10 ** (size - 1 - centre) % 10
        r1 = games["lineup_1"].to_numpy().astype(np.int64) // 10 ** (size - 1 - centre) % 10
        diffs = [((r0 == r) & on).astype(float) - ((r1 == r) & on) for r in range(1, size + 1)]
        groups.append(([f"centre_rank:{size}x{size}:{r}" for r in range(1, size + 1)], diffs))
    for labels, diffs in groups:
        live = [(lab, d) for lab, d in zip(labels, diffs, strict=True) if d.any()]
        if len(live) < 2:
            continue
        ref = live[-1][1]
        idx = []
        for lab, d in live[:-1]:
            cols.append(d - ref)
            idx.append(len(cols) - 1)
            rows.append((lab, {idx[-1]: 1.0}))
        rows.append((live[-1][0], {i: -1.0 for i in idx}))
    x = np.column_stack(cols)
    c = np.zeros((len(rows), x.shape[1]))
    for t, (_, coefs) in enumerate(rows):
        for i, v in coefs.items():
            c[t, i] = v
    return x, y, [nm for nm, _ in rows], c


def from_store(con, run_cut: Cut, cut: Cut) -> pl.DataFrame:
    """agg_adjusted of the games in both cuts (the run's and the default), sampled."""
    return fit(sample.frame(con, sample.sql(run_cut, cut, None)))


def table(b: Base, cut: Cut) -> pl.DataFrame:
    """agg_adjusted of the games of a frame (analysis.frames) in the cut."""
    return fit(b.in_cut(b.games, cut))


def fit(games: pl.DataFrame) -> pl.DataFrame:
    """agg_adjusted of these games (one row each: first, board, res0, masks, lineups)."""
    if games.height < MIN_GAMES:
        return pl.DataFrame(schema=SCHEMA)
    x, y, terms, c = design(games)
    return fitted(x, y, terms, c, informing(games, terms))


def informing(games: pl.DataFrame, terms: list[str]) -> np.ndarray:
    """The games that inform each term: for a power, the games played with powers; for a
    centre rank, the games on its board; first move and side 0, every game."""
    with_powers = int(games["mask_0"].is_not_null().sum())
    board = games["board"].to_numpy()
    out = []
    for t in terms:
        if t.startswith("power:"):
            out.append(with_powers)
        elif t.startswith("centre_rank:"):
            out.append(int((board == int(t.split(":")[1].partition("x")[0])).sum()))
        elif t == "first_move_x_board7":
            out.append(int((board == 7).sum()))
        else:
            out.append(games.height)
    return np.asarray(out, dtype=np.int64)


SCHEMA = {
    "term": pl.String,
    "estimable": pl.Boolean,
    "estimate": pl.Float64,
    "se": pl.Float64,
    "lo": pl.Float64,
    "hi": pl.Float64,
    "odds_ratio": pl.Float64,
    "p_at_even": pl.Float64,
    "p_value": pl.Float64,
    "family": pl.String,
    "q_value": pl.Float64,
    "flagged": pl.Boolean,
    "n_games": pl.Int64,
    "note": pl.String,
}


def family(term: str) -> str:
    """The family a term is tested in: a group of levels ('power', 'centre_rank:5x5'), whose
    effects are contrasts against the group's average and sum to zero, or the term alone."""
    return term.rsplit(":", 1)[0] if ":" in term else term


def fitted(x: np.ndarray, y: np.ndarray, terms: list[str], c: np.ndarray, n):
    """Fit on the columns that are not aliased; report each term t (contrast row c[t]) with its
    estimate, or as not estimable (see the module docstring). `n`: the games that inform each
    term (one number: every term alike)."""
    keep, alias = logit.independent_columns(x)
    ck = c[:, keep]
    # c[t] is estimable when it is a combination of the kept columns' coefficients
    aliased = np.abs(c - ck @ alias).max(axis=1) > 1e-6
    f = logit.fit(x[:, keep], y)
    est = ck @ f.coef
    var = np.einsum("ij,jk,ik->i", ck, f.cov, ck)
    se = np.sqrt(np.where(var >= 0, var, np.nan))
    moving = np.abs(f.step) > 1e-6 * (1 + np.abs(f.coef))
    diverged = (np.abs(ck) > 0) @ moving if not f.converged else np.zeros(len(terms), bool)
    with np.errstate(invalid="ignore"):
        no_info = ~(np.isfinite(est) & np.isfinite(se) & (se <= MAX_SE))
        no_info |= ~(np.abs(est) <= MAX_LOGODDS) | diverged
    ok = ~aliased & ~no_info
    note = [
        ALIASED if a else NO_INFORMATION if i else None
        for a, i in zip(aliased.tolist(), no_info.tolist(), strict=True)
    ]

    def shown(v: np.ndarray) -> pl.Series:
        return pl.Series(np.where(ok, v, np.nan)).fill_nan(None)

    p = np.where(ok, st.normal_p(est, se), np.nan)
    families = [family(t) for t in terms]
    # BH within each family: the ten powers are tested together, as on agg_power_rates
    q, flagged = st.bh_grouped(p, families)

    return pl.DataFrame(
        {
            "term": terms,
            "estimable": ok,
            "estimate": shown(est),
            "se": shown(se),
            "lo": shown(est - st.Z95 * se),
            "hi": shown(est + st.Z95 * se),
            "odds_ratio": shown(np.exp(np.clip(est, -700, 700))),
            "p_at_even": shown(expit(est)),
            "p_value": shown(p),
            "family": families,
            "q_value": shown(q),
            "flagged": flagged,
            "n_games": np.broadcast_to(np.asarray(n, dtype=np.int64), (len(terms),)),
            "note": pl.Series(note, dtype=pl.String),
        },
        schema=SCHEMA,
    )
