"""The balance jobs at a million (or ten million) games: a full recompute of every agg_*
table, an incremental run after new games, and the per-lineup table against one SQL query.

    python -m benchmarks.analysis_full [--games 1000000] [--new 10000] [--memory-limit 1GB]

Builds (once, in a child process, cached under benchmarks/out/ or $BALANCE_BENCH_OUT) a store
of synthetic rows with realistic distributions (analysis.synthetic: numpy, straight into the
store tables; ten million games take about 15 minutes and 2.4 GB), then in a fresh process,
with DuckDB's memory_limit as `balance jobs run` sets it, measures:
  - the full recompute (jobs.run, full): total, planning, computing (DuckDB, staged to
    Parquet) and writing (applying, rate tables, commit), and the peak RSS after it
  - the per-lineup table alone, as the jobs compute it (one DuckDB query), against a single
    hand-written DuckDB SQL query on the same data (same process, best of 3; results compared)
  - a run over unchanged data (skipped), and an incremental run after `--new` games arriving
    (stamped after the store's latest `received_at`, as uploads are), with its breakdown
  - the checkpoint after each run on its own (the server's store checkpoints past 256 MB of
    WAL, not at every commit; `balance jobs run` at its close)
  - the peak RSS of this process (resource.getrusage), DuckDB and Polars included
The games added are deleted again at the end (the store stays as built; the next measurement
starts with a full recompute).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# cached corpora and stores; BALANCE_BENCH_OUT puts them elsewhere (the smoke runs: a tmp dir)
OUT = Path(os.environ.get("BALANCE_BENCH_OUT") or Path(__file__).resolve().parent / "out")

LINEUP_SQL = """
SELECT board, variant, mode, client_version, ruleset, lineup,
       count(*) AS n, count(*) FILTER (res = 1) AS wins, count(*) FILTER (res = 0) AS draws,
       count(*) FILTER (res = -1) AS losses
