"""`balance jobs run`: bring every agg_* table up to date with the store.

    summary = run(read_con, write, progress=print)

`read_con` is a DuckDB connection or cursor to read from; `write(fn)` must call `fn(con)` with
a connection that may write (the server passes its Store's writer; the CLI a plain connection).

A run has two halves. On `read_con`, in one snapshot: find what changed since the last run
(analysis.watermark: the games received since its watermark, the weeks whose games changed),
and have DuckDB compute what that changes in each additive table into Parquet files
(analysis.stage); read the adjusted model's bounded sample and fit it. Then `fn`, on the
writer and in one transaction: apply those changes, compute the rate tables from the new
counts, keep the watermark, append a row to agg_runs (analysis.publish). So a run after N new
games costs in proportion to N (and to the size of the tables, not of the store), and readers
see either the old tables or the new ones.

A full run computes everything from the games: the first run, `full` (or `force`), another
job version or cut, a table missing, or most of a source changed. It gives the same tables
as any sequence of incremental runs over the same games
(tests/analysis/test_analysis_incremental.py).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from . import adjusted, cubes, live_version, rates, sample, sources, stage, watermark
from .cuts import Cut
from .games_sql import Selection
from .publish import publish
from .sql import sql_literal

# Bump when the meaning or shape of any agg_* table changes: a run with another version is
# always a full run.
# 2.0: incremental runs; agg_lineup_week, agg_lineup_pair; agg_lineup_vs is 5x5 only;
#      agg_adjusted is fitted on at most adjusted.SAMPLE games
# 2.1: the default cut is the live version (analysis.live_version), not the newest seen
# 2.2: agg_challenge.solve_turns_sum; challenge and lane-distance tests against the board's
#      own rate; the shrinkage prior by maximum marginal likelihood
# 2.3: agg_adjusted has family, q_value, flagged; agg_lineup_model, agg_lineup_model_terms
# 2.4: every table has a `ruleset` dimension (rulesets.md RS6.1); the default cut is the live
#      version and its ruleset; the rate tables and agg_adjusted say which ruleset they cover
# 2.5: agg_ingest_status counts verified Slide games too (the quarantined share's denominator)
# 2.6: agg_lineup_model has each lineup's own effect (own_effect, set_apart) and its rate
#      (rate, rate_lo, rate_hi); strength_rank ranks the rate; the cells are fitted without
#      the lineups set apart
JOB_VERSION = "2.6"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def last_run(con, names: set[str] | None = None) -> dict | None:
    names = sources.table_names(con) if names is None else names
    if "agg_runs" not in names:
        return None
    cur = con.execute("SELECT * FROM agg_runs ORDER BY run_id DESC LIMIT 1")
    row = cur.fetchone()
    if row is None:
        return None
    out = dict(zip([d[0] for d in cur.description], row, strict=True))
    out["table_rows"] = json.loads(out["table_rows"])
    out["watermark"] = json.loads(out["watermark"]) if out.get("watermark") else None
    return out


def _why_full(
    names: set[str], last: dict | None, cut: Cut, asked: bool, needed: list[str]
) -> str | None:
    """Why this run must compute everything (None: it can count what changed). `names`: the
    store's tables."""
    if asked:
        return "asked for"
    if last is None:
        return "first run"
    if last["job_version"] != JOB_VERSION:
        return f"job version {last['job_version']} -> {JOB_VERSION}"
    if last["filters"] != cut.as_json():
        return "other filters than the last run"
    if not last["watermark"] or not {"jobs_weeks", "jobs_recent"} <= names:
        return "no watermark"
    for t in [*needed, *last["table_rows"]]:
        if t not in names:
            return f"{t} is missing"
    return None


def _live(con, source: sources.Source, cut: Cut) -> live_version.LiveVersion:
    sql = live_version.human_games_sql(source.name, source.where(cut), ruleset=True)
    return live_version.live_cut(con.execute(sql).fetchall())


def default_cuts(con, cut: Cut, present, given: Cut | None) -> tuple[Cut, Cut | None, dict]:
    """The rate tables' cuts (Slow6's, Slide's when it has games) on each game's live version
    (analysis.live_version), and why, in words, for agg_runs and the pages."""
    why: dict[str, str] = {}
    if given is None:
        live = _live(con, sources.GAMES, cut)
        dcut, why["slow6"] = live_version.default_cut(live), live.reason
    else:
        dcut, why["slow6"] = given, "given"
    scut = None
    if sources.SLIDE in present:
        live = _live(con, sources.SLIDE, cut)
        scut, why["slide"] = live_version.default_cut(live), live.reason
    return dcut, scut, why


