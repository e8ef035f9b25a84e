"""Slow6 R8.7 with R8.13 and R2.3: what a piece carries into its removal, and what Recall
brings back.

R8.7 says a recalled piece returns "with its original rank (not a crown, fresh, no power
effects)" and "cannot move this turn": nothing that was on it before its removal survives,
immobility included. Each test gives the piece one state, has it removed, recalls it, and then
checks through a later move or fight that the state is gone (and, as a control, that the same
move without the removal breaks the rule the state imposes).

5x5, identity lineups (rank r starts on file r), fights R3: 3 beats 2 and 1, 4 beats 3 and 2,
5 beats 4 and 3, 1 beats 5 and 4, 2 beats 1 and 5.
"""

import pytest
from slow6_records import assert_invalid, assert_valid, challenge, crown, resign, t

rule = pytest.mark.rule


# --- frozen (R8.5) ----------------------------------------------------------------------------

# Side 1 freezes side 0's 3 on c3 (immobile during side 0's turns 1 and 3), then its 5 takes it.
FROZEN_THEN_TAKEN = dict(
    pieces=[(0, 3, "c3"), (0, 1, "a1"), (1, 5, "c4"), (1, 1, "a5")],
    to_move=1,
    powers=[["recall"], ["freeze"]],
)


@rule("R8.7")
@rule("R2.3")
def test_a_frozen_piece_comes_back_from_recall_free():
    turns = [
        t("c4-c3", power="freeze", target="c3"),
        t("a1-a2", power="recall", target="c1"),
        "a5-a4",
        "c1-c2",  # the freeze named this turn of side 0, but the piece was removed since
    ]
    assert_valid(challenge(**FROZEN_THEN_TAKEN, turns=turns, result=resign()))


@rule("R8.7")
def test_a_recalled_piece_cannot_move_in_the_turn_of_its_recall():
    turns = [t("c4-c3", power="freeze", target="c3"), t("c1-c2", power="recall", target="c1")]
    rec = challenge(**FROZEN_THEN_TAKEN, turns=turns, result=resign())
    assert_invalid(rec, "R2.3", 1)


@rule("R2.3")
def test_control_a_frozen_piece_left_on_the_board_stays_frozen():
    pieces = [(0, 3, "c3"), (0, 1, "a1"), (1, 5, "e4"), (1, 1, "a5")]
    turns = [t("e4-e3", power="freeze", target="c3"), "a1-a2", "a5-a4", "c3-c2"]
    rec = challenge(pieces=pieces, to_move=1, powers=[[], ["freeze"]], turns=turns, result=resign())
    assert_invalid(rec, "R2.3", 3)


# --- trapped (R8.8) ---------------------------------------------------------------------------

# Side 1 traps b3; side 0's 3 steps on it in turn 1 (immobile in its turns 3 and 5), side 1's 5
# takes it in turn 2, side 0 recalls it in turn 3 and moves it in turn 5.
TRAPPED = dict(
    pieces=[(0, 3, "c2"), (0, 1, "a1"), (1, 5, "b4"), (1, 1, "a5")],
    to_move=1,
    powers=[["recall"], ["trap"]],
)
TRAPPED_OPENING = [t("a5-a4", power="trap", target="b3"), "c2-b3"]


@rule("R8.7")
@rule("R2.3")
def test_a_trapped_piece_comes_back_from_recall_free():
    turns = TRAPPED_OPENING + ["b4-b3", t("a1-a2", power="recall", target="c1"), "a4-a3", "c1-c2"]
    assert_valid(challenge(**TRAPPED, turns=turns, result=resign()))


@rule("R2.3")
def test_control_a_trapped_piece_left_on_the_board_stays_trapped():
    turns = TRAPPED_OPENING + ["b4-c4", "a1-a2", "a4-a3", "b3-b2"]
    assert_invalid(challenge(**TRAPPED, turns=turns, result=resign()), "R2.3", 5)


# --- resting after a surge (R8.10) ------------------------------------------------------------


@rule("R8.7")
@rule("R8.10")
def test_a_resting_piece_comes_back_from_recall_free():
    # turn 0: side 0's surged 3 beats the 5 only by the surge and rests in turn 2; side 1's 4
    # takes it in turn 1; recalled in turn 2 (its rest), it moves in turn 4
    pieces = [(0, 3, "c2"), (0, 1, "a1"), (1, 5, "c3"), (1, 4, "d4"), (1, 1, "a5")]
    turns = [
        t("c2-c3", power="surge", target="c2"),
        "d4-c3",
        t("a1-a2", power="recall", target="c1"),
        "a5-a4",
        "c1-c2",
    ]
    rec = challenge(
        pieces=pieces, to_move=0, powers=[["surge", "recall"], []], turns=turns, result=resign()
    )
    assert_valid(rec)


# --- stunned and wounded crowns (R4.2, R4.3, R4.4) --------------------------------------------


@rule("R8.7")
@rule("R4.2")
def test_a_caught_stunned_crown_comes_back_as_its_rank():
    # turn 0: side 1's 2 hits side 0's crown (start c1: a 3), which is stunned; turn 2: side
    # 1's 4 catches it (R4.3); turn 3: recalled as a fresh 3; turn 5: it moves two squares,
    # which no crown may (R2.2), and attacks the 4 on c3 (and loses, R3.3)
    pieces = [crown(0, "c3", "c1"), (0, 1, "a1"), (1, 2, "c4"), (1, 4, "d4"), (1, 1, "a5")]
    turns = [
        "c4-c3",
        "a1-a2",
        "d4-c3",
        t("a2-a3", power="recall", target="c1"),
        "a5-a4",
        "c1-c3",
    ]
    rec = challenge(pieces=pieces, to_move=1, powers=[["recall"], []], turns=turns, result=resign())
    assert_valid(rec)


