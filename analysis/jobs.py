"""`balance jobs run`: read verified games, compute every agg_* table, replace them at once.

    summary = run(read_con, write)

`read_con` is a DuckDB connection or cursor to read from; `write(fn)` must call `fn(con)` with
a connection that may write (the server passes its Store's writer; the CLI a plain connection).
`fn` replaces every agg_* table and appends one row to `agg_runs` in a single transaction, so
readers see either the old tables or the new ones, never a mix.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable

import duckdb
import polars as pl

from . import (
    adjusted,
    frames,
    load,
    opponents,
    overview,
    pieces,
    powers,
    setups,
    slide,
    tables,
    trends,
)
from .cuts import Cut, latest_version
from .sql import sql_literal

# Bump when the meaning or shape of any agg_* table changes: a run with another version never
# counts as "unchanged" and always recomputes.
JOB_VERSION = "1.1"  # 1.1: agg_adjusted says which terms are estimable

RUNS_DDL = """
CREATE TABLE IF NOT EXISTS agg_runs (
    run_id          BIGINT PRIMARY KEY,
    job_version     VARCHAR NOT NULL,
    started_at      TIMESTAMP NOT NULL,
    finished_at     TIMESTAMP NOT NULL,
    seconds         DOUBLE NOT NULL,
    games_read      BIGINT NOT NULL,
    quarantined_read BIGINT NOT NULL,
    slide_games_read BIGINT NOT NULL,
    latest_version  VARCHAR,
    default_cut     VARCHAR NOT NULL,
    filters         VARCHAR NOT NULL,
    fingerprint     VARCHAR NOT NULL,
    table_rows      VARCHAR NOT NULL
)
"""

AREAS = (overview, setups, powers, pieces, opponents)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def last_run(con) -> dict | None:
    if not load.table_exists(con, "agg_runs"):
        return None
    row = con.execute(
        "SELECT run_id, job_version, filters, fingerprint, table_rows FROM agg_runs "
        "ORDER BY run_id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    return {
        "run_id": row[0],
        "job_version": row[1],
        "filters": row[2],
        "fingerprint": json.loads(row[3]),
        "table_rows": json.loads(row[4]),
    }


def unchanged(con, cut: Cut) -> dict | None:
    """The last run, if it was made by this job version, with this cut, on the same inputs
    (row counts and latest received_at of every input table) and its tables still exist."""
    last = last_run(con)
    if last is None or last["job_version"] != JOB_VERSION or last["filters"] != cut.as_json():
        return None
    if last["fingerprint"] != load.fingerprint(con):
        return None
    if not all(load.table_exists(con, t) for t in last["table_rows"]):
        return None
    return last


def compute(data: load.Data, default_cut: Cut | None = None) -> tuple[dict, Cut]:
    """Every agg_* table from the data read: {name: DataFrame}, and the default cut used."""
    b = frames.build(data)
    lane = setups.pieces_by_lane(b).collect()  # shared by the setups and pieces areas
    lazy: dict[str, pl.LazyFrame] = {}
    for area in AREAS:
        shares = area in (setups, pieces)
        lazy.update(area.cubes(b, lane.lazy()) if shares else area.cubes(b))
    names = list(lazy)
    collected = pl.collect_all([lazy[n] for n in names])
    # every additive table in the documented column order (analysis.tables)
    cubes = {n: df.select(tables.columns(n)) for n, df in zip(names, collected, strict=True)}
    seen = b.games["client_version_c"].unique().to_list()
    latest = latest_version([b.dims.values["client_version"][c] for c in seen])
    cut = default_cut or Cut.default(latest)
    out = dict(cubes)
    for area in AREAS:
        out.update(area.rate_tables(cubes, b, cut))
    out["agg_trends"] = trends.table(cubes, b, cut)
    out["agg_adjusted"] = adjusted.table(b, cut)
    out.update(slide.tables(data.slide))
    return out, cut


def run(
    read_con: duckdb.DuckDBPyConnection,
    write: Callable[[Callable[[duckdb.DuckDBPyConnection], None]], object],
    *,
    cut: Cut | None = None,
    default_cut: Cut | None = None,
    force: bool = False,
) -> dict:
    """Recompute every agg_* table (or skip when the inputs are unchanged); return a summary.

    cut: restricts the games read (recorded in agg_runs.filters); None = every verified game.
    default_cut: the cut of the *_rates tables; None = human vs human on the latest client.
    """
    t0 = time.perf_counter()
    started = _now()
    cut = cut or Cut()
    if not force:
        last = unchanged(read_con, cut)
        if last is not None:
            return {
                "skipped": True,
                "reason": f"inputs unchanged since run {last['run_id']}",
                "run_id": last["run_id"],
                "tables": sorted(last["table_rows"]),
                "seconds": time.perf_counter() - t0,
            }
    data = load.read(read_con, cut)
    t_read = time.perf_counter() - t0
    tables, dcut = compute(data, default_cut)
    t_compute = time.perf_counter() - t0 - t_read
    rows = {name: df.height for name, df in tables.items()}
    meta = {
        "job_version": JOB_VERSION,
        "started_at": started,
        "games_read": data.games.height,
        "quarantined_read": data.quarantine.height,
        "slide_games_read": data.slide["games"].height if "games" in data.slide else 0,
        "latest_version": dcut.client_version[0] if dcut.client_version else None,
        "default_cut": dcut.as_json(),
        "filters": cut.as_json(),
        "fingerprint": json.dumps(data.fingerprint, sort_keys=True),
        "table_rows": json.dumps(rows, sort_keys=True),
    }
    arrow = {name: _for_duckdb(df).to_arrow() for name, df in tables.items()}
    box: dict = {}
    write(lambda con: box.update(replace_tables(con, arrow, meta, t0)))
    return {
        "skipped": False,
        "run_id": box.get("run_id"),
        "tables": sorted(tables),
        "table_rows": rows,
        "games_read": meta["games_read"],
        "quarantined_read": meta["quarantined_read"],
        "default_cut": json.loads(meta["default_cut"]),
        "seconds": time.perf_counter() - t0,
        "read_seconds": t_read,
        "compute_seconds": t_compute,
    }


def _for_duckdb(df: pl.DataFrame) -> pl.DataFrame:
    # enums/categoricals would become DuckDB ENUM columns: analysts compare with plain text
    cats = [c for c, t in df.schema.items() if isinstance(t, pl.Enum | pl.Categorical)]
    lists = [
        c
        for c, t in df.schema.items()
        if isinstance(t, pl.List) and isinstance(t.inner, pl.Enum | pl.Categorical)
    ]
    return df.with_columns(
        *(pl.col(c).cast(pl.String) for c in cats),
        *(pl.col(c).cast(pl.List(pl.String)) for c in lists),
    )


def replace_tables(con, arrow: dict, meta: dict, t0: float) -> dict:
    """Replace every agg_* table and record the run, in one transaction."""
    began = True
    try:
        con.begin()
    except duckdb.TransactionException:
        began = False  # the writer already runs us inside its transaction
    try:
        con.execute(RUNS_DDL)
        run_id = con.execute("SELECT coalesce(max(run_id), 0) + 1 FROM agg_runs").fetchone()[0]
        for name, table in arrow.items():
            view = f"_analysis_{name}"
            con.register(view, table)
            try:
                con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM {view}")
            finally:
                con.unregister(view)
            stamp = (
                f"job {meta['job_version']}, run {run_id}, computed "
                f"{meta['started_at'].isoformat(timespec='seconds')}Z from "
                f"{meta['games_read']} games; see agg_runs and docs/agg-tables.md"
            )
            # COMMENT ON takes no parameter: the stamp goes in as a literal
            con.execute(f"COMMENT ON TABLE {name} IS {sql_literal(stamp)}")
        finished = _now()
        con.execute(
            "INSERT INTO agg_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                run_id,
                meta["job_version"],
                meta["started_at"],
                finished,
                time.perf_counter() - t0,
                meta["games_read"],
                meta["quarantined_read"],
                meta["slide_games_read"],
                meta["latest_version"],
                meta["default_cut"],
                meta["filters"],
                meta["fingerprint"],
                meta["table_rows"],
            ],
        )
        if began:
            con.commit()
    except BaseException:
        if began:
            con.rollback()
        raise
    return {"run_id": run_id}
