"""A run's second half, on the writer: apply the staged changes (analysis.stage), compute the
rate tables from the new counts, keep the watermark and record the run, in one transaction:
readers see the old tables or the new ones, never a mix.
"""

from __future__ import annotations

import datetime as dt
import json
import time

import duckdb
import polars as pl
import pyarrow as pa

from . import findings, rates, sample, tables
from .cuts import Cut
from .sql import sql_identifier, sql_literal
from .stage import Op
from .watermark import RECENT_DDL, WEEKS_DDL, in_weeks

# no PRIMARY KEY (a DuckLake catalog refuses one): a run's id is the last one plus one, given
# in the transaction that writes it
RUNS_DDL = """
CREATE TABLE IF NOT EXISTS agg_runs (
    run_id          BIGINT NOT NULL,
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
# added by job 2.0 (incremental runs); a store's older agg_runs gets them on its next run
RUNS_ADDED = {
    "mode": "VARCHAR",
    "new_games": "BIGINT",
    "weeks_recomputed": "VARCHAR",
    "watermark": "VARCHAR",
    "default_why": "VARCHAR",  # job 2.1: why the default cut is what it is, per game
}
ORDER = {"replace": 0, "weeks": 1, "keys": 2, "merge": 3}


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def _parquet(path: str) -> str:
    return f"read_parquet({sql_literal(path)})"


def _added(table: str, col: str) -> str:
    """A count of a row plus the same count of the new games' row with its key."""
    t, c = sql_identifier(table), sql_identifier(col)
    if col == "score":  # derived, recomputed from the summed counts: exact
        return f"({t}.wins + d.wins) + ({t}.draws + d.draws) / 2"
    if col == "win_credit":  # a sum of 60ths (analysis.slide): kept exact the same way
        return f"round(({t}.win_credit + d.win_credit) * 60) / 60"
    return f"{t}.{c} + d.{c}"


def apply(con, op: Op) -> None:
    t, src = sql_identifier(op.table), _parquet(op.path)
    if op.kind == "replace":
        con.execute(f"CREATE OR REPLACE TABLE {t} AS SELECT * FROM {src}")
    elif op.kind == "weeks":
        if op.week is None:  # stage.py cuts by weeks only the cubes with a week column
            raise ValueError(f"a change of {op.table} by weeks names no week column")
        con.execute(f"DELETE FROM {t} WHERE ({op.selector}) AND {in_weeks(op.weeks, op.week)}")
        con.execute(f"INSERT INTO {t} SELECT * FROM {src}")
    elif op.kind == "keys":
        if op.key is None:  # stage.py rebuilds by keys only the cubes with a key
            raise ValueError(f"a change of {op.table} by keys names no key column")
        k = sql_identifier(op.key)
        con.execute(f"DELETE FROM {t} WHERE {k} IN (SELECT {k} FROM {src})")
        con.execute(f"INSERT INTO {t} SELECT * FROM {src}")
    else:  # merge: every count is a sum over games, so the new games' counts add in
        on = " AND ".join(
            f"{t}.{sql_identifier(k)} IS NOT DISTINCT FROM d.{sql_identifier(k)}"
            for k in tables.key_columns(op.table)
        )
        sets = ", ".join(
            f"{sql_identifier(c)} = {_added(op.table, c)}" for c in tables.ADDITIVE[op.table][2]
        )
        con.execute(
            f"MERGE INTO {t} USING {src} AS d ON {on} WHEN MATCHED THEN UPDATE SET {sets} "
            "WHEN NOT MATCHED THEN INSERT *"
        )


def store_fetch(con):
    """fetch(table, cut) for analysis.rates, reading the store's table: DuckDB keeps the rows
    of the cut's dimensions, Polars applies the cut exactly (and refuses one the table cannot
    take, as on the full table)."""
    names: dict[str, list[str]] = {}

    def fetch(table: str, cut: Cut) -> pl.DataFrame:
        if table not in names:
            names[table] = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
        where = cut.table_where(names[table])
        return cut.apply(con.sql(f"SELECT * FROM {table} WHERE {where}").pl())

    return fetch


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


def _replace_frame(con, name: str, df: pl.DataFrame) -> None:
    view = f"_analysis_{name}"
    con.register(view, _for_duckdb(df).to_arrow())
    try:
        con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM {view}")
    finally:
        con.unregister(view)


