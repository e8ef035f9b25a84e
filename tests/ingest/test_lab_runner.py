"""The lab runner's hand-off (ingest/server/lab_runner.py): workers that take the pairs in tasks of
several give the pairs one process plays, every pair once, one line each in the run file, and
a run file cut short mid-task continues from the pairs it holds."""

from __future__ import annotations

import json

import pytest

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
