"""How a number becomes a finding: the minimum effect that matters, the report's error budget,
and intervals that stay valid however often the page is read.

A designer reads the Findings and Versions pages as a whole, every week, on growing data. So a
finding is decided once for the whole report, not table by table:

- every question (a *kind*: the first-move edge, a power, a rank-file cell, ...) states the
  smallest effect a studio would act on (`MIN_EFFECTS`, in points of score: 0.02 = two points;
  BALANCE_MIN_EFFECTS replaces any of them, "power=0.03,lineup=0.06"). A row is a finding only
  when its interval lies wholly beyond that minimum, on either side: an effect away from zero
  but inside the minimum is not one.
- the report's budget of false findings, `REPORT_ALPHA` (0.1; BALANCE_REPORT_ALPHA), is split
  over the kinds by fixed weights (`WEIGHTS`), within a kind equally over its families (boards,
  variants, ...), within a family equally over its rows (Bonferroni). The expected number of
  rows a report flags whose true effect is within the minimum is then at most REPORT_ALPHA,
  whatever the store's size, and each kind is ever wrong with probability at most its share.
- each interval is a *confidence sequence* (a normal-mixture, Robbins' mixture martingale; the
  two-sided boundary of Howard et al. 2021, eq. 14, on the asymptotically normal estimate):
  it covers the true value at every look at once, so reading the page every week for a year
  does not raise the chance of a false finding above the allocated level. The price is width:
  about 1.4 times a one-look interval at the same level.

- a second, separate tier, the *watch list*: a row whose interval (the same sequence, the same
  share of the budget) is clear of zero and whose estimate is beyond the minimum, but whose
  interval is not yet wholly beyond it. On data with no effect a row enters either tier only if
  its sequence leaves zero, so the two tiers together hold at most REPORT_ALPHA false entries a
  report too. A watch row is "not yet a finding": it says how many more games would confirm it
  if the effect holds (`games_needed`).

`half_width(se, alpha, tau)` is that interval's half-width for an estimate with standard error
`se`; `tau` is the mixture's scale. `scale(alpha, minimum)` chooses it for the minimum effect
(as Howard et al. 2021 tune a mixture: it is tightest at one sample size): the sequence is
tightest where its half-width equals the minimum, the games at which an effect of the minimum's
size starts to clear zero, and within a few percent of that over the sizes around it (a fixed
scale chosen before the data, so the sequence stays valid). `detectable(se, alpha, tau,
minimum)` is the minimum detectable effect: the true effect found with 80% power at this look.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import settings

ENV_MIN = "BALANCE_MIN_EFFECTS"
ENV_ALPHA = "BALANCE_REPORT_ALPHA"
REPORT_ALPHA = 0.1
# The smallest effect worth a designer's action, per kind, in points of score (win or solve
# rate for Slide seats and challenges; beyond the target band's edge for the computer levels).
MIN_EFFECTS: dict[str, float] = {
    "first_move": 0.02,  # the first mover's edge over an even game
    "power": 0.02,  # a power's adjusted effect against the median power
    "power_pair": 0.03,  # two powers together beyond what each alone predicts
    "power_vs": 0.03,  # one power against another
    "lineup_cell": 0.02,  # a rank on a file, against its average place
    "lineup": 0.05,  # one lineup beyond what its ranks' places predict
    "lineup_vs": 0.10,  # one lineup against another
    "lane_distance": 0.03,  # the first-move edge at one lane distance against the others
    "ai_band": 0.02,  # a computer level beyond its target band
    "ai_order": 0.02,  # a harder level leaving the human more than an easier one
    "challenge": 0.10,  # a challenge's solve rate against its board's others
    "slide_seat": 0.03,  # a Slide seat's win rate against a fair share
}
# The report's budget split over the kinds (sums to 1). A share buys less and less width the
# more rows it is split over (the interval grows with the log of the rows), so the budget goes
# where a designer acts most and the rows are few: the first-move edge (one row a board) and
# the ten powers take half of it, the rank-file cells (25 or 49 a family) most of the rest;
# the kinds of hundreds or thousands of rows (lineups, matchups, challenges) keep small shares,
# which cost them little width. WEIGHTS_BEFORE is the earlier even-handed split (benchmarks
# compare the two).
WEIGHTS: dict[str, float] = {
    "first_move": 0.25,
    "power": 0.25,
    "lineup_cell": 0.15,
    "lineup": 0.05,
    "power_pair": 0.03,
    "power_vs": 0.03,
    "lineup_vs": 0.02,
    "lane_distance": 0.04,
    "ai_band": 0.08,
    "ai_order": 0.03,
    "challenge": 0.02,
    "slide_seat": 0.05,
}
WEIGHTS_BEFORE: dict[str, float] = {
    "first_move": 0.15,
    "power": 0.15,
    "lineup_cell": 0.10,
    "lineup": 0.10,
    "power_pair": 0.05,
    "power_vs": 0.05,
    "lineup_vs": 0.05,
    "lane_distance": 0.05,
    "ai_band": 0.10,
    "ai_order": 0.05,
    "challenge": 0.05,
    "slide_seat": 0.10,
}
POWER = 0.80  # the power the minimum detectable effect is stated at
Z_POWER = 0.8416212335729143  # its normal quantile
# a family whose typical row could not see an effect this many times its minimum "cannot tell"
TOO_FEW_FACTOR = 4.0


@dataclass(frozen=True)
class Policy:
    """Everything a decision depends on: the minimums, the report's budget, its split, and how
    the mixture scale is chosen ("tuned": `scale`; "twice": twice the minimum, the earlier
    choice). `policy()` is the configured one; benchmarks compare others on the same store."""

    minimums: dict[str, float]
    alpha: float = REPORT_ALPHA
    weights: dict[str, float] = field(default_factory=lambda: dict(WEIGHTS))
    scale: str = "tuned"

    def tau(self, alpha, minimum):
        return scale(alpha, minimum) if self.scale == "tuned" else 2 * minimum

    def tau_sql(
        self, alpha: str, minimum: float | str, big: str | None = None, u: str | None = None
    ) -> str:
        """tau as SQL over the SQL expression `alpha`; `minimum` a number or an SQL
        expression; `big`, `u`: columns holding big_sql(alpha) and u_sql(big) in the query,
        where it has them (scale_sql)."""
        if self.scale != "tuned":
            return f"(2 * {_sql_number(minimum)})"
        return scale_sql(alpha, minimum, big, u)


def policy() -> Policy:
    """The configured policy (BALANCE_MIN_EFFECTS, BALANCE_REPORT_ALPHA)."""
    return Policy(min_effects(), report_alpha())


def report_alpha(text: str | None = None) -> float:
    text = settings.value("REPORT_ALPHA") if text is None else text
    if not text.strip():
        return REPORT_ALPHA
    try:
        a = float(text)
    except ValueError:
        raise ValueError(f"{ENV_ALPHA}: {text!r} is not a number (e.g. 0.1)") from None
    if not 0.0 < a < 1.0:
        raise ValueError(f"{ENV_ALPHA}: {text!r}: need 0 < alpha < 1")
    return a


def min_effects(text: str | None = None) -> dict[str, float]:
    """MIN_EFFECTS with the kinds named in `text` (default: BALANCE_MIN_EFFECTS) replaced."""
    text = settings.value("MIN_EFFECTS") if text is None else text
    out = dict(MIN_EFFECTS)
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            kind, value = part.split("=")
            v = float(value)
        except ValueError:
            raise ValueError(f"{ENV_MIN}: {part!r} is not kind=points (e.g. power=0.03)") from None
        kind = kind.strip()
        if kind not in out:
            raise ValueError(f"{ENV_MIN}: unknown kind {kind!r} (one of {', '.join(out)})")
        if not 0.0 < v < 0.5:
            raise ValueError(f"{ENV_MIN}: {part!r}: need 0 < points < 0.5")
        out[kind] = v
    return out


def logit_points(points: float) -> float:
    """A score edge of `points` around an even game, in log-odds (0.02 -> 0.080)."""
    return math.log((0.5 + points) / (0.5 - points))


def half_width(se, alpha, tau):
    """Half-width of the two-sided normal-mixture confidence sequence at level `alpha` for an
    estimate with standard error `se`, mixture scale `tau` (the same units): valid at every
    look at once. NaN where se is not positive."""
    se, alpha = np.asarray(se, dtype=float), np.asarray(alpha, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (se / tau) ** 2
        return np.where(se > 0, se * np.sqrt((1 + r) * np.log((1 + 1 / r) / alpha**2)), np.nan)


def scale(alpha, minimum):
    """The mixture scale tau for which the sequence at level `alpha` is tightest where its
    half-width equals `minimum` (a function of the two only, fixed before any data)."""
    a = np.asarray(alpha, dtype=float)
    big = np.log(1 / a**2)
    u = big
    for _ in range(5):
        u = big + np.log1p(u)
    r = 1 / u
    se_star = minimum / np.sqrt((1 + r) * (np.log1p(u) + big))
    return se_star / np.sqrt(r)


def big_sql(alpha: str) -> str:
    """scale's log(1 / alpha^2), as SQL over the SQL expression `alpha`."""
    return f"ln(1 / (({alpha}) * ({alpha})))"


