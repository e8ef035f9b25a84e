"""Does the Findings report cry wolf? Null and planted stores with known truth, the jobs run,
the report read as a designer reads it (analysis.findings.collect).

    python -m benchmarks.null_reports [--stores 20] [--sizes 2000,5000,20000]
        [--histories 10] [--weeks 52] [--weekly-size 20000] [--planted 10] [--seed 0]

Every store is read under two decision policies side by side (analysis.decisions.Policy):
"chosen" (the configured budget split, WEIGHTS, and the mixture scale tuned to the minimum) and
"even" (the earlier split, WEIGHTS_BEFORE, and the scale at twice the minimum). Each prints both
tiers: findings (the interval wholly beyond the minimum) and the watch list (clear of zero, the
estimate beyond the minimum, not yet a finding); "either" is a row in one or the other.

1. Null stores: every lineup, power and first mover even, every computer level in the middle of
   its target band (analysis.synthetic); `--stores` stores at each size (human games in the
   default cut). Printed per tier: the mean false entries per report and the share of reports
   with any, each with its 95% interval (exact Poisson / Clopper-Pearson). Targets: <= 0.1 and
   <= 10% (a null row enters either tier only when its interval leaves zero).
2. Weekly looks: `--histories` null histories, the store growing by a 52nd of `--weekly-size`
   human games each week, the jobs run incrementally and the report read every week. Printed:
   per family (kind and board / variant / ...) the share of histories in which it was ever
   flagged (and ever on either tier), the largest of them with its interval. Target: <= 5% per
   family.
3. Planted effects (`--planted` stores a size): the first mover +3 points, surge +4.3 points,
   lineup 21435 at 0.60, rank 5 on file c of 5×5 (+0.3 log-odds for the lineups holding it:
   +4.7 points for its double-centred cell). Printed: how often each is found as a finding and
   on either tier, with intervals, and the other entries of those reports; and how often the
   planted lineup's rate on the Setups page (agg_lineup_model, one row a variant) holds 0.60
   and is set apart from its cells.

Measured on the shared two-core machine (docs/agg-tables.md "Findings" has the figures): 30
null stores a size, 6 weekly histories, 10 planted stores a size, in about 45 minutes.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from collections import Counter
from dataclasses import replace

import duckdb
import numpy as np
from scipy import stats

from analysis import decisions as dc
from analysis import findings, jobs
from analysis import synthetic as sy

IN_BAND = (-1.24, -0.51, 0.10, 0.73)  # every computer level in the middle of its band
HUMAN = (("online", 45), ("friend", 15))
MODES = (*HUMAN, ("computer", 25), ("challenge", 8), ("tutorial", 7))
HUMAN_SHARE = 60 / 100
ONE_VERSION = (("3.0.0", 1),)
DRAWS = 0.05


def logit_for_points(points: float) -> float:
    """The log-odds edge that makes a side score 0.5 + points with DRAWS draws."""
    p = 0.5 + points / (1 - DRAWS)
    return math.log(p / (1 - p))


PLANTED_LINEUP = "21435"
CELL = {"".join(map(str, p)): 0.3 for p in itertools.permutations(range(1, 6)) if p[2] == 5}
PLANTS = {
    "first move +3 points": lambda r: r["kind"] == "first_move",
    "surge +4.3 points": lambda r: r["kind"] == "power" and r["item"] == "surge",
    f"lineup {PLANTED_LINEUP} at 0.60": lambda r: (
        r["kind"] == "lineup" and r["item"] == f"lineup {PLANTED_LINEUP}"
    ),
    "rank 5 on file c (5×5)": lambda r: (
        r["kind"] == "lineup_cell"
        and r["item"] == "rank 5 on file c"
        and r["family"].startswith("lineup cell 5×5")
    ),
}


def plan(human: int, seed: int, planted: bool) -> sy.Plan:
    effects: dict = {}
    if planted:
        effects = dict(
            first_effect=logit_for_points(0.03),
            power_effects={"surge": logit_for_points(0.043)},
            lineup_effects={**CELL, PLANTED_LINEUP: logit_for_points(0.10)},
        )
    else:
        effects = dict(first_effect=0.0)
    return sy.Plan(
        n=int(human / HUMAN_SHARE), seed=seed, modes=MODES, versions=ONE_VERSION,
        draw_rate=DRAWS, ai_level_effects=IN_BAND, **effects,
    )  # fmt: skip


POLICIES = {
    "chosen": lambda: dc.policy(),
    "even": lambda: replace(dc.policy(), weights=dict(dc.WEIGHTS_BEFORE), scale="twice"),
}
TIERS = ("findings", "either")


def report(con, policy: dc.Policy | None = None) -> findings.Findings:
    return findings.collect(lambda q: con.sql(q).pl(), policy=policy)


def entries(f: findings.Findings, tier: str) -> list[dict]:
    rows = f.table.to_dicts()
    return rows if tier == "findings" else rows + f.watch.to_dicts()


LINEUP_SQL = f"""SELECT variant, rate_lo, rate_hi, set_apart FROM agg_lineup_model
WHERE board = 5 AND lineup = '{PLANTED_LINEUP}' AND n > 0"""


def one_store(p: sy.Plan, lineup: list | None = None) -> dict[str, findings.Findings]:
    """The store's report under each policy (the jobs run once); `lineup` gets the planted
    lineup's rows of agg_lineup_model (its rate on the Setups page, one row a variant)."""
    con, _ = sy.make_store(":memory:", p)
    try:
        jobs.run(con, lambda fn: fn(con))
        if lineup is not None:
            lineup.extend(con.sql(LINEUP_SQL).pl().to_dicts())
        return {name: report(con, pol()) for name, pol in POLICIES.items()}
    finally:
        con.close()


