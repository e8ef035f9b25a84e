"""Are the computer levels calibrated? Human score against each level, against a target band
the designer sets, and each level against the one below it (a harder level should leave the
human a lower score), per board and client version.

The bands come from BALANCE_AI_TARGETS ("1=0.70-0.85,2=0.55-0.70,..."; a level not named keeps
its default), read when the table is computed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from . import settings, views
from . import stats as st

ENV = "BALANCE_AI_TARGETS"
# Human score rate wanted against each level (1 careful .. 4 hard): a beginner's level the
# human wins most of the time, the hardest one a strong player still wins a third of the time.
DEFAULT_TARGETS: dict[int, tuple[float, float]] = {
    1: (0.70, 0.85),
    2: (0.55, 0.70),
    3: (0.40, 0.55),
    4: (0.25, 0.40),
}


def targets(text: str | None = None) -> dict[int, tuple[float, float]]:
    """The target band of each level: DEFAULT_TARGETS, with the levels named in `text` (by
    default the environment's BALANCE_AI_TARGETS) replaced. ValueError on a malformed band."""
    text = settings.value("AI_TARGETS") if text is None else text
    out = dict(DEFAULT_TARGETS)
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            level, band = part.split("=")
            lo, hi = (float(x) for x in band.split("-"))
            key = int(level)
        except ValueError:
            raise ValueError(f"{ENV}: {part!r} is not level=low-high (e.g. 2=0.55-0.70)") from None
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(f"{ENV}: {part!r}: need 0 <= low <= high <= 1")
        out[key] = (lo, hi)
    return out


def _band_test(k, n, rate, lo, hi) -> np.ndarray:
    """Two-sided score test against the band's nearer edge (1 inside the band, NaN without
    one): p < 0.05 exactly when the Wilson interval lies wholly outside the band."""
    edge = np.where(rate < lo, lo, np.where(rate > hi, hi, np.nan))
    p = st.score_test(k, n, np.where(np.isnan(edge), 0.5, edge))
    p = np.where(np.isnan(edge), 1.0, p)
    return np.where(np.isnan(lo) | (n <= 0), np.nan, p)


def calibration(frame, by: Sequence[str] = ("board", "client_version"), bands=None) -> pl.DataFrame:
    """Per (`by`, ai_level) of agg_vs_ai rows: the human's score rate with its Wilson interval;
    the level's target band, `band_p` / `band_q` (BH within the family `by`) and `off_target`
    ('below' / 'above' when q <= 0.05); and the step from the previous level present: this
    level's score rate minus that one's (Newcombe interval, two-proportion test, BH within
    the family), `order` = 'ordered' (significantly lower), 'reversed' (significantly higher)
    or 'unclear'."""
    by = list(by)
    bands = targets() if bands is None else bands
    df = views.summed(frame, [*by, "ai_level"], views.OUTCOME)
    df = df.filter((pl.col("n") > 0) & pl.col("ai_level").is_not_null())
    df = views.add_score_rates(df, by, None, shrink=False).sort([*by, "ai_level"])
    level = df["ai_level"].to_list()
    band_lo = np.array([bands.get(int(x), (np.nan, np.nan))[0] for x in level], dtype=float)
    band_hi = np.array([bands.get(int(x), (np.nan, np.nan))[1] for x in level], dtype=float)
    k, n, rate = df["score"].to_numpy(), df["n"].to_numpy(), df["score_rate"].to_numpy()
    labels = df.select(pl.struct(by).rank("dense")).to_series().to_numpy()
    bp = _band_test(k, n, rate, band_lo, band_hi)
    bq, off = st.bh_grouped(bp, labels)
    where = [
        ("below" if r < lo_ else "above") if o else None
        for o, r, lo_ in zip(off, rate, band_lo, strict=True)
    ]
    df = df.with_columns(
        pl.Series("band_lo", band_lo, nan_to_null=True),
        pl.Series("band_hi", band_hi, nan_to_null=True),
        pl.Series("band_p", bp, nan_to_null=True),
        pl.Series("band_q", bq, nan_to_null=True),
        pl.Series("off_target", where, dtype=pl.String),
    )
    prev = df.select(
        previous_level=pl.col("ai_level").shift(1).over(by),
        _k=pl.col("score").shift(1).over(by),
        _n=pl.col("n").shift(1).over(by),
    )
    k2 = prev["_k"].to_numpy().astype(float)
    n2 = prev["_n"].fill_null(0).to_numpy().astype(float)
    d, lo, hi = st.diff_newcombe(k, n, np.nan_to_num(k2), n2)
    p = st.diff_test(k, n, np.nan_to_num(k2), n2)
    q, sig = st.bh_grouped(p, labels)
    order = [
        None if np.isnan(pv) else ("ordered" if dv < 0 else "reversed") if s_ else "unclear"
        for pv, s_, dv in zip(p, sig, d, strict=True)
    ]
    return df.with_columns(
        prev["previous_level"],
        pl.Series("step", d, nan_to_null=True),
        pl.Series("step_lo", lo, nan_to_null=True),
        pl.Series("step_hi", hi, nan_to_null=True),
        pl.Series("step_p", p, nan_to_null=True),
        pl.Series("step_q", q, nan_to_null=True),
        pl.Series("order", order, dtype=pl.String),
    )
