"""Slow6 R8: powers, each with its edge cases, written from the spec.

Unless a test says otherwise: 5x5, identity lineups (rank r on file r of both back rows), and
picks padded with powers the test does not use. A power's effect is seen through what the
rules then allow or forbid (a later move, a fight's outcome deciding a wipe-out, the points).
"""

import pytest
from slow6_records import (
    PASS,
    assert_invalid,
    assert_valid,
    challenge,
    crown,
    game,
    home,
    points,
    resign,
    t,
    wipeout,
)

rule = pytest.mark.rule


# --- R8.1 picks and use ---------------------------------------------------------------------


@rule("R8.1")
def test_power_in_a_game_without_powers():
    rec = game(turns=[t("c1-c4", power="dash", target="c1")], result=resign())
    assert_invalid(rec, "R8.1", 0)


@rule("R8.1")
def test_power_not_picked_by_the_side_using_it():
    rec = game(
        explicit_powers=[["double", "dash", "leap"], ["shield", "freeze", "swap"]],
        turns=[t("a1-a2", power="freeze", target="c5")],
        result=resign(),
    )
    assert_invalid(rec, "R8.1", 0)


@rule("R8.1")
def test_power_used_twice():
    turns = [t("c1-c4", power="dash", target="c1"), "a5-a4", t("b1-b4", power="dash", target="b1")]
    assert_invalid(game(powers=[["dash"], []], turns=turns, result=resign()), "R8.1", 2)


@rule("R8.1")
def test_duplicate_picks_are_a_fault_of_the_record():
    rec = game(
        explicit_powers=[["dash", "dash", "leap"], ["shield", "freeze", "swap"]],
        turns=["a1-a2"],
        result=resign(),
    )
    assert_invalid(rec, "R8.1", None)


@rule("R8.1")
def test_both_sides_may_pick_and_use_the_same_power():
    rec = game(
        explicit_powers=[["dash", "leap", "shield"], ["dash", "leap", "shield"]],
        turns=[t("c1-c4", power="dash", target="c1"), t("a5-a2", power="dash", target="a5")],
        result=resign(),
    )
    assert_valid(rec)


@rule("R2.6")
@pytest.mark.parametrize(
    "power,target,rule_",
    [
        ("dash", "f1", "R8.4"),
        ("leap", "f1", "R8.11"),
        ("surge", "f1", "R8.10"),
        ("shield", "f1", "R8.12"),
        ("freeze", "f5", "R8.5"),
        ("trap", "f3", "R8.8"),
        ("shove", "f5", "R8.9"),
        ("recall", "f1", "R8.7"),
        ("swap", ["a1", "f1"], "R8.6"),
    ],
    ids=lambda x: x if isinstance(x, str) else "-".join(x),
)
def test_off_board_power_target_breaks_that_powers_rule(power, target, rule_):
    turn = t("b1-b2", power=power, target=target)
    rec = game(powers=[[power], []], turns=[turn], result=resign())
    assert_invalid(rec, rule_, 0)


# --- R8.3 double ----------------------------------------------------------------------------

DOUBLE = [["double"], []]


@rule("R8.3")
@pytest.mark.parametrize("moves", [("c1-c3", "c3-c4"), ("a1-a2", "b1-b2")])
def test_double_makes_two_moves_same_piece_or_not(moves):
    rec = game(powers=DOUBLE, turns=[t(*moves, power="double")], result=resign())
    assert_valid(rec)


CROWN_AND_ONE = [crown(0, "c3", "c1"), (0, 1, "a1"), (1, 1, "a5")]


@rule("R8.3")
def test_crown_cannot_make_both_moves_of_a_double():
    turn = t("c3-c4", "c4-d4", power="double")
    rec = challenge(pieces=CROWN_AND_ONE, powers=DOUBLE, turns=[turn], result=resign())
    assert_invalid(rec, "R8.3", 0)


@rule("R8.3")
@pytest.mark.parametrize("moves", [("c3-c4", "a1-a2"), ("a1-a2", "c3-c4")])
def test_crown_may_make_one_of_the_two_moves(moves):
    turn = t(*moves, power="double")
    assert_valid(challenge(pieces=CROWN_AND_ONE, powers=DOUBLE, turns=[turn], result=resign()))


@rule("R8.3")
def test_piece_that_promoted_with_the_first_move_is_a_crown_for_the_second():
    pieces = [(0, 3, "c4"), (0, 1, "a1"), (1, 1, "a5")]  # the 3's lane square is c5
    bad = challenge(
        pieces=pieces, powers=DOUBLE, turns=[t("c4-c5", "c5-d4", power="double")], result=resign()
    )
    assert_invalid(bad, "R8.3", 0)
    good = challenge(
        pieces=pieces, powers=DOUBLE, turns=[t("c4-c5", "a1-a2", power="double")], result=resign()
    )
    assert_valid(good)


@rule("R8.3")
def test_one_move_after_double_when_a_second_was_possible():
    rec = game(powers=DOUBLE, turns=[t("a1-a2", power="double")], result=resign())
    assert_invalid(rec, "R8.3", 0)


@rule("R8.3")
def test_one_move_after_double_when_no_second_is_possible():
    # side 0 has only a crown: it makes one of the two moves and there is no other piece
    pieces = [crown(0, "c3", "c1"), (1, 1, "a5")]
    rec = challenge(
        pieces=pieces, powers=DOUBLE, turns=[t("c3-c4", power="double")], result=resign()
    )
    assert_valid(rec)


@rule("R8.3")
def test_one_move_after_double_when_the_first_move_was_trapped():
    # side 0's only piece ends its first move on side 1's trap: immobile for the second
    pieces = [(0, 3, "c1"), (1, 1, "a5"), (1, 5, "e5")]
    powers = [["double"], ["trap"]]
    trap = t("e5-e4", power="trap", target="c3")
    good = challenge(
        pieces=pieces,
        to_move=1,
        powers=powers,
        turns=[trap, t("c1-c3", power="double")],
        result=resign(),
    )
    assert_valid(good)


