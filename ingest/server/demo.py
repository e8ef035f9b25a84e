"""Quick-start data: simulated games loaded through the very path uploads take.

`balance serve --demo` loads the dataset shipped in `demo_data/` (made once, seeded, by
`balance simulate --demo-set --seed 2026 --jobs 2 --out ingest/server/demo_data`; see
replays/demoset.py): 20,400 Slow6 and 5,200 Slide games over 13 weeks and five client
versions, the uploads of a client build with a bug (some quarantined, a few rejected), and a
few of a play-test build naming a ruleset nobody registered (quarantined RS5.1). Release
3.1.0 shipped a balance patch: its Slow6 games play the ruleset of `patch-3.1.toml`, which is
registered before anything is loaded (`RULESETS`), as an operator registers a release's rules
before it ships; `playtest-3.2.toml` is shipped but not registered (README: "A ruleset that
arrives late"). The lab run that predicted the patch (`lab-3.1.json`, ingest/server/demo_lab.py) is
stored too, so the Lab page checks its prediction against the release.
Playing that many games with the bots takes about 15 minutes on two cores, loading them about
15 seconds. `balance serve --demo N` plays N fresh games instead (a minute for 500).
"""

from __future__ import annotations

import gzip
import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import orjson

from ..storage import Store
from .pipeline import Judge, settle, utcnow
from .rejections import RejectionTally

BATCH = 500
DATA_DIR = Path(__file__).resolve().parent / "demo_data"
# (label, file) in loading order; the label is what the log says
DEMO_SET = (
    ("Slow6", "slow6.ndjson.gz"),
    ("Slide", "slide.ndjson.gz"),
    ("buggy client 3.1.0-beta.3+sim (Slow6 and Slide)", "buggy-client.ndjson.gz"),
    ("play-test build 3.2.0-beta.1+sim (ruleset 3.2-playtest, not registered)",
     "playtest.ndjson.gz"),
)  # fmt: skip
# the rulesets registered before the dataset is loaded (replays/demoset.py PATCH_FILE)
RULESETS = ("patch-3.1.toml",)
SIM = "+sim"  # the build label of simulated client versions (replays/demoset.py)


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


def labelled(records: Iterable[dict]) -> Iterator[dict]:
    """The records with the simulated build label on their client version (the dashboard
    shows its banner for these)."""
    for r in records:
        version = r["client"]["version"]
        if not version.endswith(SIM):
            r["client"] = {**r["client"], "version": version + SIM}
        yield r


def demo_files() -> list[tuple[str, Path]]:
    """The shipped dataset's files, with their labels; missing ones are left out."""
    return [(label, DATA_DIR / name) for label, name in DEMO_SET if (DATA_DIR / name).exists()]


def read_lines(path: Path) -> Iterator[bytes]:
    """The records of an NDJSON.gz file, as the bytes an upload would send (a malformed line
    stays malformed)."""
    with gzip.open(path, "rb") as f:
        for line in f:
            line = line.rstrip(b"\n")
            if line:
                yield line


def count_lines(path: Path) -> int:
    with gzip.open(path, "rb") as f:
        return sum(1 for line in f if line.strip())


def load_records(
    store: Store,
    records: Iterable[dict | bytes],
    judge: Judge | None = None,
    echo: Callable[[str], None] = print,
    label: str = "",
    total: int | None = None,
    every: int = 5000,
) -> Counter:
    """Judge and store records (dicts, or the bytes of a line) in batches, exactly as
    POST /v1/games would; verdict counts. A progress line every `every` records and at the
    end: "  Slow6: 5,000 of 20,400 records (1,950/s): accepted 5,000"."""
    judge = judge or Judge(registry=store.registry)  # the store's rulesets (RS5)
    tally = RejectionTally(store, every=0)  # the rejected ones counted as the server does
    counts: Counter = Counter()
    started = time.perf_counter()
    it = iter(records)
    shown = 0
    name = f"{label}: " if label else ""
    of = f" of {total:,}" if total else ""
    while batch := list(itertools.islice(it, BATCH)):
        received = utcnow()
        judged = [
            judge.judge(i, r if isinstance(r, bytes) else orjson.dumps(r), received)
            for i, r in enumerate(batch)
        ]
        outcomes = store.ingest([j.pending for j in judged if j.pending is not None])
        results = settle(judged, outcomes)
        counts.update(r["verdict"] for r in results)
        tally.count(results)
        done = sum(counts.values())
        if done - shown >= every or len(batch) < BATCH:
            shown = done
            rate = done / max(time.perf_counter() - started, 1e-9)
            echo(f"  {name}{done:,}{of} records ({rate:,.0f}/s): {verdicts(counts)}")
    tally.flush()
    if not counts:
        echo(f"  {name}no records")
    elif shown != sum(counts.values()):
        done = sum(counts.values())
        rate = done / max(time.perf_counter() - started, 1e-9)
        echo(f"  {name}{done:,}{of} records ({rate:,.0f}/s): {verdicts(counts)}")
    return counts


def verdicts(counts: Counter) -> str:
    """The upload verdicts in their order: "accepted 20,400, quarantined 262, rejected 12"."""
    order = ("accepted", "duplicate", "conflict", "quarantined", "rejected")
    keys = [k for k in order if counts.get(k)] + sorted(k for k in counts if k not in order)
    return ", ".join(f"{k} {counts[k]:,}" for k in keys) or "nothing"


def load_demo_set(store: Store, echo: Callable[[str], None] = print) -> Counter:
    """Load the shipped dataset, a stage a file; the verdict counts of all of it."""
    files = demo_files()
    if not files:
        raise FileNotFoundError(
            f"the demo dataset is not in {DATA_DIR} (make it: balance simulate --demo-set "
            "--seed 2026 --jobs 2 --out ingest/server/demo_data)"
        )
    register_demo_rulesets(store, echo)
    total: Counter = Counter()
    for label, path in files:
        n = count_lines(path)
        echo(f"{label}: loading {n:,} records from {path.name}")
        total += load_records(store, read_lines(path), echo=echo, label=label, total=n)
    from . import demo_lab  # the lab run that predicted the patch (played once, shipped)

    demo_lab.load(store, DATA_DIR, echo)
    return total


def register_demo_rulesets(store, echo: Callable[[str], None] = print) -> None:
    """Register the dataset's rulesets (`RULESETS`) in `store` (a file or a lake; already
    registered with the same parameters: nothing changes, RS1.3)."""
    from .rulesets import register_running

    files: list[tuple[str, str | bytes]] = [
        (name, (DATA_DIR / name).read_bytes()) for name in RULESETS if (DATA_DIR / name).exists()
    ]
    if not files:
        return
    for entry in register_running(store, files):
        echo(f"ruleset {entry['name']} ({entry['game']}): {entry['status']}")
