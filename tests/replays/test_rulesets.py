"""Rulesets (rulesets.md RS1-RS4): the TOML files, their validation, and the verifier's RS5.1.

Every parameter of RS3 out of range, of the other game, or unknown, is refused naming the
parameter; `based_on` is resolved at parse time; `standard` is built in and not registrable.
"""

from __future__ import annotations

import json

import pytest
from support import examples_dir

from replays import rulesets as R
from replays.rulesets import (
    STANDARD,
    Ruleset,
    RulesetError,
    builtin_lookup,
    parse_files,
    parse_toml,
)
from replays.verifier import check_text, verify_record

RULESETS = examples_dir() / "rulesets"


def toml(game: str = "slow6", name: str = "t-1", based_on: str | None = None, **params) -> str:
    lines = [f'name = "{name}"', f'game = "{game}"']
    if based_on is not None:
        lines.append(f'based_on = "{based_on}"')
    lines.append("[params]")
    for key, value in params.items():
        lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def refused(text: str, lookup=None) -> str | None:
    with pytest.raises(RulesetError) as e:
        parse_toml(text, lookup)
    return e.value.param


# (param, a value just below its range, just above) per RS3's tables
INT_RANGES = {
    "slow6": {
        "turn_limit_5": (5, 40),
        "turn_limit_7": (5, 40),
        "reach": (1, 3),
        "crown_reach": (1, 2),
        "crown_points": (0, 20),
        "picks": (1, 5),
        "dash_reach": (2, 5),
        "leap_reach": (1, 3),
        "freeze_turns": (1, 4),
        "trap_turns": (1, 4),
        "surge_rest": (0, 3),
    },
    "slide": {"min_group": (2, 4), "match_target": (20, 1000)},
}


@pytest.mark.parametrize(
    "game,param,low,high",
    [(g, p, lo, hi) for g, table in INT_RANGES.items() for p, (lo, hi) in table.items()],
)
def test_every_parameter_out_of_range_is_refused_naming_it(game, param, low, high):
    # the ends of the range are accepted (with what the cross-checks need around them)
    extra = {"reach": 1} if param == "dash_reach" else {}
    if param == "reach":
        extra = {"dash_reach": 5}
    for ok in (low, high):
        rs = parse_toml(toml(game, **{param: ok}, **extra))
        assert rs.params[param] == ok
    for bad in (low - 1, high + 1, 2.0, True, "3", [low]):
        assert refused(toml(game, **{param: bad}, **extra)) == param, bad


def test_powers_must_be_a_non_empty_subset_of_the_ten_ids():
    rs = parse_toml(toml(powers=["surge", "dash", "double"], picks=2))
    assert rs.params["powers"] == ("double", "dash", "surge")  # R8.2 order
    for bad in ([], ["dash", "fly"], ["dash", "dash"], "dash", [1], ["Dash"]):
        assert refused(toml(powers=bad, picks=1)) == "powers", bad


def test_cross_checks_name_the_constrained_parameter():
    assert refused(toml(powers=["dash", "leap"])) == "picks"  # picks 3 > 2 powers
    assert parse_toml(toml(powers=["dash", "leap"], picks=2)).params["picks"] == 2
    assert refused(toml(reach=3)) == "dash_reach"  # dash_reach 3 is not more than reach 3
    assert refused(toml(dash_reach=2, reach=2)) == "dash_reach"
    assert parse_toml(toml(reach=3, dash_reach=4)).params["reach"] == 3


def test_unknown_and_cross_game_parameters_are_refused_naming_them():
    assert refused(toml(fly_turns=2)) == "fly_turns"
    assert refused(toml("slow6", min_group=3)) == "min_group"
    assert refused(toml("slide", freeze_turns=1)) == "freeze_turns"
    e = pytest.raises(RulesetError, parse_toml, toml("slide", picks=2)).value
    assert "slow6" in e.message
    # a parameter at the top level, a sub-table, an unknown field
    assert refused('name = "x"\ngame = "slow6"\nreach = 3\n') == "reach"
    assert refused('name = "x"\ngame = "slow6"\n[params.reach]\nx = 1\n') == "reach"
    assert refused('name = "x"\ngame = "slow6"\nauthor = "me"\n') == "author"


@pytest.mark.parametrize(
    "name", ["", "-x", ".x", "X", "a b", "a" * 65, "freeze-1\n", "é", "a/b", "standard\n"]
)
def test_names_follow_rs1_1(name):
    assert refused(f'name = {json.dumps(name)}\ngame = "slow6"\n') == "name"