@rule("R8.3")
def test_crown_stunned_by_the_first_move_is_catchable_by_the_second():
    pieces = [(0, 2, "c2"), (0, 1, "a3"), crown(1, "c3", "c5")]
    turn = t("c2-c3", "a3-c3", power="double")
    assert_valid(challenge(pieces=pieces, powers=DOUBLE, turns=[turn], result=wipeout(0)))


# --- R8.4 dash ------------------------------------------------------------------------------

DASH = [["dash"], []]


@rule("R8.4")
@pytest.mark.parametrize("move,target", [("c1-c4", "c1"), ("a1-d4", "a1"), ("c1-c3", "c1")])
def test_dash_moves_one_to_three_squares_in_a_line(move, target):
    rec = game(powers=DASH, turns=[t(move, power="dash", target=target)], result=resign())
    assert_valid(rec)


@rule("R8.4")
@pytest.mark.parametrize("move", ["c2-c5", "c2-c4", "c2-c3"])
def test_dash_lets_a_crown_move_up_to_three_squares(move):
    pieces = [crown(0, "c2", "a1"), (1, 1, "a5")]
    turn = t(move, power="dash", target="c2")
    assert_valid(challenge(pieces=pieces, powers=DASH, turns=[turn], result=resign()))


@rule("R8.4")
def test_dash_cannot_pass_over_a_piece():
    pieces = [(0, 3, "c1"), (1, 1, "c3"), (1, 5, "e5")]
    turn = t("c1-c4", power="dash", target="c1")
    rec = challenge(pieces=pieces, powers=DASH, turns=[turn], result=resign())
    assert_invalid(rec, "R2.2", 0, also=("R8.4",))


@rule("R8.4")
def test_dash_does_not_reach_four_squares():
    pieces = [(0, 3, "c1"), (1, 1, "a5")]
    turn = t("c1-c5", power="dash", target="c1")
    rec = challenge(pieces=pieces, powers=DASH, turns=[turn], result=resign())
    assert_invalid(rec, "R2.2", 0, also=("R8.4",))


@rule("R8.4")
def test_dash_is_used_up_by_the_next_move_whatever_its_length():
    turns = [t("c1-c2", power="dash", target="c1"), "a5-a4", "c2-c5"]
    assert_invalid(game(powers=DASH, turns=turns, result=resign()), "R2.2", 2)


@rule("R8.4")
def test_dash_waits_for_that_pieces_next_move():
    turns = [t("a1-a2", power="dash", target="c1"), "a5-a4", "c1-c4"]
    assert_valid(game(powers=DASH, turns=turns, result=resign()))


@rule("R8.4")
@pytest.mark.parametrize("target", ["c5", "c3"], ids=["enemy", "empty"])
def test_dash_target_must_be_an_own_piece(target):
    rec = game(powers=DASH, turns=[t("a1-a2", power="dash", target=target)], result=resign())
    assert_invalid(rec, "R8.4", 0)


# side 1 freezes side 0's 2 on b1 in turn 1; it stays immobile through side 0's turns 2 and 4
FROZEN_B1 = ["a1-a2", t("a5-a4", power="freeze", target="b1")]


@rule("R2.3")
@pytest.mark.parametrize("power", ["dash", "leap", "surge"])
def test_dash_leap_surge_on_an_immobile_piece(power):
    turns = FROZEN_B1 + [t("c1-c2", power=power, target="b1")]
    rec = game(powers=[[power], ["freeze"]], turns=turns, result=resign())
    assert_invalid(rec, "R2.3", 2)


# --- R8.5 freeze ----------------------------------------------------------------------------


@rule("R8.5")
@pytest.mark.parametrize("target", ["b1", "c3", "f3"], ids=["own", "empty", "off-board"])
def test_freeze_target_must_be_an_enemy_piece(target):
    turn = t("a1-a2", power="freeze", target=target)
    rec = game(powers=[["freeze"], []], turns=[turn], result=resign())
    assert_invalid(rec, "R8.5", 0)


# --- R8.6 swap ------------------------------------------------------------------------------

SWAP = [["swap"], []]


@rule("R8.6")
def test_swap_exchanges_two_own_pieces_then_the_side_moves():
    # after the swap the 1 stands on c2 and beats side 1's 5 (the 4 would lose to it)
    pieces = [(0, 1, "a2"), (0, 4, "c2"), (1, 5, "c3")]
    turn = t("c2-c3", power="swap", target=["a2", "c2"])
    assert_valid(challenge(pieces=pieces, powers=SWAP, turns=[turn], result=wipeout(0)))


@rule("R8.6")
def test_swap_with_an_immobile_piece():
    turns = FROZEN_B1 + [t("c1-c2", power="swap", target=["b1", "c1"])]
    rec = game(powers=[["swap"], ["freeze"]], turns=turns, result=resign())
    assert_invalid(rec, "R8.6", 2, also=("R2.3",))


@rule("R8.6")
@pytest.mark.parametrize(
    "target", [["a1", "a5"], ["a1", "a3"], ["a1", "a1"]], ids=["enemy", "empty", "same"]
)
def test_swap_targets_two_own_pieces(target):
    turn = t("b1-b2", power="swap", target=target)
    assert_invalid(game(powers=SWAP, turns=[turn], result=resign()), "R8.6", 0)


# --- R8.7 recall ----------------------------------------------------------------------------

RECALL = [["recall"], []]


@rule("R8.7")
def test_recall_a_piece_removed_in_the_sides_own_previous_turn():
    # turn 2: side 0's 3 and side 1's 3 trade on c4; turn 4: the 3 returns to c1
    turns = [
        "c1-c3",
        "c5-c4",
        "c3-c4",
        "a5-a4",
        t("b1-b2", power="recall", target="c1"),
        "e5-e4",
        "c1-c3",
    ]
    assert_valid(game(powers=RECALL, turns=turns, result=resign()))


@rule("R8.7")
def test_recall_a_piece_removed_in_the_other_sides_turn_since():
    turns = ["c1-c3", "e5-c3", t("a1-a2", power="recall", target="c1"), "a5-a4", "c1-c2"]
    assert_valid(game(powers=RECALL, turns=turns, result=resign()))


