"""Full recompute of every agg_* table at 1,000,000 games, against one DuckDB SQL query.

    python benchmarks/analysis_full.py [--games 1000000] [--keep]

Builds (once, in a child process, cached under benchmarks/out/) a store of synthetic rows with
realistic distributions (analysis.synthetic: numpy, straight into the store tables), then in a
fresh process measures:
  - full recompute (jobs.run, force): total, read (DuckDB -> Arrow -> Polars) and compute
  - the per-lineup table alone, our way (read + Polars), against a single DuckDB SQL query
    computing the same table on the same data (same process, same run; results compared)
  - a run over unchanged data (skipped) and a run after 1,000 new games (full recompute)
  - the peak RSS of this process (resource.getrusage), DuckDB and Polars included
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

OUT = Path(__file__).resolve().parent / "out"

LINEUP_SQL = """
SELECT board, variant, mode, client_version, lineup,
       count(*) AS n, count(*) FILTER (res = 1) AS wins, count(*) FILTER (res = 0) AS draws,
       count(*) FILTER (res = -1) AS losses
FROM (
    SELECT board, variant, mode, client_version, lineup_0 AS lineup,
           CASE WHEN winner IS NULL THEN 0 WHEN winner = 0 THEN 1 ELSE -1 END AS res
    FROM games WHERE game = 'slow6'
    UNION ALL
    SELECT board, variant, mode, client_version, lineup_1,
           CASE WHEN winner IS NULL THEN 0 WHEN winner = 1 THEN 1 ELSE -1 END
    FROM games WHERE game = 'slow6'
)
GROUP BY ALL
"""


def build(path: Path, games: int) -> None:
    from analysis import synthetic as sy

    t = time.perf_counter()
    con = sy.duckdb.connect(str(path))
    sy.fill_store(con, games)
    con.execute("CHECKPOINT")
    con.close()
    print(f"built {path.name}: {games:,} games in {time.perf_counter() - t:.1f} s", flush=True)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def lineup_ours(con):
    """The agg_lineup table our way, alone: DuckDB -> Arrow -> Polars lazy (setups.lineup_table)."""
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


def measure(path: Path) -> dict:
    import duckdb

    from analysis import jobs
    from analysis import synthetic as sy

    con = duckdb.connect(str(path))
    out: dict = {"games": con.execute("SELECT count(*) FROM games").fetchone()[0]}
    out["rss_start_mib"] = rss_mib()
    write = lambda fn: fn(con)  # noqa: E731

    # warm the file cache once so both contenders read from memory
    con.execute("SELECT count(*), max(lineup_0), max(client_version) FROM games").fetchall()

    (sql, ours), (out["lineup_sql_s"], out["lineup_ours_s"]) = best_of(
        3, lambda: lineup_sql(con), lambda: lineup_ours(con)
    )
    key = ["board", "variant", "mode", "client_version", "lineup"]
    a = ours.select(*key, "n", "wins", "draws", "losses").sort(key)
    b = sql.select(a.columns).cast(a.schema).sort(key)
    out["lineup_tables_equal"] = a.equals(b)
    out["lineup_ratio"] = out["lineup_ours_s"] / out["lineup_sql_s"]

    s = jobs.run(con, write, force=True)
    out["full_s"] = s["seconds"]
    out["full_read_s"] = s["read_seconds"]
    out["full_compute_s"] = s["compute_seconds"]
    out["full_write_s"] = s["seconds"] - s["read_seconds"] - s["compute_seconds"]
    out["tables"] = len(s["tables"])
    out["rows_written"] = sum(s["table_rows"].values())
    out["full_vs_lineup_sql"] = out["full_s"] / out["lineup_sql_s"]

    s = jobs.run(con, write)
    out["unchanged_skipped"] = s["skipped"]
    out["unchanged_s"] = s["seconds"]

    sy.insert(con, sy.generate(sy.Plan(n=1000, seed=99)), tag="bench-new")
    s = jobs.run(con, write)
    out["after_1000_new_skipped"] = s["skipped"]
    out["after_1000_new_s"] = s["seconds"]
    out["rss_peak_mib"] = rss_mib()
    out["load"] = os.getloadavg()[0]
    for table in ("games", "game_pieces", "game_powers", "game_turns"):  # leave the store as built
        con.execute(
            f"DELETE FROM {table} WHERE game_id IN "
            "(SELECT md5('bench-new:' || i)::UUID FROM range(1000) t(i))"
        )
    con.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=1_000_000)
    ap.add_argument("--measure-only", metavar="PATH", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.measure_only:
        print(json.dumps(measure(Path(args.measure_only))))
        return 0
    OUT.mkdir(exist_ok=True)
    path = OUT / f"analysis_{args.games}.duckdb"
    if not path.exists():
        code = f"from benchmarks.analysis_full import build; build({str(path)!r}, {args.games})"
        env = {**os.environ, "PYTHONPATH": str(OUT.parent.parent)}
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
    # a fresh process, so the peak RSS is the jobs' own and not the generator's
    env = {**os.environ, "PYTHONPATH": str(OUT.parent.parent)}
    res = subprocess.run(
        [sys.executable, __file__, "--measure-only", str(path)],
        check=True, capture_output=True, text=True, env=env,
    )  # fmt: skip
    r = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"games in store                 {r['games']:>12,}")
    print(f"full recompute (all tables)    {r['full_s']:>10.2f} s   (target < 20 s)")
    print(f"  read DuckDB->Arrow->Polars   {r['full_read_s']:>10.2f} s")
    print(f"  compute (Polars, numpy)      {r['full_compute_s']:>10.2f} s")
    print(f"  write {r['tables']} tables, {r['rows_written']:,} rows {r['full_write_s']:>6.2f} s")
    print(f"per-lineup table alone, ours   {r['lineup_ours_s']:>10.2f} s   (best of 3)")
    print(f"per-lineup table, one SQL      {r['lineup_sql_s']:>10.2f} s   (best of 3)")
    print(f"  ratio ours / SQL             {r['lineup_ratio']:>10.2f} x   (target <= 1.5 x)")
    print(f"  same table                   {r['lineup_tables_equal']!s:>10}")
    print(f"full recompute / lineup SQL    {r['full_vs_lineup_sql']:>10.2f} x")
    print(f"unchanged data: skipped={r['unchanged_skipped']}    {r['unchanged_s']:>10.3f} s")
    print(f"after 1,000 new games (full)   {r['after_1000_new_s']:>10.2f} s")
    print(f"machine load (1-min average)   {r['load']:>10.2f}   on {os.cpu_count()} cores")
    print(f"peak RSS of the jobs process   {r['rss_peak_mib']:>10.0f} MiB (target < 2048 MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
