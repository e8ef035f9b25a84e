"""Upload well-formedness (upload-format.md, "Well-formed means"): parse + check, and the schema.

What a client relies on: every record that follows the format is accepted, every one that does
not is rejected naming the field at fault, and the published JSON Schema says the same thing.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jsonschema
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, validators
from support import examples_dir

from replays import _wf_common, _wf_slide, _wf_slow6, _wf_text, wellformed
from replays.rulesets import NAME_PATTERN
from replays.wellformed import MAX_BYTES, MAX_DEPTH, Malformed, check, load, parse

EXAMPLES = examples_dir()
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "replays" / "schema" / "upload-v1.schema.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text())


def _ecma_pattern(validator, pattern, instance, schema):
    # JSON Schema patterns are ECMA-262, where "$" is the end of the string; Python's re.search
    # (which jsonschema uses) also lets "$" match before a final newline ("a1\n").
    if validator.is_type(instance, "string"):
        if not re.search(pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern, instance):
            yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


VALIDATOR = validators.extend(Draft202012Validator, {"pattern": _ecma_pattern})(SCHEMA)


def lines(name: str) -> list[bytes]:
    return (EXAMPLES / name).read_bytes().splitlines()


def fault(record) -> str | None:
    """The field check() names, or None when the record is well-formed."""
    try:
        check(record)
    except Malformed as exc:
        assert exc.field and exc.message, "a rejection says where and what"
        return exc.field
    return None


def text_fault(text) -> str | None:
    """The field parse + check name (None: well-formed); `load`, their one-step form used by
    the verifier and the server, must say exactly the same."""
    try:
        record = parse(text)
        check(record)
    except Malformed as exc:
        assert load_outcome(text) == (exc.field, exc.message)
        return exc.field
    assert load_outcome(text) == record
    return None


def load_outcome(text):
    """What `load` gives: the record, or (field, message)."""
    try:
        return load(text)
    except Malformed as exc:
        return exc.field, exc.message


def parse_fault(text) -> str | None:
    try:
        parse(text)
    except Malformed as exc:
        # the text's faults come first in `load` too, whatever else the record gets wrong
        assert load_outcome(text) == (exc.field, exc.message)
        return exc.field
    text_fault(text)  # (and `load` agrees with parse + check)
    return None


# The spec's own example (upload-format.md), completed: a 5x5 game with powers.
SLOW6 = {
    "schema": 1,
    "game_id": "3f2b8c1e-6a0d-4c59-9d4e-0b7f6f1a2c33",
    "game": "slow6",
    "client": {"platform": "android", "version": "2.4.0"},
    "mode": "online",
    "ended_at": "2026-11-28T19:04:11Z",
    "rules": {"board": 5, "powers": True, "hidden": False},
    "ai": None,
    "challenge": None,
    "first": 0,
    "lineups": [[3, 1, 5, 2, 4], [2, 5, 1, 4, 3]],
    "powers": [["dash", "shield", "swap"], ["trap", "freeze", "surge"]],
    "turns": [
        {"moves": ["c1-c3"]},
        {"power": "freeze", "target": "c3", "moves": ["b5-b4"]},
        {"power": "dash", "target": "a1", "moves": ["a1-a4"]},
        {"power": "swap", "target": ["b5", "d5"], "moves": ["d5-d4"]},
        {"power": "double", "moves": ["a4-a5", "c3-c4"]},
        {"moves": []},
    ],
    "result": {"winner": 1, "reason": "points", "points": [9, 12]},
}
SLIDE = {
    "schema": 1,
    "game_id": "8bf2724e-56ba-4a04-9683-13cdea6c1702",
    "game": "slide",
    "client": {"platform": "web", "version": "3.1.0"},
    "mode": "friend",
    "ended_at": "2026-02-15T16:46:40Z",
    "players": 3,
    "match": {"id": "m-89b6bf9a", "game": 1},
    "first": 2,
    "grids": [[(i * 7 + s) % 10 + 1 for i in range(16)] for s in range(3)],
    "rounds": [
        {
            "reveals": [[0, 1], [2, 3], [3, 0]],
            "takes": [4, 3, 9],
            "slides": [{"side": "left"}, {"side": "top"}, {"side": "bottom"}],
        }
        for _ in range(2)
    ],
    "result": {"scores": [59, 54, 61], "cards_left": [8, 10, 9], "winners": [1]},
}
CHALLENGE = {
    "id": "daily-2026-01-01",
    "position": {
        "to_move": 1,
        "turns_taken": [7, 7],
        "pieces": [
            {"side": 0, "rank": 3, "square": "c3", "start": "c1", "wounded": False,
             "stunned": False},
            {"side": 1, "rank": 6, "square": "d4", "start": "d5", "wounded": True,
             "stunned": False},
        ],
    },
}  # fmt: skip

DELETE = object()
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def edit(record: dict, path: str, value=DELETE) -> dict:
    """A deep copy of `record` with the field at `path` ("turns[3].power") set or deleted."""
    out = copy.deepcopy(record)
    steps = [name if name else int(index) for name, index in _STEP.findall(path)]
    node = out
    for step in steps[:-1]:
        node = node[step]
    if value is DELETE:
        del node[steps[-1]]
    else:
        node[steps[-1]] = value
    return out


def challenge_record(**changes) -> dict:
    rec = dict(copy.deepcopy(SLOW6), mode="challenge", challenge=copy.deepcopy(CHALLENGE))
    rec.update(changes)
    return rec


# --- the examples -------------------------------------------------------------------------------

MALFORMED = lines("malformed.ndjson")
EXPECTED = [json.loads(line) for line in lines("malformed.expected.ndjson")]


@pytest.mark.parametrize("n", range(len(MALFORMED)), ids=lambda n: f"line{n + 1}")
def test_every_malformed_example_is_rejected_naming_the_expected_field(n):
    assert text_fault(MALFORMED[n]) == EXPECTED[n]["field"], EXPECTED[n]["defect"]


@pytest.mark.parametrize("name", ["slow6-valid", "slow6-invalid", "slide-valid", "slide-invalid"])
def test_every_rule_example_is_well_formed(name):
    # the invalid ones break rules, which is the verifier's business, not the format's
    for line in lines(f"{name}.ndjson"):
        assert text_fault(line) is None
        assert text_fault(line.decode()) is None  # str and bytes alike


def test_the_builders_of_this_file_are_well_formed():
    assert fault(SLOW6) is None
    assert fault(SLIDE) is None
    assert fault(challenge_record()) is None


# --- every field present, nullable ones as null, only the optional ones omitted --------------


@pytest.mark.parametrize("name", _wf_slow6.ORDER)
def test_a_missing_slow6_field_is_named(name):
    assert fault(edit(SLOW6, name)) == name


@pytest.mark.parametrize("name", _wf_slide.ORDER)
def test_a_missing_slide_field_is_named(name):
    assert fault(edit(SLIDE, name)) == name


@pytest.mark.parametrize(
    "path",
    ["client.platform", "client.version", "rules.board", "rules.hidden", "result.winner",
     "result.reason", "turns[1].moves", "match.game", "result.cards_left",
     "rounds[1].slides", "rounds[0].slides[2].side"],
)  # fmt: skip
def test_a_missing_nested_field_is_named_by_its_path(path):
    record = SLIDE if path.startswith(("match", "rounds", "result.cards")) else SLOW6
    assert fault(edit(record, path)) == path


def test_missing_challenge_fields_are_named_by_their_path():
    assert fault(edit(challenge_record(), "challenge.position")) == "challenge.position"
    assert fault(edit(challenge_record(), "challenge.position.pieces[1].stunned")) == (
        "challenge.position.pieces[1].stunned"
    )


def test_nullable_fields_must_be_sent_as_null_not_left_out():
    assert fault(dict(SLOW6, powers=None)) is None
    assert fault(edit(SLOW6, "powers")) == "powers"
    assert fault(edit(SLOW6, "ai")) == "ai"
    assert fault(dict(SLIDE, match=None)) is None
    assert fault(edit(SLIDE, "match")) == "match"


def test_power_target_and_points_are_the_only_omissions():
    assert fault(edit(edit(SLOW6, "turns[1].target"), "turns[1].power")) is None
    timeout = edit(SLOW6, "result", {"winner": 0, "reason": "timeout"})
    assert fault(timeout) is None
    assert fault(edit(timeout, "result.points", None)) is None
    # points given for another reason: well-formed (whether they are true is R6.3)
    assert fault(edit(timeout, "result.points", [3, 4])) is None


def test_points_are_required_when_the_reason_is_points():
    assert fault(edit(SLOW6, "result.points")) == "result.points"
    assert fault(edit(SLOW6, "result.points", None)) == "result"
    assert fault(edit(SLOW6, "result.points", [9, 12, 3])) == "result"
    assert fault(edit(SLOW6, "result.points", [9, "12"])) == "result"


# --- no unknown field anywhere ------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["ip", "client.device", "rules.speed", "turns[2].comment", "result.elo", "ai.name"],
)
def test_an_unknown_slow6_field_at_any_depth_is_named(path):
    record = dict(SLOW6, mode="computer", ai={"side": 1, "level": 2})
    assert fault(edit(record, path, "x")) == path


@pytest.mark.parametrize(
    "path",
    ["email", "match.player", "rounds[1].chat", "rounds[0].slides[1].by", "result.names"],
)
def test_an_unknown_slide_field_at_any_depth_is_named(path):
    assert fault(edit(SLIDE, path, "x")) == path


def test_an_unknown_field_inside_a_challenge_is_named():
    for path in ["challenge.author", "challenge.position.clock", "challenge.position.pieces[0].x"]:
        assert fault(edit(challenge_record(), path, 1)) == path


# --- duplicate keys -----------------------------------------------------------------------------


def dup_text(record: dict, path_prefix: str, key: str, value) -> bytes:
    """The record's JSON with `key` written a second time inside the object at `path_prefix`."""
    text = orjson.dumps(record).decode()
    target = record
    for name, index in _STEP.findall(path_prefix):
        target = target[name if name else int(index)]
    marker = orjson.dumps(target).decode()
    assert text.count(marker) == 1
    extra = f"{json.dumps(key)}:{json.dumps(value)},"
    return text.replace(marker, "{" + extra + marker[1:], 1).encode()


