"""Slow6 R5 (promotion), R6 (end of the game) and R7 (hidden variant).

Promotion tests use lineups whose lanes differ from the files: side 0 = [1, 2, 3, 4, 5],
side 1 = [2, 3, 4, 5, 1]. Side 0's rank r promotes on row 5 of the file where side 1's r
started: 1 -> e5, 2 -> a5, 3 -> b5, 4 -> c5, 5 -> d5. Side 1's rank r promotes on row 1 of the
file where side 0's r started: r -> file r (a1 .. e1).
Whether a piece became a crown is seen from what happens next: a non-crown that hits a crown is
removed (R4.2), a crown moves only one square (R2.2), a crown counts N+1 points (R6.3).
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
    timeout,
    wipeout,
)

rule = pytest.mark.rule

LANES = [[1, 2, 3, 4, 5], [2, 3, 4, 5, 1]]


# --- R5 promotion ---------------------------------------------------------------------------


@rule("R5.1")
def test_promotes_on_its_lane_square_by_a_plain_move():
    # side 0's 3 (lane b) moves b3-b5 and is a crown: side 1's 4 hitting it is removed.
    # Unpromoted, the 4 would beat the 3 and side 1 would win.
    pieces = [(0, 3, "b3"), (1, 4, "c4")]
    turns = ["b3-b5", "c4-b5"]
    assert_valid(challenge(lineups=LANES, pieces=pieces, turns=turns, result=wipeout(0)))
    bad = challenge(lineups=LANES, pieces=pieces, turns=turns, result=wipeout(1))
    assert_invalid(bad, "R6.2", None)


@rule("R5.1")
def test_no_promotion_on_a_far_row_square_outside_the_lane():
    # c5 is on the far row and in the 3's own starting file, but its lane is b
    pieces = [(0, 3, "c3"), (1, 4, "d4")]
    rec = challenge(lineups=LANES, pieces=pieces, turns=["c3-c5", "d4-c5"], result=wipeout(1))
    assert_valid(rec)


@rule("R5.1")
def test_side_1_promotes_in_the_file_where_side_0s_rank_started():
    # side 1's 4 promotes on d1; side 0's 5 (which would beat a 4) hitting it is removed
    pieces = [(1, 4, "d3"), (0, 5, "c2")]
    rec = challenge(
        lineups=LANES, pieces=pieces, to_move=1, turns=["d3-d1", "c2-d1"], result=wipeout(1)
    )
    assert_valid(rec)


@rule("R5.1")
def test_promotes_by_a_won_attack_on_its_lane_square():
    # the 3 takes side 1's 2 on b5 (3 beats 2) and promotes there; the 4 then loses to it
    pieces = [(0, 3, "b3"), (1, 2, "b5"), (1, 4, "c4")]
    rec = challenge(lineups=LANES, pieces=pieces, turns=["b3-b5", "c4-b5"], result=wipeout(0))
    assert_valid(rec)


@rule("R5.1")
def test_promoted_piece_moves_as_a_crown():
    pieces = [(0, 3, "b3"), (1, 1, "e5")]
    good = challenge(
        lineups=LANES, pieces=pieces, turns=["b3-b5", "e5-e4", "b5-b4"], result=resign()
    )
    assert_valid(good)
    bad = challenge(
        lineups=LANES, pieces=pieces, turns=["b3-b5", "e5-e4", "b5-b3"], result=resign()
    )
    assert_invalid(bad, "R2.2", 2)


@rule("R5.1")
def test_promoted_piece_is_a_fresh_crown():
    # side 1's wounded crown attacks the new crown: the fresh one wins (R4.4)
    pieces = [(0, 3, "c4"), crown(1, "d4", "e5", wounded=True)]
    rec = challenge(pieces=pieces, turns=["c4-c5", "d4-c5"], result=wipeout(0))
    assert_valid(rec)


@rule("R5.1")
def test_off_lane_piece_played_as_a_crown_breaks_the_move_rule():
    # the unpromoted 3 on c5 loses to the 4; the log then moves it on as if it had survived
    pieces = [(0, 3, "c3"), (0, 1, "a1"), (1, 4, "d4")]
    rec = challenge(
        lineups=LANES, pieces=pieces, turns=["c3-c5", "d4-c5", "c5-c4"], result=resign()
    )
    assert_invalid(rec, "R2.2", 2)


@rule("R5.1")
def test_7x7_lane():
    # side 0 = [4,2,1,7,6,3,5], side 1 = [2,5,4,1,7,6,3]: side 0's 7 promotes on e7.
    # Side 1's 1 beats a 7 (R3) but is removed by a crown.
    lineups = [[4, 2, 1, 7, 6, 3, 5], [2, 5, 4, 1, 7, 6, 3]]
    pieces = [(0, 7, "e5"), (1, 1, "d6")]
    turns = ["e5-e7", "d6-e7"]
    rec = challenge(board=7, lineups=lineups, pieces=pieces, turns=turns, result=wipeout(0))
    assert_valid(rec)


@rule("R5.2")
def test_swap_onto_the_lane_square_does_not_promote():
    # swap puts the 3 on b5 (its lane square); it then moves two squares, which a crown can't
    pieces = [(0, 3, "b4"), (0, 1, "b5"), (1, 5, "e4")]
    rec = challenge(
        lineups=LANES,
        pieces=pieces,
        powers=[["swap"], []],
        turns=[t("b4-a3", power="swap", target=["b4", "b5"]), "e4-e3", "b5-b3"],
        result=resign(),
    )
    assert_valid(rec)


# --- R6.1 home ------------------------------------------------------------------------------

HOME_POSITION = [crown(0, "c2", "c1"), (1, 1, "a5")]


@rule("R6.1")
def test_crown_back_on_its_start_square_wins_at_once():
    assert_valid(challenge(pieces=HOME_POSITION, turns=["c2-c1"], result=home(0)))
    pieces = [crown(1, "d4", "d5"), (0, 1, "a1")]
    assert_valid(challenge(pieces=pieces, to_move=1, turns=["d4-d5"], result=home(1)))


@rule("R6.1")
def test_crown_on_another_back_row_square_does_not_win():
    assert_valid(challenge(pieces=HOME_POSITION, turns=["c2-b1"], result=resign()))
    rec = challenge(pieces=HOME_POSITION, turns=["c2-b1"], result=home(0))
    assert_invalid(rec, "R6.1", None)


@rule("R6.1")
def test_crown_wins_home_by_a_won_attack_on_its_start_square():
    pieces = [crown(0, "c2", "c1"), (1, 2, "c1"), (1, 1, "a5")]
    assert_valid(challenge(pieces=pieces, turns=["c2-c1"], result=home(0)))


@rule("R6.1")
def test_home_is_checked_before_wipe_out():
    # the move both brings the crown home and removes side 1's last piece: R6.1 comes first
    pieces = [crown(0, "c2", "c1"), (1, 2, "c1")]
    assert_valid(challenge(pieces=pieces, turns=["c2-c1"], result=home(0)))


@rule("R6.1")
def test_non_crown_back_on_its_start_square_does_not_win():
    turns = ["a1-a2", "e5-e4", "a2-a1"]
    assert_valid(game(turns=turns, result=resign()))
    assert_invalid(game(turns=turns, result=home(0)), "R6.1", None)


# crown on c2 (start c1), side 0's 1 on c1: swap puts the crown on its start square
SWAP_HOME = [crown(0, "c2", "c1"), (0, 1, "c1"), (1, 1, "a5")]
SWAP_TO_START = t("c2-c3", power="swap", target=["c2", "c1"])


@rule("R6.1")
def test_swap_onto_the_start_square_does_not_win():
    turns = [SWAP_TO_START, "a5-a4"]
    rec = challenge(pieces=SWAP_HOME, powers=[["swap"], []], turns=turns, result=resign())
    assert_valid(rec)
    rec = challenge(pieces=SWAP_HOME, powers=[["swap"], []], turns=turns, result=home(0))
    assert_invalid(rec, "R6.1", None)


@rule("R6.1")
def test_crown_swapped_home_wins_when_it_moves_back_there():
    turns = [SWAP_TO_START, "a5-a4", "c1-b2", "a4-a3", "b2-c1"]
    rec = challenge(pieces=SWAP_HOME, powers=[["swap"], []], turns=turns, result=home(0))
    assert_valid(rec)


# side 1's crown on c4 (start c5) next to side 0's 1 on c3: a shove pushes it home
SHOVE_HOME = [crown(1, "c4", "c5"), (1, 1, "a5"), (0, 1, "c3"), (0, 2, "b1")]
SHOVE_TO_START = t("b1-b2", power="shove", target="c4")


@rule("R6.1")
def test_shove_onto_the_start_square_does_not_win():
    rec = challenge(
        pieces=SHOVE_HOME, powers=[["shove"], []], turns=[SHOVE_TO_START], result=resign()
    )
    assert_valid(rec)
    rec = challenge(
        pieces=SHOVE_HOME, powers=[["shove"], []], turns=[SHOVE_TO_START], result=home(1)
    )
    assert_invalid(rec, "R6.1", None)


@rule("R6.1")
def test_crown_shoved_home_wins_when_it_moves_back_there():
    turns = [SHOVE_TO_START, "c5-c4", "b2-b3", "c4-c5"]
    rec = challenge(pieces=SHOVE_HOME, powers=[["shove"], []], turns=turns, result=home(1))
    assert_valid(rec)


# --- R6.2 wipe-out --------------------------------------------------------------------------


@rule("R6.2")
def test_side_with_no_pieces_left_loses():
    pieces = [(0, 3, "c2"), (0, 1, "a1"), (1, 1, "c3")]
    assert_valid(challenge(pieces=pieces, turns=["c2-c3"], result=wipeout(0)))


@rule("R6.2")
def test_both_last_pieces_removed_in_one_fight_is_a_draw():
    pieces = [crown(0, "c2", "a1"), crown(1, "c3", "e5")]
    assert_valid(challenge(pieces=pieces, turns=["c2-c3"], result=wipeout(None)))
    assert_invalid(challenge(pieces=pieces, turns=["c2-c3"], result=wipeout(0)), "R6.2", None)


@rule("R6.2")
def test_wipe_out_on_the_first_move_of_a_double_leaves_no_second():
    pieces = [(0, 3, "c2"), (0, 1, "a1"), (1, 1, "c3")]
    powers = [["double"], []]
    one = t("c2-c3", power="double")
    assert_valid(challenge(pieces=pieces, powers=powers, turns=[one], result=wipeout(0)))
    two = t("c2-c3", "a1-a2", power="double")
    rec = challenge(pieces=pieces, powers=powers, turns=[two], result=wipeout(0))
    assert_invalid(rec, "R6.5", 0)


# --- R6.3 points ----------------------------------------------------------------------------


@rule("R6.3")
def test_points_count_a_crown_as_6_on_5x5():
    # 14 turns each already taken; side 0: crown + 1 = 7, side 1: 5 + 4 = 9
    pieces = [crown(0, "c3", "c1"), (0, 1, "a1"), (1, 5, "e5"), (1, 4, "d5")]
    turns = ["a1-a2", "e5-e4"]
    rec = challenge(pieces=pieces, turns_taken=(14, 14), turns=turns, result=points(7, 9))
    assert_valid(rec)
    # counting the crown as its original rank 3 is wrong
    rec = challenge(pieces=pieces, turns_taken=(14, 14), turns=turns, result=points(4, 9))
    assert_invalid(rec, "R6.3", None)


@rule("R6.3")
def test_points_count_a_crown_as_8_on_7x7():
    # 20 turns each already taken; side 0: crown + 1 = 9, side 1: 7 + 6 = 13
    pieces = [crown(0, "d4", "d1", board=7), (0, 1, "a1"), (1, 7, "g7"), (1, 6, "f7")]
    turns = ["a1-a2", "g7-g6"]
    kw = dict(board=7, pieces=pieces, turns_taken=(20, 20), turns=turns)
    assert_valid(challenge(**kw, result=points(9, 13)))
    assert_invalid(challenge(**kw, result=points(5, 13)), "R6.3", None)


@rule("R6.3")
def test_equal_points_are_a_draw():
    pieces = [(0, 5, "e1"), (0, 1, "a1"), (1, 4, "d5"), (1, 2, "b5")]  # 6 each
    kw = dict(pieces=pieces, turns_taken=(14, 14), turns=["a1-a2", "b5-b4"])
    assert_valid(challenge(**kw, result=points(6, 6)))
    assert_invalid(challenge(**kw, result=points(6, 6, winner=0)), "R6.3", None)


@rule("R2.7")
def test_points_are_counted_after_both_moves_of_a_double():
    # side 0 plays its 15th (last) turn as a double; the second move takes side 1's 2.
    # Side 0: 1 + 3 = 4; side 1: 1.
    pieces = [(0, 3, "c2"), (0, 1, "a1"), (1, 2, "c3"), (1, 1, "e4")]
    rec = challenge(
        pieces=pieces,
        turns_taken=(14, 15),
        powers=[["double"], []],
        turns=[t("a1-a2", "c2-c3", power="double")],
        result=points(4, 1),
    )
    assert_valid(rec)


# --- R6.4 timeout and resign ----------------------------------------------------------------


@rule("R6.4")
@pytest.mark.parametrize("end", [resign, timeout])
def test_side_to_move_loses_on_timeout_or_resign(end):
    # after one turn side 1 is to move, so side 1 loses
    assert_valid(game(turns=["a1-a2"], result=end(0)))
    assert_invalid(game(turns=["a1-a2"], result=end(1)), "R6.4", None)
    assert_invalid(game(turns=["a1-a2"], result=end(None)), "R6.4", None)


@rule("R6.4")
def test_resign_before_the_first_turn():
    assert_valid(game(first=1, turns=[], result=resign(0)))
    assert_invalid(game(first=1, turns=[], result=resign(1)), "R6.4", None)


@rule("R6.4")
def test_timeout_claimed_after_a_natural_end():
    assert_invalid(challenge(pieces=HOME_POSITION, turns=["c2-c1"], result=timeout()), "R6.4", None)
    pieces = [(0, 3, "c2"), (1, 1, "c3")]
    assert_invalid(challenge(pieces=pieces, turns=["c2-c3"], result=resign(0)), "R6.4", None)


# --- R6.5 nothing after the end -------------------------------------------------------------


@rule("R6.5")
def test_turn_after_home_is_after_the_end():
    rec = challenge(pieces=HOME_POSITION, turns=["c2-c1", "a5-a4"], result=home(0))
    assert_invalid(rec, "R6.5", 1)


@rule("R6.5")
def test_turn_after_wipe_out_is_after_the_end():
    pieces = [(0, 3, "c2"), (1, 1, "c3")]
    rec = challenge(pieces=pieces, turns=["c2-c3", PASS], result=wipeout(0))
    assert_invalid(rec, "R6.5", 1)


@rule("R6.5")
def test_second_move_of_a_double_after_home_is_after_the_end():
    pieces = HOME_POSITION + [(0, 1, "a1")]
    powers = [["double"], []]
    good = challenge(
        pieces=pieces, powers=powers, turns=[t("c2-c1", power="double")], result=home(0)
    )
    assert_valid(good)
    bad = challenge(
        pieces=pieces, powers=powers, turns=[t("c2-c1", "a1-a2", power="double")], result=home(0)
    )
    assert_invalid(bad, "R6.5", 0)


# --- R7 hidden variant ----------------------------------------------------------------------


@rule("R7.1")
def test_hidden_game_with_chosen_lineups_plays_by_the_rules():
    rec = game(
        hidden=True,
        lineups=[[4, 1, 2, 3, 5], [5, 1, 4, 3, 2]],
        turns=["c1-d2", "d5-e4", "d1-b3"],
        result=resign(),
    )
    assert_valid(rec)


@rule("R7.1")
def test_hidden_game_fights_as_usual():
    # side 1's 5 takes side 0's 3 on c3 and stands there
    good = game(hidden=True, turns=["c1-c3", "e5-c3", "b1-b2", "c3-c4"], result=resign())
    assert_valid(good)
    bad = game(hidden=True, turns=["c1-c3", "e5-c3", "c3-c4"], result=resign())
    assert_invalid(bad, "R2.2", 2)


@rule("R7.1")
def test_power_in_the_hidden_variant_names_R8_1():
    rec = game(hidden=True, turns=[t("c1-c4", power="dash", target="c1")], result=resign())
    assert_invalid(rec, "R8.1", 0)
