"""Slow6 R9 (challenge positions) and R10 (which rule a verdict names)."""

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

# --- R9.2 a position must be consistent -----------------------------------------------------

# a consistent position: side 0's 3 on c2 and 1 on a1, side 1's 3 on c4 and 5 on e5
BASE = [(0, 3, "c2"), (0, 1, "a1"), (1, 3, "c4"), (1, 5, "e5")]


@rule("R9.1")
def test_consistent_position_verifies():
    assert_valid(challenge(pieces=BASE, turns=["a1-a2"], result=resign()))


@rule("R9.2")
@pytest.mark.parametrize(
    "pieces",
    [
        [(0, 3, "c2"), (0, 1, "a1")],
        [(1, 3, "c4"), (1, 5, "e5")],
    ],
    ids=["side-1-has-no-pieces", "side-0-has-no-pieces"],
)
def test_each_side_must_have_pieces(pieces):
    assert_invalid(challenge(pieces=pieces, turns=[], result=resign(0)), "R9.1", None)


@rule("R9.2")
@pytest.mark.parametrize(
    "pieces",
    [
        [(0, 3, "c2"), (0, 1, "a1"), (1, 3, "c2"), (1, 5, "e5")],  # two pieces on c2
        [(0, 3, "f2"), (0, 1, "a1"), (1, 3, "c4"), (1, 5, "e5")],  # f2 is off a 5x5 board
        [(0, 3, "c6"), (0, 1, "a1"), (1, 3, "c4"), (1, 5, "e5")],  # so is c6
    ],
    ids=["same-square", "off-board-file", "off-board-row"],
)
def test_squares_are_distinct_and_on_the_board(pieces):
    assert_invalid(challenge(pieces=pieces, turns=[], result=resign(1)), "R9.1", None)


@rule("R9.2")
@pytest.mark.parametrize(
    "start",
    ["c5", "c2", "f1"],
    ids=["other-sides-back-row", "not-a-back-row", "off-board"],
)
def test_start_square_is_on_the_pieces_own_back_row(start):
    pieces = [(0, 3, "c2", start), (0, 1, "a1"), (1, 3, "c4"), (1, 5, "e5")]
    assert_invalid(challenge(pieces=pieces, turns=[], result=resign(1)), "R9.1", None)


@rule("R9.2")
def test_start_squares_of_a_side_are_distinct():
    pieces = [(0, 3, "c2", "c1"), (0, 1, "a2", "c1"), (1, 3, "c4"), (1, 5, "e5")]
    assert_invalid(challenge(pieces=pieces, turns=[], result=resign(1)), "R9.1", None)


@rule("R9.2")
@pytest.mark.parametrize(
    "wounded,stunned", [(True, False), (False, True), (True, True)], ids=["w", "s", "ws"]
)
def test_only_crowns_are_wounded_or_stunned(wounded, stunned):
    pieces = [(0, 3, "c2", None, wounded, stunned), (0, 1, "a1"), (1, 3, "c4"), (1, 5, "e5")]
    assert_invalid(challenge(pieces=pieces, turns=[], result=resign(1)), "R9.1", None)


@rule("R9.2")
def test_wounded_crown_in_a_position_is_fine():
    pieces = BASE + [crown(0, "d3", "d1", wounded=True)]
    assert_valid(challenge(pieces=pieces, turns=["d3-d4"], result=resign()))


@rule("R9.2")
def test_first_must_equal_to_move():
    rec = challenge(pieces=BASE, to_move=0, first=1, turns=[], result=resign(0))
    assert_invalid(rec, "R9.1", None)


@rule("R9.2")
@pytest.mark.parametrize(
    "board,to_move,taken",
    [
        (5, 0, (16, 16)),  # more than T = 15
        (5, 0, (15, 16)),
        (7, 0, (22, 22)),  # more than T = 21
        (5, 0, (15, 15)),  # both at T: the game is over
        (7, 1, (21, 21)),
        (5, 0, (5, 4)),  # the side to move is ahead
        (5, 1, (4, 5)),
        (5, 0, (3, 5)),  # two apart
    ],
)
def test_turns_taken_rules(board, to_move, taken):
    pieces = [(0, 3, "c2"), (1, 3, "c4")]
    rec = challenge(board=board, pieces=pieces, to_move=to_move, turns_taken=taken, result=resign())
    assert_invalid(rec, "R9.1", None)