def test_duplicate_keys_are_malformed_and_named():
    assert parse_fault(dup_text(SLOW6, "", "game", "slow6")) == "game"
    assert parse_fault(dup_text(SLOW6, "client", "version", "2.4.0")) == "client.version"
    assert parse_fault(dup_text(SLOW6, "turns[1]", "power", "freeze")) == "turns[1].power"
    unique = edit(SLIDE, "rounds[1].slides[2]", {"side": "right"})
    assert parse_fault(dup_text(unique, "rounds[1].slides[2]", "side", "bottom")) == (
        "rounds[1].slides[2].side"
    )


def test_duplicate_keys_are_found_whatever_the_formatting():
    pretty = json.dumps(SLOW6, indent=2).replace('"first": 0', '"first": 0, "first"  :  1')
    assert parse_fault(pretty) == "first"
    escaped = orjson.dumps(SLOW6).replace(b'"mode":"online"', b'"mode":"online","mod\\u0065":"x"')
    assert parse_fault(escaped) == "mode"  # the same key once decoded
    # a colon, quote or bracket inside strings does not fool the count
    tricky = edit(SLOW6, "client.version", 'a:b"{[}]\\:')
    assert parse_fault(json.dumps(tricky)) is None
    assert parse_fault(json.dumps(tricky, ensure_ascii=True, indent=1)) is None
    assert parse_fault(dup_text(tricky, "rules", "board", 7)) == "rules.board"
    brackets = edit(SLOW6, "client.version", "v[1]{2}:3")  # no escape, brackets in a string
    assert parse_fault(orjson.dumps(brackets)) is None
    assert parse_fault(dup_text(brackets, "rules", "hidden", True)) == "rules.hidden"


def test_equal_keys_in_different_objects_are_not_duplicates():
    assert parse_fault(orjson.dumps(SLIDE)) is None  # "side", "game" appear many times


# --- enum strings exactly as written ------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "path", "value", "field"),
    [
        (SLOW6, "client.platform", "iOS", "client"),
        (SLOW6, "client.platform", "ios ", "client"),
        (SLOW6, "game", "Slow6", "game"),
        (SLOW6, "mode", "Online", "mode"),
        (SLOW6, "result.reason", "Points", "result"),
        (SLOW6, "turns[1].power", "Freeze", "turns[1]"),
        (SLOW6, "powers[0][1]", "SHIELD", "powers"),
        (SLIDE, "rounds[0].slides[1].side", "Top", "rounds[0].slides[1]"),
    ],
)
def test_enum_strings_match_exactly(record, path, value, field):
    assert fault(edit(record, path, value)) == field


# --- integers are JSON integers -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "path", "field"),
    [
        (SLOW6, "schema", "schema"),
        (SLOW6, "first", "first"),
        (SLOW6, "rules.board", "rules.board"),
        (SLOW6, "lineups[0][2]", "lineups"),
        (SLOW6, "result.winner", "result"),
        (SLOW6, "result.points[1]", "result"),
        (SLIDE, "players", "players"),
        (SLIDE, "first", "first"),
        (SLIDE, "match.game", "match"),
        (SLIDE, "grids[1][5]", "grids[1]"),
        (SLIDE, "rounds[1].takes[0]", "rounds[1].takes"),
        (SLIDE, "rounds[0].reveals[1][0]", "rounds[0].reveals[1]"),
        (SLIDE, "result.winners[0]", "result"),
    ],
)
def test_integers_are_never_floats_or_booleans(record, path, field):
    node = record
    for name, index in _STEP.findall(path):
        node = node[name if name else int(index)]
    assert type(node) is int
    assert fault(edit(record, path, float(node))) == field  # 5.0
    assert fault(edit(record, path, node == 1)) == field  # true / false
    assert text_fault(orjson.dumps(edit(record, path, float(node)))) == field  # from the text


def test_ai_level_and_side_are_integers():
    rec = dict(SLOW6, mode="computer", ai={"side": 1, "level": 2})
    assert fault(rec) is None
    assert fault(edit(rec, "ai.level", 2.0)) == "ai"
    assert fault(edit(rec, "ai.side", True)) == "ai"
    assert fault(edit(rec, "ai.level", 5)) == "ai"


# --- squares, moves, powers, targets ------------------------------------------------------------


def test_squares_only_need_the_pattern():
    # g7 is off a 5x5 board: a rule question (R2.6), not a format one
    assert fault(edit(SLOW6, "turns[0].moves", ["g7-a1"])) is None
    assert fault(edit(SLOW6, "turns[1].target", "g6")) is None
    for bad in ["h1", "a8", "a0", "A1", "a1 ", "", "a10", "aa"]:
        assert fault(edit(SLOW6, "turns[1].target", bad)) == "turns[1]", bad
    for bad in ["c1c3", "c1-c8", "c1-", "C1-c3", "c1 - c3", "c1-c3\n"]:
        assert fault(edit(SLOW6, "turns[0].moves", [bad])) == "turns[0]", bad


def test_a_turn_has_at_most_two_moves():
    assert fault(edit(SLOW6, "turns[0].moves", ["a1-a2", "a2-a3"])) is None  # R2.1, not format
    assert fault(edit(SLOW6, "turns[0].moves", ["a1-a2", "a2-a3", "a3-a4"])) == "turns[0]"
    assert fault(edit(SLOW6, "turns[0].moves", None)) == "turns[0]"
    assert fault(edit(SLOW6, "turns[0].moves", "c1-c3")) == "turns[0]"


