"""Slow6 R1 (board, sides, pieces) and R2 (turns and moves), written from the spec.

Boards in comments: side 0 starts on row 1 and moves up, side 1 on row N. With the identity
lineups (the default) rank r starts on file r of both back rows: a1=1 .. e1=5, a5=1 .. e5=5.
Each record states its result by hand; `resign()` means "the side to move resigns" (R6.4).
"""

import json

import pytest
from slow6_records import (
    PASS,
    assert_invalid,
    assert_valid,
    challenge,
    crown,
    game,
    points,
    resign,
    t,
    wipeout,
)

rule = pytest.mark.rule


def test_builder_records_are_well_formed():
    # the rule tests hand verify_record well-formed records only (its contract); this keeps
    # the builders honest against the upload format's checker
    from replays import wellformed

    records = [
        game(turns=["c1-c3"], result=resign()),
        game(board=7, turns=shuffle(42, 7), result=points(28, 28)),
        game(hidden=True, lineups=[[3, 1, 5, 2, 4], [2, 5, 1, 4, 3]], turns=[], result=resign(1)),
        game(
            powers=[["double", "swap"], ["trap"]],
            turns=[t("a1-a2", "b1-b2", power="double"), t("a5-a4", power="trap", target="c3")],
            result=resign(),
        ),
        game(
            powers=[["swap"], []],
            turns=[t("c1-c2", power="swap", target=["a1", "c1"])],
            result=resign(),
        ),
        challenge(
            pieces=[crown(1, "c3", "c5", wounded=True, stunned=True), (0, 3, "c1")],
            to_move=1,
            turns_taken=(14, 14),
            turns=[PASS, "c1-c3"],
            result=wipeout(0, points=[3, 0]),
        ),
    ]
    for rec in records:
        wellformed.check(rec)
        wellformed.check(wellformed.parse(json.dumps(rec)))


# --- R1 board, sides, pieces ----------------------------------------------------------------


@rule("R1.1")
def test_5x5_game_from_the_start_verifies():
    assert_valid(game(turns=["c1-c3", "c5-c4", "a1-b2"], result=resign()))


@rule("R1.1")
def test_7x7_game_has_seven_files_and_rows():
    # g1 holds side 0's rank 7 and a7 side 1's rank 1 on the big board.
    rec = game(board=7, turns=["g1-g3", "a7-a5", "d1-d3", "f7-f6"], result=resign())
    assert_valid(rec)


@rule("R1.4")
@pytest.mark.parametrize(
    "board,lineups,turns",
    [
        (5, [[3, 1, 5, 2, 4], [2, 5, 1, 4, 3]], ["a1-a3", "e5-e3"]),
        (7, [[4, 2, 1, 7, 6, 3, 5], [2, 5, 4, 1, 7, 6, 3]], ["a1-a3", "g7-g5"]),
    ],
)
def test_any_permutation_is_a_legal_lineup(board, lineups, turns):
    assert_valid(game(board=board, lineups=lineups, turns=turns, result=resign()))


@rule("R2.6")
@pytest.mark.parametrize(
    "first,move",
    [
        (0, "e1-f2"),  # no file f on 5x5
        (1, "a5-a6"),  # no row 6 on 5x5
        (0, "f1-e2"),  # from a square off the board
        (0, "g1-g3"),  # a 7x7 square on a 5x5 board
    ],
)
def test_off_board_square_is_an_R2_2_fault_not_malformed(first, move):
    assert_invalid(game(first=first, turns=[move], result=resign()), "R2.2", 0)


@rule("R1.6")
def test_first_side_takes_the_first_turn():
    assert_valid(game(first=1, turns=["a5-a4", "a1-a2"], result=resign()))
    # side 0 moving on turn 0 when side 1 is first moves the other side's piece
    assert_invalid(game(first=1, turns=["a1-a2"], result=resign()), "R2.2", 0)


@rule("R1.6")
def test_turns_alternate():
    assert_invalid(game(turns=["a1-a2", "a2-a3"], result=resign()), "R2.2", 1)


# --- R2.2 moves -----------------------------------------------------------------------------

# From c3 on 5x5, one and two squares along each of the 8 directions.
EIGHT_DIRECTIONS = ["c4", "c5", "c2", "c1", "d3", "e3", "b3", "a3"]
EIGHT_DIRECTIONS += ["d4", "e5", "b4", "a5", "d2", "e1", "b2", "a1"]