def poisson_ci(total: int, n: int) -> tuple[float, float]:
    lo = 0.0 if total == 0 else stats.chi2.ppf(0.025, 2 * total) / 2
    hi = stats.chi2.ppf(0.975, 2 * total + 2) / 2
    return lo / n, hi / n


def share_ci(k: int, n: int) -> tuple[float, float]:
    lo = 0.0 if k == 0 else stats.beta.ppf(0.025, k, n - k + 1)
    hi = 1.0 if k == n else stats.beta.ppf(0.975, k + 1, n - k)
    return float(lo), float(hi)


def _rate(k: int, n: int) -> str:
    lo, hi = share_ci(k, n)
    return f"{k}/{n} [{lo:.0%}, {hi:.0%}]"


def null_reports(sizes: list[int], stores: int, seed: int) -> None:
    print(f"== null stores: {stores} a size ==")
    for size in sizes:
        t = time.perf_counter()
        counts: dict[tuple[str, str], list[int]] = {}
        blind = fams = 0
        for i in range(stores):
            reports = one_store(plan(size, seed + 1000 * size + i, planted=False))
            for name, f in reports.items():
                for tier in TIERS:
                    counts.setdefault((name, tier), []).append(len(entries(f, tier)))
            fams += reports["chosen"].tested
            blind += int((reports["chosen"].families["verdict"] == findings.TOO_FEW).sum())
        print(
            f"{size:>6,} human games: families a report {fams / stores:.0f} "
            f"({blind / stores:.0f} too few games to tell); {time.perf_counter() - t:.0f} s"
        )
        for (name, tier), c in counts.items():
            total, anyf = sum(c), sum(x > 0 for x in c)
            m_lo, m_hi = poisson_ci(total, stores)
            s_lo, s_hi = share_ci(anyf, stores)
            print(
                f"  {name:<6} {tier:<8} false entries per report {total / stores:.3f} "
                f"[{m_lo:.3f}, {m_hi:.3f}]; reports with any {anyf}/{stores} = "
                f"{anyf / stores:.1%} [{s_lo:.1%}, {s_hi:.1%}]",
                flush=True,
            )