@rule("R9.2")
@pytest.mark.parametrize(
    "board,to_move,taken",
    [(5, 0, (5, 5)), (5, 0, (4, 5)), (5, 1, (5, 4)), (5, 0, (14, 15)), (7, 1, (21, 20))],
)
def test_turns_taken_that_are_consistent(board, to_move, taken):
    pieces = [(0, 3, "c2"), (0, 1, "a1"), (1, 3, "c4"), (1, 1, "a5")]
    move = "a1-a2" if to_move == 0 else ("a5-a4" if board == 5 else "a7-a6")
    if board == 7:
        pieces = [(0, 3, "c2"), (0, 1, "a1"), (1, 3, "c4"), (1, 1, "a7")]
    rec = challenge(
        board=board,
        pieces=pieces,
        to_move=to_move,
        turns_taken=taken,
        turns=[move],
        result=resign(),
    )
    if taken in ((14, 15), (21, 20)):
        # that single turn is the last one: the game ends on points (3 + 1 each)
        rec["result"] = points(4, 4)
    assert_valid(rec)


# --- R9.3 stunned crowns in a position, powers, recall --------------------------------------

# side 1's crown on c3 is stunned; side 1 also has a 5 on e5, side 0 a 1 on c2
OWN_STUNNED = [crown(1, "c3", "c5", wounded=True, stunned=True), (1, 5, "e5"), (0, 1, "c2")]


@rule("R9.3")
def test_stunned_crown_of_the_side_to_move_is_immobile_on_the_first_turn():
    rec = challenge(pieces=OWN_STUNNED, to_move=1, turns=["c3-c4"], result=resign())
    assert_invalid(rec, "R2.3", 0)


@rule("R9.3")
def test_stunned_crown_of_the_side_to_move_is_catchable_on_the_second_turn():
    pieces = [crown(1, "c3", "c5", wounded=True, stunned=True), (0, 1, "c2")]
    rec = challenge(pieces=pieces, to_move=1, turns=[PASS, "c2-c3"], result=wipeout(0))
    assert_valid(rec)


@rule("R9.3")
def test_stunned_crown_of_the_side_to_move_is_not_catchable_on_the_fourth_turn():
    # side 0 does not catch on turn 1; on turn 3 its 1 hits a crown that is no longer stunned
    rec = challenge(
        pieces=OWN_STUNNED,
        to_move=1,
        turns=["e5-e4", "c2-b2", "e4-e3", "b2-c3"],
        result=wipeout(1),
    )
    assert_valid(rec)


# side 0 to move; side 1's crown on c3 was stunned in side 0's previous turn
OTHER_STUNNED = [crown(1, "c3", "c5", wounded=True, stunned=True), (0, 1, "c2")]


@rule("R9.3")
def test_stunned_crown_of_the_other_side_is_catchable_on_the_first_turn():
    assert_valid(challenge(pieces=OTHER_STUNNED, turns=["c2-c3"], result=wipeout(0)))


@rule("R9.3")
def test_stunned_crown_of_the_other_side_moves_on_the_second_turn_and_is_no_longer_catchable():
    # it may move on turn 1; side 0's 1 hitting it on turn 2 loses
    turns = ["c2-b2", "c3-b3", "b2-b3"]
    assert_valid(challenge(pieces=OTHER_STUNNED, turns=turns, result=wipeout(1)))


@rule("R9.3")
def test_powers_start_unused_in_a_position():
    rec = challenge(
        pieces=BASE,
        powers=[["dash"], ["dash"]],
        turns=[t("a1-a4", power="dash", target="a1"), t("e5-e2", power="dash", target="e5")],
        result=resign(),
    )
    assert_valid(rec)


@rule("R9.3")
def test_recall_cannot_bring_back_a_piece_removed_before_the_position():
    # side 0's 2 (start b1) is not in the position: it was removed before it
    rec = challenge(
        pieces=BASE,
        powers=[["recall"], []],
        turns=[t("a1-a2", power="recall", target="b1")],
        result=resign(),
    )
    assert_invalid(rec, "R8.7", 0)


# --- R10 which rule a verdict names ---------------------------------------------------------

HOME_POSITION = [crown(0, "c2", "c1"), (1, 1, "a5")]  # c2-c1 wins for side 0 at once
LAST_PIECE = [(0, 3, "c2"), (0, 5, "e1"), (1, 1, "c3")]  # c2-c3 wipes side 1 out


