"""The balance jobs on a lake against the same jobs on the embedded file, same games, same run.

    python -m benchmarks.lake_jobs [--games 1000000] [--new 10000] [--memory-limit 1GB] [--repeat 2]

Builds (or reuses) analysis_full.py's synthetic store of `--games` games, starts its own
PostgreSQL cluster (tests/lake_cluster.py; fsync on), makes a lake and copies the store's
game tables into it, then compacts it as `balance lake maintain` does. Then, alternating
file and lake so the machine's load falls on both alike: the full recompute of every agg_*
table (`jobs.run(full=True)`, as `balance jobs run --full` runs it), `--repeat` times each
(2), the best kept;
then an incremental run after `--new` games arriving on each. Prints the seconds, the ratio
lake / file (the issue's target: at most 1.5 at 1,000,000 games, compacted), and the lake's
bytes per game (its live Parquet files, from the catalog's file list; the catalog's own size
in PostgreSQL apart). Last, the dashboard's snapshot of each (dashboard/snapshot.py: the
file checkpointed and copied, the lake's latest version pinned) and a chart-sized query on
it. Figures also go to benchmarks/out/lake_jobs.json.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from benchmarks.analysis_full import OUT, build
from tests.harness.lake import Cluster, lake_unavailable

GAME_TABLES = ("games", "game_pieces", "game_powers", "game_turns", "quarantine")


def store_file(games: int) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"analysis_{games}.duckdb"
    if not path.exists():
        part = path.with_suffix(".partial")
        part.unlink(missing_ok=True)
        build(part, games)
        part.rename(path)
    return path


def copy_into_lake(catalog: str, path: Path) -> float:
    from ingest.storage.lake import connect

    t = time.perf_counter()
    con = connect(catalog, claims=False)
    try:
        con.execute(f"ATTACH '{path}' AS f (READ_ONLY)")
        for table in GAME_TABLES:
            con.execute(f"INSERT INTO lake.{table} SELECT * FROM f.{table}")
        con.execute("DETACH f")
    finally:
        con.close()
    return time.perf_counter() - t


def lake_bytes(catalog: str) -> tuple[int, int]:
    """(bytes of the live Parquet files of the game tables, bytes of the catalog database)."""
    from ingest.storage.lake import connect

    con = connect(catalog, claims=True)
    try:
        total = 0
        for table in GAME_TABLES:
            (size,) = con.execute(
                f"SELECT coalesce(sum(data_file_size_bytes), 0) FROM ducklake_list_files("
                f"'lake', '{table}')"
            ).fetchone()
            total += int(size)
        (pg,) = con.execute(
            "SELECT * FROM postgres_query('balance_pg', "
            "'SELECT pg_database_size(current_database())')"
        ).fetchone()
    finally:
        con.close()
    return total, int(pg)


def run_jobs(open_con, memory_limit: str, **kw) -> dict:
    from analysis import jobs

    con = open_con()
    try:
        con.execute(f"SET memory_limit = '{memory_limit}'")
        con.execute("SET preserve_insertion_order = false")
        return jobs.run(con, lambda fn: fn(con), **kw)
    finally:
        con.close()


def add_new(open_con, new: int) -> None:
    from analysis import synthetic as sy

    con = open_con()
    try:
        last = con.execute("SELECT max(received_at) FROM games").fetchone()[0]
        sy.insert(con, sy.arriving(sy.generate(sy.Plan(n=new, seed=99)), last), tag="lake-new")
    finally:
        con.close()


def remove_new(open_con, new: int) -> None:
    con = open_con()
    try:
        for table in ("games", "game_pieces", "game_powers", "game_turns"):
            con.execute(
                f"DELETE FROM {table} WHERE game_id IN "
                f"(SELECT md5('lake-new:' || i)::UUID FROM range({new}) t(i))"
            )
    finally:
        con.close()


def dashboard_snapshot(store, directory: Path) -> tuple[float, float]:
    """Seconds to take the dashboard's snapshot of `store` (a file: checkpoint and copy; a
    lake: pin its latest version) and to answer a chart-sized query on it."""
    from dashboard.snapshot import Snapshots

    snaps = Snapshots(store, directory, workers=0, max_age=3600)
    try:
        t = time.perf_counter()
        snaps.refresh()
        taken = time.perf_counter() - t
        t = time.perf_counter()
        snaps.run("SELECT variant, count(DISTINCT game_id) FROM games GROUP BY ALL")
        return taken, time.perf_counter() - t
    finally:
        snaps.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=1_000_000)
    ap.add_argument("--new", type=int, default=10_000, help="games for the incremental run")
    ap.add_argument("--memory-limit", default="1GB", help="DuckDB's (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=2, help="full recomputes each, the best kept")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lake-jobs-") as tmp:
        os.environ.setdefault("BALANCE_LAKE_EXTENSIONS", str(Path(tmp) / "extensions"))
        reason = lake_unavailable(Path(os.environ["BALANCE_LAKE_EXTENSIONS"]))
        if reason:
            print(f"no lake here: {reason}")
            return 1
        import duckdb

        from ingest.storage.lake import connect
        from ingest.storage.lake.admin import init_lake, maintain

        path = store_file(args.games)
        cluster = Cluster.for_benchmark(fsync=True)
        try:
            catalog = cluster.create_db("jobs")
            init_lake(catalog, str(Path(tmp) / "data"))
            copied = copy_into_lake(catalog, path)
            t = time.perf_counter()
            maintain(catalog, echo=lambda _line: None)
            compacted = time.perf_counter() - t
            live, pg = lake_bytes(catalog)

            def on_file():
                return duckdb.connect(str(path))

            def on_lake():
                return connect(catalog, claims=False)

            full = {"file": [], "lake": []}
            for _ in range(args.repeat):
                for name, opener in (("file", on_file), ("lake", on_lake)):
                    s = run_jobs(opener, args.memory_limit, full=True)
                    full[name].append(s["seconds"])
            new = {}
            for name, opener in (("file", on_file), ("lake", on_lake)):
                add_new(opener, args.new)
                s = run_jobs(opener, args.memory_limit)
                new[name] = (s["seconds"], s.get("mode"), s.get("new_games"))
                remove_new(opener, args.new)
            from ingest.storage import Store
            from ingest.storage.lake import LakeStore

            file_store = Store(path)  # the server's own file store, as a server holds it
            try:
                snap = {"file": dashboard_snapshot(file_store, Path(tmp) / "snap-file")}
            finally:
                file_store.close()
            lake_store = LakeStore(catalog, work_dir=Path(tmp) / "server")
            try:
                snap["lake"] = dashboard_snapshot(lake_store, Path(tmp) / "snap-lake")
            finally:
                lake_store.close()
        finally:
            cluster.stop()
    best = {k: min(v) for k, v in full.items()}
    out = {
        "games": args.games,
        "copy_into_lake_s": copied,
        "maintain_s": compacted,
        "full_file_s": full["file"],
        "full_lake_s": full["lake"],
        "ratio": best["lake"] / best["file"],
        "new": args.new,
        "new_file": new["file"],
        "new_lake": new["lake"],
        "lake_parquet_bytes_per_game": live / args.games,
        "dashboard_snapshot_s": {k: v[0] for k, v in snap.items()},
        "dashboard_query_s": {k: v[1] for k, v in snap.items()},
        "catalog_bytes": pg,
        "load": os.getloadavg()[0],
    }
    print(f"games                              {args.games:>12,}")
    print(f"copied into the lake / compacted   {copied:>8.1f} s / {compacted:.1f} s")
    print(f"full recompute, file (best of {args.repeat})   {best['file']:>8.2f} s   {full['file']}")
    print(f"full recompute, lake (best of {args.repeat})   {best['lake']:>8.2f} s   {full['lake']}")
    print(f"lake / file                        {out['ratio']:>8.2f}     (target: at most 1.5)")
    for name in ("file", "lake"):
        secs, mode, counted = new[name]
        print(f"after {args.new:,} new games, {name}      {secs:>8.2f} s   ({mode}, {counted:,})")
    for name in ("file", "lake"):
        taken, query = snap[name]
        what = "copy" if name == "file" else "pin "
        print(f"dashboard snapshot, {name} ({what})     {taken:>8.2f} s   query {query:.2f} s")
    print(f"lake: live Parquet                 {out['lake_parquet_bytes_per_game']:>8.1f} B/game")
    print(f"lake: catalog database             {pg / 2**20:>8.1f} MiB")
    print(f"load average                       {out['load']:>8.2f}")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "lake_jobs.json").write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