def _state(con, plans, recent: dict[str, str], kept: str) -> None:
    con.execute(WEEKS_DDL)
    con.execute(RECENT_DDL)
    con.execute(sample.DDL)
    con.execute("DELETE FROM jobs_sample")
    con.execute(f"INSERT INTO jobs_sample SELECT * FROM {_parquet(kept)}")
    con.execute("DELETE FROM jobs_weeks")
    con.execute("DELETE FROM jobs_recent")
    rows = [(n, w, c, x) for n, p in plans.items() for w, c, x in p.weeks]
    if rows:
        src, week, games, ids = zip(*rows, strict=True)
        arrow = pa.table(
            {
                "source": pa.array(src, pa.string()),
                "week": pa.array(week, pa.date32()),
                "games": pa.array(games, pa.int64()),
                "ids": pa.array(ids, pa.uint64()),
            }
        )
        con.register("_jobs_weeks", arrow)
        try:
            con.execute("INSERT INTO jobs_weeks SELECT * FROM _jobs_weeks")
        finally:
            con.unregister("_jobs_weeks")
    for path in recent.values():
        con.execute(f"INSERT INTO jobs_recent SELECT * FROM {_parquet(path)}")


def publish(con, ops: list[Op], plans: dict, meta: dict, computed: dict, t0: float) -> dict:
    """Apply `ops`, write the rate tables (from the new counts, plus those `computed` by the
    reader: agg_adjusted), the watermark and the agg_runs row; returns the run id, the rows
    of each table, and the seconds spent applying the changes and computing the rates."""
    began = True
    try:
        con.begin()
    except duckdb.TransactionException:
        began = False  # the writer already runs us inside its transaction
    try:
        con.execute(RUNS_DDL)
        for col, typ in RUNS_ADDED.items():
            con.execute(f"ALTER TABLE agg_runs ADD COLUMN IF NOT EXISTS {col} {typ}")
        last = con.execute("SELECT max(run_id) FROM agg_runs").fetchone()[0]
        if last != meta["last_run_id"]:
            raise RuntimeError(f"run {last} wrote the tables since this run read them: retry")
        run_id = (last or 0) + 1
        t = time.perf_counter()
        for op in sorted(ops, key=lambda o: ORDER[o.kind]):
            apply(con, op)
        applied = time.perf_counter() - t
        t = time.perf_counter()
        out = rates.tables(store_fetch(con), meta["cut"], meta["slide_cut"])
        out.update(computed)
        for name, df in out.items():
            _replace_frame(con, name, df)
        rated = time.perf_counter() - t
        _state(con, plans, meta["recent"], meta["sample"])
        findings.remember(con, run_id, meta["started_at"])
        names = sorted({op.table for op in ops} | set(meta["tables"]) | set(out))
        rows = {n: con.execute(f"SELECT count(*) FROM {n}").fetchone()[0] for n in names}
        stamp = (
            f"job {meta['job_version']}, run {run_id}, computed "
            f"{meta['started_at'].isoformat(timespec='seconds')}Z from "
            f"{meta['games_read']} games; see agg_runs and docs/agg-tables.md"
        )
        for n in names:  # COMMENT ON takes no parameter: the stamp goes in as a literal
            con.execute(f"COMMENT ON TABLE {n} IS {sql_literal(stamp)}")
        record = {
            "run_id": run_id,
            "job_version": meta["job_version"],
            "started_at": meta["started_at"],
            "finished_at": _now(),
            "seconds": time.perf_counter() - t0,
            "games_read": meta["games_read"],
            "quarantined_read": meta["quarantined_read"],
            "slide_games_read": meta["slide_games_read"],
            "latest_version": meta["latest_version"],
            "default_cut": meta["cut"].as_json(),
            "default_why": meta["default_why"],
            "filters": meta["filters"],
            "fingerprint": meta["fingerprint"],
            "table_rows": json.dumps(rows, sort_keys=True),
            "mode": meta["mode"],
            "new_games": meta["new_games"],
            "weeks_recomputed": meta["weeks_recomputed"],
            "watermark": meta["watermark"],
        }
        cols = ", ".join(record)
        marks = ", ".join("?" for _ in record)
        con.execute(f"INSERT INTO agg_runs ({cols}) VALUES ({marks})", list(record.values()))
        if began:
            con.commit()
    except BaseException:
        if began:
            con.rollback()
        raise
    return {"run_id": run_id, "table_rows": rows, "apply_seconds": applied, "rates_seconds": rated}