@rule("R2.2")
@pytest.mark.parametrize("dest", EIGHT_DIRECTIONS)
def test_non_crown_moves_one_or_two_squares_in_any_of_8_directions(dest):
    # side 0's 3 alone in the middle; side 1's 2 on b5, off every line through c3.
    rec = challenge(pieces=[(0, 3, "c3"), (1, 2, "b5")], turns=[f"c3-{dest}"], result=resign())
    assert_valid(rec)


@rule("R2.2")
@pytest.mark.parametrize("move", ["c1-c4", "a1-d4", "e1-b1"])
def test_three_squares_without_dash_is_illegal(move):
    # e1-b1 also passes over own pieces; all three are R2.2
    assert_invalid(game(turns=[move], result=resign()), "R2.2", 0)


@rule("R2.2")
@pytest.mark.parametrize("move", ["b1-c3", "c1-b3", "a1-b3", "c1-e2"])
def test_move_off_the_8_lines_is_illegal(move):
    assert_invalid(game(turns=[move], result=resign()), "R2.2", 0)


@rule("R2.6")
def test_move_to_the_same_square_is_not_a_move():
    assert_invalid(game(turns=["c1-c1"], result=resign()), "R2.2", 0)


# side 0: 3 on c1, 2 on c2, 4 on d2; side 1: 1 on b2, 5 on e5
JUMP_POSITION = [(0, 3, "c1"), (0, 2, "c2"), (0, 4, "d2"), (1, 1, "b2"), (1, 5, "e5")]


@rule("R2.2")
@pytest.mark.parametrize(
    "move,why",
    [
        ("c1-c3", "over own piece on c2"),
        ("c1-e3", "over own piece on d2"),
        ("c1-a3", "over enemy piece on b2"),
        ("c1-d2", "onto own piece"),
        ("c2-d2", "onto own piece"),
    ],
)
def test_no_jumping_friend_or_foe_and_not_onto_own_piece(move, why):
    assert_invalid(challenge(pieces=JUMP_POSITION, turns=[move], result=resign()), "R2.2", 0)


@rule("R2.2")
@pytest.mark.parametrize("move", ["d2-d4", "c2-c4", "c1-b2", "c2-a4"])
def test_moves_over_empty_squares_and_attacks_are_legal(move):
    # c1-b2 attacks side 1's 1 with a 3 (3 beats 1); c2-a4 passes over b3 (empty)
    assert_valid(challenge(pieces=JUMP_POSITION, turns=[move], result=resign()))


@rule("R2.2")
def test_onto_own_piece_from_the_start():
    assert_invalid(game(turns=["a1-b1"], result=resign()), "R2.2", 0)


@rule("R2.2")
@pytest.mark.parametrize("move", ["c2-c3", "a5-a4"])
def test_move_must_take_an_own_piece(move):
    # c2 is empty at the start; a5 is side 1's piece on side 0's turn
    assert_invalid(game(turns=[move], result=resign()), "R2.2", 0)


CROWN_IN_MIDDLE = [crown(0, "c3", "c1"), (1, 2, "b5")]


@rule("R2.2")
@pytest.mark.parametrize("dest", ["b2", "c2", "d2", "b3", "d3", "b4", "c4", "d4"])
def test_crown_moves_one_square_any_direction(dest):
    assert_valid(challenge(pieces=CROWN_IN_MIDDLE, turns=[f"c3-{dest}"], result=resign()))


@rule("R2.2")
@pytest.mark.parametrize("dest", ["c5", "e5", "a1", "e3", "a3", "c1"])
def test_crown_cannot_move_two_squares(dest):
    # c3-c1 would even reach its start square: still two squares, still R2.2
    rec = challenge(pieces=CROWN_IN_MIDDLE, turns=[f"c3-{dest}"], result=resign())
    assert_invalid(rec, "R2.2", 0)


# --- R2.3 immobility ------------------------------------------------------------------------

FREEZE_C5 = t("a1-a2", power="freeze", target="c5")  # side 0 freezes side 1's 3 on c5


@rule("R2.3")
def test_frozen_piece_cannot_move_on_owners_next_turn():
    rec = game(powers=[["freeze"], []], turns=[FREEZE_C5, "c5-c4"], result=resign())
    assert_invalid(rec, "R2.3", 1)


