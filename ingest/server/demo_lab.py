"""The demo's lab run: the prediction of its balance patch, made before the patch "shipped".

The demo's release 3.1.0 plays the ruleset of `patch-3.1.toml` (reach 2 -> 1). This is the lab
run a designer would have made of it beforehand: the patch against `standard`, 5x5 with
powers, at the bot levels that stand in for the demo's players (levels 1 and 2, level 2
drawn twice as often, as the demo's people mostly play as level 2). Playing it takes a minute
or more, which would double the demo's start, so it is played once and shipped
(`lab-3.1.json` beside the data, made by

    python -m ingest.server.demo_lab --out ingest/server/demo_data --games 800 --jobs 2

deterministic for its seed and engine version, which it records), and `balance serve --demo`
stores it as `balance lab run` would have: the Lab page then checks it against the demo's
"observed" release.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FILE = "lab-3.1.json"
LEVELS = (1, 2, 2)
SEED = 2026
PAIRS = 800


def make(out_dir: Path, games: int = PAIRS, jobs: int = 2) -> dict[str, Any]:
    """Play the patch's lab run and write it to `out_dir/FILE`: {"run": ..., "rows": [...]},
    the run as lab_runs holds it and its predicted rows."""
    from analysis import lab as predictions
    from replays.rulesets import STANDARD, parse_toml

    from .lab_runner import LabRun, play

    patch = parse_toml((out_dir / "patch-3.1.toml").read_bytes())
    run = LabRun(STANDARD["slow6"], patch, 5, True, LEVELS, SEED, games)
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        pairs = play(run, Path(tmp) / "run.ndjson", jobs)
    seconds = time.monotonic() - start
    rows = predictions.predict(pairs, powers=True, levels=LEVELS, seed=SEED)
    stored = {
        "id": run.run_id, "created_at": None, "game": "slow6", "base": run.base.to_json(),
        "candidate": patch.to_json(), "board": 5, "powers": True, "levels": list(LEVELS),
        "games": games, "seed": SEED, "engine_version": run.engine_version,
        "min_effect": predictions.MIN_EFFECT,
        "picks_differ": sum(p["base"]["picks"] != p["candidate"]["picks"] for p in pairs),
        "seconds": seconds,
    }  # fmt: skip
    out = {"run": stored, "rows": rows}
    (out_dir / FILE).write_text(json.dumps(out, indent=1) + "\n")
    return out


def load(store, data_dir: Path, echo: Callable[[str], None] = print) -> None:
    """Store the shipped run in `store` (a Store or a LakeStore); stored already: nothing."""
    from ..storage.lab_runs import save

    path = data_dir / FILE
    if not path.exists():
        return
    shipped = json.loads(path.read_text())
    run, rows = shipped["run"], shipped["rows"]
    try:
        stored = store.submit(lambda con: save(con, run, rows, transaction=False), token=True)
        new = bool(stored.result())
    except Exception as exc:  # (a lake made before the lab: the games are loaded all the same)
        echo(f"lab run {run['id']}: not stored ({exc}); `balance lake upgrade` adds the lab's "
             "tables to a lake made before them")  # fmt: skip
        return
    confident = sum(bool(r["confident"]) for r in rows)
    echo(f"lab run {run['id']}: {run['candidate']['name']} predicted against "
         f"{run['base']['name']} ({run['games']:,} pairs of bot games, {confident} confident "
         f"changes){'' if new else ' (stored already)'}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="play the demo's lab run and ship it")
    ap.add_argument("--out", default=str(Path(__file__).parent / "demo_data"))
    ap.add_argument("--games", type=int, default=PAIRS)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    made = make(Path(args.out), args.games, args.jobs)
    run = made["run"]
    print(f"wrote {Path(args.out) / FILE}: {run['games']} pairs in {run['seconds']:.0f} s, "
          f"engine {run['engine_version']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
