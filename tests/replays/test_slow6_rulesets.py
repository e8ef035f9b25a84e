"""Slow6 under a ruleset (rulesets.md RS3, RS7): each parameter, written from the spec.

Each test plays one record under a ruleset that changes one parameter, and (where it matters)
the same record under `standard`, so that a verifier ignoring the parameter fails. A fault
cites the same rule and turn it would under `standard` (RS3's last paragraph). Unless a test
says otherwise: 5x5, identity lineups (rank r on file r of both back rows).
"""

from __future__ import annotations

import pytest
from slow6_records import (
    assert_invalid,
    assert_valid,
    challenge,
    crown,
    game,
    points,
    resign,
    t,
    verify,
)

from replays.rulesets import Ruleset

rule = pytest.mark.rule


def under(record: dict, **params):
    """`record` naming a fresh ruleset `t` with `params`, and the lookup that knows it."""
    rs = Ruleset("t", "slow6", params)
    named = dict(record, ruleset="t")
    return named, (lambda game, name: rs if (game, name) == ("slow6", "t") else None)


def ok(record: dict, **params) -> None:
    named, lookup = under(record, **params)
    v = assert_valid(named, lookup)
    assert v.ruleset == "t"


def bad(record: dict, rule_: str, turn: int | None, also=(), **params) -> None:
    named, lookup = under(record, **params)
    v = assert_invalid(named, rule_, turn, also, lookup)
    assert v.ruleset == "t"


SHUFFLE = ["a1-a2", "a5-a4", "a2-a1", "a4-a5"]  # no fight, no promotion: time passes


# --- turn limits (R2.5, R6.3, R9.2; RS7.7) ---------------------------------------------------


@rule("R2.5")
@rule("R6.3")
def test_turn_limit_5_ends_the_game_by_points_after_its_t_turns():
    turns = (SHUFFLE * 3)[:10]
    rec = game(turns=turns, result=points(15, 15))
    ok(rec, turn_limit_5=5)
    assert_invalid(rec, "R6.3", None)  # under standard the log stops before the end
    bad(rec, "R6.3", None, turn_limit_5=6)
    longer = game(turns=(SHUFFLE * 3)[:11], result=points(15, 15))
    bad(longer, "R6.5", 10, turn_limit_5=5)  # a turn after the limit


@rule("R2.5")
def test_turn_limit_7_is_t_of_the_big_board_only():
    moves = ["a1-a2", "a7-a6", "a2-a1", "a6-a7"]
    rec = game(board=7, turns=(moves * 3)[:12], result=points(28, 28))
    ok(rec, turn_limit_7=6)
    ok(rec, turn_limit_7=6, turn_limit_5=40)
    bad(rec, "R6.3", None, turn_limit_5=6)  # the 5x5 limit does not end a 7x7 game


@rule("R9.2")
def test_a_challenge_position_is_checked_against_the_rulesets_limit():
    pieces = [(0, 1, "a1"), (1, 2, "b5")]
    rec = challenge(pieces=pieces, turns_taken=(16, 16), turns=["a1-a2"], result=resign())
    ok(rec, turn_limit_5=19)
    assert_invalid(rec, "R9.1", None)  # past standard's 15
    bad(rec, "R9.1", None, turn_limit_5=16)  # both at T


# --- reach and crown_reach (R2.2; RS7.4) ----------------------------------------------------


@rule("R2.2")
def test_reach_3_moves_three_squares_and_not_four():
    three = game(turns=["c1-c4"], result=resign())
    ok(three, reach=3, dash_reach=4)
    assert_invalid(three, "R2.2", 0)
    four = game(board=7, turns=["c1-c5"], result=resign())
    bad(four, "R2.2", 0, reach=3, dash_reach=4)
    # every square passed over stays empty
    ok(game(turns=["a1-a2", "e5-e4", "b1-b4"], result=resign()), reach=3, dash_reach=4)
    blocked = game(turns=["d1-c2", "e5-e4", "c1-c4"], result=resign())
    bad(blocked, "R2.2", 2, reach=3, dash_reach=4)  # c1-c4 passes over c2