def test_power_ids_are_the_ten_of_r8_2():
    for power in ["dash", "leap", "surge", "shield", "freeze", "shove", "recall", "trap"]:
        assert fault(edit(SLOW6, "turns[1].power", power)) is None
    assert fault(edit(SLOW6, "turns[1].power", "teleport")) == "turns[1]"
    assert fault(edit(SLOW6, "turns[1].power", None)) == "turns[1]"


def test_the_target_shape_follows_the_power():
    assert fault(edit(SLOW6, "turns[1].target", ["c3"])) == "turns[1]"  # freeze: one square
    assert fault(edit(SLOW6, "turns[3].target", "b5")) == "turns[3]"  # swap: two squares
    assert fault(edit(SLOW6, "turns[3].target", ["b5", "d5", "e5"])) == "turns[3]"
    assert fault(edit(SLOW6, "turns[3].target", ["b5", 5])) == "turns[3]"
    assert fault(edit(SLOW6, "turns[4].target", "a4")) == "turns[4]"  # double has none
    assert fault(edit(SLOW6, "turns[2].target")) == "turns[2].target"  # dash needs one
    assert fault(edit(SLOW6, "turns[3].target")) == "turns[3].target"
    assert fault(edit(SLOW6, "turns[0].target", "c1")) == "turns[0]"  # target without power


def test_turn_keys_may_come_in_any_order():
    turns = [
        {"moves": ["b5-b4"], "target": "c3", "power": "freeze"},
        {"target": ["b5", "d5"], "moves": ["d5-d4"], "power": "swap"},
        {"moves": ["a4-a5", "c3-c4"], "power": "double"},
    ]
    assert fault(dict(SLOW6, turns=turns)) is None
    assert fault(edit(dict(SLOW6, turns=turns), "turns[1].target", ["b5"])) == "turns[1]"


def test_turns_must_be_a_list_of_objects():
    assert fault(dict(SLOW6, turns={"moves": ["c1-c3"]})) == "turns"
    assert fault(dict(SLOW6, turns=[])) is None
    assert fault(edit(SLOW6, "turns[4]", "c1-c3")) == "turns[4]"


# --- rules, modes, lineups, powers --------------------------------------------------------------


def test_hidden_goes_with_powers_false():
    hidden = edit(edit(SLOW6, "rules", {"board": 5, "powers": False, "hidden": True}), "powers",
                  None)  # fmt: skip
    assert fault(hidden) is None
    assert fault(edit(hidden, "rules.powers", True)) == "rules"


@pytest.mark.parametrize("board", [0, 4, 6, 8, 9, -5, "5", None])
def test_the_board_is_5_or_7(board):
    assert fault(edit(SLOW6, "rules.board", board)) == "rules.board"


def test_ai_is_an_object_exactly_in_computer_mode():
    ai = {"side": 0, "level": 4}
    assert fault(dict(SLOW6, mode="computer", ai=ai)) is None
    assert fault(dict(SLOW6, mode="computer", ai=None)) == "ai"
    for mode in ["online", "friend", "tutorial"]:
        assert fault(dict(SLOW6, mode=mode, ai=ai)) == "ai"
        assert fault(dict(SLOW6, mode=mode)) is None


def test_challenge_is_an_object_exactly_in_challenge_mode():
    assert fault(challenge_record()) is None
    assert fault(challenge_record(challenge=None)) == "challenge"
    assert fault(dict(SLOW6, challenge=copy.deepcopy(CHALLENGE))) == "challenge"
    assert fault(challenge_record(ai={"side": 0, "level": 1})) == "ai"


def test_challenge_position_shape():
    base = challenge_record()
    assert fault(edit(base, "challenge.id", 7)) == "challenge.id"
    assert fault(edit(base, "challenge.position", [])) == "challenge.position"
    assert fault(edit(base, "challenge.position.to_move", 2)) == "challenge.position.to_move"
    assert fault(edit(base, "challenge.position.turns_taken", [7])) == (
        "challenge.position.turns_taken"
    )
    assert fault(edit(base, "challenge.position.pieces", {})) == "challenge.position.pieces"
    piece = "challenge.position.pieces[1]"
    assert fault(edit(base, f"{piece}.rank", 6)) is None  # a crown on 5x5 is rank 6 (R1.5)
    assert fault(edit(base, f"{piece}.rank", 7)) == piece  # only on 7x7
    assert fault(edit(edit(base, f"{piece}.rank", 8), "rules.board", 7)) == "lineups"
    assert fault(edit(base, f"{piece}.rank", 0)) == piece
    assert fault(edit(base, f"{piece}.square", "h4")) == piece
    assert fault(edit(base, f"{piece}.wounded", 1)) == piece
    # whether the position is consistent is R9.2: stunned non-crown, empty sides, ...
    assert fault(edit(base, "challenge.position.pieces", [])) is None
    assert fault(edit(base, "challenge.position.pieces[0].stunned", True)) is None


def test_lineups_are_two_permutations_of_1_to_n():
    assert fault(edit(SLOW6, "lineups", [[1, 2, 3, 4, 5]])) == "lineups"
    assert fault(edit(SLOW6, "lineups", None)) == "lineups"
    assert fault(edit(SLOW6, "lineups[0]", [1, 2, 3, 4, 5, 6, 7])) == "lineups"  # 7 on 5x5
    assert fault(edit(SLOW6, "lineups[1]", [1, 1, 2, 3, 4])) == "lineups"
    assert fault(edit(SLOW6, "lineups[1]", [0, 1, 2, 3, 4])) == "lineups"
    assert fault(edit(SLOW6, "lineups[1]", [2, 3, 4, 5, 6])) == "lineups"
    big = edit(SLOW6, "rules.board", 7)
    assert fault(big) == "lineups"
    assert fault(edit(big, "lineups", [[7, 6, 5, 4, 3, 2, 1], [1, 2, 3, 4, 5, 6, 7]])) is None


def test_powers_are_null_or_two_lists_of_one_to_five_ids():
    assert fault(edit(SLOW6, "powers", [["dash", "shield", "swap"]])) == "powers"
    # how many a side picks is a rule (R8.1 under its ruleset, RS7.3), not form
    assert fault(edit(SLOW6, "powers[0]", ["dash", "shield"])) is None
    assert fault(edit(SLOW6, "powers[0]", ["dash"])) is None
    five = ["dash", "shield", "swap", "leap", "trap"]
    assert fault(edit(SLOW6, "powers[0]", five)) is None
    assert fault(edit(SLOW6, "powers[0]", [])) == "powers[0]"
    assert fault(edit(SLOW6, "powers[0]", [*five, "surge"])) == "powers[0]"
    assert fault(edit(SLOW6, "powers[1]", "dash")) == "powers[1]"
    assert fault(edit(SLOW6, "powers[1][2]", "jump")) == "powers"
    # duplicate picks and picks in a game without powers are R8.1 questions
    assert fault(edit(SLOW6, "powers[1]", ["trap", "trap", "trap"])) is None
    assert fault(edit(SLOW6, "rules.powers", False)) is None


def test_result_values():
    assert fault(edit(SLOW6, "result.winner", None)) is None  # a draw
    assert fault(edit(SLOW6, "result.winner", 2)) == "result"
    assert fault(edit(SLOW6, "result", None)) == "result"
    assert fault(edit(SLOW6, "first", 2)) == "first"


