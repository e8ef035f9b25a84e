"""The rate tables (`*_rates`, agg_lineup_vs, agg_trends, Slide's), from the additive tables.

`fetch(table, cut)` returns an additive table's rows in a cut: a run reads them from the store
(analysis.publish.store_fetch), analysis.jobs.compute from its frames. Either way the work
grows with the tables, which have a row per combination of dimensions, not with the games.
"""

from __future__ import annotations

import polars as pl

from . import lineup_model, opponents, overview, pieces, powers, setups, slide, trends
from .cuts import Cut

AREAS = (overview, setups, lineup_model, powers, pieces, opponents)


def tables(fetch, cut: Cut, slide_cut: Cut | None) -> dict[str, pl.DataFrame]:
    """cut: the default (balance) cut; slide_cut: Slide's, None without Slide tables. Each
    table but agg_trends (which has a ruleset key of its own) gets a first column `ruleset`
    naming the ruleset(s) its cut covers (RS6.1: a figure says which)."""
    out: dict[str, pl.DataFrame] = {}
    for area in AREAS:
        out.update({t: labelled(f, cut) for t, f in area.rate_tables(fetch, cut).items()})
    out["agg_trends"] = trends.table(fetch, cut)
    if slide_cut is not None:
        out.update(
            {t: labelled(f, slide_cut) for t, f in slide.rate_tables(fetch, slide_cut).items()}
        )
    return out


def covers(cut: Cut) -> str:
    """The ruleset(s) a cut's games were played under, in words for a column and a page."""
    return " + ".join(cut.ruleset) if cut.ruleset else "every ruleset (pooled)"


def labelled(frame: pl.DataFrame, cut: Cut) -> pl.DataFrame:
    """`frame` with a first column `ruleset`: the ruleset(s) of the cut it was computed on."""
    if not frame.width or "ruleset" in frame.columns:
        return frame
    return frame.select(pl.lit(covers(cut)).alias("ruleset"), pl.all())