@rule("R2.2")
def test_reach_1_forbids_two_squares():
    rec = game(turns=["c1-c3"], result=resign())
    bad(rec, "R2.2", 0, reach=1)
    ok(game(turns=["c1-c2"], result=resign()), reach=1)


@rule("R2.2")
def test_crown_reach_2():
    pieces = [crown(0, "c3", "c1"), (0, 1, "a1"), (1, 2, "b5")]
    two = challenge(pieces=pieces, turns=["c3-e3"], result=resign())
    ok(two, crown_reach=2)
    assert_invalid(two, "R2.2", 0)
    three = challenge(board=7, pieces=[crown(0, "c3", "c1", board=7), (0, 1, "a1"),
                                       (1, 2, "b7")], turns=["c3-f3"], result=resign())  # fmt: skip
    bad(three, "R2.2", 0, crown_reach=2)


# --- crown_points (R6.3; RS7.8) --------------------------------------------------------------

CROWN_POSITION = [crown(0, "c3", "c1"), (0, 1, "a1"), (1, 2, "b5")]


@rule("R6.3")
def test_crown_points_change_the_totals_and_the_winner():
    def rec(p0, p1):
        return challenge(
            pieces=CROWN_POSITION,
            turns_taken=(14, 14),
            turns=["c3-d3", "b5-b4"],
            result=points(p0, p1),
        )

    ok(rec(1, 2), crown_points=0)
    assert_valid(rec(7, 2))  # standard: N+1
    bad(rec(7, 2), "R6.3", None, crown_points=0)
    ok(rec(21, 2), crown_points=20)
    ok(rec(7, 2), crown_points=6)


@rule("R4.1")
def test_crown_points_leave_the_crowns_fights_alone():
    # a crown worth 0 points still beats the piece it attacks (RS7.8)
    pieces = [crown(0, "c3", "c1"), (0, 1, "a1"), (1, 5, "c4"), (1, 2, "b5")]
    rec = challenge(pieces=pieces, turns_taken=(14, 14), turns=["c3-c4", "b5-b4"],
                    result=points(1, 2))  # fmt: skip
    ok(rec, crown_points=0)


# --- powers and picks (R8.1; RS7.3) -----------------------------------------------------------


@rule("R8.1")
def test_picks_are_exactly_picks_ids_of_powers():
    few = {"powers": ["dash", "freeze"], "picks": 1}
    rec = game(explicit_powers=[["dash"], ["freeze"]], turns=["a1-a2"], result=resign())
    ok(rec, **few)
    assert_invalid(rec, "R8.1", None)  # standard: 3 picks
    two = game(explicit_powers=[["dash", "freeze"], ["freeze"]], turns=["a1-a2"], result=resign())
    bad(two, "R8.1", None, **few)
    outside = game(explicit_powers=[["leap"], ["dash"]], turns=["a1-a2"], result=resign())
    bad(outside, "R8.1", None, **few)
    # whether or not the power is ever used; and a record of 3 under standard is still fine
    three = game(powers=[["dash"], ["freeze"]], turns=["a1-a2"], result=resign())
    assert_valid(three)
    bad(three, "R8.1", None, picks=2)
    five = game(
        explicit_powers=[["dash", "leap", "trap", "swap", "shove"], ["dash", "leap", "trap",
                         "swap", "shove"]], turns=["a1-a2"], result=resign(),
    )  # fmt: skip
    ok(five, picks=5)


@rule("R8.1")
def test_a_power_the_ruleset_does_not_offer_cannot_be_used_either():
    # the picks are checked first (no turn), so the use never comes into it
    rec = game(
        explicit_powers=[["leap"], ["dash"]],
        turns=[t("c1-a3", power="leap", target="c1")],
        result=resign(),
    )
    bad(rec, "R8.1", None, powers=["dash", "freeze"], picks=1)


# --- dash_reach (R8.4; RS7.4) -----------------------------------------------------------------


