"""Differential run: the Slow6 engine against the spec-literal referee (tests/referee/) on
simulated games and single-fault mutations of them, under `standard` and random valid rulesets
(rulesets.md; --standard-only for the former alone). Prints the count, the verdict mix (by
standard or not), every disagreement class with an example, and writes the disagreeing
records (with their ruleset) to --out.

    python -m benchmarks.differential --records 1000000 --workers 2 --out /tmp/diff.ndjson
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from collections import Counter
from pathlib import Path

import orjson

from tests.differential.compare import judge_both
from tests.differential.corpus import corpus


def _work(args):
    seed, bases, per_base, rulesets = args
    mix: Counter = Counter()
    bad = []
    n = 0
    for kind, rec, rules in corpus(seed, bases, per_base, rulesets):
        o = judge_both(kind, rec, rules)
        n += 1
        legal = "legal" if o.engine[0] == "valid" else o.engine[0]
        which = "standard" if rules is None else "ruleset"
        mix[(which, kind if kind == "simulated" else "mutant", legal)] += 1
        if not o.agrees:
            params = None if rules is None else rules.to_json()
            bad.append({"kind": kind, "engine": o.engine, "referee": o.referee,
                        "message": o.message, "ruleset": params, "record": rec})  # fmt: skip
    return n, mix, bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--per-base", type=int, default=15, help="mutants of each simulated game")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=200, help="base games a task")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--standard-only", action="store_true", help="no random rulesets")
    a = ap.parse_args()
    bases = max(1, round(a.records / (a.per_base + 1)))
    tasks = [(a.seed * 1_000_003 + i, min(a.chunk, bases - i * a.chunk), a.per_base,
              not a.standard_only)
             for i in range((bases + a.chunk - 1) // a.chunk)]  # fmt: skip
    t0 = time.perf_counter()
    total, mix, bad = 0, Counter(), []
    with mp.Pool(a.workers) as pool:
        for n, m, b in pool.imap_unordered(_work, tasks):
            total += n
            mix.update(m)
            bad.extend(b)
            el = time.perf_counter() - t0
            print(f"{total:,} records, {len(bad)} disagreements, {el:,.0f} s "
                  f"({total / el:,.0f}/s)", flush=True)  # fmt: skip
    el = time.perf_counter() - t0
    print(f"\nrecords: {total:,} in {el:,.0f} s with {a.workers} workers (seed {a.seed})")
    for key, c in sorted(mix.items()):
        print(f"  {key[0]:9} {key[1]:9} {key[2]:9} {c:,}")
    classes = Counter((d["kind"], tuple(d["engine"])[:2], tuple(d["referee"])[:2]) for d in bad)
    print(f"disagreements: {len(bad)}")
    for (kind, eng, ref), c in classes.most_common():
        print(f"  {c:6,}  {kind:15} engine {eng}  referee {ref}")
    if a.out is not None:
        with a.out.open("wb") as f:
            for d in bad:
                f.write(orjson.dumps(d) + b"\n")
        print(f"disagreeing records: {a.out}")


if __name__ == "__main__":
    main()
