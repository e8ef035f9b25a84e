"""The lab runner's hand-off (ingest/server/lab_runner.py): workers that take the pairs in tasks of
several give the pairs one process plays, every pair once, one line each in the run file, and
a run file cut short mid-task continues from the pairs it holds."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal

import pytest
from support import wait_for

from ingest.server import lab_runner
from ingest.server.lab_runner import LabRun, play, read_pairs
from replays.rulesets import STANDARD, parse_toml

FREEZE_1 = 'name = "freeze-1"\ngame = "slow6"\n[params]\nfreeze_turns = 1\n'


@pytest.mark.slow  # (worker processes)
def test_workers_taking_tasks_of_several_pairs_give_what_one_process_plays(tmp_path):
    pairs = 48  # (tasks of 3 pairs with 2 workers: more than one a task, and a last short one)
    run = LabRun(STANDARD["slow6"], parse_toml(FREEZE_1), 5, True, (1,), seed=5, games=pairs)
    assert max(1, min(lab_runner.CHUNK, pairs // (8 * 2))) == 3
    seen: list[int] = []
    two = play(run, tmp_path / "two.ndjson", jobs=2, progress=lambda done, *_: seen.append(done))
    one = play(run, tmp_path / "one.ndjson", jobs=1)
    assert two == one and [p["i"] for p in two] == list(range(pairs))
    assert seen == sorted(seen) and seen[-1] == pairs and len(seen) < pairs  # by task
    lines = (tmp_path / "two.ndjson").read_bytes().splitlines()
    assert len(lines) == 1 + pairs
    assert sorted(json.loads(line)["i"] for line in lines[1:]) == list(range(pairs))

    # a kill mid-write: the file ends inside a task's lines; the rest is played again
    cut = b"\n".join(lines[:20]) + b"\n" + lines[20][: len(lines[20]) // 2]
    (tmp_path / "cut.ndjson").write_bytes(cut)
    assert len(read_pairs(tmp_path / "cut.ndjson", run)) == 19
    assert play(run, tmp_path / "cut.ndjson", jobs=2) == one
    assert len(read_pairs(tmp_path / "cut.ndjson", run)) == pairs


@pytest.mark.slow  # (worker processes)
def test_a_worker_that_died_before_the_next_task_went_out_stops_the_run_as_a_death(tmp_path):
    """A worker killed while the last results were being written (the out-of-memory killer
    does not wait): the pool is broken when the next task is handed out. The run stops with
    WorkerDied, which the command and the Lab page report ("a worker process died", what
    finished kept), never with the executor's own BrokenProcessPool and a traceback; and
    every batch that finished is still handed over, each pair once."""
    run = LabRun(STANDARD["slow6"], parse_toml(FREEZE_1), 5, True, (1,), seed=7, games=100)
    before = {p.pid for p in multiprocessing.active_children()}
    results = lab_runner._results(run, list(range(run.games)), jobs=2)
    got = [next(results)]  # 8 tasks out (4 a worker), one of them handed over
    workers = [p for p in multiprocessing.active_children() if p.pid not in before]
    assert len(workers) == 2, workers
    os.kill(workers[0].pid, signal.SIGKILL)
    # the executor ends the other worker once it sees the death, after marking itself
    # broken: from then on a new task is refused
    wait_for(lambda: not any(p.is_alive() for p in workers), 60, "the pool's workers gone")
    with pytest.raises(lab_runner.WorkerDied):
        for batch in results:
            got.append(batch)
    played = [pair["i"] for batch in got for pair in batch]
    assert len(played) == len(set(played)) < run.games