@rule("R8.7")
def test_recall_of_a_piece_removed_earlier():
    turns = ["c1-c3", "e5-c3", "a1-a2", "a5-a4", t("b1-b2", power="recall", target="c1")]
    assert_invalid(game(powers=RECALL, turns=turns, result=resign()), "R8.7", 4)
    # removed in side 0's own turn 2, recalled in turn 6: too late as well
    turns = ["c1-c3", "c5-c4", "c3-c4", "a5-a4", "a1-a2", "e5-e4"]
    turns.append(t("b1-b2", power="recall", target="c1"))
    assert_invalid(game(powers=RECALL, turns=turns, result=resign()), "R8.7", 6)


@rule("R8.7")
def test_recall_of_a_piece_never_removed():
    rec = game(powers=RECALL, turns=[t("a1-a2", power="recall", target="c1")], result=resign())
    assert_invalid(rec, "R8.7", 0)


@rule("R8.7")
def test_recall_needs_an_empty_start_square():
    # side 1's 5 takes side 0's 3 on c3; side 0's 2 stands on c1, the 3's start square
    taken = [(0, 3, "c3"), (0, 2, "c1"), (1, 5, "e5"), (1, 1, "a5")]
    rec = challenge(
        pieces=taken,
        to_move=1,
        powers=RECALL,
        turns=["e5-c3", t("c1-c2", power="recall", target="c1")],
        result=resign(),
    )
    assert_invalid(rec, "R8.7", 1)
    free = [(0, 3, "c3"), (0, 2, "b2"), (1, 5, "e5"), (1, 1, "a5")]
    rec = challenge(
        pieces=free,
        to_move=1,
        powers=RECALL,
        turns=["e5-c3", t("b2-b3", power="recall", target="c1")],
        result=resign(),
    )
    assert_valid(rec)


@rule("R8.7")
def test_recalled_crown_returns_with_its_original_rank():
    # lineups: side 0 = [2, 5, 4, 1, 3], so the crown that started on c1 was a 4.
    # 14 turns each taken. Side 1's fresh crown takes side 0's wounded crown (R4.4); side 0
    # recalls it (a fresh 4, not a crown) and moves its 1. Points: side 0 4 + 1 = 5,
    # side 1 crown 6 + 1 = 7.
    pieces = [
        crown(0, "c3", "c1", wounded=True),
        (0, 1, "e2"),
        crown(1, "c4", "c5"),
        (1, 1, "a5"),
    ]
    rec = challenge(
        lineups=[[2, 5, 4, 1, 3], [1, 2, 3, 4, 5]],
        pieces=pieces,
        to_move=1,
        turns_taken=(14, 14),
        powers=[["recall"], []],
        turns=["c4-c3", t("e2-e3", power="recall", target="c1")],
        result=points(5, 7),
    )
    assert_valid(rec)


@rule("R8.7")
def test_recalled_crown_is_no_longer_a_crown():
    pieces = [crown(0, "c3", "c1", wounded=True), (0, 1, "e2"), crown(1, "c4", "c5"), (1, 1, "a5")]
    rec = challenge(
        pieces=pieces,
        to_move=1,
        powers=[["recall"], []],
        turns=["c4-c3", t("e2-e3", power="recall", target="c1"), "a5-a4", "c1-a3"],
        result=resign(),
    )
    assert_valid(rec)


@rule("R8.7")
def test_recalled_piece_still_promotes_in_its_lane():
    # 12 turns each taken, side 1 to move. Side 1's 5 takes side 0's 3; the 3 is recalled to
    # c1, walks up its lane and promotes on c5 in the last turn. Points: side 0 crown 6 + 1 = 7,
    # side 1 5 (an unpromoted 3 would make it 4 against 5).
    pieces = [(0, 3, "c3"), (0, 1, "a1"), (1, 5, "e5")]
    turns = [
        "e5-c3",
        t("a1-a2", power="recall", target="c1"),
        "c3-e3",
        "c1-c3",
        "e3-e4",
        "c3-c5",
    ]
    rec = challenge(
        pieces=pieces,
        to_move=1,
        turns_taken=(12, 12),
        powers=RECALL,
        turns=turns,
        result=points(7, 5),
    )
    assert_valid(rec)


@rule("R8.13")
def test_pending_dash_is_lost_when_the_piece_is_removed():
    # the 3 on c1 gets a dash, then is traded off on c1 before moving, then recalled:
    # it returns with no power effects, so three squares is too far
    opening = [
        t("a1-a2", power="dash", target="c1"),
        "c5-c3",
        "b1-b2",
        "c3-c1",
        t("b2-b3", power="recall", target="c1"),
        "a5-a4",
    ]
    powers = [["dash", "recall"], []]
    assert_invalid(game(powers=powers, turns=opening + ["c1-c4"], result=resign()), "R2.2", 6)
    assert_valid(game(powers=powers, turns=opening + ["c1-c3"], result=resign()))


# --- R8.8 trap ------------------------------------------------------------------------------

TRAP1 = [[], ["trap"]]  # side 1 holds the trap


@rule("R8.8")
@pytest.mark.parametrize("target", ["a2", "b5", "f3"], ids=["enemy", "own", "off-board"])
def test_trap_target_must_be_an_empty_square(target):
    turns = ["a1-a2", t("e5-e4", power="trap", target=target)]
    assert_invalid(game(powers=TRAP1, turns=turns, result=resign()), "R8.8", 1)


# turn 1: trap on c3. Side 0's 3 (on c2 after turn 0) moves through c3.
THROUGH = ["c1-c2", t("e5-e4", power="trap", target="c3")]


@rule("R8.8")
@pytest.mark.parametrize("logged", ["c2-c4", "c2-c3"], ids=["intended", "stopped"])
def test_move_passing_over_a_trap_stops_on_it(logged):
    # stopped on c3, immobile on side 0's turns 4 and 6, free on turn 8
    tail = ["a5-a4", "a1-a2", "b5-b4", "b1-b2", "e4-e3", "c3-c4"]
    assert_valid(game(powers=TRAP1, turns=THROUGH + [logged] + tail, result=resign()))
    bad = game(powers=TRAP1, turns=THROUGH + [logged, "a5-a4", "c3-c4"], result=resign())
    assert_invalid(bad, "R2.3", 4)


