"""Every benchmark in benchmarks/ runs at a tiny size and prints its figures, so that none can
break unnoticed (analysis_full.py once died building its store on a fresh checkout).

Each runs as a subprocess, as someone would run it (`python -m benchmarks.NAME` from the
checkout), with its caches in a fresh directory (BALANCE_BENCH_OUT): the build paths run every
time, and benchmarks/out/ is left alone. Its own DuckDB databases run one thread each, as in
the test processes (tests/harness/duckdb_threads.py: the suite already fills the cores); the
servers it starts run as deployed. The lake benchmarks borrow the session's PostgreSQL
cluster and extension directory (BALANCE_BENCH_PG_DIR) instead of starting their own: one
cluster per run. All but the quickest few are `slow`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from lake_cluster import BORROW
from support import REPO

BENCHMARKS = REPO / "benchmarks"
slow, lake = pytest.mark.slow, pytest.mark.lake

# script -> (the smallest arguments its --help offers, a regex of its figures, marks)
RUNS = {
    "analysis_full.py": (
        "--games 1000",
        r"full recompute \(all tables\) +[\d.]+ s.*same table +True",
        [slow],
    ),
    "bot_strength.py": ("--games 2 --levels 0,1", r"L0 +-- +[\d.]+", []),
    "dashboard_pages.py": (
        "--games 200 --repeat 1",
        r"first snapshot of the store: [\d.]+ s \(200\).*slowest page median: \d+ ms",
        [slow],
    ),
    "differential.py": (
        "--records 40 --per-base 3 --workers 1 --chunk 5",
        r"records: 40 in \d+ s with 1 workers.*disagreements: \d+",
        [],
    ),
    "ingest_http.py": (
        "--batch-games 500 --single-games 40 --pool 10 --client python",
        r"500 games in [\d.]+s = [\d,]+ accepted games/s.*40 games in [\d.]+s = [\d,]+ accepted",
        [slow],
    ),
    "ingest_judge.py": (
        "--games 100 --passes 1 --pool 10",
        r"total +\| +[\d.]+ +[\d.]+.*pickled B/game +\| +\d+",
        [slow],
    ),
    "ingest_size.py": (
        "--games 50 --pool 10",
        r"50 slow6 games .* = [\d.]+ bytes/game.*raw_records +50 rows",
        [slow],
    ),
    "ingest_zdict.py": (
        "--games 20 --test 10 --write-dir {out}",
        r"slow6: 10 test records.*fresh build +[\d.]+ B/record.*slide: 10 test records",
        [slow],
    ),
    "lab.py": (
        "--seconds 0.05 --levels 1 --pairs 4 --jobs 1 --coverage 1 --coverage-pairs 4",
        r"level 1: +[\d.]+ games/s.*4 pairs \(8 games\) in [\d.]+ s.*2 x 10,000 games .*"
        r"extrapolated.*median over \d+ rows.*null coverage: 1 repetitions.*covering 0: "
        r"\d+/\d+",
        [slow],
    ),
    "lineup_model.py": (
        "--sizes 300 --seeds 1",
        r"7x7 rank 7 on file d \+0.2 +300 +1 +found by: +\d/1 +\d/1.*5x5 null +300",
        [],
    ),
    "null_reports.py": (
        "--stores 1 --sizes 600 --histories 1 --weeks 2 --weekly-size 600 --planted 1",
        r"600 human games: families a report \d+.*chosen findings false entries per report "
        r"0\.000 \[0\.000, [\d.]+\]; reports with any 0/1.*even +either +false entries.*"
        r"findings the family most often ever flagged: 0/1.*either +the family most often.*"
        r"chosen findings found first move \+3 points \d/1.*even +either +found first move.*"
        r"the Setups page's rate of lineup 21435 .*: its interval holds 0.60 in \d+/\d+",
        [slow],
    ),
    "simulate.py": (
        "--seconds 0.05 --levels 0,1",
        r"5x5 powers, random +: +[\d.]+ games/s.*7x7 powers, level 1 +: +[\d.]+ games/s",
        [],
    ),
    "saved_queries.py": (
        "--saves 3 --lists 2",
        r"saves: 3 of 64 KiB .* 0 refused; one over the size limit: 413.*"
        r"server memory: \d+ MB before the saves",
        [slow],
    ),
    "server_start.py": (
        "--starts 1",
        r"start 1: CPU +[\d.]+ s +healthy after +[\d.]+ s.*median of 1 .*CPU [\d.]+ s a start"
        r".*processes while it ran.*ingest.cli serve",
        [slow],
    ),
    "simulate_slide.py": ("--games 2", r"\n +2 +[\d,]+ +[\d,]+ +[\d,]+\n.*greedy vs", []),
    "soak.py": (
        "--seconds 2 --uploaders 1 --silent 1 --trickle 1 --idle 2 --flood 2 --slow-console 1 "
        "--never-read 1 --pool 10",
        r"games: [\d,]+ acknowledged, [\d,]+ of them stored, 0 missing.*legitimate uploads: "
        r"[\d,]+ of [\d,]+ accepted \([\d.]+%\); time to the answer p50 [\d.]+ ms, p99 "
        r"[\d.]+ ms.*acknowledged games lost: 0.*/healthz: \d+ answered",
        [slow],
    ),
    "verify.py": (
        "--games 10 --seconds 0.1 --facts --ruleset tests/spec/examples/rulesets/reach-3.toml",
        r"ruleset reach-3: reach 2 -> 3.*5x5 with powers \(10 games.*[\d,]+ games/s over"
        r".*7x7 with powers.*with facts",
        [slow],
    ),
    "lake_jobs.py": (
        "--games 1500 --new 100 --repeat 1",
        r"lake / file +[\d.]+ .*after 100 new games, lake +[\d.]+ s +\(incremental, 100\)"
        r".*live Parquet +[\d.]+ B/game",
        [slow, lake],
    ),
    "lake_ingest.py": (
        "--seconds 1 --servers 1 --no-file --connections 2 --pool 10 --single-lines 300",
        r'"setup": "lakex1", "phase": "single2".*lakex1: (\d+) games acknowledged, \1 in',
        [slow, lake],
    ),
    "lake_faults.py": (
        "--faults kill-other --seconds 1 --connections 2 --pool 10",
        r'"fault": "kill-other", "acknowledged": [1-9]\d*, "in_lake": \d+, "lost": 0, '
        r'"doubled": 0, "check_ok": true',
        [slow, lake],
    ),
    "lake_latency.py": (
        "--uploads 40 --pool 10",
        r"file \{'uploads_per_s'.*lake \{'uploads_per_s'.*'statement_ms'",
        [slow, lake],
    ),
    "lake_registry.py": (
        "--reads 2 --burst 100",
        r"full read of the rulesets from the lake: [\d.]+ ms.*counter check: +[\d.]+ ms.*"
        r"RS5.1 burst, counter checked: [\d,]+ records/s.*a lake read a chunk: [\d,]+",
        [slow, lake],
    ),
    "lake_writers.py": (
        "--writers 2 --batches 1 --batch 20",
        r"2 writer\(s\), one lake +CPU ms/game \[[\d.]+, [\d.]+\].*"
        r"2 writer\(s\), one lake, no token +CPU.*2 writer\(s\), a lake each +CPU",
        [slow, lake],
    ),
    "suite_time.py": (
        "--top 2 --speed-rounds 2 -- --basetemp {out}/basetemp tests/test_pins.py "
        "tests/test_harness.py",
        r"tests +\d+ in 2 files; pytest exit 0.*wall +[\d.]+ s.*CPU +[\d.]+ s +\([\d.]+ cores"
        r".*in tests +[\d.]+ s.*machine +[\d.]+ s +busy \([\d.]+ cores.*"
        r"machine speed +[\d.]+ s +before, [\d.]+ s after.*tests/test_pins.py::",
        [slow],
    ),
    "verify_slide.py": (
        "--games 5 --seconds 0.05",
        r"2 players: [\d,]+ games/s text->verdict.*6 players: [\d,]+ games/s",
        [slow],
    ),
    "wellformed.py": ("--seconds 0.05", r"slow6-valid 5x5 +\d+ +\d+ +[\d.]+ us", [slow]),
}


def scripts() -> list[str]:
    """Every runnable script of benchmarks/ (helper modules have no __main__ block)."""
    return sorted(
        p.name for p in BENCHMARKS.glob("*.py") if 'if __name__ == "__main__"' in p.read_text()
    )


def test_every_benchmark_has_a_smoke_run():
    assert scripts() == sorted(RUNS)


@pytest.mark.parametrize(
    "script", [pytest.param(name, marks=RUNS[name][2]) for name in sorted(RUNS)]
)
def test_the_benchmark_runs_at_a_tiny_size(script, tmp_path, request):
    args, figures, _ = RUNS[script]
    args = args.format(out=tmp_path).split()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BALANCE_")}
    env["BALANCE_BENCH_OUT"] = str(tmp_path / "out")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    if script.startswith("lake_"):  # skips, saying why, where no lake can be had
        env[BORROW] = str(request.getfixturevalue("pg_cluster").directory)
        env["BALANCE_LAKE_EXTENSIONS"] = str(request.getfixturevalue("lake_extensions"))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.harness.duckdb_threads",
            f"benchmarks.{script.removesuffix('.py')}",
            *args,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert re.search(figures, run.stdout, re.S), run.stdout[-3000:]


def test_a_pool_of_no_records_is_refused_before_the_benchmark_runs(tmp_path):
    """`--pool 0` (or less) is a usage error, exit 2, in every benchmark that takes it: an
    empty pool sent nothing, and ingest_size printed bytes per game over no games."""
    takes = sorted(p.name for p in BENCHMARKS.glob("*.py") if '"--pool"' in p.read_text())
    assert len(takes) >= 7, takes
    for name in takes:
        assert '"--pool", type=pool_size' in (BENCHMARKS / name).read_text(), name
    env = {k: v for k, v in os.environ.items() if not k.startswith("BALANCE_")}
    env["BALANCE_BENCH_OUT"] = str(tmp_path / "out")
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.ingest_size", "--games", "5", "--pool", "0"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 2, run.stdout + run.stderr
    assert "argument --pool: must be at least 1, not 0" in run.stderr
    assert not (tmp_path / "out").exists()  # nothing simulated, nothing written
