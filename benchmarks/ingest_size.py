"""Bytes on disk per stored game: N games through the ingest path into a fresh store file.

    python -m benchmarks.ingest_size [--games 100000] [--game slow6|slide]

Records are judged (parsed, checked, replayed) and stored by the same code as uploads, in
group commits of 500 into a store made as the server makes it (its settings, BALANCE_* from
the environment included), then the file is checkpointed and measured: file size per game, used
blocks per game, and each table's share (DuckDB storage_info). The raw record is included.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from benchmarks.ingest_pool import pool, pool_size, with_fresh_ids
from ingest.server import config
from ingest.server.app import open_store
from ingest.server.pipeline import Judge, utcnow

TABLES = (
    "raw_records",
    "games",
    "game_turns",
    "game_pieces",
    "game_powers",
    "quarantine",
    "slide_games",
    "slide_seats",
    "slide_rounds",
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=100_000)
    ap.add_argument("--game", choices=("slow6", "slide"), default="slow6")
    ap.add_argument("--pool", type=pool_size, default=1000, help="distinct simulated games")
    ap.add_argument("--keep", help="keep the store at this path")
    args = ap.parse_args()

    records = pool(args.game, args.pool)
    lines = with_fresh_ids(records, args.games)
    path = Path(args.keep or tempfile.mkdtemp(prefix="ingest-size-")) / "size.duckdb"
    if path.exists():
        path.unlink()
    judge = Judge()
    started = time.perf_counter()
    with open_store(config.load({"BALANCE_DB": str(path)}), judge) as store:
        for i in range(0, len(lines), 500):
            now = utcnow()
            judged = [judge.judge(j, text, now) for j, text in enumerate(lines[i : i + 500])]
            out = store.ingest([j.pending for j in judged if j.pending is not None])
            assert set(out) == {"accepted"}, set(out)
    seconds = time.perf_counter() - started  # Store.close() checkpoints
    size = os.path.getsize(path)
    wal = path.with_name(path.name + ".wal")
    con = duckdb.connect(str(path), read_only=True)
    db = con.execute("PRAGMA database_size").fetchone()
    block_size, used = db[2], db[4]
    print(
        f"{args.games} {args.game} games ({args.pool} distinct simulated, fresh ids), "
        f"stored in {seconds:.1f}s ({args.games / seconds:.0f} games/s in-process)"
    )
    print(
        f"file {size:,} bytes = {size / args.games:.1f} bytes/game "
        f"(used blocks {used * block_size / args.games:.1f} bytes/game; "
        f"wal {wal.stat().st_size if wal.exists() else 0} bytes)"
    )
    con.close()
    # each table copied alone into its own file (no index), to show where the bytes go
    print("per table, copied alone into a file (bytes/game):")
    con = duckdb.connect(str(path))
    con.execute("SET threads = 1")  # a parallel copy splits row groups: its figures vary
    for table in TABLES:
        part = path.with_name(f"part-{table}.duckdb")
        con.execute(f"ATTACH '{part}' AS part")
        con.execute(f"CREATE TABLE part.t AS FROM {table}")
        con.execute("DETACH part")
        rows = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        print(f"  {table:12s} {rows:>10,} rows  {os.path.getsize(part) / args.games:7.1f}")
        part.unlink()
    con.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