@rule("R8.8")
def test_trap_is_used_up_once_it_has_stopped_a_piece():
    # after the stopped 3 leaves c3 (turn 8), side 0's 2 passes over c3 to d4 unhindered
    tail = ["a5-a4", "a1-a2", "b5-b4", "b1-b2", "e4-e3", "c3-c4"]
    tail += ["e3-e2", "b2-d4", "a4-a3", "d4-d3"]
    assert_valid(game(powers=TRAP1, turns=THROUGH + ["c2-c4"] + tail, result=resign()))


@rule("R8.8")
def test_move_stopped_by_a_trap_is_not_on_its_intended_square():
    bad = game(powers=TRAP1, turns=THROUGH + ["c2-c4", "a5-a4", "c4-c5"], result=resign())
    assert_invalid(bad, "R2.2", 4)


@rule("R8.8")
@pytest.mark.parametrize("logged", ["c2-c4", "c2-c3"], ids=["intended", "stopped"])
def test_attack_through_a_trap_ends_there_without_a_fight(logged):
    # side 1's 3 on c4 survives (a fight would have traded both 3s) and moves on
    turns = ["c1-c2", t("c5-c4", power="trap", target="c3"), logged, "c4-b4"]
    assert_valid(game(powers=TRAP1, turns=turns, result=resign()))


@rule("R8.8")
def test_own_pieces_ignore_their_own_trap():
    # side 1's 3 passes over its own trap on c4 and moves on from c3 two turns later
    turns = ["a1-a2", t("a5-a4", power="trap", target="c4"), "b1-b2", "c5-c3", "d1-d2", "c3-b3"]
    assert_valid(game(powers=TRAP1, turns=turns, result=resign()))


LEAP_VS_TRAP = [["leap"], ["trap"]]
TRAP_C2 = ["a1-a2", t("e5-e4", power="trap", target="c2")]


@rule("R8.8")
def test_leap_passes_over_nothing_so_a_trap_in_between_does_not_stop_it():
    turns = TRAP_C2 + [t("c1-c3", power="leap", target="c1"), "a5-a4", "c3-c4"]
    assert_valid(game(powers=LEAP_VS_TRAP, turns=turns, result=resign()))


@rule("R8.8")
def test_plain_move_over_the_same_trap_is_stopped():
    turns = TRAP_C2 + ["c1-c3", "a5-a4", "c3-c4"]
    assert_invalid(game(powers=TRAP1, turns=turns, result=resign()), "R2.2", 4)


@rule("R8.8")
def test_leap_landing_on_the_trap_is_trapped():
    turns = TRAP_C2 + [t("c1-c2", power="leap", target="c1"), "a5-a4", "c2-c3"]
    assert_invalid(game(powers=LEAP_VS_TRAP, turns=turns, result=resign()), "R2.3", 4)


# side 1 traps c1 (the empty start square of side 0's 3) and takes the 3 with its 5 on c3;
# side 0 recalls the 3 onto the trap square.
RECALL_ONTO_TRAP = [(0, 3, "c3"), (0, 1, "a1"), (1, 5, "e5"), (1, 2, "b5")]
RECALL_TURNS = [
    t("e5-c3", power="trap", target="c1"),
    t("a1-a2", power="recall", target="c1"),
    "b5-b4",
]
RECALL_SWAP = [["recall", "swap"], ["trap"]]


@rule("R8.8")
def test_piece_recalled_onto_a_trap_is_not_trapped():
    rec = challenge(
        pieces=RECALL_ONTO_TRAP,
        to_move=1,
        powers=RECALL_SWAP,
        turns=RECALL_TURNS + ["c1-c2"],
        result=resign(),
    )
    assert_valid(rec)


SWAP_ONTO_TRAP = RECALL_TURNS + [
    t("a2-a3", power="swap", target=["c1", "a2"]),  # side 0's 1 now on c1, the 3 on a2 -> a3
    "b4-b3",
    "c1-c2",
]


@rule("R8.8")
def test_piece_swapped_onto_a_trap_is_not_trapped():
    rec = challenge(
        pieces=RECALL_ONTO_TRAP,
        to_move=1,
        powers=RECALL_SWAP,
        turns=SWAP_ONTO_TRAP,
        result=resign(),
    )
    assert_valid(rec)


@rule("R8.8")
def test_trap_stays_after_a_recall_or_swap_onto_it():
    # the 1 leaves c1 and comes back by a move: now it is trapped
    rec = challenge(
        pieces=RECALL_ONTO_TRAP,
        to_move=1,
        powers=RECALL_SWAP,
        turns=SWAP_ONTO_TRAP + ["b3-b4", "c2-c1", "b4-b3", "c1-b1"],
        result=resign(),
    )
    assert_invalid(rec, "R2.3", 9)


SHOVE_ONTO_TRAP = [
    t("c1-c2", power="trap", target="c4"),
    "e5-c3",
    t("a1-a2", power="shove", target="c3"),  # side 1's 5 pushed from c3 onto the trap on c4
]


@rule("R8.8")
def test_piece_shoved_onto_a_trap_is_trapped():
    powers = [["trap", "shove"], []]
    bad = game(powers=powers, turns=SHOVE_ONTO_TRAP + ["c4-d4"], result=resign())
    assert_invalid(bad, "R2.3", 3)
    bad = game(
        powers=powers,
        turns=SHOVE_ONTO_TRAP + ["a5-a4", "b1-b2", "c4-d4"],
        result=resign(),
    )
    assert_invalid(bad, "R2.3", 5)
    good = game(
        powers=powers,
        turns=SHOVE_ONTO_TRAP + ["a5-a4", "b1-b2", "b5-b4", "d1-d2", "c4-d4"],
        result=resign(),
    )
    assert_valid(good)


