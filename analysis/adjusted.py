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
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.special import expit

from . import logit
from . import stats as st
from .cuts import Cut
from .frames import POWERS, Base

MIN_GAMES = 200  # fewer games in the cut: no model (the table is left empty)


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


def table(b: Base, cut: Cut) -> pl.DataFrame:
    games = b.in_cut(b.games, cut)
    empty = pl.DataFrame(
        schema={"term": pl.String, "estimate": pl.Float64, "se": pl.Float64, "lo": pl.Float64,
                "hi": pl.Float64, "odds_ratio": pl.Float64, "p_at_even": pl.Float64,
                "p_value": pl.Float64, "n_games": pl.Int64}
    )  # fmt: skip
    if games.height < MIN_GAMES:
        return empty
    x, y, terms, c = design(games)
    f = logit.fit(x, y)
    est = c @ f.coef
    var = np.einsum("ij,jk,ik->i", c, f.cov, c)
    se = np.sqrt(np.where(var >= 0, var, np.nan))
    return pl.DataFrame(
        {
            "term": terms,
            "estimate": est,
            "se": se,
            "lo": est - st.Z95 * se,
            "hi": est + st.Z95 * se,
            "odds_ratio": np.exp(est),
            "p_at_even": expit(est),
            "p_value": st.normal_p(est, se),
            "n_games": np.full(len(terms), games.height, dtype=np.int64),
        }
    )
