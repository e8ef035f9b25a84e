"""Trends: every score rate by week and by client version, in one long table, per ruleset
(a week's games of two rulesets are two rows, never one: rulesets.md RS6.1).

Lineup trends cover 5x5 only (agg_lineup_week): 7x7 has 5,040 lineups, a few games each a week.
"""

from __future__ import annotations

import polars as pl

from . import views
from .cuts import HUMAN_MODES, Cut, version_key

OUT = ["n", "wins", "draws", "losses"]
FILES = "abcdefg"


def _long(frame: pl.DataFrame, metric: str, keys: list[str], key: pl.Expr, period: str):
    """Sum within (board, variant, keys, period), then name the key: strings are made only
    for the (few) aggregated rows."""
    df = (
        frame.lazy()
        .group_by("board", "variant", "ruleset", *keys, period)
        .agg(pl.col(c).sum() for c in OUT)
        .filter(pl.col("n") > 0)
    )
    return df.select(
        pl.lit(metric).alias("metric"),
        "board",
        pl.col("variant").cast(pl.String),
        pl.col("ruleset").cast(pl.String),
        key.cast(pl.String).alias("key"),
        pl.lit(period).alias("period_kind"),
        pl.col(period).cast(pl.String).alias("period"),
        *OUT,
    )


def table(fetch, cut: Cut) -> pl.DataFrame:
    """`cut` is the default cut; trends keep its modes but span every client version."""
    human = Cut(mode=cut.mode or HUMAN_MODES)
    renamed = {f"picked_{x}": x for x in OUT}
    file = pl.col("file").replace_strict(dict(enumerate(FILES)), return_dtype=pl.String)
    pair = pl.col("power_a").cast(pl.String) + "+" + pl.col("power_b").cast(pl.String)
    sources = [
        ("first_move", fetch("agg_first_move", human), [], pl.lit("")),
        ("lineup", fetch("agg_lineup_week", human), ["lineup"], pl.col("lineup")),
        ("setup_cell", fetch("agg_setup_cell", human), ["rank", "file"],
         pl.col("rank").cast(pl.String) + "@" + file),
        ("power_picked", fetch("agg_power", human).select(pl.exclude(OUT)).rename(renamed),
         ["power"], pl.col("power")),
        ("power_pair", fetch("agg_power_pair", human), ["power_a", "power_b"], pair),
        ("vs_ai", fetch("agg_vs_ai", Cut(mode=("computer",))), ["ai_level"], pl.col("ai_level")),
        ("challenge", fetch("agg_challenge", Cut(mode=("challenge",))), ["challenge_id"],
         pl.col("challenge_id")),
    ]  # fmt: skip
    parts = [
        _long(frame, metric, keys, key, period)
        for metric, frame, keys, key in sources
        for period in ("week", "client_version")
        if frame.height
    ]
    if not parts:
        return _empty()
    df = pl.concat(pl.collect_all(parts))
    order = sorted(df["period"].unique().to_list(), key=_period_key)
    df = df.with_columns(
        period_order=pl.col("period").replace_strict(
            {p: i for i, p in enumerate(order)}, return_dtype=pl.Int32
        )
    ).sort("metric", "board", "variant", "ruleset", "key", "period_kind", "period_order")
    return views.add_score_rates(df, (), None, shrink=False)


def _period_key(p: str):
    # weeks (ISO dates) sort as text; versions by semantic version
    return (0, p, ()) if p[:4].isdigit() and p[4:5] == "-" else (1, "", version_key(p))


def _empty() -> pl.DataFrame:
    return pl.DataFrame(
        schema={"metric": pl.String, "board": pl.UInt8, "variant": pl.String,
                "ruleset": pl.String, "key": pl.String,
                "period_kind": pl.String, "period": pl.String, "n": pl.Int64, "wins": pl.Int64,
                "draws": pl.Int64, "losses": pl.Int64, "period_order": pl.Int32}
    )  # fmt: skip