# --- game_id and ended_at -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "game_id",
    ["3f2b8c1e-6a0d-4c59-9d4e-0b7f6f1a2c33", "3F2B8C1E-6A0D-4C59-9D4E-0B7F6F1A2C33",
     "3f2B8c1E-6a0d-4C59-9d4e-0B7F6f1a2c33", "00000000-0000-0000-0000-000000000000"],
)  # fmt: skip
def test_uuids_in_either_case_are_accepted(game_id):
    assert fault(dict(SLOW6, game_id=game_id)) is None


@pytest.mark.parametrize(
    "game_id",
    ["3f2b8c1e6a0d4c599d4e0b7f6f1a2c33", "{3f2b8c1e-6a0d-4c59-9d4e-0b7f6f1a2c33}",
     "urn:uuid:3f2b8c1e-6a0d-4c59-9d4e-0b7f6f1a2c33", "3f2b8c1e-6a0d-4c59-9d4e-0b7f6f1a2c3g",
     "3f2b8c1e-6a0d-4c59-9d4e-0b7f6f1a2c33\n", " 3f2b8c1e-6a0d-4c59-9d4e-0b7f6f1a2c33", 42],
)  # fmt: skip
def test_non_canonical_uuids_are_rejected(game_id):
    assert fault(dict(SLOW6, game_id=game_id)) == "game_id"


@pytest.mark.parametrize(
    "ended_at",
    ["2026-11-28T19:04:11Z", "2026-11-28T19:04:11+00:00", "2026-11-28T19:04:11.5Z",
     "2026-11-28T19:04:11.123456789+00:00", "2024-02-29T00:00:00Z", "2000-02-29T23:59:59Z",
     "2026-12-31T23:59:59Z", "2026-04-30T00:00:00Z", "0001-01-01T00:00:00Z"],
)  # fmt: skip
def test_real_rfc3339_utc_times_are_accepted(ended_at):
    assert fault(dict(SLOW6, ended_at=ended_at)) is None


@pytest.mark.parametrize(
    "ended_at",
    ["2027-02-29T10:00:00Z", "2100-02-29T10:00:00Z", "2026-02-30T10:00:00Z",
     "2026-04-31T10:00:00Z", "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z",
     "2026-11-00T00:00:00Z", "2026-11-28T24:00:00Z", "2026-11-28T19:61:11Z",
     "2026-11-28T19:04:60Z", "0000-01-01T00:00:00Z", "2026-11-28T19:04:11ZZ",
     "2026-11-28T19:04:11z", "2026-11-28t19:04:11Z", "2026-11-28 19:04:11Z",
     "2026-11-28T19:04:11+01:00", "2026-11-28T19:04:11-00:00", "2026-11-28T19:04:11",
     "2026-11-28T19:04Z", "2026-11-28T19:04:11.Z", "2026-11-28", "26-11-28T19:04:11Z",
     "2026-11-28T19:04:11Z\n", "\u0662026-11-28T19:04:11Z", 1764356651, None],
)  # fmt: skip
def test_other_times_are_rejected(ended_at):
    assert fault(dict(SLOW6, ended_at=ended_at)) == "ended_at"


# --- limits, at the boundary --------------------------------------------------------------------


def padded(record: dict, size: int) -> bytes:
    text = orjson.dumps(record)
    return text[:-1] + b" " * (size - len(text)) + b"}"


def test_a_record_of_exactly_64_kib_is_accepted_one_byte_more_is_not():
    assert text_fault(padded(SLOW6, MAX_BYTES)) is None
    assert len(padded(SLOW6, MAX_BYTES + 1)) == 65537
    assert parse_fault(padded(SLOW6, MAX_BYTES + 1)) == "record"


def test_the_size_is_counted_in_utf8_bytes_and_checked_before_parsing():
    text = padded(edit(SLOW6, "client.version", "\u00e9" * 64), MAX_BYTES).decode()
    assert len(text) < MAX_BYTES  # 64 two-byte characters
    assert text_fault(text) is None
    assert parse_fault(text + " ") == "record"
    assert parse_fault(b"[" * (MAX_BYTES + 1)) == "record"  # not even looked at as JSON


def test_client_version_is_at_most_64_characters():
    assert fault(edit(SLOW6, "client.version", "9" * 64)) is None
    assert fault(edit(SLOW6, "client.version", "9" * 65)) == "client.version"
    assert fault(edit(SLOW6, "client.version", "")) is None
    assert fault(edit(SLOW6, "client.version", 2.4)) == "client"


def test_challenge_and_match_ids_are_at_most_128_characters():
    assert fault(edit(challenge_record(), "challenge.id", "c" * 128)) is None
    assert fault(edit(challenge_record(), "challenge.id", "c" * 129)) == "challenge.id"
    assert fault(edit(SLIDE, "match.id", "m" * 128)) is None
    assert fault(edit(SLIDE, "match.id", "m" * 129)) == "match.id"
    assert fault(edit(SLIDE, "match.id", 5)) == "match"


def nested(levels: int) -> bytes:
    """A record whose `first` holds lists such that the deepest value is `levels` deep."""
    inner = "[" * (levels - 1) + "0" + "]" * (levels - 1)  # the record object is level 1
    return orjson.dumps(SLOW6).replace(b'"first":0', f'"first":{inner}'.encode())


def test_nesting_32_levels_parses_33_does_not():
    assert parse_fault(nested(MAX_DEPTH)) is None  # (check() rejects `first` as not 0 or 1)
    assert text_fault(nested(MAX_DEPTH)) == "first"
    assert parse_fault(nested(MAX_DEPTH + 1)) == "first"
    assert parse_fault(nested(2000)) == "first"  # past orjson's own limit of 1024


def test_a_duplicate_key_is_named_even_when_the_record_kept_is_well_formed():
    # orjson keeps the last of two keys: the record it returns passes check(), so `load`
    # must still see what the text held, a dropped key and a too-deep dropped value
    deep = "[" * 40 + "]" * 40
    for text in [
        dup_text(SLOW6, "", "mode", "online"),
        orjson.dumps(SLOW6).replace(b'"client":', f'"client":{deep},"client":'.encode()),
        orjson.dumps(SLOW6).replace(b'"ai":null', b'"ai":{"side":0},"ai":null'),
    ]:
        assert check(orjson.loads(text)) is None
        with pytest.raises(Malformed) as exc:
            load(text)
        assert exc.value.record is None  # a fault of the text, as `parse` raises it
        assert (exc.value.field, exc.value.message) == load_outcome(text)
    assert parse_fault(dup_text(SLOW6, "", "mode", "online")) == "mode"
    assert (
        parse_fault(
            orjson.dumps(SLOW6).replace(b'"client":', f'"client":{deep},"client":'.encode())
        )
        == "client"
    )
    assert (
        parse_fault(orjson.dumps(SLOW6).replace(b'"ai":null', b'"ai":{"side":0},"ai":null')) == "ai"
    )


def test_the_colon_count_check_returns_is_the_records_own():
    # `load` proves "no key dropped" by comparing the text's colons with this count: one too
    # many would let a duplicate key through, one too few would only cost the slow proof
    challenge = next(
        r for name in ["slow6-valid", "slow6-invalid"] for line in lines(f"{name}.ndjson")
        if (r := orjson.loads(line))["challenge"] is not None
    )  # fmt: skip
    samples = [orjson.loads(line) for line in lines("slow6-valid.ndjson")] + [challenge]
    samples += [
        edit(edit(challenge, "client.version", "1:2::3"), "challenge.id", "x:y:z:"),
        edit(SLOW6, "ended_at", "2026-03-01T10:00:00+00:00"),
        edit(SLOW6, "turns", []),
    ]
    for record in samples:
        assert fault(record) is None
        assert wellformed._check(record) == orjson.dumps(record).count(b":")


def test_a_shape_fault_carries_the_record_parsed():
    record = edit(SLOW6, "mode", "ranked")
    with pytest.raises(Malformed) as exc:
        load(orjson.dumps(record))
    assert exc.value.field == "mode" and exc.value.record == record
    with pytest.raises(Malformed) as exc:
        load(b"{")
    assert exc.value.field == "line" and exc.value.record is None


def depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


def test_a_well_formed_record_nests_five_levels_at_most():
    # what lets `load` skip the depth proof once check() has passed (generated records too)
    valid = [orjson.loads(line) for name in ["slow6-valid", "slow6-invalid", "slide-valid",
             "slide-invalid"] for line in lines(f"{name}.ndjson")]  # fmt: skip
    deepest = max(depth(record) for record in valid)
    assert 4 <= deepest <= 5 < MAX_DEPTH


def test_a_too_deep_value_names_the_field_holding_it():
    deep = {"k": _wrap(33, 1)}  # lists from level 5 (record, turns, turn, x) to 37
    text = orjson.dumps(edit(SLOW6, "turns[2].x", deep))
    assert parse_fault(text) == "turns[2].x.k"
    objects = "".join('{"a":' for _ in range(40)) + "1" + "}" * 40
    text = orjson.dumps(SLOW6).replace(b'"ai":null', f'"ai":{objects}'.encode())
    assert parse_fault(text) == "ai" + ".a" * 31


# --- what is not JSON ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [b"", b"   ", b"{", b'{"a":1}}', b"{'a': 1}", b'{"a":NaN}', b'{"a":Infinity}',
     b'{"a":-Infinity}', b'{"a":1e999}', b'\xef\xbb\xbf{"a":1}', b'{"a":"\xff"}',
     b'{"a":"\xed\xa0\x80"}', b'{"a":"\\ud800"}', b'{"a":1,}', b'{"a":01}', "{\"a\":\"\ud800\"}"],
)  # fmt: skip
def test_text_that_is_not_json_names_the_line(text):
    assert parse_fault(text) == "line"


@pytest.mark.parametrize("text", [b"[]", b"null", b"42", b'"slow6"', b"true", b"[{}]"])
def test_a_top_level_that_is_not_an_object_names_the_record(text):
    assert parse_fault(text) == "record"
    assert fault(json.loads(text)) == "record"


def test_parse_takes_str_bytes_and_bytearray_alike():
    text = orjson.dumps(SLIDE)
    assert parse(text) == parse(text.decode()) == parse(bytearray(text)) == SLIDE
    with pytest.raises(TypeError):
        parse(42)


def test_malformed_carries_field_and_message_and_pickles():
    import pickle

    with pytest.raises(Malformed) as info:
        check(dict(SLOW6, mode="ranked"))
    err = pickle.loads(pickle.dumps(info.value))
    assert (err.field, err.message) == ("mode", info.value.message)
    assert "ranked" in err.message and "online" in err.message  # what is wrong, what is expected
    assert isinstance(err, ValueError) and str(err).startswith("mode: ")


# --- Slide --------------------------------------------------------------------------------------


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_every_per_seat_list_follows_players(players):
    rec = dict(
        copy.deepcopy(SLIDE),
        players=players,
        first=players - 1,
        grids=[[5] * 16] * players,
        rounds=[{"reveals": [[1, 2]] * players, "takes": [5] * players,
                 "slides": [{"side": "right"}] * players} for _ in range(3)],
        result={"scores": [10] * players, "cards_left": [2] * players, "winners": [0]},
    )  # fmt: skip
    assert fault(rec) is None
    assert fault(dict(rec, first=players)) == "first"
    assert fault(dict(rec, grids=rec["grids"][1:])) == "grids"
    assert fault(edit(rec, "rounds[2].reveals", [[1, 2]] * (players + 1))) == "rounds[2].reveals"
    assert fault(edit(rec, "rounds[1].takes", [5] * (players - 1))) == "rounds[1].takes"
    assert fault(edit(rec, "rounds[0].slides", [{"side": "top"}] * 7)) == "rounds[0].slides"
    assert fault(edit(rec, "result.scores", [1] * (players + 1))) == "result"
    assert fault(edit(rec, "result.winners", [players])) == "result"


@pytest.mark.parametrize("players", [0, 1, 7, -2, "3", None])
def test_players_are_2_to_6(players):
    assert fault(dict(SLIDE, players=players)) == "players"


def test_slide_values_that_are_rule_questions_are_well_formed():
    assert fault(edit(SLIDE, "grids[0][3]", 11)) is None  # S1.3
    assert fault(edit(SLIDE, "grids[0][3]", -4)) is None
    assert fault(dict(SLIDE, rounds=[])) is None  # S3.1
    assert fault(dict(SLIDE, rounds=SLIDE["rounds"] * 9)) is None  # 18 rounds: S4.2
    assert fault(edit(SLIDE, "rounds[0].takes", [99, 0, -1])) is None  # S2.3
    assert fault(edit(SLIDE, "result.winners", [])) is None  # S3.3
    assert fault(edit(SLIDE, "result.winners", [2, 0, 2])) is None


def test_slide_shapes():
    assert fault(edit(SLIDE, "grids[1]", [5] * 17)) == "grids[1]"
    assert fault(edit(SLIDE, "grids[1][0]", "5")) == "grids[1]"
    assert fault(edit(SLIDE, "rounds[1]", [])) == "rounds[1]"
    assert fault(dict(SLIDE, rounds={})) == "rounds"
    assert fault(edit(SLIDE, "rounds[1].reveals[2]", [4, 0])) == "rounds[1].reveals[2]"
    assert fault(edit(SLIDE, "rounds[1].reveals[2]", [0, 1, 2])) == "rounds[1].reveals[2]"
    assert fault(edit(SLIDE, "rounds[1].reveals[2]", {"row": 0, "col": 1})) == (
        "rounds[1].reveals[2]"
    )
    assert fault(edit(SLIDE, "rounds[0].slides[0]", "left")) == "rounds[0].slides[0]"
    assert fault(edit(SLIDE, "match.game", 0)) == "match"
    assert fault(edit(SLIDE, "match", [])) == "match"


def test_check_wants_an_object():
    for value in [None, [], "x", 1]:
        assert fault(value) == "record"
    assert fault({}) == "game"
    assert fault({"game": "chess"}) == "game"
    assert fault({"game": ["slow6"]}) == "game"


# --- the JSON Schema says the same thing --------------------------------------------------------


def test_the_schema_is_valid_draft_2020_12_and_documents_every_property():
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"

    def walk(node, where):  # the definitions, not the if/then overlays that narrow them
        if not isinstance(node, dict):
            return
        if "properties" in node:
            assert node.get("additionalProperties") is False, where
            for name, sub in node["properties"].items():
                assert "description" in sub or "$ref" in sub, f"{where}.{name}"
                walk(sub, f"{where}.{name}")
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{where}[]")

    for name, definition in SCHEMA["$defs"].items():
        walk(definition, name)
    assert SCHEMA["title"] and SCHEMA["description"]


def test_the_checker_uses_the_schema_patterns():
    defs = SCHEMA["$defs"]
    assert defs["game_id"]["pattern"] == _wf_common.UUID_PATTERN
    assert defs["ended_at"]["pattern"] == _wf_common.ENDED_AT_PATTERN
    assert defs["square"]["pattern"] == _wf_common.SQUARE_PATTERN
    assert defs["ruleset"]["pattern"] == _wf_common.RULESET_PATTERN
    assert _wf_common.RULESET_RE.pattern + r"\Z" == NAME_PATTERN.pattern  # rulesets.md RS1.1
    moves = defs["slow6_turn"]["properties"]["moves"]["items"]["pattern"]
    assert moves == _wf_common.MOVE_PATTERN
    assert all(re.fullmatch(_wf_common.SQUARE_PATTERN[1:-1], s) for s in _wf_common.SQUARES)
    assert len(_wf_common.SQUARES) == 49 and len(_wf_common.MOVES) == 49 * 49