@rule("R8.8")
@pytest.mark.parametrize("logged", ["c1-c4", "c1-c3"], ids=["intended", "stopped"])
def test_dash_over_a_trap_stops_on_it(logged):
    opening = ["a1-a2", t("e5-e4", power="trap", target="c3")]
    turns = opening + [t(logged, power="dash", target="c1"), "a5-a4", "c3-c2"]
    rec = game(powers=[["dash"], ["trap"]], turns=turns, result=resign())
    assert_invalid(rec, "R2.3", 4)


@rule("R8.8")
def test_dash_stopped_by_a_trap_is_not_on_its_intended_square():
    opening = ["a1-a2", t("e5-e4", power="trap", target="c3")]
    turns = opening + [t("c1-c4", power="dash", target="c1"), "a5-a4", "c4-c5"]
    rec = game(powers=[["dash"], ["trap"]], turns=turns, result=resign())
    assert_invalid(rec, "R2.2", 4)


# side 1 traps c3 and puts its own 5 on it; side 0's 2 (on b2) takes the 5 (2 beats 5)
ON_THE_TRAP = ["b1-b2", t("e5-c3", power="trap", target="c3"), "b2-c3"]


@rule("R8.8")
def test_attack_on_a_piece_standing_on_the_trap_is_fought_and_the_winner_trapped():
    bad = game(powers=TRAP1, turns=ON_THE_TRAP + ["a5-a4", "c3-c4"], result=resign())
    assert_invalid(bad, "R2.3", 4)
    tail = ["a5-a4", "a1-a2", "b5-b4", "d1-d2", "a4-a3", "c3-c4"]
    assert_valid(game(powers=TRAP1, turns=ON_THE_TRAP + tail, result=resign()))


@rule("R8.8")
def test_attack_on_a_piece_on_the_trap_removes_the_defender():
    # the 5 was removed in the fight: side 1 cannot move it from c3 afterwards
    bad = game(powers=TRAP1, turns=ON_THE_TRAP + ["c3-c4"], result=resign())
    assert_invalid(bad, "R2.2", 3)


@rule("R8.8")
@pytest.mark.parametrize("logged", ["b5-d5", "b5-c5"], ids=["intended", "stopped"])
def test_move_stopped_on_its_lane_square_by_a_trap_promotes(logged):
    # side 0's 3 (lane c) runs along the far row and is stopped on c5: it becomes a crown,
    # so side 1's 4 hitting it is removed (an unpromoted 3 would lose to the 4)
    pieces = [(0, 3, "b5"), (1, 4, "d3")]
    turns = [t("d3-d4", power="trap", target="c5"), logged, "d4-c5"]
    rec = challenge(pieces=pieces, to_move=1, powers=TRAP1, turns=turns, result=wipeout(0))
    assert_valid(rec)


@rule("R8.8")
@pytest.mark.parametrize("logged", ["a1-d1", "a1-c1"], ids=["intended", "stopped"])
def test_crown_stopped_on_its_start_square_by_a_trap_wins(logged):
    pieces = [crown(0, "a1", "c1"), (1, 1, "a5"), (1, 2, "e4")]
    turns = [t("e4-e3", power="trap", target="c1"), t(logged, power="dash", target="a1")]
    rec = challenge(
        pieces=pieces, to_move=1, powers=[["dash"], ["trap"]], turns=turns, result=home(0)
    )
    assert_valid(rec)


# --- R8.9 shove -----------------------------------------------------------------------------

SHOVE0 = [["shove"], []]


@rule("R8.9")
def test_shove_pushes_an_enemy_towards_its_own_back_row_then_the_side_moves():
    # side 1's 3 goes c3 -> c4; side 0's 1 then steps onto the emptied c3
    pieces = [(0, 1, "c2"), (0, 2, "b1"), (1, 3, "c3"), (1, 5, "e5")]
    turns = [t("c2-c3", power="shove", target="c3"), "c4-d4"]
    assert_valid(challenge(pieces=pieces, powers=SHOVE0, turns=turns, result=resign()))


@rule("R8.9")
def test_shove_may_push_an_immobile_enemy_and_it_stays_immobile():
    # R2.3 bars Swap, Dash, Leap and Surge on an immobile piece, not Shove. Side 1's 3 is
    # frozen on turn 0 (immobile on side 1's turns 1 and 3) and shoved to c4 on turn 2.
    pieces = [(0, 1, "c2"), (0, 2, "b1"), (1, 3, "c3"), (1, 5, "e5")]
    opening = [
        t("b1-b2", power="freeze", target="c3"),
        "e5-e4",
        t("c2-c3", power="shove", target="c3"),
    ]
    powers = [["freeze", "shove"], []]
    good = challenge(pieces=pieces, powers=powers, turns=opening + ["e4-e3"], result=resign())
    assert_valid(good)
    bad = challenge(pieces=pieces, powers=powers, turns=opening + ["c4-c5"], result=resign())
    assert_invalid(bad, "R2.3", 3)


@rule("R8.9")
def test_side_1_shoves_towards_row_1():
    pieces = [(1, 1, "c4"), (1, 2, "b5"), (0, 3, "c3"), (0, 5, "e1")]
    turns = [t("c4-c3", power="shove", target="c3"), "c2-d2"]
    rec = challenge(pieces=pieces, to_move=1, powers=[[], ["shove"]], turns=turns, result=resign())
    assert_valid(rec)


@rule("R8.9")
def test_shove_of_a_diagonal_neighbour():
    pieces = [(0, 1, "b2"), (1, 3, "c3"), (1, 5, "e5")]
    turns = [t("b2-b3", power="shove", target="c3"), "c4-c5"]
    assert_valid(challenge(pieces=pieces, powers=SHOVE0, turns=turns, result=resign()))


@rule("R8.9")
@pytest.mark.parametrize(
    "pieces",
    [
        [(0, 1, "c2"), (0, 2, "b1"), (1, 3, "c3"), (1, 4, "c4")],
        [(0, 1, "c2"), (0, 2, "c4"), (1, 3, "c3")],
    ],
    ids=["enemy-behind", "own-behind"],
)
def test_shove_onto_an_occupied_square(pieces):
    turn = t("c2-b3", power="shove", target="c3")
    rec = challenge(pieces=pieces, powers=SHOVE0, turns=[turn], result=resign())
    assert_invalid(rec, "R8.9", 0)


