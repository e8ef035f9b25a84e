"""The adjusted model's games: at most SAMPLE of the default cut, those whose ids hash lowest,
kept between runs (jobs_sample) so that a run does not scan the store for them.

Lowest hashes are a uniform sample that any order of runs agrees on: the next sample is the
lowest SAMPLE of the last one and the run's new games of the cut. A run scans the store
instead (one top-SAMPLE pass, DuckDB keeping a heap of SAMPLE rows) when it is a full run, when
some weeks of games changed (a sampled game may have gone), or when the default cut is another
one than the last run's (a new latest client version: its games were all new, but the scan is
simple and rare).
"""

from __future__ import annotations

import polars as pl

from .cuts import Cut
from .games_sql import pick_mask
from .sources import games_where

# a model of about 25 terms: at 100,000 games their standard errors are 0.01 to 0.02 log-odds
SAMPLE = 100_000
DDL = """CREATE TABLE IF NOT EXISTS jobs_sample (
    h UBIGINT NOT NULL, game_id UUID NOT NULL, "first" UTINYINT NOT NULL,
    board UTINYINT NOT NULL, winner UTINYINT, mask_0 INTEGER, mask_1 INTEGER,
    lineup_0 UINTEGER NOT NULL, lineup_1 UINTEGER NOT NULL)"""
ORDER = "h, game_id"


def rows_sql(where: str, limit: int) -> str:
    """At most `limit` games of `games` matching `where`, those whose ids hash lowest, with
    what the adjusted model needs of each and their client version and mode (the version
    comparison's sample of a version)."""
    rows = _rows("games", where, extra=", client_version, mode")
    return f"SELECT * FROM ({rows}) ORDER BY {ORDER} LIMIT {int(limit)}"


def _rows(table: str, where: str, extra: str = "") -> str:
    """What the model needs of each game of `table` matching `where`, as jobs_sample holds it
    (and the `extra` columns)."""
    return f"""SELECT hash(game_id) AS h, game_id, "first", board, winner,
       {pick_mask("powers_0")} AS mask_0, {pick_mask("powers_1")} AS mask_1,
       lineup_0::UINTEGER AS lineup_0, lineup_1::UINTEGER AS lineup_1{extra}
FROM {table} WHERE game = 'slow6' AND {where}"""


def sql(run_cut: Cut, cut: Cut, new_games: str | None) -> str:
    """The next sample of the games in both cuts (the run's and the default): from the kept
    one and the new games (`new_games`: a predicate on games), or, None, from the store."""
    where = f"{games_where(run_cut)} AND {cut.sql_where()}"
    if new_games is None:
        source = _rows("games", where)
    else:
        source = f"SELECT * FROM jobs_sample UNION ALL {_rows('games', f'{where} AND {new_games}')}"
    return f"SELECT * FROM ({source}) ORDER BY {ORDER} LIMIT {SAMPLE}"


def frame(con, sample_sql: str) -> pl.DataFrame:
    """The sample as the frame analysis.adjusted.design takes, in hash order (the same order
    whichever way it was made, so the fit's sums are too)."""
    return model_frame(con.sql(f"SELECT * FROM ({sample_sql}) ORDER BY {ORDER}").pl())


def model_frame(games: pl.DataFrame) -> pl.DataFrame:
    """Sampled rows (`rows_sql`'s columns) as the frame analysis.adjusted.design takes."""
    winner = pl.col("winner")
    res0 = pl.when(winner.is_null()).then(0).when(winner == 0).then(1).otherwise(-1)
    return games.select(
        "first", "board", res0.cast(pl.Int8).alias("res0"), "mask_0", "mask_1", "lineup_0",
        "lineup_1",
    )  # fmt: skip