def has_float(value) -> bool:
    if type(value) is float:
        return True
    if type(value) is dict:
        return any(has_float(v) for v in value.values())
    if type(value) is list:
        return any(has_float(v) for v in value)
    return False


def assert_agree(record) -> None:
    """check() and the schema agree, except that 5.0 is an integer to JSON Schema only."""
    mine = fault(record) is None
    if has_float(record):
        assert not mine  # no field of the format holds a number with a fraction or exponent
        return
    schema_errors = list(VALIDATOR.iter_errors(record))
    assert mine == (not schema_errors), (fault(record), [e.message for e in schema_errors][:3])


def test_schema_and_checker_agree_on_every_example():
    names = ["slow6-valid", "slow6-invalid", "slide-valid", "slide-invalid", "malformed"]
    names += [f"rulesets/rulesets-{x}" for x in ("valid", "invalid", "malformed")]
    for name in names:
        for line in lines(f"{name}.ndjson"):
            try:
                record = parse(line)
            except Malformed:
                continue  # not JSON, too deep, a duplicate: nothing for a schema to look at
            assert_agree(record)


# --- hypothesis: well-formed records, and mutations of them -------------------------------------

FILES = "abcdefg"
squares = st.sampled_from([f + r for f in FILES for r in "1234567"])
moves = st.builds(lambda a, b: f"{a}-{b}", squares, squares)
ints = st.integers(-(2**40), 2**40)


@st.composite
def timestamps(draw):
    when = draw(st.datetimes())
    fraction = draw(st.sampled_from(["", ".5", ".000", ".123456789"]))
    zone = draw(st.sampled_from(["Z", "+00:00"]))
    return f"{when:%m-%dT%H:%M:%S}".join([f"{when.year:04d}-", fraction + zone])


@st.composite
def uuids(draw):
    text = str(draw(st.uuids()))
    return draw(st.sampled_from([text, text.upper()]))


@st.composite
def common(draw, game):
    rec = {
        "schema": 1,
        "game_id": draw(uuids()),
        "game": game,
        "client": {"platform": draw(st.sampled_from(sorted(_wf_common.PLATFORMS))),
                   "version": draw(st.text(max_size=64))},
        "mode": draw(st.sampled_from(sorted(_wf_common.MODES))),
        "ended_at": draw(timestamps()),
    }  # fmt: skip
    if draw(st.booleans()):  # rulesets.md RS2.1: optional, a name as RS1.1 says
        rec["ruleset"] = draw(st.from_regex(NAME_PATTERN, fullmatch=True))
    return rec


def shuffled(draw, obj: dict) -> dict:
    items = draw(st.permutations(list(obj.items())))
    return dict(items)


@st.composite
def turns(draw):
    turn = {"moves": draw(st.lists(moves, max_size=2))}
    power = draw(st.sampled_from([None, *sorted(_wf_common.POWERS)]))
    if power is not None:
        turn["power"] = power
        if power == "swap":
            turn["target"] = draw(st.lists(squares, min_size=2, max_size=2))
        elif power != "double":
            turn["target"] = draw(squares)
    return shuffled(draw, turn)


@st.composite
def slow6_records(draw):
    rec = draw(common("slow6"))
    board = draw(st.sampled_from([5, 7]))
    hidden = draw(st.booleans())
    powers_on = False if hidden else draw(st.booleans())
    rec["rules"] = shuffled(draw, {"board": board, "powers": powers_on, "hidden": hidden})
    mode = rec["mode"]
    rec["ai"] = (
        {"side": draw(st.integers(0, 1)), "level": draw(st.integers(1, 4))}
        if mode == "computer"
        else None
    )
    piece = st.fixed_dictionaries(
        {"side": st.integers(0, 1), "rank": st.integers(1, board + 1), "square": squares,
         "start": squares, "wounded": st.booleans(), "stunned": st.booleans()}
    )  # fmt: skip
    position = st.fixed_dictionaries(
        {"to_move": st.integers(0, 1), "turns_taken": st.lists(ints, min_size=2, max_size=2),
         "pieces": st.lists(piece, max_size=4)}
    )  # fmt: skip
    rec["challenge"] = (
        {"id": draw(st.text(max_size=128)), "position": draw(position)}
        if mode == "challenge"
        else None
    )
    rec["first"] = draw(st.integers(0, 1))
    rec["lineups"] = [draw(st.permutations(range(1, board + 1))) for _ in range(2)]
    power_ids = st.sampled_from(sorted(_wf_common.POWERS))
    rec["powers"] = draw(
        st.none() | st.lists(st.lists(power_ids, min_size=1, max_size=5), min_size=2, max_size=2)
    )
    rec["turns"] = draw(st.lists(turns(), max_size=6))
    reason = draw(st.sampled_from(sorted(_wf_common.REASONS)))
    result = {"winner": draw(st.sampled_from([0, 1, None])), "reason": reason}
    points = draw(st.sampled_from(["omit", "null", "pair"]))
    if reason == "points" or points == "pair":
        result["points"] = draw(st.lists(ints, min_size=2, max_size=2))
    elif points == "null":
        result["points"] = None
    rec["result"] = result
    return shuffled(draw, rec)


@st.composite
def slide_records(draw):
    rec = draw(common("slide"))
    p = draw(st.integers(2, 6))
    rec["players"] = p
    rec["match"] = draw(
        st.none()
        | st.fixed_dictionaries({"id": st.text(max_size=128), "game": st.integers(1, 2**40)})
    )
    rec["first"] = draw(st.integers(0, p - 1))
    rec["grids"] = draw(st.lists(st.lists(ints, min_size=16, max_size=16), min_size=p, max_size=p))
    position = st.lists(st.integers(0, 3), min_size=2, max_size=2)
    edge = st.fixed_dictionaries({"side": st.sampled_from(sorted(_wf_common.EDGES))})
    rnd = st.fixed_dictionaries(
        {"reveals": st.lists(position, min_size=p, max_size=p),
         "takes": st.lists(ints, min_size=p, max_size=p),
         "slides": st.lists(edge, min_size=p, max_size=p)}
    )  # fmt: skip
    rec["rounds"] = draw(st.lists(rnd, max_size=3))
    per_seat = st.lists(ints, min_size=p, max_size=p)
    rec["result"] = {"scores": draw(per_seat), "cards_left": draw(per_seat),
                     "winners": draw(st.lists(st.integers(0, p - 1), max_size=p))}  # fmt: skip
    return shuffled(draw, rec)


records = slow6_records() | slide_records()
json_values = st.recursive(
    st.none()
    | st.booleans()
    | ints
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3)
    ),
    max_leaves=8,
)
near_misses = st.sampled_from(
    [None, True, False, 0, 1, 2, 3, 4, 5, 6, 7, 8, 16, -1, 1.0, 5.0, 2.5, "", "a1", "g7", "h1",
     "c1-c3", "c1-c9", "dash", "swap", "double", "iOS", "ios", "slow6", "slide", "points",
     "left", "LEFT", "computer", "challenge", "online", "2024-02-29T10:00:00Z",
     "2027-02-29T10:00:00Z", "3F2B8C1E-6A0D-4C59-9D4E-0B7F6F1A2C33", "a1\n", [], [0], [0, 1],
     [1, 2], [9, 12, 3], ["a1", "b2"], [1, 2, 3, 4, 5], [5, 4, 3, 2, 1], {}, {"side": "left"},
     {"moves": []}, {"side": 0, "level": 1}, "x" * 65, "x" * 129]
)  # fmt: skip


def slots(node, out: list) -> list:
    """Every (container, key) in a record, depth first."""
    if isinstance(node, dict):
        for key in node:
            out.append((node, key))
            slots(node[key], out)
    elif isinstance(node, list):
        for i in range(len(node)):
            out.append((node, i))
            slots(node[i], out)
    return out