def compute(data, default_cut: Cut | None = None) -> tuple[dict, Cut]:
    """Every agg_* table of the games of `data` (analysis.load.read: a store and a cut),
    computed whole and returned as frames, written nowhere; and the default cut used."""
    con, cut = data.con, data.cut
    present = sources.present(con)
    selections = {s.name: Selection(s.where(cut)).read_dicts(con, s.name) for s in present}
    mine = cubes.of(present)
    shared = cubes.prepare(con, mine, selections)
    try:
        out = {
            t: con.sql(cubes.sql(t, cs, selections)).pl() for t, cs in cubes.by_table(mine).items()
        }
    finally:
        cubes.drop(con, shared)
    dcut, scut, _ = default_cuts(con, cut, present, default_cut)
    out.update(rates.tables(lambda t, c: c.apply(out[t]), dcut, scut))
    out["agg_adjusted"] = rates.labelled(adjusted.from_store(con, cut, dcut), dcut)
    return out, dcut


def _sample_kept(names, last: dict | None, games: watermark.SourcePlan, cut: Cut, why) -> bool:
    """Whether the adjusted model's kept sample (jobs_sample) still holds for this run: the
    same default cut, and no game of it can have gone (analysis.sample)."""
    if why or last is None or games.full or games.changed or "jobs_sample" not in names:
        return False
    return (last["watermark"] or {}).get("sample") == cut.as_json()


def _scratch(con) -> str | None:
    """Where to stage a run's files: beside the store (its disk has room for its tables)."""
    row = con.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchone()
    folder = os.path.dirname(os.path.abspath(row[0])) if row and row[0] else None
    return folder if folder and os.access(folder, os.W_OK) else None


def _begin(con) -> bool:
    try:
        con.begin()
        return True
    except duckdb.TransactionException:
        return False  # the caller already holds a transaction: read inside it


def _what(plans: dict, last: dict | None) -> tuple[str, int]:
    """What the run does, in words, and how many new games (Slow6 and Slide) it counts."""
    full = [n for n, p in plans.items() if p.full]
    games = sum(p.total for n, p in plans.items() if n != "quarantine")
    if len(full) == len(plans) or last is None:  # no last run: every source is full
        why = plans["games"].why_full
        return f"full recompute ({why}): {games:,} games", games
    new = sum(p.new for n, p in plans.items() if n != "quarantine")
    words = [f"{new:,} new games since run {last['run_id']}"]
    q = plans["quarantine"].new
    if q:
        words.append(f"{q:,} quarantined records")
    for n, p in plans.items():
        if p.full:
            words.append(f"{n} recomputed ({p.why_full})")
        elif p.changed:
            words.append(f"{len(p.changed)} weeks of {n} recomputed")
    return ", ".join(words), new


@dataclass
class Staged:
    """What a run's first half leaves for its second: the changes, the next watermark's
    recent rows and sample (files), the cuts of the rate tables, the tables computed already."""

    ops: list
    recent: dict[str, str]
    sample: str
    cut: Cut
    slide_cut: Cut | None
    cut_why: dict[str, str]
    computed: dict


def _plans(con, names, present, cut: Cut, last: dict | None, why: str | None) -> dict:
    marks = {} if why or last is None else (last["watermark"] or {})
    weeks = {} if why else watermark.previous(con, [s.name for s in present], names)
    plans = {}
    for s in present:
        prev = watermark.SourceState.from_json(marks[s.name]) if s.name in marks else None
        fresh = why or (None if prev else "new source")
        plans[s.name] = watermark.plan(con, s, cut, prev, weeks.get(s.name, {}), fresh)
    return plans


def _first_half(con, names, plans, cut, default_cut, last, why, tmp: Path, say) -> Staged:
    """On the reader's snapshot: the changes of every table, and the adjusted model."""
    ops = stage.stage(con, plans, tmp, say)
    recent = {
        n: stage.copy(con, p.recent_sql, tmp / f"recent-{n}.parquet") for n, p in plans.items()
    }
    dcut, scut, why_cut = default_cuts(con, cut, sources.present(con, names), default_cut)
    kept = _sample_kept(names, last, plans["games"], dcut, why)
    fresh = plans["games"].new_where if kept else None
    path = stage.copy(con, sample.sql(cut, dcut, fresh), tmp / "sample.parquet")
    games = sample.frame(con, f"SELECT * FROM read_parquet({sql_literal(path)})")
    computed = {"agg_adjusted": rates.labelled(adjusted.fit(games), dcut)}
    return Staged(ops, recent, path, dcut, scut, why_cut, computed)