def weekly(histories: int, weeks: int, size: int, seed: int) -> None:
    print(f"== weekly looks: {histories} null histories, {weeks} weeks, {size:,} human games ==")
    t = time.perf_counter()
    ever: dict[str, Counter[str]] = {tier: Counter() for tier in TIERS}
    families: set[str] = set()
    any_history = dict.fromkeys(TIERS, 0)
    for h in range(histories):
        data = sy.generate(plan(size, seed + 7 + h, planted=False))
        n = data["games"].height
        cuts = np.linspace(0, n, weeks + 1).astype(int)
        con = duckdb.connect(":memory:")
        con.execute(sy.schema_sql())
        flagged: dict[str, set[str]] = {tier: set() for tier in TIERS}
        try:
            for w in range(weeks):
                part = _rows(data, cuts[w], cuts[w + 1])
                last = con.execute("SELECT max(received_at) FROM games").fetchone()[0]
                sy.insert(con, sy.arriving(part, last or sy.EPOCH), tag=f"h{h}w{w}")
                jobs.run(con, lambda fn, c=con: fn(c))
                f = report(con)
                families.update(f.families["family"].to_list())
                for tier in TIERS:
                    flagged[tier].update(r["family"] for r in entries(f, tier))
        finally:
            con.close()
        for tier in TIERS:
            ever[tier].update(flagged[tier])
            any_history[tier] += bool(flagged[tier])
        print(
            f"  history {h + 1}: families ever flagged {len(flagged['findings'])}, ever on "
            f"either tier {len(flagged['either'])}",
            flush=True,
        )
    print(f"families looked at: {len(families)}; {time.perf_counter() - t:.0f} s")
    for tier in TIERS:
        worst = max(ever[tier].values(), default=0)
        lo, hi = share_ci(worst, histories)
        print(
            f"  {tier:<8} the family most often ever flagged: {worst}/{histories} = "
            f"{worst / histories:.1%} [{lo:.1%}, {hi:.1%}] ({ever[tier].most_common(1) or 'none'}"
            f"); histories with any in {weeks} weeks: {any_history[tier]}/{histories}"
        )


def _rows(data: dict, a: int, b: int) -> dict:
    g = data["games"].slice(a, b - a)
    keep = g.select("gi")
    return {
        "games": g,
        **{k: data[k].join(keep, on="gi", how="semi") for k in ("pieces", "powers", "turns")},
    }


def planted(sizes: list[int], stores: int, seed: int) -> None:
    print(f"== planted effects: {stores} stores a size (found / as a finding or on watch) ==")
    for size in sizes:
        t = time.perf_counter()
        found: Counter[tuple[str, str, str]] = Counter()
        others: Counter[tuple[str, str]] = Counter()
        held = apart = variants = 0
        for i in range(stores):
            lineup: list[dict] = []
            reports = one_store(plan(size, seed + 5000 + 1000 * size + i, True), lineup)
            variants += len(lineup)
            held += sum(r["rate_lo"] < 0.60 < r["rate_hi"] for r in lineup)
            apart += sum(r["set_apart"] > 0.5 for r in lineup)
            for name, f in reports.items():
                for tier in TIERS:
                    rows = entries(f, tier)
                    for plant, hit in PLANTS.items():
                        found[name, tier, plant] += any(hit(r) for r in rows)
                    others[name, tier] += sum(
                        not any(hit(r) for hit in PLANTS.values()) for r in rows
                    )
        print(f"{size:>6,} human games: {time.perf_counter() - t:.0f} s")
        for name in POLICIES:
            for tier in TIERS:
                rates = "; ".join(f"{k} {_rate(found[name, tier, k], stores)}" for k in PLANTS)
                print(
                    f"  {name:<6} {tier:<8} found {rates}; other entries per report "
                    f"{others[name, tier] / stores:.2f}",
                    flush=True,
                )
        print(
            f"  the Setups page's rate of lineup {PLANTED_LINEUP} (one a variant played): its "
            f"interval holds 0.60 in {_rate(held, variants)}, set apart from its cells in "
            f"{_rate(apart, variants)}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stores", type=int, default=20, help="null stores a size")
    ap.add_argument("--sizes", default="2000,5000,20000", help="human games in the default cut")
    ap.add_argument("--histories", type=int, default=10, help="weekly null histories")
    ap.add_argument("--weeks", type=int, default=52)
    ap.add_argument("--weekly-size", type=int, default=20000, help="human games after all weeks")
    ap.add_argument("--planted", type=int, default=10, help="planted stores a size")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.stores:
        null_reports(sizes, a.stores, a.seed)
    if a.histories:
        weekly(a.histories, a.weeks, a.weekly_size, a.seed)
    if a.planted:
        planted(sizes, a.planted, a.seed)


if __name__ == "__main__":
    main()
