"""The spec's Slow6 example records, line by line, through the public interface.

slow6-valid.ndjson: every line is valid. slow6-invalid.ndjson: every line names its expected
rule (or one of `also_acceptable`) at its expected turn, with a message a client developer can
act on: the offending move, power or square for a turn fault, the claim for a result fault.
"""

from __future__ import annotations

import json
import re

import pytest
from support import examples_dir

EXAMPLES = examples_dir()


def _lines(name: str) -> list[str]:
    return [x for x in (EXAMPLES / name).read_text().splitlines() if x.strip()]


VALID = _lines("slow6-valid.ndjson")
INVALID = _lines("slow6-invalid.ndjson")
EXPECTED = [json.loads(x) for x in _lines("slow6-invalid.expected.ndjson")]
CASES = list(zip(INVALID, EXPECTED, strict=True))

# faults of a move: the message must quote the move as logged
MOVE_KINDS = {
    "jump",
    "three_squares",
    "onto_own_piece",
    "moves_enemy_piece",
    "crown_moves_two",
    "wrong_promotion_lane",
    "moves_immobile_piece",
    "double_crown_moves_twice",
}
# faults of a power: the message must name the power or its target square
POWER_KINDS = {
    "trap_on_occupied",
    "shove_onto_occupied",
    "recall_not_just_lost",
    "leap_by_crown",
    "swap_with_immobile",
    "power_used_twice",
    "power_not_picked",
}
RESULT_KINDS = {"wrong_reason", "wrong_points", "wrong_winner", "cut_short"}


def _gid(line: str) -> str:
    return json.loads(line)["game_id"][:8]


def check_text(line: str):
    from replays.verifier import check_text as check

    return check(line)


def test_example_files_are_not_empty():
    assert len(VALID) >= 10 and len(CASES) >= 10
    assert {e["game_id"] for e in EXPECTED} == {json.loads(x)["game_id"] for x in INVALID}


@pytest.mark.parametrize("line", VALID, ids=[_gid(x) for x in VALID])
def test_valid_example_verifies(line):
    record, v = check_text(line)
    assert v.verdict == "valid", (v.rule, v.turn, v.message)
    assert v.game_id == record["game_id"]


@pytest.mark.parametrize("line", VALID, ids=[_gid(x) for x in VALID])
def test_valid_example_verifies_as_a_record_too(line):
    from replays.verifier import verify_record

    assert verify_record(json.loads(line)).verdict == "valid"


@pytest.mark.parametrize(
    "line,expected", CASES, ids=[f"{e['kind']}-{e['game_id'][:8]}" for e in EXPECTED]
)
def test_invalid_example_names_its_rule_and_turn(line, expected):
    record, v = check_text(line)
    assert v.verdict == "invalid", (v.verdict, v.message)
    assert v.game_id == expected["game_id"]
    allowed = [expected["rule"], *expected["also_acceptable"]]
    assert v.rule in allowed, f"{v.rule} not in {allowed}: {v.message}"
    assert v.turn == expected["turn"], f"turn {v.turn}, expected {expected['turn']}: {v.message}"


@pytest.mark.parametrize(
    "line,expected", CASES, ids=[f"{e['kind']}-{e['game_id'][:8]}" for e in EXPECTED]
)
def test_invalid_example_message_is_actionable(line, expected):
    record, v = check_text(line)
    message = v.message or ""
    assert message, "an invalid verdict must say why"
    kind = expected["kind"]
    turn = record["turns"][expected["turn"]] if expected["turn"] is not None else None
    if kind in MOVE_KINDS:
        assert any(m in message for m in turn["moves"]), (turn, message)
    elif kind in POWER_KINDS:
        target = turn.get("target")
        squares = target if isinstance(target, list) else [target]
        names = [turn["power"], *[s for s in squares if s]]
        assert any(x in message for x in names), (turn, message)
    elif kind == "pass_with_legal_move":
        assert "pass" in message.lower(), message
    elif kind == "move_after_end":
        assert "end" in message.lower(), message
    elif kind in RESULT_KINDS:
        claimed = record["result"]
        assert claimed["reason"] in message or "winner" in message, message
        if kind == "wrong_points":
            for total in claimed["points"]:
                assert re.search(rf"\b{total}\b", message), message
    else:
        pytest.fail(f"unknown example kind {kind}: add it to this test")