def test_name_game_and_file_faults():
    assert parse_toml('name = "' + "a" * 64 + '"\ngame = "slow6"\n').name == "a" * 64
    assert parse_toml('name = "2027.01_b-c"\ngame = "slide"\n').params == STANDARD["slide"].params
    assert refused('game = "slow6"\n') == "name"
    assert refused('name = "x"\n') == "game"
    assert refused('name = "x"\ngame = "chess"\n') == "game"
    assert refused('name = 3\ngame = "slow6"\n') == "name"
    assert refused('name = "x"\ngame = "slow6"\ndescription = 3\n') == "description"
    assert refused('name = "x"\ngame = "slow6"\nparams = 3\n') == "params"
    assert refused("name = \n") is None  # not TOML: no parameter to name
    assert refused(b"name = '\xff'") is None


def test_standard_cannot_be_registered():
    assert refused(toml(name="standard")) == "name"
    assert refused(toml("slide", name="standard")) == "name"


def test_based_on_is_resolved_at_parse_time():
    base = parse_toml(toml(name="base", freeze_turns=1, dash_reach=4))
    lookup = {("slow6", "base"): base}.get

    def find(game, name):
        return lookup((game, name))

    child = parse_toml(toml(name="child", based_on="base", trap_turns=3), find)
    assert child.params["freeze_turns"] == 1 and child.params["dash_reach"] == 4
    assert child.params["trap_turns"] == 3
    # unknown base, a base of the other game, an ill-formed base name
    assert refused(toml(name="c2", based_on="nope"), find) == "based_on"
    assert refused(toml("slide", name="c3", based_on="base"), find) == "based_on"
    assert refused(toml(name="c4", based_on="Base"), find) == "based_on"
    # the cross-checks run on the resolved set: the base's dash_reach 4 against reach 3
    assert parse_toml(toml(name="c5", based_on="base", reach=3), find).params["reach"] == 3
    assert refused(toml(name="c6", based_on="base", reach=3, dash_reach=3), find) == "dash_reach"
    # standard is always known, whatever the lookup
    assert parse_toml(toml(name="c7", based_on="standard"), lambda g, n: None).params == (
        STANDARD["slow6"].params
    )


def test_files_may_be_based_on_each_other_in_any_order():
    texts = {
        "c.toml": toml(name="c", based_on="b", surge_rest=0),
        "b.toml": toml(name="b", based_on="a", trap_turns=4),
        "a.toml": toml(name="a", freeze_turns=1),
    }
    found = parse_files(texts)
    c = found[("slow6", "c")]
    assert (c.params["freeze_turns"], c.params["trap_turns"], c.params["surge_rest"]) == (1, 4, 0)
    with pytest.raises(RulesetError) as e:
        parse_files(
            {"x.toml": toml(name="x", based_on="y"), "y.toml": toml(name="y", based_on="x")}
        )
    assert e.value.param == "based_on"
    with pytest.raises(RulesetError) as e:
        parse_files({"a.toml": toml(name="a"), "b.toml": toml(name="a", reach=1)})
    assert e.value.param == "name"


def test_the_spec_example_files_parse():
    found = parse_files({p.name: p.read_text() for p in sorted(RULESETS.glob("*.toml"))})
    assert sorted(found) == [
        ("slide", "slide-groups-3"),
        ("slow6", "few-powers"),
        ("slow6", "freeze-1"),
        ("slow6", "long-5"),
        ("slow6", "reach-3"),
    ]
    reach3 = found[("slow6", "reach-3")]
    changes = reach3.changes_from(STANDARD["slow6"])
    assert changes == [
        ("reach", 2, 3),
        ("crown_reach", 1, 2),
        ("dash_reach", 3, 5),
        ("leap_reach", 2, 3),
        ("trap_turns", 2, 3),
        ("surge_rest", 1, 0),
    ]
    assert found[("slow6", "long-5")].params["crown_points"] == 8
    assert STANDARD["slow6"].params["crown_points"] is None


