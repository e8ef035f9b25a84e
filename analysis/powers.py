"""Powers: pick rate, picked vs not, used vs held, turn of use, pairs, power against power."""

from __future__ import annotations

from itertools import combinations

import polars as pl

from . import views
from .cuts import Cut
from .frames import LIGHT_DIMS, POWER, POWERS, Base, bit, count

PAIRS = list(combinations(range(len(POWERS)), 2))
NAME = dict(enumerate(POWERS))


def _round(turn: pl.Expr) -> pl.Expr:
    """1-based round of a 0-based log turn (a round = one turn of each side)."""
    return (turn.cast(pl.Int32) // 2 + 1).cast(pl.UInt16)


def _long(wide: pl.LazyFrame, keys: dict[str, tuple], names: tuple[str, ...]) -> pl.LazyFrame:
    """From per-(cell, res) counts in columns named by `keys`, to one row per (cell, key) with
    n, wins, draws, losses."""
    res = pl.col("res")
    v = pl.col("value")
    long = wide.unpivot(index=["cell", "res"], on=list(keys), variable_name="key")
    table = pl.LazyFrame(
        {"key": list(keys), **{nm: [k[i] for k in keys.values()] for i, nm in enumerate(names)}}
    ).with_columns(pl.col(nm).replace_strict(NAME, return_dtype=POWER) for nm in names)
    return (
        long.group_by("cell", "key")
        .agg(
            v.sum().cast(pl.Int64).alias("n"),
            v.filter(res == 1).sum().cast(pl.Int64).alias("wins"),
            v.filter(res == 0).sum().cast(pl.Int64).alias("draws"),
            v.filter(res == -1).sum().cast(pl.Int64).alias("losses"),
        )
        .join(table, on="key")
        .drop("key")
    )


def cubes(b: Base) -> dict[str, pl.LazyFrame]:
    sp = b.sides.lazy().filter(pl.col("mask").is_not_null())
    bits = [bit("mask", i).alias(f"b{i}") for i in range(len(POWERS))]
    obits = [bit("opp_mask", i).alias(f"o{i}") for i in range(len(POWERS))]
    # picks by full cell; pairs and power against power (145 counts a side) by coarse cell
    wide = (
        sp.select("cell", "res", *bits)
        .group_by("cell", "res")
        .agg(
            pl.len().cast(pl.Int64).alias("sides"),
            *(pl.col(f"b{i}").sum().alias(f"p{i}") for i in range(len(POWERS))),
        )
    )
    combos = (
        sp.select(b.dims.coarse(), "res", *bits, *obits)
        .group_by("cell", "res")
        .agg(
            *((pl.col(f"b{i}") & pl.col(f"b{j}")).sum().alias(f"a{i}_{j}") for i, j in PAIRS),
            *(
                (pl.col(f"b{i}") & pl.col(f"o{j}")).sum().alias(f"v{i}_{j}")
                for i in range(len(POWERS))
                for j in range(len(POWERS))
            ),
        )
    )
    picked = _long(wide, {f"p{i}": (i,) for i in range(len(POWERS))}, ("power",))
    base = _long(wide, {"sides": (0,)}, ("power",)).drop("power")
    u = b.powers_used.lazy()
    res = pl.col("res")
    used = u.group_by(
        "cell", pl.col("power_c").replace_strict(NAME, return_dtype=POWER).alias("power")
    ).agg(  # fmt: skip
        pl.len().cast(pl.Int64).alias("used_n"),
        count(res == 1, "used_wins"),
        count(res == 0, "used_draws"),
        count(res == -1, "used_losses"),
        _round(pl.col("used_turn")).cast(pl.Int64).sum().alias("used_round_sum"),
    )
    out = ("n", "wins", "draws", "losses")
    power = (
        picked.rename({c: f"picked_{c}" for c in out})
        .join(base.rename({c: f"sides_{c}" for c in out}), on="cell")
        .join(used, on=["cell", "power"], how="left")
        .with_columns(pl.col("^used_.*$").fill_null(0))
        .with_columns(
            *((pl.col(f"sides_{c}") - pl.col(f"picked_{c}")).alias(f"not_{c}") for c in out),
            *(
                (pl.col(f"picked_{c}") - pl.col(f"used_{c}" if c != "n" else "used_n")).alias(
                    f"held_{c}"
                )
                for c in out
            ),
        )
        .drop("sides_wins", "sides_draws", "sides_losses")
        .select("cell", "power", "sides_n", "^picked_.*$", "^not_.*$", "^used_.*$", "^held_.*$")
    )
    used_turn = u.group_by(
        b.dims.coarse(),
        pl.col("power_c").replace_strict(NAME, return_dtype=POWER).alias("power"),
        _round(pl.col("used_turn")).alias("round"),
    ).agg(pl.len().cast(pl.Int64).alias("uses"))
    pairs = _long(combos, {f"a{i}_{j}": (i, j) for i, j in PAIRS}, ("power_a", "power_b"))
    vs = _long(
        combos,
        {f"v{i}_{j}": (i, j) for i in range(len(POWERS)) for j in range(len(POWERS))},
        ("power", "opp_power"),
    )
    return {
        "agg_power": b.decode(power),
        "agg_power_used_turn": b.decode(used_turn, LIGHT_DIMS),
        "agg_power_pair": b.decode(pairs.filter(pl.col("n") > 0), LIGHT_DIMS),
        "agg_power_vs": b.decode(vs.filter(pl.col("n") > 0), LIGHT_DIMS),
    }


def rate_tables(c: dict[str, pl.DataFrame], b: Base, cut: Cut) -> dict[str, pl.DataFrame]:
    power = cut.apply(c["agg_power"])
    return {
        "agg_power_rates": views.power_rates(power),
        "agg_power_pair_rates": views.pair_rates(cut.apply(c["agg_power_pair"]), power),
        "agg_power_vs_rates": views.rates(
            cut.apply(c["agg_power_vs"]), ["board", "power", "opp_power"], family=["board"]
        ),
    }
