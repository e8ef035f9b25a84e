"""`balance lab` chooses its store by the shared resolver (ingest/storage/where.py) as every
other command: two stores in one line are refused (one line, exit 2) before anything is made,
and the environment counts only where no argument names one."""

from __future__ import annotations

import pytest
from support import balance

LAKE = "postgresql://nobody@127.0.0.1:9/none"


@pytest.mark.parametrize(
    "argv",
    [
        ("lab", "run", "--candidate", "standard", "--games", "1"),
        ("lab", "list"),
        ("lab", "show", "abc"),
        ("lab", "check", "abc"),
        ("lab", "worth", "--power", "dash", "--games", "1"),
    ],
    ids=lambda argv: argv[1],
)
def test_every_lab_command_refuses_two_stores_in_one_line_with_exit_2(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be created: the refusal comes first
    ran = balance(*argv, "--db", "a.duckdb", "--lake", LAKE)
    assert ran.returncode == 2, ran
    lines = ran.stderr.strip().splitlines()
    assert lines == ["balance lab: give one of --db or --lake, not 2"], ran.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_environment_names_the_store_only_when_no_argument_does(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env_db, arg_db = str(tmp_path / "env.duckdb"), str(tmp_path / "arg.duckdb")
    ran = balance("lab", "list", env={"BALANCE_DB": env_db})
    assert ran.returncode == 0 and ran.stdout.strip() == f"no lab runs in {env_db}", ran
    # --db wins over $BALANCE_LAKE (the lake, unreachable here, is never tried)
    ran = balance("lab", "list", "--db", arg_db, env={"BALANCE_LAKE": LAKE, "BALANCE_DB": env_db})
    assert ran.returncode == 0 and ran.stdout.strip() == f"no lab runs in {arg_db}", ran
    assert list(tmp_path.iterdir()) == []
