"""Lineup strength: the rank-in-file model (analysis.lineup_model) against per-lineup rates, on
synthetic games with a planted effect, over repeated seeds.

    python -m benchmarks.lineup_model [--sizes 2000,5000,20000] [--seeds 20]

For each scenario, size (games on that board, classic, human, one version) and seed: the games
of analysis.synthetic with the effect planted, counted per lineup from each side as agg_lineup
counts them; then
  - per-lineup rates (agg_lineup_rates: score test against 1/2, BH across the board's lineups):
    found when a planted lineup is flagged above 1/2;
  - the model (agg_lineup_model_terms): found when the planted rank-file cell is flagged above 0
    (BH across the N^2 cells); for a single planted lineup, when the model's prediction of that
    lineup is flagged (agg_lineup_model), and where it ranks.
Null scenarios (nothing planted) give the share of seeds with any flag: the false alarms.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

from analysis import lineup_model as lm
from analysis import synthetic as sy
from analysis import views


def cell(size: int, rank: int, file: int, effect: float) -> dict[str, float]:
    names, ranks = lm.lineups(size)
    return {nm: effect for nm, r in zip(names, ranks, strict=True) if r[file] == rank}


# (name, board, lineup_effects, the planted cell (rank, file) or None, the planted lineup)
SCENARIOS = [
    ("7x7 rank 7 on file d +0.2", 7, cell(7, 7, 3, 0.2), (7, 3), None),
    ("5x5 rank 5 on file c +0.2", 5, cell(5, 5, 2, 0.2), (5, 2), None),
    ("5x5 lineup 31524 scores 0.60", 5, {"31524": 0.42}, None, "31524"),
    ("7x7 null", 7, {}, None, None),
    ("5x5 null", 5, {}, None, None),
]


def counts(board: int, effects: dict, n: int, seed: int) -> pl.DataFrame:
    """Sides per lineup (n, wins, draws, losses, score), as agg_lineup holds them."""
    p = sy.Plan(n=n, seed=seed, modes=(("online", 1),), versions=(("3.0.0", 1),),
                p_board7=1.0 if board == 7 else 0.0, p_hidden=0.0, p_powers=0.0,
                lineup_effects=effects)  # fmt: skip
    g = sy.generate(p, games_only=True)["games"]
    sides = pl.concat(
        [
            g.select(
                "board",
                "variant",
                lineup=pl.col(f"lineup_{s}"),
                res=pl.when(pl.col("winner").is_null())
                .then(0)
                .when(pl.col("winner") == s)
                .then(1)
                .otherwise(-1),
            )
            for s in (0, 1)
        ]
    )
    return sides.group_by("board", "variant", "lineup").agg(
        n=pl.len(),
        wins=(pl.col("res") == 1).sum(),
        draws=(pl.col("res") == 0).sum(),
        losses=(pl.col("res") == -1).sum(),
    )


def one(scenario, n: int, seed: int) -> dict:
    _, board, effects, planted_cell, planted_lineup = scenario
    c = counts(board, effects, n, seed)
    rates = views.rates(c, ["board", "variant", "lineup"], family=["board", "variant"])
    t = time.perf_counter()
    lines, terms = lm.tables(c.with_columns(score=pl.col("wins") + pl.col("draws") / 2))
    fit_s = time.perf_counter() - t
    up = rates.filter(pl.col("flagged") & (pl.col("score_rate") > 0.5))
    out = {"fit_s": fit_s, "rates_any": bool(rates["flagged"].any())}
    out["model_any"] = bool(terms["flagged"].any() or lines["flagged"].any())
    if planted_cell is not None:
        r, f = planted_cell
        held = {k for k in effects}
        out["rates_found"] = bool(up["lineup"].is_in(list(held)).any())
        row = terms.filter((pl.col("rank") == r) & (pl.col("file") == f)).row(0, named=True)
        out["model_found"] = bool(row["flagged"] and row["estimate"] > 0)
    if planted_lineup is not None:
        out["rates_found"] = bool(up["lineup"].is_in([planted_lineup]).any())
        row = lines.filter(pl.col("lineup") == planted_lineup).row(0, named=True)
        out["model_found"] = bool(row["flagged"] and row["predicted"] > 0.5)
        out["model_rank"] = int(row["strength_rank"])
        out["shrunk"] = float(rates.filter(pl.col("lineup") == planted_lineup)["shrunk"][0])
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000,5000,20000")
    ap.add_argument("--seeds", type=int, default=20)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'scenario':32} {'games':>7} {'seeds':>5}  found by: {'rates':>6} {'model':>6}"
          f"   any flag: {'rates':>6} {'model':>6}  fit ms")  # fmt: skip
    for sc in SCENARIOS:
        for n in sizes:
            rs = [one(sc, n, 1000 * n + s) for s in range(args.seeds)]
            k = len(rs)

            def share(key, rs=rs, k=k):
                vals = [r[key] for r in rs if key in r]
                return f"{sum(vals)}/{k}" if vals else "--"

            fit_ms = 1000 * float(np.median([r["fit_s"] for r in rs]))
            line = (f"{sc[0]:32} {n:>7,} {k:>5}  found by: {share('rates_found'):>6} "
                    f"{share('model_found'):>6}   any flag: {share('rates_any'):>6} "
                    f"{share('model_any'):>6}  {fit_ms:6.0f}")  # fmt: skip
            if "model_rank" in rs[0]:
                rank = int(np.median([r["model_rank"] for r in rs]))
                shrunk = float(np.median([r["shrunk"] for r in rs]))
                line += f"   model rank (median) {rank}, shrunk rate {shrunk:.3f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