@rule("R8.4")
def test_dash_reach_4():
    rec = game(board=7, powers=[["dash"], []], turns=[t("a1-a5", power="dash", target="a1")],
               result=resign())  # fmt: skip
    ok(rec, dash_reach=4)
    assert_invalid(rec, "R2.2", 0, also=("R8.4",))
    five = game(board=7, powers=[["dash"], []], turns=[t("a1-a6", power="dash", target="a1")],
                result=resign())  # fmt: skip
    bad(five, "R2.2", 0, also=("R8.4",), dash_reach=4)
    ok(five, dash_reach=5)


@rule("R8.4")
def test_a_dashing_crown_moves_dash_reach_squares():
    pieces = [crown(0, "a2", "c1", board=7), (0, 1, "a1"), (1, 2, "b7")]
    rec = challenge(board=7, pieces=pieces, powers=[["dash"], []],
                    turns=[t("a2-a6", power="dash", target="a2")], result=resign())  # fmt: skip
    ok(rec, dash_reach=4)
    bad(rec, "R2.2", 0, also=("R8.4",))


# --- leap_reach (R8.11; RS7.5) ----------------------------------------------------------------


@rule("R8.11")
def test_leap_reach_3_lands_three_away_whatever_stands_between():
    rec = game(powers=[["leap"], []], turns=[t("c1-a4", power="leap", target="c1")],
               result=resign())  # fmt: skip
    ok(rec, leap_reach=3)
    assert_invalid(rec, "R2.2", 0, also=("R8.11",))
    far = game(board=7, powers=[["leap"], []], turns=[t("c1-g5", power="leap", target="c1")],
               result=resign())  # fmt: skip
    bad(far, "R2.2", 0, also=("R8.11",), leap_reach=3)


@rule("R8.11")
def test_leap_reach_1_leaves_longer_straight_moves_to_reach():
    line = game(powers=[["leap"], []], turns=[t("c1-c3", power="leap", target="c1")],
                result=resign())  # fmt: skip
    ok(line, leap_reach=1)  # a line move under reach 2, over an empty c2
    knight = game(powers=[["leap"], []], turns=[t("c1-b3", power="leap", target="c1")],
                  result=resign())  # fmt: skip
    assert_valid(knight)
    bad(knight, "R2.2", 0, also=("R8.11",), leap_reach=1)
    over = game(
        powers=[["leap"], []],
        turns=["b1-b2", "e5-e4", t("c1-a3", power="leap", target="c1")],
        result=resign(),
    )
    bad(over, "R2.2", 2, also=("R8.11",), leap_reach=1)


# --- freeze_turns, trap_turns (R8.5, R8.8; "its owner's next K turns", R2.3) ---------------------


