"""Quick-start data: simulated games loaded through the very path uploads take."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Iterable, Iterator

import orjson

from .pipeline import Judge, settle, utcnow
from .storage import Store

BATCH = 500


def simulated_records(slow6: int, slide: int, seed: int = 0, level: int = 2) -> Iterator[dict]:
    """`slow6` Slow6 games (bots up to `level`) and `slide` Slide games over 2..6 players."""
    from replays.slow6.simulate import simulate_games as slow6_games  # lazy: bots are heavy

    yield from slow6_games(slow6, seed=seed, max_level=level)
    if slide:
        from replays.slide.simulate import simulate_games as slide_games

        per = [slide // 5 + (1 if i < slide % 5 else 0) for i in range(5)]
        for players, n in zip(range(2, 7), per, strict=True):
            if n:
                yield from slide_games(n, players, seed + players)


def load_records(
    store: Store, records: Iterable[dict], judge: Judge | None = None, echo=print
) -> Counter:
    """Judge and store records in batches, exactly as POST /v1/games would; verdict counts."""
    judge = judge or Judge()
    counts: Counter = Counter()
    started = time.perf_counter()
    it = iter(records)
    while batch := list(itertools.islice(it, BATCH)):
        received = utcnow()
        judged = [judge.judge(i, orjson.dumps(r), received) for i, r in enumerate(batch)]
        outcomes = store.ingest([j.pending for j in judged if j.pending is not None])
        counts.update(r["verdict"] for r in settle(judged, outcomes))
        total = sum(counts.values())
        echo(
            f"  {total} records ({total / (time.perf_counter() - started):.0f}/s): "
            + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        )
    return counts
