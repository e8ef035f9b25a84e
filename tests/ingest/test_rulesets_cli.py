"""`balance verify --rules FILE... RECORDS` and `balance simulate --rules FILE`: records judged
offline under ruleset files (plus standard), and simulated under one."""

from __future__ import annotations

import json

from support import balance, examples_dir

DIR = examples_dir() / "rulesets"
TOMLS = sorted(str(p) for p in DIR.glob("*.toml"))
VALID = str(DIR / "rulesets-valid.ndjson")


def verdicts(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def test_verify_judges_records_under_the_given_ruleset_files():
    ran = balance("verify", "--rules", *reversed(TOMLS), VALID)
    assert ran.returncode == 0, ran.stderr
    got = verdicts(ran.stdout)
    assert len(got) == len(DIR.joinpath("rulesets-valid.ndjson").read_text().splitlines())
    assert all(v["verdict"] == "valid" for v in got)
    assert {v["ruleset"] for v in got} == {
        "standard",
        "few-powers",
        "freeze-1",
        "long-5",
        "reach-3",
        "slide-groups-3",
    }
    # without the files: standard only, the rest RS5.1 (and the exit code says so)
    ran = balance("verify", VALID)
    assert ran.returncode == 1
    rules = {v["rule"] for v in verdicts(ran.stdout)}
    assert rules == {None, "RS5.1"}
    # --rules once per file, records anywhere
    ran = balance("verify", VALID, "--rules", TOMLS[0], "--rules", TOMLS[1])
    assert len(verdicts(ran.stdout)) == len(got)


def test_ruleset_files_may_be_based_on_each_other_in_any_order(tmp_path):
    base = tmp_path / "base.rules"  # (any name, given with --rules once per file)
    base.write_text('name = "base"\ngame = "slow6"\n[params]\nreach = 3\ndash_reach = 4\n')
    child = tmp_path / "child.toml"
    child.write_text(
        'name = "child"\ngame = "slow6"\nbased_on = "base"\n[params]\nfreeze_turns = 1\n'
    )
    out = tmp_path / "games.ndjson"
    ran = balance("simulate", "--games", "6", "--powers", "--max-level", "1",
                  "--rules", str(child), str(base), "--out", str(out))  # fmt: skip
    assert ran.returncode == 0, ran.stderr  # played under the last file given, based on the first
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert {r["ruleset"] for r in records} == {"base"}
    ran = balance("simulate", "--games", "6", "--powers", "--max-level", "1",
                  "--rules", str(base), str(child), "--out", str(out))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert {json.loads(x)["ruleset"] for x in out.read_text().splitlines()} == {"child"}
    ran = balance("verify", "--rules", str(child), "--rules", str(base), str(out))
    assert ran.returncode == 0, ran.stdout
    assert {v["ruleset"] for v in verdicts(ran.stdout)} == {"child"}
    # without its base, the child cannot be read: refused naming based_on
    ran = balance("verify", "--rules", str(child), str(out))
    assert ran.returncode == 2 and "based_on" in ran.stderr


def test_an_invalid_ruleset_file_is_refused_naming_the_parameter(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\ngame = "slow6"\n[params]\nfreeze_turns = 9\n')
    ran = balance("verify", "--rules", str(bad), VALID)
    assert ran.returncode == 2 and "freeze_turns" in ran.stderr and ran.stdout == ""
    ran = balance("verify", "--rules", str(tmp_path / "missing.toml"), VALID)
    assert ran.returncode != 0 and "missing.toml" in ran.stderr
    ran = balance("verify", "--rules", str(bad))
    assert ran.returncode == 2


def test_simulate_slide_under_a_ruleset(tmp_path):
    out = tmp_path / "slide.ndjson"
    groups = str(DIR / "slide-groups-3.toml")
    ran = balance("simulate", "--game", "slide", "--players", "3", "--games", "8",
                  "--rules", groups, "--out", str(out))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert {json.loads(x)["ruleset"] for x in out.read_text().splitlines()} == {"slide-groups-3"}
    ran = balance("verify", "--rules", groups, str(out))
    assert ran.returncode == 0, ran.stdout
    # a Slow6 ruleset for a Slide simulation is refused
    ran = balance("simulate", "--game", "slide", "--rules", str(DIR / "reach-3.toml"),
                  "--out", str(out))  # fmt: skip
    assert ran.returncode == 2 and "slow6" in ran.stderr
