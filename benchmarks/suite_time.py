"""Where the test suite's time goes: the README's test command, with the CPU of every test.

    python -m benchmarks.suite_time [--workers 4] [--top 15] [--target 420] [-- PYTEST ARGS]

Runs `python -m pytest -n WORKERS --dist loadfile` from the checkout (the README's test
command, what .ci/run runs; PYTEST ARGS after `--` narrow it, e.g. `-- -m "not slow"`) with
the census plugin (tests/harness/census.py), then prints:

- the wall time against the target (the guide's 7 minutes on 2 idle cores), and the load
  average before and after (the figures mean something only on an idle machine);
- the CPU of everything pytest waited for (its workers, and the servers, browsers and
  benchmarks they started), and how many cores that kept busy;
- the test files and the tests that cost the most CPU: each test's own CPU (the test
  process) and its children's (the processes it started and waited for).

- the machine's busy CPU over the run (Linux's /proc/stat), which holds what the census cannot
  see: PostgreSQL's servers, which pg_ctl detaches (the lake tests' catalog work), the judges'
  fork servers, which init reaps once their server's worker has left, and the kernel's work.
  On an idle machine, its busy cores against the census's say how much of the run waited.
- the machine's speed before and after the run: the CPU seconds of one fixed workload (the
  rules engine replaying the spec's example games, in this process), so that two runs can be
  told apart by the machine they ran on: this shared host's speed swings by about a tenth
  between runs of the same code, as much as a change here may save.
Figures also go to benchmarks/out/suite_time.json. The exit code is pytest's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.ingest_pool import OUT

ROOT = Path(__file__).resolve().parents[1]


def census(directory: Path) -> list[tuple[str, float, float, float]]:
    """(nodeid, own CPU, children's CPU, wall) of every test the census wrote down."""
    rows = []
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            nodeid, own, children, wall = json.loads(line)
            rows.append((nodeid, float(own), float(children), float(wall)))
    return rows


def by_file(rows) -> list[tuple[str, float, float, float, int]]:
    """(file, own, children, wall, tests), the costliest first."""
    sums: dict[str, list] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for nodeid, own, children, wall in rows:
        s = sums[nodeid.split("::", 1)[0]]
        s[0] += own
        s[1] += children
        s[2] += wall
        s[3] += 1
    out = [(name, *s) for name, s in sums.items()]
    return sorted(out, key=lambda r: -(r[1] + r[2]))


def machine_busy() -> float | None:
    """Seconds of CPU the whole machine has spent busy since boot, all cores (None off Linux):
    /proc/stat's first line less its idle and I/O-wait columns."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            ticks = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    busy = sum(ticks[:8]) - ticks[3] - ticks[4]  # user .. steal, less idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def machine_speed(rounds: int = 200) -> float:
    """CPU seconds this process takes for one fixed workload: the rules engine (pure Python,
    what most of the suite's CPU is like) replaying the spec's example games `rounds` times.
    The same on the same machine; larger when the host gives this machine less."""
    from replays import verifier
    from tests.harness.records import EXAMPLES

    records = [
        json.loads(line)
        for path in sorted(EXAMPLES.glob("*-valid.ndjson"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    for record in records:  # warm: the engines' tables and caches
        verifier.replay_record(record)
    began = time.process_time()
    for _ in range(rounds):
        for record in records:
            verifier.replay_record(record)
    return time.process_time() - began


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=4, help="pytest-xdist workers (-n)")
    ap.add_argument("--top", type=int, default=15, help="files and tests to list")
    ap.add_argument("--target", type=float, default=420.0, help="seconds of wall time")
    ap.add_argument(
        "--speed-rounds", type=int, default=200, help="of the machine-speed workload (about 1 s)"
    )
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="suite-census-") as tmp:
        directory = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
        env["BALANCE_CENSUS_DIR"] = str(directory)
        command = [sys.executable, "-m", "pytest", "-p", "tests.harness.census"]
        if args.workers > 0:
            command += ["-n", str(args.workers), "--dist", "loadfile"]
        command += extra
        speed_before = machine_speed(args.speed_rounds)
        load_before = os.getloadavg()[0]
        busy_before = machine_busy()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.monotonic()
        code = subprocess.run(command, cwd=ROOT, env=env).returncode
        wall = time.monotonic() - began
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        busy_after = machine_busy()
        load_after = os.getloadavg()[0]
        speed_after = machine_speed(args.speed_rounds)
        rows = census(directory)

    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    files = by_file(rows)
    own = sum(r[1] for r in rows)
    children = sum(r[2] for r in rows)
    print()
    print(f"command        {' '.join(command[1:])}")
    print(f"tests          {len(rows):,} in {len(files)} files; pytest exit {code}")
    print(f"wall           {wall:7.1f} s   (target {args.target:.0f} s: {wall / args.target:.2f}x)")
    print(f"load average   {load_before:.2f} before, {load_after:.2f} after")
    print(f"CPU            {cpu:7.1f} s   ({cpu / wall:.2f} cores busy of {os.cpu_count()})")
    print(f"  in tests     {own + children:7.1f} s   (own {own:.1f}, processes {children:.1f})")
    busy = None if busy_before is None or busy_after is None else busy_after - busy_before
    if busy is not None:
        cores = busy / wall
        print(f"machine        {busy:7.1f} s   busy ({cores:.2f} cores, with what it misses)")
    print(
        f"machine speed  {speed_before:7.2f} s   before, {speed_after:.2f} s after "
        "(CPU of one fixed workload: more is a slower machine)"
    )
    print(f"\n{'CPU s':>7} {'own':>7} {'procs':>7} {'wall s':>7} {'tests':>5}  file")
    for name, f_own, f_kids, f_wall, n in files[: args.top]:
        print(f"{f_own + f_kids:7.1f} {f_own:7.1f} {f_kids:7.1f} {f_wall:7.1f} {n:5d}  {name}")
    print(f"\n{'CPU s':>7} {'own':>7} {'procs':>7} {'wall s':>7}  test")
    for nodeid, t_own, t_children, t_wall in sorted(rows, key=lambda r: -(r[1] + r[2]))[: args.top]:
        print(f"{t_own + t_children:7.1f} {t_own:7.1f} {t_children:7.1f} {t_wall:7.1f}  {nodeid}")

    OUT.mkdir(parents=True, exist_ok=True)
    figures = {
        "command": command[1:],
        "exit": code,
        "wall": wall,
        "target": args.target,
        "cpu": cpu,
        "machine_busy": busy,
        "cores": os.cpu_count(),
        "load": [load_before, load_after],
        "machine_speed": [speed_before, speed_after],
        "tests": len(rows),
        "files": [
            {"file": name, "own": a, "children": b, "wall": c, "tests": n}
            for name, a, b, c, n in files
        ],
    }
    (OUT / "suite_time.json").write_text(json.dumps(figures, indent=1) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