@rule("R2.3")
def test_frozen_piece_cannot_move_on_owners_second_turn():
    turns = [FREEZE_C5, "a5-a4", "b1-b2", "c5-c4"]
    assert_invalid(game(powers=[["freeze"], []], turns=turns, result=resign()), "R2.3", 3)


@rule("R2.3")
def test_frozen_piece_moves_again_on_owners_third_turn():
    turns = [FREEZE_C5, "a5-a4", "b1-b2", "b5-b4", "d1-d2", "c5-c4"]
    assert_valid(game(powers=[["freeze"], []], turns=turns, result=resign()))


# side 0: 2 on c2, 1 on a1; side 1: fresh crown on c4 (start c5), 5 on e5
STUN_POSITION = [(0, 2, "c2"), (0, 1, "a1"), crown(1, "c4", "c5"), (1, 5, "e5")]


@rule("R2.3")
def test_stunned_crown_cannot_move_on_owners_next_turn():
    # c2-c4: the 2 hits the crown and is removed; the crown is stunned (R4.2)
    rec = challenge(pieces=STUN_POSITION, turns=["c2-c4", "c4-c3"], result=resign())
    assert_invalid(rec, "R2.3", 1)


@rule("R2.3")
def test_stunned_crown_moves_again_on_owners_following_turn():
    turns = ["c2-c4", "e5-e4", "a1-a2", "c4-c3"]
    assert_valid(challenge(pieces=STUN_POSITION, turns=turns, result=resign()))


TRAP_C3 = t("e5-e4", power="trap", target="c3")  # side 1 hides a trap on c3
TRAPPED_START = ["a1-a2", TRAP_C3, "c1-c3", "b5-b4"]  # side 0's 3 ends on c3: trapped


@rule("R2.3")
@pytest.mark.parametrize(
    "tail,turn",
    [(["c3-c4"], 4), (["d1-d2", "a5-a4", "c3-c4"], 6)],
    ids=["owner-turn-1", "owner-turn-2"],
)
def test_trapped_piece_cannot_move_for_two_owner_turns(tail, turn):
    rec = game(powers=[[], ["trap"]], turns=TRAPPED_START + tail, result=resign())
    assert_invalid(rec, "R2.3", turn)


@rule("R2.3")
def test_trapped_piece_moves_again_on_owners_third_turn():
    turns = TRAPPED_START + ["d1-d2", "a5-a4", "e1-e2", "b4-b3", "c3-c4"]
    assert_valid(game(powers=[[], ["trap"]], turns=turns, result=resign()))


@rule("R2.3")
def test_trap_sprung_by_first_move_of_double_covers_the_rest_of_the_turn():
    rec = game(
        powers=[["double"], ["trap"]],
        turns=["a1-a2", TRAP_C3, t("c1-c3", "c3-c4", power="double")],
        result=resign(),
    )
    assert_invalid(rec, "R2.3", 2)


@rule("R2.3")
def test_double_after_trap_may_move_another_piece():
    rec = game(
        powers=[["double"], ["trap"]],
        turns=["a1-a2", TRAP_C3, t("c1-c3", "d1-d2", power="double")],
        result=resign(),
    )
    assert_valid(rec)


# side 0: 4 on c2 (start d1), 2 on b1; side 1: 1 on c3 (start a5), 5 on e5.
# 4 attacking 1 loses by R3 ((4-1) mod 5 = 3); with surge it wins, only because of surge.
SURGE_POSITION = [(0, 4, "c2"), (0, 2, "b1"), (1, 1, "c3"), (1, 5, "e5")]
SURGE_WIN = t("c2-c3", power="surge", target="c2")


@rule("R2.3")
def test_piece_resting_after_surge_win_cannot_move_next_owner_turn():
    rec = challenge(
        pieces=SURGE_POSITION,
        powers=[["surge"], []],
        turns=[SURGE_WIN, "e5-e4", "c3-c4"],
        result=resign(),
    )
    assert_invalid(rec, "R2.3", 2)


@rule("R2.3")
def test_piece_resting_after_surge_moves_on_the_owner_turn_after():
    rec = challenge(
        pieces=SURGE_POSITION,
        powers=[["surge"], []],
        turns=[SURGE_WIN, "e5-e4", "b1-b2", "e4-e3", "c3-c4"],
        result=resign(),
    )
    assert_valid(rec)