def test_json_round_trip_and_immutability():
    rs = parse_toml((RULESETS / "few-powers.toml").read_text())
    doc = rs.to_json()
    assert doc["params"]["powers"] == ["double", "dash", "shield", "freeze", "swap", "surge"]
    assert json.loads(json.dumps(doc)) == doc
    back = Ruleset.from_json(json.loads(json.dumps(doc)))
    assert back == rs and hash(back) == hash(rs)
    assert back.params["powers"] == ("double", "dash", "shield", "freeze", "swap", "surge")
    with pytest.raises(TypeError):
        rs.params["picks"] = 3  # type: ignore[index]
    with pytest.raises(AttributeError):
        rs.name = "other"  # type: ignore[misc]
    # from_json validates like parse_toml
    with pytest.raises(RulesetError) as e:
        Ruleset.from_json({**doc, "params": {**doc["params"], "picks": 9}})
    assert e.value.param == "picks"
    with pytest.raises(RulesetError) as e:
        Ruleset.from_json({**doc, "owner": "x"})
    assert e.value.param == "owner"
    assert Ruleset.from_json(STANDARD["slide"].to_json()) is STANDARD["slide"]
    with pytest.raises(RulesetError):
        Ruleset.from_json({**STANDARD["slide"].to_json(), "params": {"min_group": 3}})


def test_first_difference_names_what_rs1_3_refuses_on():
    a = parse_toml(toml(name="a", freeze_turns=1, trap_turns=3))
    assert a.first_difference(a) is None
    b = parse_toml(toml(name="a", freeze_turns=1, trap_turns=4))
    assert b.first_difference(a) == "trap_turns"
    c = parse_toml(toml(name="a", reach=1, trap_turns=4))
    assert c.first_difference(a) == "reach"  # RS3 order: reach before freeze_turns
    d = Ruleset("a", "slow6", dict(a.params), "another text")
    assert d.first_difference(a) == "description"
    assert parse_toml(toml("slide", name="a")).first_difference(a) == "game"


def test_builtin_lookup_knows_only_standard():
    assert builtin_lookup("slow6", "standard") is STANDARD["slow6"]
    assert builtin_lookup("slide", "standard") is STANDARD["slide"]
    assert builtin_lookup("slow6", "freeze-1") is None
    assert [p for p in R.PARAMS["slow6"]] == list(STANDARD["slow6"].params)


# --- the verifier: RS5.1 and RS7.2 ----------------------------------------------------------

VALID = [x for x in (RULESETS / "rulesets-valid.ndjson").read_text().splitlines() if x]


def test_unknown_ruleset_is_rs5_1_before_any_other_rule():
    for line in VALID:
        record, verdict = check_text(line)
        name = record.get("ruleset", "standard")
        if name == "standard":
            assert verdict.ok and verdict.ruleset == "standard"
            continue
        assert (verdict.verdict, verdict.rule, verdict.turn) == ("invalid", "RS5.1", None)
        assert verdict.ruleset == name and name in verdict.message
    # a record that also breaks a rule of every ruleset: still RS5.1 (RS7.2)
    record = json.loads(VALID[0])
    record["turns"] = record["turns"] + [{"moves": []}] * 3
    record["ruleset"] = "never-registered"
    assert verify_record(record).rule == "RS5.1"
    # registered for the other game: unknown for this one
    slide = parse_toml(toml("slide", name="never-registered"))
    assert verify_record(record, lambda g, n: slide).rule == "RS5.1"


MALFORMED = (RULESETS / "rulesets-malformed.ndjson").read_text().splitlines()
MALFORMED_EXPECTED = [
    json.loads(x)
    for x in (RULESETS / "rulesets-malformed.expected.ndjson").read_text().splitlines()
]


@pytest.mark.parametrize("i", range(len(MALFORMED)))
def test_the_spec_rulesets_malformed_examples_are_rejected_naming_the_field(i):
    _, verdict = check_text(MALFORMED[i])
    assert verdict.verdict == "malformed", verdict
    assert verdict.field == MALFORMED_EXPECTED[i]["field"], MALFORMED_EXPECTED[i]["defect"]
    assert verdict.ruleset is None


def test_ruleset_field_form():
    record = json.loads(VALID[0])
    for bad in (None, 3, "", "Std", "a b", "a" * 65, "x\n", ["x"], {"x": 1}):
        record["ruleset"] = bad
        assert check_text(json.dumps(record))[1].field == "ruleset", bad
    record["ruleset"] = "standard"
    std = check_text(json.dumps(record))[1]
    del record["ruleset"]
    assert check_text(json.dumps(record))[1][:-1] == std[:-1]
    assert check_text(json.dumps(record))[1].ruleset == "standard"
    assert "ruleset" in std.as_dict()
