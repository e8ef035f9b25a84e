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
    """cut: the default (balance) cut; slide_cut: Slide's, None without Slide tables."""
    out: dict[str, pl.DataFrame] = {}
    for area in AREAS:
        out.update(area.rate_tables(fetch, cut))
    out["agg_trends"] = trends.table(fetch, cut)
    if slide_cut is not None:
        out.update(slide.rate_tables(fetch, slide_cut))
    return out