FROM (
    SELECT board, variant, mode, client_version, ruleset, lineup_0 AS lineup,
           CASE WHEN winner IS NULL THEN 0 WHEN winner = 0 THEN 1 ELSE -1 END AS res
    FROM games WHERE game = 'slow6'
    UNION ALL
    SELECT board, variant, mode, client_version, ruleset, lineup_1,
           CASE WHEN winner IS NULL THEN 0 WHEN winner = 1 THEN 1 ELSE -1 END
    FROM games WHERE game = 'slow6'
)
GROUP BY ALL
"""


def build(path: Path | str, games: int) -> None:
    from analysis import synthetic as sy

    path = Path(path)
    t = time.perf_counter()
    con = sy.duckdb.connect(str(path))
    sy.fill_store(con, games)
    con.execute("CHECKPOINT")
    con.close()
    print(f"built {path.name}: {games:,} games in {time.perf_counter() - t:.1f} s", flush=True)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def lineup_ours(con):
    """The agg_lineup table as the jobs compute it, alone: one DuckDB query (setups)."""
    from analysis import setups

    t = time.perf_counter()
    out = setups.lineup_table(con)
    return out, time.perf_counter() - t


def best_of(n: int, *fns):
    """The fastest of n interleaved runs of each function (the machine is shared)."""
    best = [float("inf")] * len(fns)
    results = [None] * len(fns)
    for _ in range(n):
        for i, fn in enumerate(fns):
            results[i], secs = fn()
            best[i] = min(best[i], secs)
    return results, best


def lineup_sql(con):
    t = time.perf_counter()
    out = con.sql(LINEUP_SQL).pl()
    return out, time.perf_counter() - t


def _run(out: dict, prefix: str, s: dict) -> None:
    out[f"{prefix}_s"] = s["seconds"]
    for part in ("read", "compute", "write", "apply", "rates"):
        out[f"{prefix}_{part}_s"] = s.get(f"{part}_seconds") or 0.0


def checkpoint(con) -> float:
    t = time.perf_counter()
    con.execute("CHECKPOINT")
    return time.perf_counter() - t


def measure(path: Path, new: int, memory_limit: str) -> dict:
    import duckdb

    from analysis import jobs
    from analysis import synthetic as sy

    con = duckdb.connect(str(path))
    # as `balance jobs run` does (analysis/commands.py): DuckDB spills to disk past the limit
    con.execute(f"SET memory_limit = '{memory_limit}'")
    con.execute("SET preserve_insertion_order = false")
    # as the server's store does (ingest/storage/store.py): runs do not checkpoint at their
    # commit; the checkpoints are measured on their own, after each run
    con.execute("SET checkpoint_threshold = '256MB'")
    out: dict = {"games": con.execute("SELECT count(*) FROM games").fetchone()[0]}
    out["rss_start_mib"] = rss_mib()
    write = lambda fn: fn(con)  # noqa: E731

    # warm the file cache once so both contenders read from memory
    con.execute("SELECT count(*), max(lineup_0), max(client_version) FROM games").fetchall()

    (sql, ours), (out["lineup_sql_s"], out["lineup_ours_s"]) = best_of(
        3, lambda: lineup_sql(con), lambda: lineup_ours(con)
    )
    key = ["board", "variant", "mode", "client_version", "ruleset", "lineup"]
    a = ours.select(*key, "n", "wins", "draws", "losses").sort(key)
    b = sql.select(a.columns).cast(a.schema).sort(key)
    out["lineup_tables_equal"] = a.equals(b)
    out["lineup_ratio"] = out["lineup_ours_s"] / out["lineup_sql_s"]

    s = jobs.run(con, write, full=True)
    _run(out, "full", s)
    out["full_checkpoint_s"] = checkpoint(con)
    out["tables"] = len(s["tables"])
    out["rows_written"] = sum(s["table_rows"].values())
    out["rss_full_mib"] = rss_mib()

    s = jobs.run(con, write)
    out["unchanged_skipped"] = s["skipped"]
    out["unchanged_s"] = s["seconds"]

    last = con.execute("SELECT max(received_at) FROM games").fetchone()[0]
    sy.insert(con, sy.arriving(sy.generate(sy.Plan(n=new, seed=99)), last), tag="bench-new")
    s = jobs.run(con, write)
    _run(out, "new", s)
    out["new_checkpoint_s"] = checkpoint(con)
    out["new"] = new
    out["new_mode"] = s.get("mode", "skipped")
    out["new_counted"] = s.get("new_games", 0)
    out["rss_peak_mib"] = rss_mib()
    out["load"] = os.getloadavg()[0]
    for table in ("games", "game_pieces", "game_powers", "game_turns"):  # leave the store as built
        con.execute(
            f"DELETE FROM {table} WHERE game_id IN "
            f"(SELECT md5('bench-new:' || i)::UUID FROM range({new}) t(i))"
        )
    con.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=1_000_000)
    ap.add_argument("--new", type=int, default=10_000, help="games for the incremental run")
    ap.add_argument("--memory-limit", default="1GB", help="DuckDB's (default %(default)s)")
    ap.add_argument("--measure-only", metavar="PATH", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.measure_only:
        print(json.dumps(measure(Path(args.measure_only), args.new, args.memory_limit)))
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"analysis_{args.games}.duckdb"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if not path.exists():
        part = path.with_suffix(".partial")  # a build cut short is never taken for a store
        part.unlink(missing_ok=True)
        code = f"from benchmarks.analysis_full import build; build({str(part)!r}, {args.games})"
        subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT)
        part.rename(path)
    # a fresh process, so the peak RSS is the jobs' own and not the generator's
    res = subprocess.run(
        [sys.executable, "-m", "benchmarks.analysis_full", "--measure-only", str(path),
         "--new", str(args.new), "--memory-limit", args.memory_limit],
        check=True, capture_output=True, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    r = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"games in store                   {r['games']:>12,}")
    full = "(target: 15 s at 1M, 150 s at 10M)"
    print(f"full recompute (all tables)      {r['full_s']:>10.2f} s   {full}")
    print(f"  plan (what changed)            {r['full_read_s']:>10.2f} s")
    print(f"  compute (DuckDB, staged)       {r['full_compute_s']:>10.2f} s")
    print(f"  write (apply, rates, commit)   {r['full_write_s']:>10.2f} s")
    print(f"    of which apply / rates       {r['full_apply_s']:>6.2f} / {r['full_rates_s']:.2f} s")
    print(f"  {r['tables']} tables, {r['rows_written']:,} rows")
    print(f"  checkpoint after it            {r['full_checkpoint_s']:>10.2f} s")
    print(f"  peak RSS after it              {r['rss_full_mib']:>10.0f} MiB")
    print(f"per-lineup table alone, ours     {r['lineup_ours_s']:>10.2f} s   (best of 3)")
    print(f"per-lineup table, one SQL        {r['lineup_sql_s']:>10.2f} s   (best of 3)")
    print(f"  ratio ours / SQL               {r['lineup_ratio']:>10.2f} x   (target <= 1.5 x)")
    print(f"  same table                     {r['lineup_tables_equal']!s:>10}")
    print(f"unchanged data: skipped={r['unchanged_skipped']}      {r['unchanged_s']:>10.3f} s")
    new = f"after {r['new']:,} new games"
    print(f"{new:<33}{r['new_s']:>10.2f} s   (target: 5 s at 10M; {r['new_mode']} run)")
    print(f"  games counted                  {r['new_counted']:>12,}")
    print(f"  plan (what changed)            {r['new_read_s']:>10.2f} s")
    print(f"  compute (DuckDB, staged)       {r['new_compute_s']:>10.2f} s")
    print(f"  write (apply, rates, commit)   {r['new_write_s']:>10.2f} s")
    print(f"  checkpoint after it            {r['new_checkpoint_s']:>10.2f} s")
    print(f"machine load (1-min average)     {r['load']:>10.2f}   on {os.cpu_count()} cores")
    print(
        f"peak RSS of the jobs process     {r['rss_peak_mib']:>10.0f} MiB "
        f"(target < 2048 MiB at 10M; DuckDB memory_limit {args.memory_limit})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