@rule("R8.7")
@rule("R4.4")
def test_a_removed_wounded_crown_comes_back_a_rank_not_a_crown():
    # side 1's fresh crown takes side 0's wounded crown (R4.4); side 0 recalls it, a 3 on c1.
    # Side 1's 2 attacks it and loses (R3.3), so the 3 moves on in turn 3; a crown hit by the
    # 2 would have been stunned (R4.2) and could not.
    pieces = [
        crown(0, "c3", "c1", wounded=True),
        (0, 1, "a1"),
        crown(1, "c4", "c5"),
        (1, 2, "b2"),
    ]
    turns = ["c4-c3", t("a1-a2", power="recall", target="c1"), "b2-c1", "c1-d2"]
    rec = challenge(pieces=pieces, to_move=1, powers=[["recall"], []], turns=turns, result=resign())
    assert_valid(rec)


# --- pending dash, leap, surge (R8.13) --------------------------------------------------------

# Turn 0: side 0 gives its 3 on c2 a power; turn 1: side 1's 5 takes it before it moves;
# turn 2: side 0 recalls it to c1; turn 3: side 1's 5 moves; turn 4: the recalled 3 moves.
PENDING_PIECES = [(0, 3, "c2"), (0, 1, "a1"), (1, 5, "e4"), (1, 1, "a5")]


def _pending(power: str, later: list) -> dict:
    turns = [
        t("a1-a2", power=power, target="c2"),
        "e4-c2",
        t("a2-a3", power="recall", target="c1"),
        *later,
    ]
    return challenge(
        pieces=PENDING_PIECES,
        to_move=0,
        powers=[[power, "recall"], []],
        turns=turns,
        result=resign(),
    )


@rule("R8.13")
@rule("R8.11")
def test_a_pending_leap_is_lost_with_the_piece():
    assert_invalid(_pending("leap", ["c2-e4", "c1-d3"]), "R2.2", 4)  # knight-like: a leap
    assert_valid(_pending("leap", ["c2-e4", "c1-c2"]))


@rule("R8.13")
@rule("R8.4")
def test_a_pending_dash_is_lost_with_the_piece():
    assert_invalid(_pending("dash", ["c2-e4", "c1-c4"]), "R2.2", 4)  # three squares: a dash
    assert_valid(_pending("dash", ["c2-e4", "c1-c3"]))


@rule("R8.13")
@rule("R8.10")
def test_a_pending_surge_is_lost_with_the_piece():
    # the 5 steps to c3 and the recalled 3 attacks it: without the surge the 5 wins (R3.3),
    # so in turn 5 the 5 moves on from c3 (with the surge the 3 would stand there)
    assert_valid(_pending("surge", ["c2-c3", "c1-c3", "c3-c4"]))


# --- recall onto and next to a trap (R8.8) -------------------------------------------------------


@rule("R8.7")
@rule("R8.8")
def test_a_piece_recalled_onto_a_trap_is_not_trapped_and_the_trap_stays():
    # side 1 traps c1, side 0's 3's start square; its 5 takes the 3 on c3; side 0 recalls the 3
    # onto c1 (not trapped: it moves at once in its next turn); the trap stays, so side 0's 2,
    # which steps onto c1 later, is trapped there
    pieces = [(0, 3, "c3"), (0, 2, "b1"), (0, 1, "a1"), (1, 5, "c4"), (1, 1, "a5")]
    opening = [
        "a1-a2",
        t("c4-c3", power="trap", target="c1"),
        t("a2-a3", power="recall", target="c1"),
        "a5-a4",
        "c1-d2",  # the recalled 3 is free
        "c3-c4",
        "b1-c1",  # side 0's 2 steps onto the trap: immobile in side 0's turns 8 and 10
        "a4-b4",
    ]
    rec = challenge(
        pieces=pieces,
        to_move=0,
        powers=[["recall"], ["trap"]],
        turns=opening + ["c1-c2"],
        result=resign(),
    )
    assert_invalid(rec, "R2.3", 8)
    rec = challenge(
        pieces=pieces,
        to_move=0,
        powers=[["recall"], ["trap"]],
        turns=opening + ["d2-d3"],
        result=resign(),
    )
    assert_valid(rec)


@rule("R8.7")
@rule("R8.8")
def test_a_recalled_piece_that_moves_over_a_trap_is_stopped_and_trapped():
    # as above but the trap is on c2, next to the start square: the recalled 3's c1-c3 stops on
    # c2 (R8.8) and the 3 cannot move in side 0's next two turns
    pieces = [(0, 3, "c3"), (0, 1, "a1"), (1, 5, "c4"), (1, 1, "a5")]
    opening = [
        "a1-a2",
        t("c4-c3", power="trap", target="c2"),
        t("a2-a3", power="recall", target="c1"),
        "a5-a4",
        "c1-c3",  # stopped on c2
        "c3-d4",
    ]
    powers = [["recall"], ["trap"]]
    rec = challenge(
        pieces=pieces, to_move=0, powers=powers, turns=opening + ["c2-b3"], result=resign()
    )
    assert_invalid(rec, "R2.3", 6)
    rec = challenge(
        pieces=pieces, to_move=0, powers=powers, turns=opening + ["a3-b3"], result=resign()
    )
    assert_valid(rec)
