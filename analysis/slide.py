"""Slide (issue 6): computed once the store has the slide_* tables."""

from __future__ import annotations

import polars as pl


def tables(slide: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    if not slide:
        return {}
    return {}