@rule("R8.9")
def test_shove_off_the_board():
    pieces = [(0, 1, "c4"), (1, 3, "c5"), (1, 5, "e5")]
    turn = t("c4-b4", power="shove", target="c5")
    rec = challenge(pieces=pieces, powers=SHOVE0, turns=[turn], result=resign())
    assert_invalid(rec, "R8.9", 0)


@rule("R8.9")
@pytest.mark.parametrize("target", ["c3", "b1", "d3"], ids=["not-adjacent", "own", "empty"])
def test_shove_target_must_be_an_enemy_next_to_an_own_piece(target):
    pieces = [(0, 1, "c1"), (0, 2, "b1"), (1, 3, "c3"), (1, 5, "e5")]
    turn = t("c1-c2", power="shove", target=target)
    rec = challenge(pieces=pieces, powers=SHOVE0, turns=[turn], result=resign())
    assert_invalid(rec, "R8.9", 0)


# --- R8.10 surge ----------------------------------------------------------------------------

SURGE = [["surge"], []]


def surge_fight(a: int, d: int, result, board: int = 5):
    # side 0's surged a on c2 attacks side 1's d on c3, one piece each
    pieces = [(0, a, "c2"), (1, d, "c3")]
    turn = t("c2-c3", power="surge", target="c2")
    return challenge(board=board, pieces=pieces, powers=SURGE, turns=[turn], result=result)


@rule("R8.10")
@pytest.mark.parametrize("a,d", [(4, 1), (5, 2), (1, 3), (2, 4), (3, 5)])
def test_surge_also_beats_the_rank_three_below_on_5x5(a, d):
    assert_valid(surge_fight(a, d, wipeout(0)))


@rule("R8.10")
@pytest.mark.parametrize("a,d", [(1, 2), (2, 3), (3, 4), (4, 5), (5, 1)])
def test_surge_does_not_help_against_the_other_ranks(a, d):
    assert_valid(surge_fight(a, d, wipeout(1)))


@rule("R8.10")
def test_surge_keeps_normal_wins_and_equal_trades():
    assert_valid(surge_fight(3, 1, wipeout(0)))
    assert_valid(surge_fight(3, 3, wipeout(None)))


@rule("R8.10")
@pytest.mark.parametrize("a,d,winner", [(5, 1, 0), (1, 4, 0), (7, 3, 0), (6, 1, 1), (1, 2, 1)])
def test_surge_on_7x7_beats_the_rank_four_below(a, d, winner):
    assert_valid(surge_fight(a, d, wipeout(winner), board=7))


@rule("R8.10")
def test_no_rest_after_a_win_that_needed_no_surge():
    pieces = [(0, 3, "c2"), (0, 2, "b1"), (1, 1, "c3"), (1, 5, "e5")]
    turns = [t("c2-c3", power="surge", target="c2"), "e5-e4", "c3-c4"]
    assert_valid(challenge(pieces=pieces, powers=SURGE, turns=turns, result=resign()))


@rule("R8.10")
def test_surge_on_a_crown():
    pieces = [crown(0, "c2", "c1"), (1, 1, "c3")]
    turn = t("c2-c3", power="surge", target="c2")
    rec = challenge(pieces=pieces, powers=SURGE, turns=[turn], result=wipeout(0))
    assert_invalid(rec, "R8.10", 0)


@rule("R8.10")
def test_surge_on_an_enemy_piece():
    rec = game(powers=SURGE, turns=[t("a1-a2", power="surge", target="c5")], result=resign())
    assert_invalid(rec, "R8.10", 0)


@rule("R8.10")
def test_surged_piece_attacking_a_crown_still_loses():
    pieces = [(0, 4, "c2"), crown(1, "c3", "c5")]
    turn = t("c2-c3", power="surge", target="c2")
    assert_valid(challenge(pieces=pieces, powers=SURGE, turns=[turn], result=wipeout(1)))


@rule("R8.10")
def test_surge_is_used_up_by_the_next_move():
    # the surged 4 steps to c2 without a fight; its attack on the 1 next turn is a plain loss
    pieces = [(0, 4, "b2"), (1, 1, "c3"), (1, 5, "e5")]
    turns = [t("b2-c2", power="surge", target="b2"), "e5-e4", "c2-c3"]
    assert_valid(challenge(pieces=pieces, powers=SURGE, turns=turns, result=wipeout(1)))


@rule("R8.10")
def test_surge_waits_for_that_pieces_next_move():
    # surge on the 4 while another piece moves; the 4's next move wins by surge and it rests
    pieces = [(0, 4, "c2"), (0, 5, "e1"), (1, 1, "c3"), (1, 5, "e5")]
    turns = [t("e1-e2", power="surge", target="c2"), "e5-e4", "c2-c3", "e4-e3", "c3-c4"]
    rec = challenge(pieces=pieces, powers=SURGE, turns=turns, result=resign())
    assert_invalid(rec, "R2.3", 4)


# --- R8.11 leap -----------------------------------------------------------------------------

LEAP = [["leap"], []]
# side 0's 3 on c3 boxed in by a ring of pieces of both sides
RING = [
    (0, 3, "c3"),
    (0, 1, "b2"),
    (0, 2, "c2"),
    (0, 4, "d2"),
    (1, 1, "b4"),
    (1, 2, "c4"),
    (1, 3, "d4"),
    (1, 4, "b3"),
    (1, 5, "d3"),
]
OUTSIDE_THE_RING = ["a1", "b1", "c1", "d1", "e1", "a2", "e2", "a3", "e3", "a4", "e4"]
OUTSIDE_THE_RING += ["a5", "b5", "c5", "d5", "e5"]


@rule("R8.11")
@pytest.mark.parametrize("dest", OUTSIDE_THE_RING)
def test_leap_lands_on_any_empty_square_within_two_over_pieces(dest):
    turn = t(f"c3-{dest}", power="leap", target="c3")
    assert_valid(challenge(pieces=RING, powers=LEAP, turns=[turn], result=resign()))


