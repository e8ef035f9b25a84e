"""What a run has to count: the watermark the last run left, and what changed since.

The embedded store keeps no change feed, and its rows arrive out of order (`received_at` is
stamped when a request arrives, its rows commit later; reverify inserts games with their old
`received_at` and deletes others), so a run does not trust a timestamp alone. Per source
(analysis.sources) it keeps:

  boundary   the latest `received_at` it saw, less LAG;
  weeks      for the games received at or before the boundary, per week of `ended_at` (the
             weeks of the tables): their count and the xor of their ids' hashes (jobs_weeks);
  recent     each game received after the boundary: its week and id hash (jobs_recent);
  marks      per child table, its row count and largest rowid.

The next run finds (SourcePlan):

  changed weeks  a week whose games up to the boundary no longer match (a game went away or
                 arrived late: reverify, a swap, a late commit), or that lost a recent game:
                 its rows in every weekly table are recomputed (most of a source changed: the
                 source is recomputed whole);
  new games      received after the boundary and not recent, in a week that did not change:
                 counted on their own and added in, so the run costs in proportion to them;
  child bounds   the children of new games are among the rows past the marks, as long as no
                 row of the table went away (no week changed, the count adds up).

Finding them reads one column scan of the source (its week, `received_at` and id hash: ~0.3 s
at ten million games) and the few rows past the boundary; it does not trust rowids alone,
which DuckDB renumbers when a checkpoint compacts deleted rows. A plan is all the rest of a run
knows of the store: new games as a predicate, changed weeks, child bounds. It works on a
lake (DuckLake) as on the file: the lake keeps row ids through compaction. Its change feed
(the rows inserted and deleted since a snapshot) could replace the column scan there.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from .cuts import Cut
from .sources import Source
from .sql import sql_literal

LAG = dt.timedelta(minutes=5)  # far longer than a row waits between arrival and commit
MOST = 0.5  # changed weeks holding more than this share of a source: recompute it whole

WEEKS_DDL = """CREATE TABLE IF NOT EXISTS jobs_weeks (
    source VARCHAR NOT NULL, week DATE NOT NULL, games BIGINT NOT NULL, ids UBIGINT NOT NULL)"""
RECENT_DDL = """CREATE TABLE IF NOT EXISTS jobs_recent (
    source VARCHAR NOT NULL, week DATE NOT NULL, h UBIGINT NOT NULL)"""
WEEK = "date_trunc('week', ended_at)::DATE"


@dataclass
class SourceState:
    boundary: dt.datetime | None = None
    marks: dict[str, list[int]] = field(default_factory=dict)  # child -> [rows, max rowid]

    def as_json(self) -> dict:
        b = self.boundary.isoformat() if self.boundary is not None else None
        return {"boundary": b, "marks": self.marks}

    @classmethod
    def from_json(cls, d: dict) -> SourceState:
        b = d.get("boundary")
        return cls(dt.datetime.fromisoformat(b) if b else None, dict(d.get("marks") or {}))


@dataclass
class SourcePlan:
    source: Source
    cut_where: str  # the run's cut on the source
    full: bool
    why_full: str | None
    total: int  # games of the source in the cut
    new: int = 0
    new_where: str = "FALSE"  # the new games, on the source's columns
    changed: list[dt.date] = field(default_factory=list)
    changed_games: int = 0
    bounds: dict[str, int] = field(default_factory=dict)
    state: SourceState = field(default_factory=SourceState)
    weeks: list[tuple[dt.date, int, int]] = field(default_factory=list)  # next jobs_weeks
    recent_sql: str = ""  # next jobs_recent rows of this source, as a query

    @property
    def idle(self) -> bool:
        return not self.full and not self.new and not self.changed


def _ts(value: dt.datetime) -> str:
    return f"TIMESTAMP {sql_literal(value.isoformat(sep=' '))}"


def in_weeks(weeks, column: str = WEEK) -> str:
    """`column` is one of these weeks (FALSE for none)."""
    if not weeks:
        return "FALSE"
    listed = ", ".join(f"DATE {sql_literal(w.isoformat())}" for w in sorted(weeks))
    return f"{column} IN ({listed})"


def previous(con, names: list[str], tables: set[str]) -> dict[str, dict]:
    """The last run's weeks: {source: {week: (games, ids)}} (empty if it left none);
    `tables`: the store's tables."""
    weeks: dict[str, dict] = {n: {} for n in names}
    if "jobs_weeks" in tables:
        for src, week, n, ids in con.execute("SELECT * FROM jobs_weeks").fetchall():
            if src in weeks:
                weeks[src][week] = (int(n), int(ids))
    return weeks


