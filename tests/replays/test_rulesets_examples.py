"""The spec's ruleset examples (examples/rulesets/), in process, with the five rulesets known.

rulesets-valid.ndjson: every line valid under the ruleset it names, and many of them not under
`standard` (so a verifier that ignores `ruleset` fails them). rulesets-invalid.ndjson: every
line gets its expected rule (or one of `also_acceptable`) at its expected turn.
"""

from __future__ import annotations

import json

import pytest
from support import examples_dir

from replays.rulesets import STANDARD, chain_lookup, parse_files
from replays.slide.engine import groups, score_grid
from replays.verifier import check_text, verify_record

DIR = examples_dir() / "rulesets"
KNOWN = parse_files({p.name: p.read_text() for p in sorted(DIR.glob("*.toml"))})
LOOKUP = chain_lookup(lambda game, name: KNOWN.get((game, name)))


def _lines(name: str) -> list[str]:
    return [x for x in (DIR / name).read_text().splitlines() if x.strip()]


VALID = _lines("rulesets-valid.ndjson")
INVALID = _lines("rulesets-invalid.ndjson")
EXPECTED = [json.loads(x) for x in _lines("rulesets-invalid.expected.ndjson")]


@pytest.mark.parametrize("i", range(len(VALID)))
def test_valid_examples_are_valid_under_their_ruleset(i):
    record, verdict = check_text(VALID[i], LOOKUP)
    assert verdict.ok, verdict
    assert verdict.ruleset == record.get("ruleset", "standard")


def test_a_verifier_ignoring_the_ruleset_would_fail_many_valid_examples():
    broken = 0
    for line in VALID:
        record = json.loads(line)
        if record.get("ruleset", "standard") == "standard":
            continue
        record["ruleset"] = "standard"
        broken += not verify_record(record).ok
    assert broken >= 20


@pytest.mark.parametrize("i", range(len(INVALID)))
def test_invalid_examples_break_their_rule_at_their_turn(i):
    expected = EXPECTED[i]
    record, verdict = check_text(INVALID[i], LOOKUP)
    assert record["game_id"] == expected["game_id"]
    assert verdict.verdict == "invalid", (expected["kind"], verdict)
    assert verdict.rule == expected["rule"] or verdict.rule in expected["also_acceptable"], (
        expected,
        verdict,
    )
    assert verdict.turn == expected["turn"], (expected, verdict)
    assert verdict.ruleset == expected["ruleset"]
    assert verdict.message


@pytest.mark.rule("S3.2")
def test_min_group_cancels_only_groups_that_large():
    # rows: a pair of 9s, a row of three 4s; the rest all different, no equal neighbours
    grid = [9, 9, 1, 2,
            3, 5, 6, 7,
            4, 4, 4, 8,
            10, 1, 2, 3]  # fmt: skip
    total = sum(grid)
    assert score_grid(grid) == (total - 18 - 12, 11)
    assert groups(grid) == [(4, 3), (9, 2)]
    assert score_grid(grid, 3) == (total - 12, 13)
    assert groups(grid, 3) == [(4, 3)]
    assert score_grid(grid, 4) == (total, 16)
    assert groups(grid, 4) == []


def test_slide_examples_under_groups_3_are_not_standard_games():
    slide = [json.loads(x) for x in VALID if '"ruleset":"slide-groups-3"' in x]
    assert slide
    differ = 0
    for record in slide:
        assert KNOWN[("slide", record["ruleset"])].params["min_group"] == 3
        assert verify_record(record, LOOKUP).ok
        record["ruleset"] = "standard"
        differ += verify_record(record).rule == "S3.3"
    assert differ >= len(slide) // 2
    assert STANDARD["slide"].params["min_group"] == 2


def _referee_params(record: dict) -> dict | None:
    name = record.get("ruleset", "standard")
    return None if name == "standard" else dict(KNOWN[("slow6", name)].params)


def test_the_referee_agrees_on_every_slow6_ruleset_example():
    """The second referee (tests/referee/), given each ruleset's parameters, reaches the
    expected verdicts too: an independent reading of RS3 and RS7."""
    from referee.slow6 import judge

    refused_by_standard = 0
    for line in VALID:
        record = json.loads(line)
        if record["game"] == "slow6":
            assert judge(record, _referee_params(record)) == ("valid", None, None), line[:80]
            refused_by_standard += judge(record)[0] == "invalid"
    assert refused_by_standard >= 15  # the parameters are what made them valid
    for line, expected in zip(INVALID, EXPECTED, strict=True):
        record = json.loads(line)
        if record["game"] != "slow6" or expected["rule"] == "RS5.1":
            continue
        verdict, rule, turn = judge(record, _referee_params(record))
        assert verdict == "invalid" and turn == expected["turn"], expected
        assert rule == expected["rule"] or rule in expected["also_acceptable"], expected