# side 0's 3 on c3; side 1: 1 on e4 (a knight's step away), 5 on c4, 2 on c5 behind it
LEAP_ATTACK = [(0, 3, "c3"), (1, 1, "e4"), (1, 5, "c4"), (1, 2, "c5")]


@rule("R8.11")
@pytest.mark.parametrize("move", ["c3-e4", "c3-c5"], ids=["knight", "over-a-piece"])
def test_leap_cannot_attack(move):
    turn = t(move, power="leap", target="c3")
    rec = challenge(pieces=LEAP_ATTACK, powers=LEAP, turns=[turn], result=resign())
    assert_invalid(rec, "R8.11", 0, also=("R2.2",))


@rule("R8.11")
def test_piece_with_a_leap_pending_may_still_attack_normally():
    # c3-c4 is a plain attack (3 loses to 5): the only side 0 piece is removed
    turn = t("c3-c4", power="leap", target="c3")
    rec = challenge(pieces=LEAP_ATTACK, powers=LEAP, turns=[turn], result=wipeout(1))
    assert_valid(rec)


@rule("R8.11")
def test_leap_on_a_crown():
    pieces = [crown(0, "c3", "c1"), (1, 1, "a5")]
    turn = t("c3-c4", power="leap", target="c3")
    rec = challenge(pieces=pieces, powers=LEAP, turns=[turn], result=resign())
    assert_invalid(rec, "R8.11", 0)


@rule("R8.11")
def test_leap_on_an_enemy_piece():
    rec = game(powers=LEAP, turns=[t("a1-a2", power="leap", target="a5")], result=resign())
    assert_invalid(rec, "R8.11", 0)


@rule("R8.11")
def test_leap_beyond_two_squares():
    rec = game(powers=LEAP, turns=[t("b1-e2", power="leap", target="b1")], result=resign())
    assert_invalid(rec, "R2.2", 0, also=("R8.11",))


@rule("R8.11")
def test_leap_waits_for_that_pieces_next_move():
    turns = [t("a1-a2", power="leap", target="b1"), "a5-a4", "b1-c3"]
    assert_valid(game(powers=LEAP, turns=turns, result=resign()))


@rule("R8.11")
def test_leap_is_used_up_by_a_leap():
    turns = [t("b1-c3", power="leap", target="b1"), "a5-a4", "c3-e4"]
    assert_invalid(game(powers=LEAP, turns=turns, result=resign()), "R2.2", 2)


@rule("R8.11")
def test_leap_is_used_up_by_a_move_that_is_not_a_leap():
    # the 2 with a pending leap takes side 1's 1 on b3 by a plain attack; its next
    # knight-like move is no longer allowed
    turns = [
        t("a1-a2", power="leap", target="b1"),
        "a5-b4",
        "c1-c2",
        "b4-b3",
        "b1-b3",
        "e5-e4",
        "b3-d4",
    ]
    assert_invalid(game(powers=LEAP, turns=turns, result=resign()), "R2.2", 6)


DASH_THEN_LEAP = [t("a1-a2", power="dash", target="b1"), "a5-a4"]


@rule("R8.11")
@pytest.mark.parametrize("move", ["b1-b4", "b1-d2"], ids=["dash-move", "leap-move"])
def test_piece_with_dash_and_leap_pending_may_make_either_move(move):
    turns = DASH_THEN_LEAP + [t(move, power="leap", target="b1")]
    assert_valid(game(powers=[["dash", "leap"], []], turns=turns, result=resign()))


@rule("R8.11")
@pytest.mark.parametrize(
    "move,then",
    [("b1-b4", "b4-d3"), ("b1-d2", "d2-d5")],
    ids=["dash-move-uses-leap", "leap-move-uses-dash"],
)
def test_dash_and_leap_pending_are_both_used_up(move, then):
    turns = DASH_THEN_LEAP + [t(move, power="leap", target="b1"), "e5-e4", then]
    rec = game(powers=[["dash", "leap"], []], turns=turns, result=resign())
    assert_invalid(rec, "R2.2", 4)


# --- R8.12 shield ---------------------------------------------------------------------------

SHIELD0 = [["shield"], []]
SHIELD1 = [[], ["shield"]]


@rule("R8.12")
def test_shielded_attacker_survives_an_equal_trade():
    pieces = [(0, 3, "c2"), (1, 3, "c3")]
    turn = t("c2-c3", power="shield", target="c2")
    assert_valid(challenge(pieces=pieces, powers=SHIELD0, turns=[turn], result=wipeout(0)))


@rule("R8.12")
def test_shielded_attacker_in_an_equal_trade_takes_the_freed_square():
    # R8.12 says the shielded piece "stays on the square where it stood before the fight";
    # the spec's example records (slow6-valid: daa7449b, 3d167b83, 35b44d2e, 365e1584,
    # a70b3053, 1b6c4cf2) all have the surviving attacker move on from the defender's square.
    # This pins the examples' reading (reported as an ambiguity of R8.12).
    pieces = [(0, 3, "c2"), (0, 1, "a1"), (1, 3, "c3"), (1, 5, "e5")]
    opening = [t("c2-c3", power="shield", target="c2"), "e5-e4"]
    good = challenge(pieces=pieces, powers=SHIELD0, turns=opening + ["c3-c4"], result=resign())
    assert_valid(good)
    bad = challenge(pieces=pieces, powers=SHIELD0, turns=opening + ["c2-b2"], result=resign())
    assert_invalid(bad, "R2.2", 2)


@rule("R8.12")
def test_shielded_defender_survives_an_equal_trade():
    pieces = [(1, 3, "c3"), (1, 1, "a5"), (0, 3, "c2")]
    turns = [t("a5-a4", power="shield", target="c3"), "c2-c3"]
    rec = challenge(pieces=pieces, to_move=1, powers=SHIELD1, turns=turns, result=wipeout(1))
    assert_valid(rec)