def plan(
    con, source: Source, cut: Cut, prev: SourceState | None, prev_weeks: dict, why_full=None
) -> SourcePlan:
    """What to count of `source` since the state `prev` (None, or `why_full`: everything)."""
    where = source.where(cut)
    base = f"FROM {source.name} WHERE {where}"
    if prev is None or why_full:
        total, latest = con.execute(f"SELECT count(*), max(received_at) {base}").fetchone()
        return _full(con, source, where, total, latest, why_full or "no watermark")
    bp = prev.boundary
    up_to = f"received_at <= {_ts(bp)}" if bp else "FALSE"
    after = f"received_at > {_ts(bp)}" if bp else "TRUE"
    h = "hash(game_id)"
    old = {
        w: (int(n), int(x))
        for w, n, x in con.execute(
            f"SELECT {WEEK}, count(*), bit_xor({h}) {base} AND {up_to} GROUP BY 1"
        ).fetchall()
    }
    # the rows past the boundary: few (the last LAG and the new games), and the latest
    n_after, latest = con.execute(
        f"SELECT count(*), max(received_at) {base} AND {after}"
    ).fetchone()
    total = sum(n for n, _ in old.values()) + n_after
    boundary = max(bp, latest - LAG) if bp and latest else (latest - LAG if latest else bp)
    changed = {w for w in set(old) | set(prev_weeks) if old.get(w) != prev_weeks.get(w)}
    recent = f"(SELECT week, h FROM jobs_recent WHERE source = {sql_literal(source.name)})"
    a = f"(SELECT {WEEK} AS week, {h} AS h, received_at {base} AND {after})"
    settled = f"a.received_at <= {_ts(boundary)}" if boundary else "FALSE"
    late = {}
    for w, new, n, sn, sx in con.execute(
        f"""SELECT a.week, count(*) FILTER (r.h IS NULL), count(*),
                   count(*) FILTER ({settled}), bit_xor(a.h) FILTER ({settled})
            FROM {a} a LEFT JOIN {recent} r USING (week, h) GROUP BY 1"""
    ).fetchall():
        late[w] = (int(new), int(n), int(sn), int(sx or 0))
    gone = con.execute(
        f"SELECT DISTINCT week FROM {recent} r ANTI JOIN {a} a USING (week, h)"
    ).fetchall()
    changed |= {w for (w,) in gone}
    changed_games = sum(old.get(w, (0, 0))[0] + late.get(w, (0, 0))[1] for w in changed)
    if total and changed_games > MOST * total:
        why = f"{len(changed)} weeks changed, {changed_games:,} of {total:,} games"
        return _full(con, source, where, total, latest, why, boundary)
    weeks = dict(old)
    for w, (_, _, sn, sx) in late.items():
        n0, x0 = weeks.get(w, (0, 0))
        weeks[w] = (n0 + sn, x0 ^ sx)
    new = sum(v[0] for w, v in late.items() if w not in changed)
    out = SourcePlan(source, where, False, None, int(total), new=new, changed=sorted(changed))
    out.changed_games = changed_games
    own = WEEK.replace("ended_at", f"{source.name}.ended_at")
    out.new_where = (
        f"{after} AND NOT {in_weeks(changed)} AND NOT EXISTS (SELECT 1 FROM jobs_recent r "
        f"WHERE r.source = {sql_literal(source.name)} AND r.week = {own} "
        f"AND r.h = hash({source.name}.game_id))"
    )
    out.weeks = [(w, n, x) for w, (n, x) in sorted(weeks.items()) if n]
    out.recent_sql = _recent(source, where, boundary)
    out.state = SourceState(boundary, {})
    if _children(con, source, out, prev):
        why = "rows of stored games were rewritten (balance reverify --rebuild)"
        return _full(con, source, where, total, latest, why, boundary)
    return out


def _full(con, source, where, total, latest, why, boundary=None) -> SourcePlan:
    if latest is not None:
        boundary = max(boundary, latest - LAG) if boundary else latest - LAG
    out = SourcePlan(source, where, True, why, int(total))
    if boundary is not None:
        out.weeks = [
            (w, int(n), int(x))
            for w, n, x in con.execute(
                f"SELECT {WEEK}, count(*), bit_xor(hash(game_id)) FROM {source.name} "
                f"WHERE {where} AND received_at <= {_ts(boundary)} GROUP BY 1 ORDER BY 1"
            ).fetchall()
        ]
    out.recent_sql = _recent(source, where, boundary)
    out.state = SourceState(boundary, {})
    _children(con, source, out, None)
    return out


def _recent(source: Source, where: str, boundary) -> str:
    after = f"received_at > {_ts(boundary)}" if boundary else "TRUE"
    return (
        f"SELECT {sql_literal(source.name)} AS source, {WEEK} AS week, hash(game_id) AS h "
        f"FROM {source.name} WHERE {where} AND {after}"
    )


def _children(con, source: Source, out: SourcePlan, prev: SourceState | None) -> bool:
    """The rowid marks for the next run, and the bounds of this run's new games' children;
    whether rows at or below a mark went away while no week changed: stored games' rows were
    rewritten in place (reverify --rebuild: same games, same times, new facts), which no
    week's count or id hash shows, so the source is recomputed whole."""
    rewritten = False
    for child in source.children:
        rows = con.execute(f"SELECT count(*) FROM {child}").fetchone()[0]
        mark = (prev.marks.get(child) if prev else None) if not out.changed else None
        if mark is not None:
            n0, m0 = mark
            past, top = con.execute(
                f"SELECT count(*), max(rowid) FROM {child} WHERE rowid > {int(m0)}"
            ).fetchone()
            if rows - past == n0:  # no row at or below the mark went away
                out.bounds[child] = int(m0)
                out.state.marks[child] = [int(rows), int(top if top is not None else m0)]
                continue
            rewritten = True
        top = con.execute(f"SELECT max(rowid) FROM {child}").fetchone()[0]
        out.state.marks[child] = [int(rows), int(top if top is not None else -1)]
    return rewritten