@rule("R2.3")
def test_surge_rest_during_first_move_of_double_covers_the_second():
    # surge on the 4 (c1) first, then a double whose first move wins only by surge
    pieces = [(0, 4, "c1"), (0, 2, "b1"), (1, 1, "c3"), (1, 5, "e5")]
    surge = t("b1-b2", power="surge", target="c1")
    bad = challenge(
        pieces=pieces,
        powers=[["surge", "double"], []],
        turns=[surge, "e5-e4", t("c1-c3", "c3-c4", power="double")],
        result=resign(),
    )
    assert_invalid(bad, "R2.3", 2)
    good = challenge(
        pieces=pieces,
        powers=[["surge", "double"], []],
        turns=[surge, "e5-e4", t("c1-c3", "b2-b3", power="double")],
        result=resign(),
    )
    assert_valid(good)


# side 1's 5 takes side 0's 3 on c3 (5 beats 3) during side 1's turn 1
RECALL_START = ["c1-c3", "e5-c3"]


@rule("R2.3")
def test_recalled_piece_cannot_move_in_the_turn_it_returns():
    turns = RECALL_START + [t("c1-c2", power="recall", target="c1")]
    assert_invalid(game(powers=[["recall"], []], turns=turns, result=resign()), "R2.3", 2)


@rule("R2.3")
def test_recalled_piece_moves_on_the_next_turn():
    turns = RECALL_START + [t("a1-a2", power="recall", target="c1"), "a5-a4", "c1-c2"]
    assert_valid(game(powers=[["recall"], []], turns=turns, result=resign()))


# side 0 traps c3; side 1's 3 ends on it in turn 1 (immobile on side 1's turns 3 and 5);
# side 0 freezes it in turn 4 (immobile on side 1's turns 5 and 7). Union: 3, 5, 7.
OVERLAP = [
    t("a1-a2", power="trap", target="c3"),
    "c5-c3",
    "b1-b2",
    "a5-a4",
    t("d1-d2", power="freeze", target="c3"),
    "b5-b4",
    "e1-e2",
]


@rule("R2.3")
def test_overlapping_trap_and_freeze_cover_the_union_of_their_turns():
    powers = [["trap", "freeze"], []]
    rec = game(powers=powers, turns=OVERLAP[:3] + ["c3-c4"], result=resign())
    assert_invalid(rec, "R2.3", 3)
    rec = game(powers=powers, turns=OVERLAP + ["c3-c4"], result=resign())
    assert_invalid(rec, "R2.3", 7)


@rule("R2.3")
def test_overlapping_immobilities_do_not_add_up():
    turns = OVERLAP + ["e5-e4", "a2-a3", "c3-c4"]
    assert_valid(game(powers=[["trap", "freeze"], []], turns=turns, result=resign()))


@rule("R2.3")
def test_freeze_and_stun_in_the_same_turn_do_not_add_up():
    # frozen for side 1's turns 1 and 3, stunned for turn 1: free again on turn 5
    opening = [t("c2-c4", power="freeze", target="c4"), "e5-e4", "a1-a2"]
    bad = challenge(
        pieces=STUN_POSITION, powers=[["freeze"], []], turns=opening + ["c4-c3"], result=resign()
    )
    assert_invalid(bad, "R2.3", 3)
    good = challenge(
        pieces=STUN_POSITION,
        powers=[["freeze"], []],
        turns=opening + ["e4-e3", "a2-a1", "c4-c3"],
        result=resign(),
    )
    assert_valid(good)


# --- R2.4 pass, R2.1 one move ---------------------------------------------------------------


@rule("R2.4")
def test_pass_with_a_legal_move_is_illegal():
    assert_invalid(game(turns=[PASS], result=resign()), "R2.4", 0)


# side 1 to move with only a stunned crown (immobile this turn, R9.3); side 0: 3 on c1, 1 on a1
LONE_STUNNED = [crown(1, "c3", "c5", wounded=True, stunned=True), (0, 3, "c1"), (0, 1, "a1")]


@rule("R2.4")
def test_pass_without_a_legal_move_is_a_turn():
    # side 1 cannot move; side 0 then catches the stunned crown: side 1 is wiped out
    rec = challenge(pieces=LONE_STUNNED, to_move=1, turns=[PASS, "c1-c3"], result=wipeout(0))
    assert_valid(rec)


