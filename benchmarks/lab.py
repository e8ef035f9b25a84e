"""The balance lab's speed and the value of its pairing (docs/lab.md).

1. Bot games per second per level, 5x5 with powers, both sides at the level, one process
   (what one core gives the lab).
2. A paired comparison of --pairs pairs (standard against the candidate, the lab's default
   levels 1,2) through the lab's runner with --jobs workers, then its prediction: their wall
   times, and the total extrapolated to the issue's size (2 x 10,000 games: 10,000 pairs),
   said as extrapolated; at --pairs 10000 or more, the measured total instead. The workers'
   CPU time and the load average are printed beside it: on a shared machine the wall time
   is also what the other processes took.
3. Interval widths: each row's paired interval (the comparison above) against the interval of
   two independent runs of the same size (the candidate's games played again from other
   settings and streams, an unpaired bootstrap), and their ratio.

4. With --coverage R: null coverage. R repetitions, each of --coverage-pairs games of
   standard against --coverage-pairs more games of standard from an independent seed set
   (no change, yet games that differ): how often each row's 95% interval covers 0, overall,
   by family and on the rows of at least 30 games or sides, and how many rows the lab called
   confident (each a false change). Equal rulesets with the same seeds play the same games
   and give exactly 0, which says nothing about the intervals' rate.

usage: python -m benchmarks.lab [--seconds 10] [--levels 1,2,3,4] [--pairs 200] [--jobs 2]
                                [--candidate FILE] [--coverage R [--coverage-pairs 60]]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import statistics
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from analysis.lab import predict
from ingest.server.lab_runner import LabRun, play
from replays import lab
from replays.rulesets import STANDARD, parse_toml

FREEZE_1 = 'name = "freeze-1"\ngame = "slow6"\n[params]\nfreeze_turns = 1\n'
TARGET_PAIRS = 10_000


def speed(level: int, seconds: float) -> tuple[float, float, int]:
    """Games per second of wall time and of this process's CPU time, and the games played."""
    games, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds or games == 0:
        st = lab.setting(77, games, 5, [level])
        lab.play(st, STANDARD["slow6"], 5, True, 77)
        games += 1
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return games / wall, games / max(cpu, 1e-9), games


_RULES = STANDARD["slow6"]


def _independent(index: int) -> dict:
    """Game `index` of the independent run: the lab's levels, other settings and streams."""
    return lab.play_independent(9_999, index, _RULES, 5, True, (1, 2))


def _flat(one: dict) -> dict:
    return {**one["game"], "first": one["first"], "levels": one["levels"],
            "lineups": one["lineups"]}  # fmt: skip


def null_repetition(args: tuple[int, int, tuple[int, ...]]) -> list[tuple]:
    """One repetition: `n` games of standard against `n` more of standard from other seeds;
    (family, lo, hi, n, confident) of each row with an interval."""
    rep, n, levels = args
    rules = STANDARD["slow6"]
    pairs = []
    for i in range(n):
        a = lab.play_independent(100_000 + 2 * rep, i, rules, 5, True, levels)
        b = lab.play_independent(100_001 + 2 * rep, i, rules, 5, True, levels)
        pairs.append({"i": i, "first": a["first"], "levels": a["levels"], "independent": True,
                      "base": _flat(a), "candidate": _flat(b)})  # fmt: skip
    rows = predict(pairs, powers=True, levels=levels, seed=rep)
    return [(r["family"], r["lo"], r["hi"], r["n"], r["confident"]) for r in rows
            if r["lo"] is not None]  # fmt: skip


def coverage(reps: int, n: int, levels: tuple[int, ...], jobs: int) -> None:
    start = time.perf_counter()
    tasks = [(rep, n, levels) for rep in range(reps)]
    if jobs > 1:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            results = pool.map(null_repetition, tasks)
    else:
        results = [null_repetition(t) for t in tasks]
    wall = time.perf_counter() - start
    by_family: dict[str, list[bool]] = defaultdict(list)
    supported: list[bool] = []
    confident = 0
    for rows in results:
        for family, lo, hi, support, sure in rows:
            covers = lo <= 0 <= hi
            by_family[family].append(covers)
            if support >= 30:
                supported.append(covers)
            confident += sure
    every = [c for v in by_family.values() for c in v]
    print(f"null coverage: {reps} repetitions of {n} games of standard against {n} more of "
          f"standard from independent seeds (levels {','.join(map(str, levels))}, 5x5 powers), "
          f"{2 * n * reps} games in {wall:.0f} s")  # fmt: skip
    print(
        f"  95% intervals covering 0: {sum(every)}/{len(every)} = {_share(every)} of rows; "
        f"{_share(supported)} of the {len(supported)} rows on at least 30 games or sides"
    )
    for family, covers in sorted(by_family.items()):
        print(f"    {family:12} {sum(covers):6}/{len(covers):<6} {_share(covers)}")
    print(f"  rows called confident (false changes): {confident} in {reps} repetitions")