def _frozen(move_at: int) -> dict:
    """Side 0 freezes a5 at turn 0; side 1 moves it at turn `move_at` (odd)."""
    filler0 = ["e1-e2", "e2-e1"]
    filler1 = ["e5-e4", "e4-e5"]
    turns: list = [t("b1-b2", power="freeze", target="a5")]
    for i in range(1, move_at):
        turns.append(filler1[(i // 2) % 2] if i % 2 else filler0[(i // 2 + 1) % 2])
    turns.append("a5-a4")
    return game(powers=[["freeze"], []], turns=turns, result=resign())


@rule("R2.3")
@rule("R8.5")
def test_freeze_turns_is_the_owners_next_k_turns():
    bad(_frozen(1), "R2.3", 1, freeze_turns=1)
    ok(_frozen(3), freeze_turns=1)
    assert_invalid(_frozen(3), "R2.3", 3)
    assert_valid(_frozen(5))
    bad(_frozen(7), "R2.3", 7, freeze_turns=4)  # its last frozen turn
    ok(_frozen(9), freeze_turns=4)


def _trapped(move_at: int) -> dict:
    """Side 0 traps c3 at turn 0; side 1's c5 is stopped on it at turn 1 and moves again at
    turn `move_at` (odd)."""
    turns: list = [t("a1-a2", power="trap", target="c3"), "c5-c3"]
    for i in range(2, move_at):
        turns.append(["a2-a1", "a1-a2"][(i // 2 + 1) % 2] if i % 2 == 0 else
                     ["e5-e4", "e4-e5"][(i // 2 + 1) % 2])  # fmt: skip
    turns.append("c3-c2")
    return game(powers=[["trap"], []], turns=turns, result=resign())


@rule("R2.3")
@rule("R8.8")
def test_trap_turns_is_the_owners_next_k_turns():
    # stopped during its owner's own turn 1: the rest of it, then turns 3, 5 .. (K of them)
    bad(_trapped(3), "R2.3", 3, trap_turns=1)
    ok(_trapped(5), trap_turns=1)
    assert_invalid(_trapped(5), "R2.3", 5)
    assert_valid(_trapped(7))
    bad(_trapped(7), "R2.3", 7, trap_turns=3)
    ok(_trapped(9), trap_turns=3)


@rule("R8.8")
def test_a_piece_shoved_onto_the_trap_is_held_k_turns():
    # side 1 traps b2; side 0's b3 is shoved back onto it on side 1's turn: held during its
    # owner's (side 0's) next K turns
    turns = [
        "b1-b3",  # 0: side 0
        t("a5-a4", power="trap", target="b2"),  # 1: side 1 traps b2
        "a1-a2",  # 2
        t("e5-e4", power="shove", target="b3"),  # 3: b3 shoved onto b2, trapped
        "a2-a1",  # 4: side 0's next turn
        "e4-e5",  # 5
        "b2-b1",  # 6: side 0's second turn after the shove
    ]
    rec = game(powers=[[], ["trap", "shove"]], turns=turns, result=resign())
    bad(rec, "R2.3", 6, trap_turns=2)
    ok(rec, trap_turns=1)
    assert_invalid(rec, "R2.3", 6)


# --- surge_rest (R8.10; RS7.6) ----------------------------------------------------------------

# side 0's 4 on c2 (started d1) attacks side 1's 1 on c3 (started a5): (4 - 1) mod 5 = 3 = k+1,
# a win only by a surge
SURGE_POSITION = [(0, 4, "c2"), (0, 2, "b1"), (1, 1, "c3"), (1, 5, "e5")]


def _surged(move_at: int, rest: int | None) -> tuple[dict, dict]:
    turns: list = [t("c2-c3", power="surge", target="c2")]
    for i in range(1, move_at):
        turns.append(["b1-b2", "b2-b1"][(i // 2 + 1) % 2] if i % 2 == 0 else
                     ["e5-e4", "e4-e5"][(i // 2) % 2])  # fmt: skip
    turns.append("c3-c4")
    rec = challenge(pieces=SURGE_POSITION, powers=[["surge"], []], turns=turns, result=resign())
    return rec, ({} if rest is None else {"surge_rest": rest})


@rule("R2.3")
@rule("R8.10")
def test_surge_rest_is_the_owners_next_k_turns():
    rec, _ = _surged(2, None)
    assert_invalid(rec, "R2.3", 2)
    bad(rec, "R2.3", 2, surge_rest=1)
    ok(rec, surge_rest=0)
    rec4, _ = _surged(4, None)
    assert_valid(rec4)
    bad(rec4, "R2.3", 4, surge_rest=2)
    ok(_surged(6, None)[0], surge_rest=2)


@rule("R8.10")
def test_surge_rest_0_does_not_rest_even_for_the_rest_of_a_double():
    turns = [
        t("b1-b2", power="surge", target="c2"),
        "e5-e4",
        t("c2-c3", "c3-c4", power="double"),
    ]
    rec = challenge(pieces=SURGE_POSITION, powers=[["surge", "double"], []], turns=turns,
                    result=resign())  # fmt: skip
    ok(rec, surge_rest=0)
    assert_invalid(rec, "R2.3", 2)


def test_the_verdict_names_the_ruleset_judged_under():
    rec = game(turns=["a1-a2"], result=resign())
    assert verify(rec).ruleset == "standard"
    named, lookup = under(rec, reach=1)
    assert verify(named, lookup).ruleset == "t"
    assert verify(named).rule == "RS5.1" and verify(named).ruleset == "t"
