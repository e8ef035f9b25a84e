"""Lab runs on a lake (docs/lab.md): `balance lab run --lake` resolves the lake's registered
rulesets and stores the run there; `lab list` and `lab show --lake` give it again. Skipped,
with the reason, where PostgreSQL or the ducklake extension cannot be had (lake_cluster.py)."""

from __future__ import annotations

import json

import pytest
from support import balance

pytestmark = pytest.mark.slow


def test_a_lab_run_is_stored_on_the_lake_against_a_registered_candidate(lake, tmp_path):
    toml = tmp_path / "freeze-1.toml"
    toml.write_text('name = "freeze-1"\ngame = "slow6"\n[params]\nfreeze_turns = 1\n')
    added = balance("rules", "add", "--lake", lake, str(toml))
    assert added.returncode == 0, added.stderr
    # the candidate by its registered name: no file needed
    runs = str(tmp_path / "runs")
    ran = balance("lab", "run", "--lake", lake, "--candidate", "freeze-1", "--games", "4",
                  "--powers", "--levels", "1", "--json", "--run-dir", runs)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "stored: lab run" in ran.stderr and "in the lake" in ran.stderr
    assert lake not in ran.stderr  # (the catalog string may hold a password)
    (run,) = json.loads(balance("lab", "list", "--lake", lake, "--json").stdout)["runs"]
    assert run["candidate"]["params"]["freeze_turns"] == 1 and run["games"] == 4
    shown = balance("lab", "show", run["id"], "--lake", lake, "--json")
    assert [json.loads(x) for x in shown.stdout.splitlines()] == [
        json.loads(x) for x in ran.stdout.splitlines()
    ]
    missing = balance("lab", "run", "--lake", lake, "--candidate", "nope", "--games", "1")
    assert missing.returncode == 2 and "RS5.1" in missing.stderr