def _share(values: list[bool]) -> str:
    return f"{sum(values) / len(values):.3f}" if values else "n/a"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0, help="per level, for the speed")
    ap.add_argument("--levels", default="1,2,3,4", help="levels whose speed is measured")
    ap.add_argument("--pairs", type=int, default=200, help="size of the paired comparison")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--candidate", help="a ruleset TOML file (default: freeze_turns 1)")
    ap.add_argument(
        "--coverage",
        type=int,
        default=0,
        metavar="R",
        help="also measure null coverage over R repetitions (50 or more)",
    )
    ap.add_argument(
        "--coverage-pairs",
        type=int,
        default=60,
        metavar="N",
        help="games a side in each coverage repetition",
    )
    args = ap.parse_args()

    print(
        "bot games per second, 5x5 with powers, one process (one core; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores):"
    )
    for level in (int(x) for x in args.levels.split(",")):
        rate, per_cpu, games = speed(level, args.seconds)
        print(f"  level {level}: {rate:6.1f} games/s ({games} games; {per_cpu:.1f} per CPU second)")

    text = Path(args.candidate).read_text() if args.candidate else FREEZE_1
    candidate = parse_toml(text)
    levels = (1, 2)
    run = LabRun(STANDARD["slow6"], candidate, 5, True, levels, seed=11, games=args.pairs)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        pairs = play(run, Path(tmp) / "run.ndjson", jobs=args.jobs)
        wall = time.perf_counter() - start
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    worker_cpu = now.ru_utime + now.ru_stime - children.ru_utime - children.ru_stime
    start = time.perf_counter()
    paired_rows = predict(pairs, powers=True, levels=levels)
    predicting = time.perf_counter() - start
    rate = 2 * args.pairs / wall
    print(
        f"paired comparison, {candidate.name} vs standard, 5x5 powers, levels 1,2: "
        f"{args.pairs} pairs ({2 * args.pairs} games) in {wall:.1f} s with {args.jobs} "
        f"workers = {rate:.1f} games/s, then its prediction in {predicting:.1f} s"
    )
    if worker_cpu > 0:
        print(
            f"  (the workers' CPU time {worker_cpu:.1f} s = {2 * args.pairs / worker_cpu:.1f} "
            f"games per CPU second; load average {os.getloadavg()[0]:.1f} on "
            f"{os.cpu_count()} cores)"
        )
    total = wall + predicting
    if args.pairs >= TARGET_PAIRS:
        print(f"2 x {args.pairs:,} games measured (run, not extrapolated): {total / 60:.1f} min")
    else:
        print(
            f"2 x {TARGET_PAIRS:,} games at that rate (extrapolated, not run): "
            f"{total * TARGET_PAIRS / args.pairs / 60:.1f} min"
        )

    # the candidate's games again from other settings and streams: an independent run
    start = time.perf_counter()
    global _RULES
    _RULES = candidate  # (a ruleset does not pickle: forked workers inherit it)
    if args.jobs > 1:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(args.jobs, mp_context=ctx) as pool:
            others = list(pool.map(_independent, range(len(pairs)), chunksize=16))
    else:
        others = [_independent(i) for i in range(len(pairs))]
    independent = []
    for i, (pair, other) in enumerate(zip(pairs, others, strict=True)):
        game = {**other["game"], "first": other["first"], "levels": other["levels"],
                "lineups": other["lineups"]}  # fmt: skip
        independent.append({"i": i, "first": pair["first"], "levels": pair["levels"],
                            "independent": True, "base": {**pair["base"],
                            "first": pair["first"], "levels": pair["levels"],
                            "lineups": pair["lineups"]},
                            "candidate": game})  # fmt: skip
    indep_rows = predict(independent, powers=True, levels=levels)
    print(f"(the independent run: {args.pairs} more games in {time.perf_counter() - start:.1f} s)")
    print(f"95% interval widths, {args.pairs} games a side: paired vs two independent runs")
    print(f"  {'family':12} {'row':22} {'paired':>8} {'indep.':>8} {'narrower':>9}")
    ratios, zero = [], 0
    for p, q in zip(paired_rows, indep_rows, strict=True):
        if p["lo"] is None or q["lo"] is None or p["family"] == "power_used":
            continue
        wp, wq = p["hi"] - p["lo"], q["hi"] - q["lo"]
        if wp > 0:
            ratios.append(wq / wp)
        else:
            zero += 1
        shown = f"{wq / wp:8.1f}x" if wp > 0 else "  (0 wide)"
        print(f"  {p['family']:12} {p['row']:22} {wp:8.3f} {wq:8.3f} {shown}")
    median = f"{statistics.median(ratios):.1f}x" if ratios else "n/a"
    print(
        f"median over {len(ratios)} rows: the paired interval is {median} narrower "
        f"({zero} more rows 0 wide: none of their games changed)"
    )
    if args.coverage:
        coverage(args.coverage, args.coverage_pairs, levels, args.jobs)


if __name__ == "__main__":
    main()