@rule("R10")
def test_the_first_broken_rule_is_named():
    # a three-square move on turn 2 and a wrong result: the move comes first
    turns = ["a1-a2", "a5-a4", "b1-b4"]
    assert_invalid(game(turns=turns, result=points(1, 2)), "R2.2", 2)


@rule("R10")
@pytest.mark.parametrize(
    "pieces,turns,claimed,rule_",
    [
        (HOME_POSITION, ["c2-c1"], wipeout(0), "R6.2"),
        (HOME_POSITION, ["c2-c1"], points(6, 1), "R6.3"),
        (LAST_PIECE, ["c2-c3"], home(0), "R6.1"),
        (LAST_PIECE, ["c2-c3"], points(8, 0), "R6.3"),
    ],
    ids=["home-as-wipeout", "home-as-points", "wipeout-as-home", "wipeout-as-points"],
)
def test_claimed_reason_that_did_not_happen_names_the_claimed_reasons_rule(
    pieces, turns, claimed, rule_
):
    assert_invalid(challenge(pieces=pieces, turns=turns, result=claimed), rule_, None)


@rule("R10")
@pytest.mark.parametrize("reason", [home, wipeout])
def test_points_end_claimed_as_home_or_wipeout(reason):
    turns = ["a1-a2", "e5-e4", "a2-a1", "e4-e5"] * 7 + ["a1-a2", "e5-e4"]
    assert len(turns) == 30
    assert_invalid(
        game(turns=turns, result=reason(None)), {home: "R6.1", wipeout: "R6.2"}[reason], None
    )


@rule("R10")
def test_wrong_winner_names_the_rule_of_the_real_reason():
    assert_invalid(challenge(pieces=HOME_POSITION, turns=["c2-c1"], result=home(1)), "R6.1", None)
    assert_invalid(challenge(pieces=LAST_PIECE, turns=["c2-c3"], result=wipeout(1)), "R6.2", None)
    assert_invalid(game(turns=["a1-a2"], result=resign(1)), "R6.4", None)


@rule("R10")
def test_true_points_may_be_given_with_any_reason():
    # totals at the end: home -> side 0 crown 6 vs side 1's 1; wipe-out -> 3 + 5 vs 0
    assert_valid(challenge(pieces=HOME_POSITION, turns=["c2-c1"], result=home(0, points=[6, 1])))
    rec = challenge(pieces=LAST_PIECE, turns=["c2-c3"], result=wipeout(0, points=[8, 0]))
    assert_valid(rec)
    assert_valid(game(turns=["a1-a2"], result=resign(points=[15, 15])))


@rule("R10")
def test_wrong_points_with_another_reason_name_R6_3():
    rec = challenge(pieces=HOME_POSITION, turns=["c2-c1"], result=home(0, points=[3, 1]))
    assert_invalid(rec, "R6.3", None)
    rec = challenge(pieces=LAST_PIECE, turns=["c2-c3"], result=wipeout(0, points=[8, 1]))
    assert_invalid(rec, "R6.3", None)
    assert_invalid(game(turns=["a1-a2"], result=resign(points=[15, 14])), "R6.3", None)


@rule("R10")
def test_log_cut_short_with_a_natural_reason_names_the_claimed_reason():
    # side 1 still has its 5 after the capture: the claimed wipe-out has not happened yet
    pieces = [(0, 3, "c2"), (0, 1, "a1"), (1, 1, "c3"), (1, 5, "e5")]
    assert_invalid(challenge(pieces=pieces, turns=["c2-c3"], result=wipeout(0)), "R6.2", None)
    # the crown is one step short of home
    pieces = [crown(0, "c3", "c1"), (1, 1, "a5")]
    assert_invalid(challenge(pieces=pieces, turns=["c3-c2"], result=home(0)), "R6.1", None)


@rule("R10")
def test_resign_claimed_after_a_natural_end_names_R6_4():
    turns = ["a1-a2", "e5-e4", "a2-a1", "e4-e5"] * 7 + ["a1-a2", "e5-e4"]
    assert_invalid(game(turns=turns, result=resign()), "R6.4", None)
    assert_invalid(challenge(pieces=LAST_PIECE, turns=["c2-c3"], result=resign(0)), "R6.4", None)
