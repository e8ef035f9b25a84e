"""Every cube of every agg_* table (analysis.tables.Cube), and the SQL of a table for a
selection of each of its sources' games.

All counting happens here, in DuckDB: it aggregates in parallel and spills to disk past its
memory_limit, so a run's memory does not grow with the store. Python only ever holds the
aggregated rows (and, for the adjusted model, a bounded sample of games).
"""

from __future__ import annotations

from . import opponents, overview, pieces, powers, setups, slide, tables
from .games_sql import Selection
from .sources import Source
from .sql import sql_identifier

ALL = (
    *overview.CUBES,
    *setups.CUBES,
    *powers.CUBES,
    *pieces.CUBES,
    *opponents.CUBES,
    *slide.CUBES,
)
# temporary tables several cubes read, built once per selection: name -> its SQL
SHARED = {"_lane": pieces.lane, "_lineups": setups.lineups}


def of(sources: list[Source]) -> list[tables.Cube]:
    """The cubes of these sources (a store without Slide tables has no Slide cubes)."""
    names = {s.name for s in sources}
    return [c for c in ALL if c.source in names]


def by_table(cubes: list[tables.Cube]) -> dict[str, list[tables.Cube]]:
    out: dict[str, list[tables.Cube]] = {}
    for c in cubes:
        out.setdefault(c.table, []).append(c)
    return out


def columns(table: str) -> str:
    """The table's columns in their documented order (an additive table's are fixed by
    analysis.tables; another table's are its query's)."""
    if table not in tables.ADDITIVE:
        return "*"
    return ", ".join(sql_identifier(c) for c in tables.columns(table))


def sql(table: str, cubes: list[tables.Cube], selections: dict[str, Selection]) -> str:
    """The rows of `table` that the selected games of its cubes' sources give."""
    parts = [
        f"SELECT {columns(table)} FROM ({c.sql(selections[c.source])})"
        for c in cubes
        if c.source in selections
    ]
    return "\nUNION ALL\n".join(parts)


def prepare(con, cubes: list[tables.Cube], selections: dict[str, Selection]) -> list[str]:
    """Build the shared temporary tables these cubes read, for their source's selection;
    returns their names (drop them after)."""
    uses = {u: c.source for c in cubes if c.source in selections for u in c.uses}
    for name, source in sorted(uses.items()):
        con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {SHARED[name](selections[source])}")
    return sorted(uses)


def drop(con, names: list[str]) -> None:
    for name in names:
        con.execute(f"DROP TABLE IF EXISTS {name}")