@st.composite
def mutated(draw, base=records):
    record = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(1, 3))):
        where = slots(record, [])
        container, key = draw(st.sampled_from(where))
        op = draw(st.sampled_from(["replace", "replace", "remove", "add", "repeat"]))
        if op == "replace":
            # copies: sampled values are shared objects, and later steps mutate in place
            container[key] = copy.deepcopy(draw(near_misses | json_values))
        elif op == "remove":
            del container[key]
        elif op == "add" and isinstance(container, dict):
            container[draw(st.sampled_from(["x", "points", "power", "target", "ai"]))] = (
                copy.deepcopy(draw(near_misses))
            )
        elif isinstance(container, list):
            container.insert(key, copy.deepcopy(container[key]))
    return record


FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@FUZZ
@given(records)
def test_generated_well_formed_records_are_accepted_by_both(record):
    assert fault(record) is None
    assert depth(record) <= 5
    colons = wellformed._check(record)  # exact, or `load` could miss a duplicate key
    assert colons is None or colons == orjson.dumps(record).count(b":")
    assert_agree(record)


@pytest.mark.slow
@FUZZ
@given(mutated())
def test_schema_and_checker_agree_on_mutated_records(record):
    assert_agree(record)


@pytest.mark.slow
@FUZZ
@given(records | mutated())
def test_text_and_dict_paths_agree(record):
    # what check() says of a dict is what parse + check say of its JSON text, formatted any way
    expected = fault(record)
    assert text_fault(orjson.dumps(record)) == expected
    assert text_fault(json.dumps(record, indent=1, ensure_ascii=True)) == expected


def slow_paths(monkeypatch) -> None:
    """Turn off every fast path, leaving the step-by-step checks and the exact text scan."""
    never = re.compile(b"(?!)")
    monkeypatch.setattr(_wf_slow6, "text_proves", lambda data: False)
    monkeypatch.setattr(_wf_text, "_structure_ok", lambda data, record: False)
    monkeypatch.setattr(_wf_slow6, "_turns_fast_ok", lambda text: False)
    monkeypatch.setattr(_wf_slow6, "_LINEUPS", {5: frozenset(), 7: frozenset()})
    monkeypatch.setattr(_wf_slow6, "_powers_fast_ok", lambda powers: False)
    monkeypatch.setattr(_wf_slide, "_GRIDS_RE", dict.fromkeys(range(2, 7), never))
    monkeypatch.setattr(_wf_slide, "_ROUNDS_RE", dict.fromkeys(range(2, 7), never))


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(records | mutated(), min_size=1, max_size=4))
def test_the_fast_paths_never_change_a_verdict(batch):
    texts = [orjson.dumps(r) for r in batch]
    fast = [text_fault(t) for t in texts]
    with pytest.MonkeyPatch.context() as mp:
        slow_paths(mp)
        assert [text_fault(t) for t in texts] == fast


def test_the_fast_paths_never_change_a_verdict_on_the_examples():
    texts = [line for name in ["slow6-valid", "slow6-invalid", "slide-valid", "slide-invalid",
                               "malformed"] for line in lines(f"{name}.ndjson")]  # fmt: skip
    fast = [text_fault(t) for t in texts]
    with pytest.MonkeyPatch.context() as mp:
        slow_paths(mp)
        assert [text_fault(t) for t in texts] == fast


# --- duplicate keys and depth: the cheap text test is exact -------------------------------------


class Obj(list):
    """An object as written: a list of (key, value) pairs, so keys can repeat."""


keys = st.sampled_from(["a", "b", "c", "a:b", 'q"', "[", "}", "\u00e9", "\\", ""])
scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(
    ["", ":", "a:b", "[{", "]}", '"', "\\", "\u00e9", "\U0001f600", "x\ny"]
)  # fmt: skip
trees = st.recursive(
    scalars,
    lambda kids: (
        st.lists(kids, max_size=3)
        | st.lists(st.tuples(keys, kids), max_size=3).map(Obj)
        | st.tuples(st.integers(30, 36), kids).map(lambda t: _wrap(*t))
    ),
    max_leaves=6,
)


def _wrap(levels: int, value):
    for _ in range(levels):
        value = [value]
    return value


def write(node, draw_space, ascii_: bool) -> str:
    space = draw_space()
    if isinstance(node, Obj):
        inner = ("," + space).join(
            json.dumps(k, ensure_ascii=ascii_) + space + ":" + space + write(v, draw_space, ascii_)
            for k, v in node
        )
        return "{" + space + inner + space + "}"
    if isinstance(node, list):
        return "[" + ",".join(write(v, draw_space, ascii_) for v in node) + "]"
    return json.dumps(node, ensure_ascii=ascii_)


def first_fault(node, comps: list) -> str | None:
    """The reference: first duplicate key or too-deep container, in document order."""

    def name(parts: list) -> str:
        return "".join(
            f"[{p}]" if isinstance(p, int) else (p if i == 0 else f".{p}")
            for i, p in enumerate(parts)
        )

    if isinstance(node, list) and len(comps) + 1 > MAX_DEPTH:  # Obj is a list too
        holder = list(comps)
        while holder and isinstance(holder[-1], int):  # the field holding it, not an index
            holder.pop()
        return name(holder)
    if isinstance(node, Obj):
        seen = set()
        for key, value in node:
            if key in seen:
                return name([*comps, key])
            seen.add(key)
            found = first_fault(value, [*comps, key])
            if found is not None:
                return found
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found = first_fault(value, [*comps, i])
            if found is not None:
                return found
    return None


@pytest.mark.slow
@settings(max_examples=250, deadline=None)
@given(st.lists(st.tuples(keys, trees), max_size=4).map(Obj), st.booleans(), st.data())
def test_duplicate_and_depth_detection_is_exact(top, ascii_, data):
    spaces = st.sampled_from(["", "", " ", "\n  "])
    text = write(top, lambda: data.draw(spaces), ascii_)
    assert parse_fault(text) == first_fault(top, [])


def test_a_deep_list_inside_a_list_of_objects_is_named_by_its_field():
    text = '{"turns":[{"x":' + "[" * 40 + "]" * 40 + "}]}"
    assert parse_fault(text) == "turns[0].x"
    assert first_fault(Obj([("turns", [Obj([("x", _wrap(39, []))])])]), []) == "turns[0].x"


# --- fuzzing: nothing but Malformed comes out ---------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_raise_nothing_but_malformed(blob):
    try:
        assert type(parse(blob)) is dict
    except Malformed:
        pass


EXAMPLE_TEXTS = lines("slow6-valid.ndjson")[:8] + lines("slide-valid.ndjson")[:4]
JSONISH = st.sampled_from(list(b'{}[]":,\\ 0123456789-.eE') + [ord("a"), 0xC3, 0xA9, 0xFF])


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(EXAMPLE_TEXTS),
    st.lists(st.tuples(st.integers(0, 4000), JSONISH), min_size=1, max_size=4),
    st.booleans(),
)
def test_damaged_record_texts_raise_only_malformed_and_fast_equals_slow(text, edits, insert):
    # a real record with a few bytes inserted or overwritten: near-misses of every kind
    data = bytearray(text)
    for at, byte in edits:
        at %= len(data)
        if insert:
            data.insert(at, byte)
        else:
            data[at] = byte
    data = bytes(data)
    fast = text_fault(data)
    with pytest.MonkeyPatch.context() as mp:
        slow_paths(mp)
        assert text_fault(data) == fast


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_random_json_raises_nothing_but_malformed(value):
    for attempt in (value, {"game": "slow6", **value} if isinstance(value, dict) else value):
        try:
            check(parse(orjson.dumps(attempt)))
        except Malformed:
            pass


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["slow6", "slide"]), st.data())
def test_records_with_the_right_keys_and_random_values_raise_nothing_but_malformed(game, data):
    order = _wf_slow6.ORDER if game == "slow6" else _wf_slide.ORDER
    record = {key: data.draw(near_misses | json_values) for key in order}
    record["game"] = game
    try:
        check(record)
    except Malformed:
        pass