@rule("R8.12")
def test_shielded_attacker_that_loses_goes_back_to_its_square_and_the_shield_is_gone():
    # the 3 loses to the 5, stays on c2, steps to b2; the 5 then takes it for good
    pieces = [(0, 3, "c2"), (1, 5, "c3"), (1, 1, "a5")]
    turns = [t("c2-c3", power="shield", target="c2"), "a5-a4", "c2-b2", "c3-b2"]
    assert_valid(challenge(pieces=pieces, powers=SHIELD0, turns=turns, result=wipeout(1)))


SHIELDED_DEFENDER = [(1, 2, "c3"), (1, 1, "a5"), (0, 3, "c2"), (0, 1, "a1")]
SHIELD_C3 = t("a5-a4", power="shield", target="c3")


@rule("R8.12")
def test_attacker_that_beats_a_shielded_defender_stays_on_its_own_square():
    # 3 beats 2, but the shielded 2 stays on c3 and the 3 stays on c2
    turns = [SHIELD_C3, "c2-c3", "c3-b3", "c2-c4"]
    rec = challenge(
        pieces=SHIELDED_DEFENDER, to_move=1, powers=SHIELD1, turns=turns, result=resign()
    )
    assert_valid(rec)
    turns = [SHIELD_C3, "c2-c3", "a4-a3", "c3-c4"]
    rec = challenge(
        pieces=SHIELDED_DEFENDER, to_move=1, powers=SHIELD1, turns=turns, result=resign()
    )
    assert_invalid(rec, "R2.2", 3)


@rule("R8.12")
def test_shielded_stunned_crown_survives_being_caught():
    # side 0's 2 stuns the shielded crown (not removed, so the shield stays); side 0's 1
    # catches it on turn 3: the shield saves it, and it moves again on turn 4
    pieces = [crown(1, "c3", "c5"), (1, 1, "a5"), (0, 2, "c2"), (0, 1, "b2")]
    turns = [t("a5-a4", power="shield", target="c3"), "c2-c3", "a4-a3", "b2-c3", "c3-c4"]
    rec = challenge(pieces=pieces, to_move=1, powers=SHIELD1, turns=turns, result=resign())
    assert_valid(rec)


@rule("R8.12")
def test_crown_hit_by_a_shielded_attacker_is_still_stunned():
    # the shielded 2 survives the hit, the crown is stunned (side 1 has no move: pass),
    # and the 2 catches it next turn
    pieces = [(0, 2, "c2"), crown(1, "c3", "c5")]
    turns = [t("c2-c3", power="shield", target="c2"), PASS, "c2-c3"]
    assert_valid(challenge(pieces=pieces, powers=SHIELD0, turns=turns, result=wipeout(0)))


@rule("R8.13")
def test_shield_is_kept_through_promotion():
    # the shielded 3 promotes on c5; side 1's fresh crown hits it: both would go (R4.4),
    # the shield keeps side 0's crown
    pieces = [(0, 3, "c4"), crown(1, "d4", "e5")]
    turns = [t("c4-c5", power="shield", target="c4"), "d4-c5"]
    assert_valid(challenge(pieces=pieces, powers=SHIELD0, turns=turns, result=wipeout(0)))


@rule("R8.12")
def test_shield_on_an_immobile_piece_is_allowed():
    turns = FROZEN_B1 + [t("c1-c2", power="shield", target="b1")]
    assert_valid(game(powers=[["shield"], ["freeze"]], turns=turns, result=resign()))


@rule("R8.12")
def test_shield_on_an_enemy_piece():
    rec = game(powers=SHIELD0, turns=[t("a1-a2", power="shield", target="a5")], result=resign())
    assert_invalid(rec, "R8.12", 0)


# --- R8.15 a shield-sent-back attacker ends its move on its own square ----------------------


@rule("R8.15")
def test_attacker_sent_back_onto_its_lane_square_promotes():
    # 13 turns each taken. Turn 0: swap puts the 3 on c5, its lane square (no promotion).
    # Turn 2: the shielded 3 attacks side 1's 5 on b5 and loses: back on c5, it has ended a
    # move there and promotes. Points after turn 3: side 0 crown 6 + 1 = 7, side 1 5 + 1 = 6.
    pieces = [(0, 3, "c4"), (0, 1, "c5"), (1, 5, "b5"), (1, 1, "a5")]
    turns = [
        t("c4-c3", power="swap", target=["c4", "c5"]),
        "a5-a4",
        t("c5-b5", power="shield", target="c5"),
        "a4-a3",
    ]
    rec = challenge(
        pieces=pieces,
        turns_taken=(13, 13),
        powers=[["swap", "shield"], []],
        turns=turns,
        result=points(7, 6),
    )
    assert_valid(rec)


@rule("R8.15")
def test_crown_sent_back_by_its_own_shield_onto_its_start_square_wins():
    # swap puts the wounded crown on its start square c1 (no win); shielded, it attacks the
    # fresh enemy crown and loses (R4.4): the shield sends it back to c1 -> home
    pieces = [
        crown(0, "c2", "c1", wounded=True),
        (0, 1, "c1"),
        crown(1, "d2", "e5"),
        (1, 1, "a5"),
    ]
    turns = [
        t("c2-c3", power="swap", target=["c2", "c1"]),
        "a5-a4",
        t("c1-d2", power="shield", target="c1"),
    ]
    rec = challenge(pieces=pieces, powers=[["swap", "shield"], []], turns=turns, result=home(0))
    assert_valid(rec)


@rule("R8.15")
def test_crown_kept_home_by_the_defenders_shield_wins():
    # the crown on its start square beats the shielded 2, which stays: the crown stays on c1
    pieces = [crown(0, "c2", "c1"), (0, 1, "c1"), (1, 2, "d2"), (1, 1, "a5")]
    turns = [
        t("c2-c3", power="swap", target=["c2", "c1"]),
        t("a5-a4", power="shield", target="d2"),
        "c1-d2",
    ]
    rec = challenge(pieces=pieces, powers=[["swap"], ["shield"]], turns=turns, result=home(0))
    assert_valid(rec)
