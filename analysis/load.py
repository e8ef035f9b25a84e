"""Games as a Polars frame, for what needs one row per game: the adjusted model's sample
(analysis.adjusted) and small-data checks. The agg_* tables never come through here: DuckDB
computes them (analysis.cubes).

SQL here selects, projects and *encodes*; it never counts. Text dimensions arrive as small
integer codes into per-read dictionaries (`enum_code`), a lineup '31524' as the integer 31524
and a power pick list as a 10-bit mask.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import cached_property

import duckdb
import polars as pl

from replays.vocabulary import POWERS

from .cuts import Cut
from .sources import games_where, table_exists
from .sql import sql_literal

EPOCH_MONDAY = dt.date(1970, 1, 5)  # week numbers count Mondays from here

__all__ = ["POWERS", "Data", "read", "read_games", "table_exists"]


@dataclass
class Games:
    frame: pl.DataFrame  # one row per game, codes (GAMES_SQL)
    dicts: dict[str, list]  # dimension -> its values; a code is an index into this list

    @property
    def games(self) -> pl.DataFrame:
        return self.frame


class Data:
    """The games of a cut in a store: what analysis.jobs.compute computes the tables of (in
    DuckDB, on `con`), and, read when first asked for, their frame."""

    def __init__(self, con: duckdb.DuckDBPyConnection, cut: Cut):
        self.con, self.cut = con, cut

    @cached_property
    def _read(self) -> Games:
        return read_games(self.con, games_where(self.cut))

    @property
    def games(self) -> pl.DataFrame:
        return self._read.frame

    @property
    def dicts(self) -> dict[str, list]:
        return self._read.dicts


def read(con: duckdb.DuckDBPyConnection, cut: Cut | None = None) -> Data:
    return Data(con, cut or Cut())


DICTS_SQL = """
SELECT list(DISTINCT board ORDER BY board), list(DISTINCT variant ORDER BY variant),
       list(DISTINCT mode ORDER BY mode), list(DISTINCT platform ORDER BY platform),
       list(DISTINCT client_version ORDER BY client_version),
       list(DISTINCT ruleset ORDER BY ruleset),
       list(DISTINCT reason ORDER BY reason),
       min(date_trunc('week', ended_at))::DATE, max(date_trunc('week', ended_at))::DATE
FROM ({games})
"""

GAMES_SQL = """
SELECT rowid::UINTEGER AS gk,
       enum_code(board::VARCHAR::{board}) AS board_c,
       board,
       enum_code(variant::{variant}) AS variant_c,
       enum_code(mode::{mode}) AS mode_c,
       coalesce(ai_level, 0)::UTINYINT AS ai_level_c,
       ai_side,
       enum_code(platform::{platform}) AS platform_c,
       enum_code(client_version::{client_version}) AS client_version_c,
       enum_code(ruleset::{ruleset}) AS ruleset_c,
       ((date_trunc('week', ended_at)::DATE - DATE '1970-01-05') // 7
        - {week0})::USMALLINT AS week_c,
       (ended_at::DATE - DATE '1970-01-01')::INTEGER AS day_n,
       "first", winner,
       enum_code(reason::{reason}) AS reason_c,
       turns,
       lineup_0::UINTEGER AS lineup_0,
       lineup_1::UINTEGER AS lineup_1,
       list_reduce(list_transform(powers_0, x -> (1::USMALLINT << enum_code(x::{power}))),
                   (a, b) -> a | b) AS mask_0,
       list_reduce(list_transform(powers_1, x -> (1::USMALLINT << enum_code(x::{power}))),
                   (a, b) -> a | b) AS mask_1,
       challenge_id
FROM ({games})
"""


def _enum(values: list[str]) -> str:
    # a type, not a value: it cannot be a parameter
    return "ENUM(" + ", ".join(sql_literal(v) for v in values) + ")"


def _dicts(row) -> dict[str, list]:
    boards, variants, modes, platforms, versions, rulesets, reasons, w0, w1 = row
    if w0 is None:  # no games
        boards, variants, modes, platforms, versions, reasons = [5], [], [], [], [], []
        rulesets = []
        w0 = w1 = EPOCH_MONDAY
    weeks = [w0 + dt.timedelta(days=7 * i) for i in range((w1 - w0).days // 7 + 1)]
    return {
        "board": [int(b) for b in boards],
        "variant": variants or ["classic"],
        "mode": modes or ["online"],
        "ai_level": [None, 1, 2, 3, 4],
        "platform": platforms or ["web"],
        "client_version": versions or ["0"],
        "ruleset": rulesets or ["standard"],
        "week": weeks,
        "reason": reasons or ["points"],
    }


def read_games(con: duckdb.DuckDBPyConnection, where: str, *, sample: int | None = None) -> Games:
    """The games matching `where` (a predicate on `games`) as a frame of codes, and the
    dictionaries of those codes. With `sample`, at most that many of them: those whose id
    hashes lowest, the same ones whichever run reads them (DuckDB keeps only a heap of
    `sample` rows while it scans)."""
    games = f"SELECT rowid, * FROM games WHERE game = 'slow6' AND {where}"
    if sample is not None:
        games += f" ORDER BY hash(game_id), game_id LIMIT {int(sample)}"
    # read once: the dictionaries and the frame both come from these rows
    con.execute(f"CREATE OR REPLACE TEMP TABLE _games_read AS {games}")
    try:
        rows = "SELECT * FROM _games_read"
        dicts = _dicts(con.execute(DICTS_SQL.format(games=rows)).fetchone())
        enums = {k: _enum([str(x) for x in v]) for k, v in dicts.items() if k != "week"}
        enums["power"] = _enum(list(POWERS))
        week0 = (dicts["week"][0] - EPOCH_MONDAY).days // 7
        frame = con.sql(GAMES_SQL.format(games=rows, week0=week0, **enums)).pl()
    finally:
        con.execute("DROP TABLE IF EXISTS _games_read")
    return Games(frame, dicts)
