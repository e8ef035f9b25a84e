"""A cached pool of simulated records for the ingest benchmarks (benchmarks/out/, not in git).

Simulating with bots is slow (tens of ms a game), so the benchmarks simulate a pool once and
then send its records again with fresh game_ids (a game_id is not part of the rules: the record
stays valid, and per-record compression does not benefit from the repetition).
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
# cached corpora and stores; BALANCE_BENCH_OUT puts them elsewhere (the smoke runs: a tmp dir)
OUT = Path(os.environ.get("BALANCE_BENCH_OUT") or ROOT / "benchmarks" / "out")


def pool_size(text: str) -> int:
    """The argparse type of every benchmark's --pool: at least one record. An empty pool sent
    nothing and the benchmark printed figures over no games."""
    n = int(text)  # not a number: argparse says "invalid pool_size value"
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def pool(game: str, n: int, seed: int = 11) -> list[dict]:
    """`n` simulated records of `game` (Slide: spread over 2..6 players, at least one each),
    cached on disk."""
    if n < 1:
        raise ValueError(f"a pool of {n} records: at least 1")
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"pool-{game}-{n}-{seed}.ndjson"
    if path.exists():
        return [orjson.loads(line) for line in path.read_bytes().splitlines()]
    if game == "slow6":
        from replays.slow6.simulate import simulate_games

        records = list(simulate_games(n, seed=seed, max_level=1))
    else:
        from replays.slide.simulate import simulate_games

        records = [r for p in range(2, 7) for r in simulate_games(max(1, n // 5), p, seed + p)]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return records


def with_fresh_ids(records: list[dict], total: int, seed: int = 0) -> list[bytes]:
    """`total` upload lines cycling through `records`, each with a new game_id."""
    return list(itertools.islice(fresh_lines(records, seed), total))


def fresh_lines(records: list[dict], seed: int = 0) -> Iterator[bytes]:
    """Upload lines cycling through `records` without end, each with a new game_id, made as
    they are taken: a load that runs until stopped needs no list made ahead (200,000 lines
    cost more than a second of CPU, most of a short run's)."""
    rng = random.Random(seed)
    for rec in itertools.cycle(records):
        rec = dict(rec)
        rec["game_id"] = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        yield orjson.dumps(rec)
