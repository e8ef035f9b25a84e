"""Computer opponents (human score by AI level) and challenges (solve rate per challenge)."""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.special import chdtrc  # chi2.sf(x, dof), without importing scipy.stats

from . import ai_calibration, views
from . import stats as st
from .cuts import Cut
from .games_sql import Selection, decoded, games, outcome, scored
from .tables import Cube


def _vs_ai(sel: Selection) -> str:
    # the human plays the side the computer does not
    return scored(
        decoded(
            sel,
            f"""WITH {games(sel)}
SELECT cw, "first" <> ai_side AS human_first, {outcome("r")}
FROM (SELECT *, CASE WHEN ai_side = 0 THEN -res0 ELSE res0 END AS r FROM g
      WHERE mode = 'computer' AND ai_side IS NOT NULL)
GROUP BY ALL""",
        )
    )


def _challenge(sel: Selection) -> str:
    # Challenge games have no computer side in the record; the player is the side to move in
    # the set position, which R9.2 makes `first`. A solve is a win of that side.
    return scored(
        decoded(
            sel,
            f"""WITH {games(sel)}
SELECT cw, challenge_id, {outcome("res_first")},
       coalesce(sum(turns) FILTER (res_first = 1), 0)::BIGINT AS solve_turns_sum
FROM g WHERE mode = 'challenge' AND challenge_id IS NOT NULL GROUP BY ALL""",
        )
    )


CUBES = [
    Cube("agg_vs_ai", "games", _vs_ai),
    Cube("agg_challenge", "games", _challenge),
]


def rate_tables(fetch, cut: Cut) -> dict[str, pl.DataFrame]:
    ai = views.rates(
        fetch("agg_vs_ai", cut.with_modes("computer")),
        ["board", "ai_level"],
        family=["board"],
        p0=0.5,
    )
    ch = challenge_rates(fetch("agg_challenge", cut.with_modes("challenge")))
    # every client version, as agg_trends: is a level still calibrated after a release?
    calibrated = ai_calibration.calibration(fetch("agg_vs_ai", Cut(mode=("computer",))))
    return {"agg_vs_ai_rates": ai, "agg_challenge_rates": ch, "agg_ai_calibration": calibrated}


def challenge_rates(frame, by=("board", "challenge_id")) -> pl.DataFrame:
    """Per challenge: attempts, solves (wins of the player: a draw is no solve), draws and
    losses apart; the solve rate with its Wilson interval, shrunk towards the board's pooled
    solve rate (the empirical-Bayes prior of analysis.stats: a challenge tried 5 times does
    not top the chart, and one solved by nobody yet is not pinned at 0); the mean turns of a
    solved attempt; and whether it is harder or easier than the board's other challenges: the
    attempts at this challenge against the attempts at the rest (two-proportion test, BH
    across the board's challenges)."""
    family = list(by)[:-1]
    cols = ["n", "wins", "draws", "losses", "solve_turns_sum"]
    df = views.summed(frame, list(by), cols).filter(pl.col("n") > 0)
    df = df.rename({"n": "attempts", "wins": "solves"})
    df = views.add_proportion(df, "solves", "attempts", "solve_rate")
    labels = df.select(pl.struct(family).rank("dense")).to_series().to_numpy()
    k, n = df["solves"].to_numpy().astype(float), df["attempts"].to_numpy().astype(float)
    board_k = pl.col("solves").sum().over(family)
    board_n = pl.col("attempts").sum().over(family)
    rest = df.select(k=board_k - pl.col("solves"), n=board_n - pl.col("attempts"))
    p = st.diff_test(k, n, rest["k"].to_numpy(), rest["n"].to_numpy())
    q, flagged = st.bh_grouped(p, labels)
    return df.with_columns(
        pl.Series("solve_shrunk", st.shrink_grouped(k, n, labels)),
        draw_rate=pl.col("draws") / pl.col("attempts"),
        loss_rate=pl.col("losses") / pl.col("attempts"),
        mean_turns_to_solve=pl.when(pl.col("solves") > 0).then(
            pl.col("solve_turns_sum") / pl.col("solves")
        ),
        tested_against=board_k / board_n,
    ).with_columns(
        pl.Series("p_value", p),
        pl.Series("q_value", q),
        pl.Series("flagged", flagged),
    )


def challenges_differ(rates: pl.DataFrame, by=("board",), alpha: float = 0.05) -> pl.DataFrame:
    """Per board: do its challenges differ in difficulty at all? The likelihood-ratio (G) test
    of one solve rate for every challenge of the board (challenge_rates' rows), against each
    its own; `differ` at `alpha`. A board whose challenges do not differ has no hardest or
    easiest: its shrunk rates are (nearly) the pooled one, and ranking them ranks noise."""
    out = []
    for key, g in rates.group_by(list(by), maintain_order=True):
        k = g["solves"].to_numpy().astype(float)
        n = g["attempts"].to_numpy().astype(float)
        pooled = k.sum() / n.sum() if n.sum() else np.nan
        with np.errstate(divide="ignore", invalid="ignore"):
            own = np.where(n > 0, k / np.maximum(n, 1), 0.0)
            g_stat = 2 * (_binomial_ll(k, n, own) - _binomial_ll(k, n, np.full_like(own, pooled)))
        dof = max(len(k) - 1, 0)
        p = float(chdtrc(dof, g_stat)) if dof and 0 < pooled < 1 else 1.0
        out.append(
            {**dict(zip(by, key, strict=True)), "challenges": len(k), "attempts": int(n.sum()),
             "min_attempts": int(n.min()), "max_attempts": int(n.max()), "p_value": p,
             "differ": p < alpha}
        )  # fmt: skip
    schema: dict[str, pl.DataType | type[pl.DataType]] = {
        **{b: rates.schema[b] for b in by}, "challenges": pl.Int64, "attempts": pl.Int64,
        "min_attempts": pl.Int64, "max_attempts": pl.Int64, "p_value": pl.Float64,
        "differ": pl.Boolean,
    }  # fmt: skip
    return pl.DataFrame(out, schema=schema)


def _binomial_ll(k: np.ndarray, n: np.ndarray, p: np.ndarray) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(k > 0, k * np.log(p), 0.0) + np.where(
            n - k > 0, (n - k) * np.log(1 - p), 0.0
        )
    return float(np.nansum(terms))
