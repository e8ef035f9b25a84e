"""A run's first half, on the reader's snapshot: compute what changes in each agg_* table into
Parquet files, without holding the writer (the server's uploads wait for it).

Per table, one of (an `Op`, applied by analysis.publish):
  replace  the table computed whole: a full run, a source recomputed whole, or a table
           without a time column (or not additive) whose source changed in some week;
  weeks    the rows of the changed weeks, computed again, replace theirs;
  merge    the counts of the new games, added to the rows with the same key (new keys
           inserted): every count is a sum over games;
  keys     agg_slide_matches: the rows of the matches that got a game, rebuilt from all
           their games.
DuckDB writes each file from its query (streaming, spilling past its memory_limit): no table
passes through Python.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from . import cubes, tables
from .games_sql import Selection
from .sql import sql_literal
from .watermark import SourcePlan, in_weeks

# new games at most this many are first copied, with their children, into temporary tables
# that every cube then reads (a few thousand rows: far cheaper than 25 scans of the store)
COPY_NEW = 200_000


@dataclass
class Op:
    table: str
    kind: str  # replace | weeks | merge | keys
    path: str
    selector: str = "TRUE"
    week: str | None = None
    weeks: tuple = ()
    key: str | None = None


def copy(con, sql: str, path: Path) -> str:
    con.execute(f"COPY ({sql}) TO {sql_literal(str(path))} (FORMAT parquet)")
    return str(path)


def _new_selection(con, p: SourcePlan) -> tuple[Selection, list[str]]:
    """The new games of a source: copied into temporary tables when few (returns their
    names, to drop), else read from the store through the predicate and rowid bounds."""
    name = p.source.name
    where = f"{p.cut_where} AND {p.new_where}"
    if p.new > COPY_NEW:
        return Selection(where, dict(p.bounds)), []
    temp = {name: f"_new_{name}"}
    con.execute(f"CREATE OR REPLACE TEMP TABLE _new_{name} AS SELECT * FROM {name} WHERE {where}")
    for child in p.source.children:
        bound = f"rowid > {p.bounds[child]}" if child in p.bounds else "TRUE"
        only = "AND (stuns > 0 OR catches > 0)" if child == "game_turns" else ""
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE _new_{child} AS SELECT * FROM {child} "
            f"WHERE {bound} {only} AND game_id IN (SELECT game_id FROM _new_{name})"
        )
        temp[child] = f"_new_{child}"
    return Selection("TRUE", tables=temp), list(temp.values())


def stage(con, plans: dict[str, SourcePlan], directory: Path, say) -> list[Op]:
    """Compute the plan's changes into files under `directory`; returns what to apply."""
    present = [p.source for p in plans.values()]
    groups = cubes.by_table(cubes.of(present))
    full = {n: Selection(p.cut_where).read_dicts(con, n) for n, p in plans.items()}
    ops: list[Op] = []
    t0 = time.perf_counter()

    def whole(cube: tables.Cube) -> bool:
        p = plans[cube.source]
        return p.full or (bool(p.changed) and (cube.week is None or cube.key is not None))

    replaced = [t for t, cs in groups.items() if any(whole(c) for c in cs)]
    ops += _replace(con, replaced, groups, full, directory)
    rest = {t: cs for t, cs in groups.items() if t not in replaced}
    changed = {n: p for n, p in plans.items() if not p.full and p.changed}
    for n, p in changed.items():
        weeks = {n: Selection(f"{p.cut_where} AND {in_weeks(p.changed)}").read_dicts(con, n)}
        mine = [(t, c) for t, cs in rest.items() for c in cs if c.source == n]
        shared = cubes.prepare(con, [c for _, c in mine], weeks)
        try:
            for t, c in mine:
                path = copy(con, cubes.sql(t, [c], weeks), directory / f"{t}-{n}-weeks.parquet")
                ops.append(Op(t, "weeks", path, c.selector, c.week, tuple(p.changed)))
        finally:
            cubes.drop(con, shared)
    for n, p in plans.items():
        if p.full or not p.new:
            continue
        sel, temps = _new_selection(con, p)
        sel = sel.read_dicts(con, n)
        try:
            # one cube a table and source
            mine = [(t, c) for t, cs in rest.items() for c in cs if c.source == n]
            shared = cubes.prepare(con, [c for _, c in mine], {n: sel})
            for t, c in mine:
                target = directory / f"{t}-{n}-new.parquet"
                if c.key is None:
                    ops.append(Op(t, "merge", copy(con, cubes.sql(t, [c], {n: sel}), target)))
                else:  # rebuild the rows of the keys the new games have, from all games
                    keys = f"SELECT {c.key} FROM {sel.table(n)} WHERE {sel.where}"
                    every = Selection(f"{p.cut_where} AND {c.key} IN ({keys})")
                    every = every.read_dicts(con, n)
                    rows = copy(con, cubes.sql(t, [c], {n: every}), target)
                    ops.append(Op(t, "keys", rows, key=c.key))
            cubes.drop(con, shared)
        finally:
            cubes.drop(con, temps)
    say(f"computed {len(ops)} changes in {time.perf_counter() - t0:.1f} s")
    return ops


def _replace(con, names, groups, selections, directory: Path) -> list[Op]:
    shared = cubes.prepare(con, [c for t in names for c in groups[t]], selections)
    try:
        return [
            Op(
                t,
                "replace",
                copy(con, cubes.sql(t, groups[t], selections), directory / f"{t}.parquet"),
            )
            for t in names
        ]
    finally:
        cubes.drop(con, shared)