# --- the text proof: a record in the format's own layout, proved by one regex ---------------------

_NESTED_ORDER = {
    "client": ("platform", "version"),
    "rules": ("board", "powers", "hidden"),
    "ai": ("side", "level"),
    "result": ("winner", "reason", "points"),
}


def in_format_order(record: dict) -> dict:
    """The record as a client following the format's tables writes it: fields in their order
    (at the top and in every object), a turn's power and target first."""

    def ordered(obj: dict, order) -> dict:
        return {k: obj[k] for k in order if k in obj} | {k: obj[k] for k in obj if k not in order}

    top = _wf_slow6.ORDER
    at = top.index("ended_at") + 1  # the optional `ruleset` comes next in the format's table
    out = ordered(record, (*top[:at], "ruleset", *top[at:]))
    for key, order in _NESTED_ORDER.items():
        if isinstance(out.get(key), dict):
            out[key] = ordered(out[key], order)
    challenge = out.get("challenge")
    if isinstance(challenge, dict):
        challenge = out["challenge"] = ordered(challenge, ("id", "position"))
        if isinstance(challenge.get("position"), dict):
            position = ordered(challenge["position"], ("to_move", "turns_taken", "pieces"))
            challenge["position"] = position
            if isinstance(position.get("pieces"), list):
                position["pieces"] = [
                    ordered(p, _wf_slow6._PIECE_ORDER) if isinstance(p, dict) else p
                    for p in position["pieces"]
                ]
    if isinstance(out.get("turns"), list):
        out["turns"] = [
            ordered(t, ("power", "target", "moves")) if isinstance(t, dict) else t
            for t in out["turns"]
        ]
    return out


def plain_ascii(text: str) -> bool:
    return all(" " <= c <= "~" and c not in '"\\' for c in text)


ordered_slow6 = slow6_records().map(in_format_order)


@FUZZ
@given(ordered_slow6)
def test_a_record_in_the_formats_layout_is_proved_by_its_text(record):
    # the fast path takes every such record whose strings orjson writes without an escape
    text = orjson.dumps(record)
    strings = [record["client"]["version"]]
    if record["challenge"] is not None:
        strings.append(record["challenge"]["id"])
    expected = all(map(plain_ascii, strings))
    assert _wf_slow6.text_proves(text) == expected
    assert text_fault(text) is None


@FUZZ
@given(mutated(ordered_slow6))
def test_the_text_proof_accepts_only_well_formed_records(record):
    text = orjson.dumps(record)
    if _wf_slow6.text_proves(text):
        assert fault(record) is None, record
    text_fault(text)  # and `load` says what parse + check say


@pytest.mark.slow
def test_bot_records_are_proved_by_their_text():
    from replays.slow6.simulate import simulate_games

    games = list(simulate_games(40, board=5, powers=True, hidden=False, seed=3, max_level=1))
    games += simulate_games(20, board=7, powers=False, hidden=True, seed=4, max_level=1)
    for record in games:
        text = orjson.dumps(record)
        assert _wf_slow6.text_proves(text)
        assert load(text) == record
    assert {r["mode"] for r in games} >= {"challenge", "computer", "online"}


@pytest.mark.parametrize(
    "path, value, field",
    [
        ("schema", 1.0, "schema"),
        ("game_id", "3f2b8c1e-6a0d-4c59-9d4e-0b7f6f1a2c3", "game_id"),
        ("client.platform", "iOS", "client"),
        ("client.version", "x" * 65, "client.version"),
        ("mode", "computer", "ai"),  # computer mode with ai null
        ("ai", {"side": 0, "level": 1}, "ai"),  # ai outside computer mode
        ("ended_at", "2027-02-29T10:00:00Z", "ended_at"),
        ("rules.board", 6, "rules.board"),
        ("rules.hidden", True, "rules"),  # hidden with powers
        ("first", 2, "first"),
        ("lineups", [[3, 1, 5, 2, 2], [2, 5, 1, 4, 3]], "lineups"),
        ("lineups", [[3, 1, 5, 2, 4, 6, 7], [2, 5, 1, 4, 3]], "lineups"),
        ("powers", [["dash", "shield", "fly"], ["trap", "freeze", "surge"]], "powers"),
        ("turns[0]", {"target": "c3", "moves": ["c1-c3"]}, "turns[0]"),
        ("turns[0]", {"moves": ["c1-c3", "c3-c4", "c4-c5"]}, "turns[0]"),
        ("turns[1].target", "c8", "turns[1]"),
        ("result.points", None, "result"),  # the reason is points
        ("result.points", DELETE, "result.points"),
        ("result.points", [9, 12.0], "result"),
        ("result.winner", 2, "result"),
        ("result.x", 1, "result.x"),
    ],
)
def test_the_text_proof_refuses_every_near_miss(path, value, field):
    record = in_format_order(edit(SLOW6, path, value))
    text = orjson.dumps(record)
    assert not _wf_slow6.text_proves(text)
    assert text_fault(text) == field


A_CHALLENGE = in_format_order({**SLOW6, "mode": "challenge", "challenge": CHALLENGE})


@pytest.mark.parametrize(
    "path, value, field",
    [
        ("mode", "online", "challenge"),  # a challenge outside challenge mode
        ("challenge", None, "challenge"),  # challenge mode without one
        ("challenge.id", "x" * 129, "challenge.id"),
        ("challenge.position.to_move", 2, "challenge.position.to_move"),
        ("challenge.position.turns_taken", [7, 7, 7], "challenge.position.turns_taken"),
        ("challenge.position.pieces[0].rank", 7, "challenge.position.pieces[0]"),  # 5x5: 6
        ("challenge.position.pieces[0].square", "h1", "challenge.position.pieces[0]"),
        ("challenge.position.pieces[1].wounded", 1, "challenge.position.pieces[1]"),
        ("challenge.position.pieces[1].x", 1, "challenge.position.pieces[1].x"),
        ("challenge.position.pieces[1].stunned", DELETE, "challenge.position.pieces[1].stunned"),
    ],
)
def test_the_text_proof_refuses_every_near_miss_of_a_challenge(path, value, field):
    assert _wf_slow6.text_proves(orjson.dumps(A_CHALLENGE))
    record = edit(A_CHALLENGE, path, value)
    text = orjson.dumps(record)
    assert not _wf_slow6.text_proves(text)
    assert text_fault(text) == field


@pytest.mark.parametrize(
    "text",
    [
        orjson.dumps(SLOW6, option=orjson.OPT_INDENT_2),  # spaces
        json.dumps(in_format_order(edit(SLOW6, "client.version", "2.4\u00e9"))).encode(),
        orjson.dumps(in_format_order(edit(SLOW6, "client.version", "é"))),  # not ASCII
        orjson.dumps(dict(reversed(list(SLOW6.items())))),  # another order
    ],
)
def test_other_layouts_of_a_well_formed_record_go_the_long_way(text):
    assert not _wf_slow6.text_proves(text)
    assert text_fault(text) is None


def test_a_record_past_16_kib_goes_the_long_way():
    # hundreds of turns (no real game has them): the field-by-field check is the faster there
    record = in_format_order({**SLOW6, "turns": SLOW6["turns"] * 100})
    text = orjson.dumps(record)
    assert 16 * 1024 < len(text) <= MAX_BYTES
    assert not _wf_slow6.text_proves(text)
    assert _wf_slow6.text_proves(orjson.dumps({**record, "turns": SLOW6["turns"] * 10}))
    assert text_fault(text) is None