@rule("R2.4")
def test_pass_while_another_piece_can_move_is_illegal():
    pieces = LONE_STUNNED + [(1, 5, "e5")]
    rec = challenge(pieces=pieces, to_move=1, turns=[PASS], result=resign())
    assert_invalid(rec, "R2.4", 0)


@rule("R8.14")
def test_power_then_pass_when_no_legal_move_after_it():
    rec = challenge(
        pieces=LONE_STUNNED,
        to_move=1,
        powers=[[], ["trap"]],
        turns=[t(power="trap", target="a3"), "c1-c3"],
        result=wipeout(0),
    )
    assert_valid(rec)


@rule("R2.4")
def test_power_then_pass_with_a_legal_move_is_illegal():
    rec = challenge(
        pieces=LONE_STUNNED + [(1, 5, "e5")],
        to_move=1,
        powers=[[], ["trap"]],
        turns=[t(power="trap", target="a3")],
        result=resign(),
    )
    assert_invalid(rec, "R2.4", 0)


@rule("R2.1")
def test_two_moves_without_double_is_illegal():
    assert_invalid(game(turns=[["a1-a2", "b1-b2"]], result=resign()), "R2.1", 0)


@rule("R2.1")
def test_two_moves_with_another_power_is_illegal():
    turn = t("a1-a2", "b1-b2", power="dash", target="a1")
    assert_invalid(game(powers=[["dash"], []], turns=[turn], result=resign()), "R2.1", 0)


# --- R2.5 turn limit ------------------------------------------------------------------------


def shuffle(n: int, board: int = 5) -> list[str]:
    """n turns of both sides stepping a corner piece out and back: nothing is ever removed."""
    far = "e5-e4", "e4-e5"
    if board == 7:
        far = "g7-g6", "g6-g7"
    cycle = ["a1-a2", far[0], "a2-a1", far[1]]
    return [cycle[i % 4] for i in range(n)]


@rule("R2.5")
def test_5x5_game_ends_on_points_after_15_turns_each():
    assert_valid(game(turns=shuffle(30), result=points(15, 15)))


@rule("R2.5")
def test_5x5_turn_after_the_limit_is_after_the_end():
    assert_invalid(game(turns=shuffle(31), result=points(15, 15)), "R6.5", 30)


@rule("R2.5")
def test_5x5_points_claimed_one_turn_early_is_cut_short():
    assert_invalid(game(turns=shuffle(29), result=points(15, 15)), "R6.3", None)


@rule("R2.5")
def test_5x5_resign_on_the_last_turn_is_fine():
    assert_valid(game(turns=shuffle(29), result=resign()))


@rule("R2.5")
def test_7x7_game_ends_on_points_after_21_turns_each():
    # 1+..+7 = 28 each
    assert_valid(game(board=7, turns=shuffle(42, 7), result=points(28, 28)))


@rule("R2.5")
def test_7x7_turn_after_the_limit_is_after_the_end():
    assert_invalid(game(board=7, turns=shuffle(43, 7), result=points(28, 28)), "R6.5", 42)


@rule("R2.5")
def test_7x7_does_not_end_after_15_turns_each():
    assert_invalid(game(board=7, turns=shuffle(30, 7), result=points(28, 28)), "R6.3", None)
    assert_valid(game(board=7, turns=shuffle(30, 7), result=resign()))


@rule("R2.5")
def test_passes_count_as_turns():
    # 14 turns each taken; side 1 (stunned crown only) passes its 15th, side 0 plays its 15th.
    # Points: side 0 has 1 + 2 = 3, side 1 a crown = 6.
    pieces = [crown(1, "c3", "c5", wounded=True, stunned=True), (0, 1, "a1"), (0, 2, "b1")]
    rec = challenge(
        pieces=pieces, to_move=1, turns_taken=(14, 14), turns=[PASS, "a1-a2"], result=points(3, 6)
    )
    assert_valid(rec)
    rec = challenge(
        pieces=pieces,
        to_move=1,
        turns_taken=(14, 14),
        turns=[PASS, "a1-a2", "c3-c4"],
        result=points(3, 6),
    )
    assert_invalid(rec, "R6.5", 2)