def _meta(plans, staged: Staged, last, cut: Cut, started, new: int, needed) -> dict:
    """What the second half records of the run (agg_runs) and the state it keeps."""
    dcut = staged.cut
    return {
        "last_run_id": last["run_id"] if last else None,
        "job_version": JOB_VERSION,
        "started_at": started,
        "games_read": plans["games"].total,
        "quarantined_read": plans["quarantine"].total,
        "slide_games_read": plans["slide_games"].total if "slide_games" in plans else 0,
        "latest_version": dcut.client_version[0] if dcut.client_version else None,
        "cut": dcut,
        "slide_cut": staged.slide_cut,
        "default_why": json.dumps(staged.cut_why),
        "filters": cut.as_json(),
        "fingerprint": json.dumps(
            {n: [p.total, p.state.as_json()["boundary"]] for n, p in plans.items()}
        ),
        "mode": "full" if all(p.full for p in plans.values()) else "incremental",
        "new_games": new,
        "weeks_recomputed": json.dumps(
            {n: [w.isoformat() for w in p.changed] for n, p in plans.items() if p.changed}
        ),
        "watermark": json.dumps(
            {**{n: p.state.as_json() for n, p in plans.items()}, "sample": dcut.as_json()}
        ),
        "recent": staged.recent,
        "sample": staged.sample,
        "tables": needed,
    }


def run(
    read_con: duckdb.DuckDBPyConnection,
    write: Callable[[Callable[[duckdb.DuckDBPyConnection], None]], object],
    *,
    cut: Cut | None = None,
    default_cut: Cut | None = None,
    force: bool = False,
    full: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Bring every agg_* table up to date (or skip when nothing changed); return a summary.

    cut: restricts the games read (recorded in agg_runs.filters); None = every verified game.
    default_cut: the cut of the *_rates tables; None = human vs human on the live client version
    (analysis.live_version: the newest release with enough human games, never a pre-release).
    full / force: compute everything from the games. progress: called with a line per step.
    """
    t0 = time.perf_counter()
    started = _now()
    cut = cut or Cut()
    say = progress or (lambda line: None)
    with tempfile.TemporaryDirectory(prefix="balance-jobs-", dir=_scratch(read_con)) as tmp:
        began = _begin(read_con)
        try:
            names = sources.table_names(read_con)
            last = last_run(read_con, names)
            present = sources.present(read_con, names)
            needed = sorted(cubes.by_table(cubes.of(present)))
            why = _why_full(names, last, cut, full or force, needed)
            plans = _plans(read_con, names, present, cut, last, why)
            t_plan = time.perf_counter() - t0
            if not why and last is not None and all(p.idle for p in plans.values()):
                return {
                    "skipped": True,
                    "reason": f"nothing new since run {last['run_id']}",
                    "run_id": last["run_id"],
                    "tables": sorted(last["table_rows"]),
                    "seconds": time.perf_counter() - t0,
                }
            what, new = _what(plans, last)
            say(f"{what} (planned in {t_plan:.1f} s)")
            staged = _first_half(
                read_con, names, plans, cut, default_cut, last, why, Path(tmp), say
            )
        finally:
            if began:
                read_con.commit()
        t_compute = time.perf_counter() - t0 - t_plan
        say(f"computed in {t_compute:.1f} s; writing")
        meta = _meta(plans, staged, last, cut, started, new, needed)
        box: dict = {}
        write(lambda con: box.update(publish(con, staged.ops, plans, meta, staged.computed, t0)))
    seconds = time.perf_counter() - t0
    say(f"{what}; {seconds:.1f} s")
    return {
        "skipped": False,
        "run_id": box.get("run_id"),
        "mode": meta["mode"],
        "message": f"{what}; {seconds:.1f} s",
        "since_run": meta["last_run_id"],
        "new_games": new,
        "weeks_recomputed": json.loads(meta["weeks_recomputed"]),
        "tables": sorted(box.get("table_rows", {})),
        "table_rows": box.get("table_rows", {}),
        "games_read": meta["games_read"],
        "quarantined_read": meta["quarantined_read"],
        "default_cut": json.loads(staged.cut.as_json()),
        "default_why": staged.cut_why,
        "slide_games_read": meta["slide_games_read"],
        "seconds": seconds,
        "read_seconds": t_plan,
        "compute_seconds": t_compute,
        "write_seconds": seconds - t_plan - t_compute,
        "apply_seconds": box.get("apply_seconds"),
        "rates_seconds": box.get("rates_seconds"),
    }