def u_sql(big: str) -> str:
    """scale's fixed point u, as SQL over `big` (big_sql's value)."""
    u = big
    for _ in range(5):
        u = f"({big} + ln(1 + {u}))"
    return u


def _sql_number(v: float | str) -> str:
    """A number as an SQL DOUBLE literal (an SQL expression as it is)."""
    return v if isinstance(v, str) else f"{float(v)!r}::DOUBLE"


def scale_sql(
    alpha: str, minimum: float | str, big: str | None = None, u: str | None = None
) -> str:
    """scale as a SQL expression over the SQL expression `alpha`. `big` and `u` name columns
    that hold big_sql(alpha) and u_sql(big), where the query has them: written out whole, the
    expression repeats log(1 / alpha^2) nineteen times, and DuckDB's planner paid for every
    copy in every query (the findings' query planned in about twice the time)."""
    big = big or big_sql(alpha)
    u = u or u_sql(big)
    return f"({_sql_number(minimum)} / sqrt((1 + 1 / {u}) * (ln(1 + {u}) + {big})) * sqrt({u}))"


def half_width_sql(se: str, alpha: str, tau: str) -> str:
    """half_width as a SQL expression over SQL expressions."""
    r = f"(({se}) * ({se}) / (({tau}) * ({tau})))"
    return (
        f"CASE WHEN ({se}) > 0 THEN ({se}) * sqrt((1 + {r}) * ln((1 + 1 / {r}) / "
        f"(({alpha}) * ({alpha})))) END"
    )


def detectable(se, alpha, tau, minimum):
    """The true effect found with POWER at this look: the minimum plus the interval's
    half-width plus the power's margin (an estimate must land a half-width beyond it)."""
    se = np.asarray(se, dtype=float)
    return minimum + half_width(se, alpha, tau) + Z_POWER * se


def games_needed(sd_one: float, alpha: float, tau: float, minimum: float, effect: float) -> int:
    """Games for an effect `effect` (beyond `minimum`) to be found with POWER, where one
    game's standard deviation is `sd_one` (se = sd_one / sqrt(n)). A doubling search."""
    if effect <= minimum:
        return -1  # never: an effect at the minimum is not beyond it

    def ok(n: float) -> bool:
        return float(detectable(sd_one / math.sqrt(n), alpha, tau, minimum)) <= effect

    hi = 16.0
    while not ok(hi):
        hi *= 2
        if hi > 1e12:
            return -1
    lo = hi / 2
    while hi - lo > max(1.0, lo * 0.005):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return int(math.ceil(hi))
