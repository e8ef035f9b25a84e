"""Slow6 R3 (fights between non-crowns) and R4 (crowns: two lives, stun and catch).

Most fights are set up as a challenge position with one piece a side, so the fight decides a
wipe-out (R6.2) and the claimed result shows who won: attacker wins -> its side wins, defender
wins -> the other side, both removed -> draw. The tables below are copied by hand from the
prose of R3 ("1 beats 4 and 5, ..." and "each rank beats the three just below it, counting
round"), not computed from the formula.
"""

import pytest
from slow6_records import (
    PASS,
    assert_invalid,
    assert_valid,
    challenge,
    crown,
    resign,
    wipeout,
)

rule = pytest.mark.rule

BEATS_5 = {1: {4, 5}, 2: {5, 1}, 3: {1, 2}, 4: {2, 3}, 5: {3, 4}}
BEATS_7 = {
    1: {7, 6, 5},
    2: {1, 7, 6},
    3: {2, 1, 7},
    4: {3, 2, 1},
    5: {4, 3, 2},
    6: {5, 4, 3},
    7: {6, 5, 4},
}


def test_hand_tables_are_a_cycle():
    # guards the hand-copied tables: between two different ranks exactly one beats the other
    for beats in (BEATS_5, BEATS_7):
        for a in beats:
            for d in beats:
                if a != d:
                    assert (d in beats[a]) != (a in beats[d]), (a, d)


def winner_of(beats, attacker_side: int, a: int, d: int):
    if a == d:
        return None
    return attacker_side if d in beats[a] else 1 - attacker_side


PAIRS_5 = [(a, d) for a in range(1, 6) for d in range(1, 6)]
PAIRS_7 = [(a, d) for a in range(1, 8) for d in range(1, 8)]


@rule("R3.1")
@pytest.mark.parametrize("a,d", PAIRS_5)
def test_fight_table_5x5_every_pair(a, d):
    # side 0's a on c2 attacks side 1's d on c3
    pieces = [(0, a, "c2"), (1, d, "c3")]
    expected = winner_of(BEATS_5, 0, a, d)
    assert_valid(challenge(pieces=pieces, turns=["c2-c3"], result=wipeout(expected)))


@rule("R3.2")
@pytest.mark.parametrize("a,d", PAIRS_5)
def test_fight_table_5x5_every_pair_side_1_attacking(a, d):
    pieces = [(1, a, "c4"), (0, d, "c3")]
    expected = winner_of(BEATS_5, 1, a, d)
    rec = challenge(pieces=pieces, to_move=1, turns=["c4-c3"], result=wipeout(expected))
    assert_valid(rec)


@rule("R3.3")
@pytest.mark.parametrize("a,d", PAIRS_5)
def test_fight_claimed_with_the_wrong_outcome_names_R6_2(a, d):
    pieces = [(0, a, "c2"), (1, d, "c3")]
    expected = winner_of(BEATS_5, 0, a, d)
    for wrong in {0, 1, None} - {expected}:
        rec = challenge(pieces=pieces, turns=["c2-c3"], result=wipeout(wrong))
        assert_invalid(rec, "R6.2", None)


@rule("R3.2")
@pytest.mark.parametrize("a,d", PAIRS_7)
def test_fight_table_7x7_every_pair(a, d):
    pieces = [(0, a, "d3"), (1, d, "d4")]
    expected = winner_of(BEATS_7, 0, a, d)
    rec = challenge(board=7, pieces=pieces, turns=["d3-d4"], result=wipeout(expected))
    assert_valid(rec)


@rule("R3.2")
def test_winning_attacker_stands_on_the_defenders_square():
    pieces = [(0, 3, "c2"), (0, 5, "e1"), (1, 1, "c3"), (1, 5, "e5")]  # 3 beats 1
    assert_valid(challenge(pieces=pieces, turns=["c2-c3", "e5-e4", "c3-c4"], result=resign()))
    bad = challenge(pieces=pieces, turns=["c2-c3", "e5-e4", "c2-c1"], result=resign())
    assert_invalid(bad, "R2.2", 2)  # c2 is empty after the attack


@rule("R3.3")
def test_losing_attacker_is_removed_and_defender_stays():
    pieces = [(0, 1, "c2"), (0, 5, "e1"), (1, 2, "c3"), (1, 5, "e5")]  # 2 beats 1
    assert_valid(challenge(pieces=pieces, turns=["c2-c3", "c3-c4"], result=resign()))
    bad = challenge(pieces=pieces, turns=["c2-c3", "e5-e4", "c3-c4"], result=resign())
    assert_invalid(bad, "R2.2", 2)  # c3 holds side 1's 2, not side 0's 1


@rule("R3.1")
def test_equal_trade_of_the_last_pieces_is_a_draw():
    pieces = [(0, 4, "c2"), (1, 4, "c3")]
    assert_valid(challenge(pieces=pieces, turns=["c2-c3"], result=wipeout(None)))


# --- R4 crowns ------------------------------------------------------------------------------


@rule("R4.1")
@pytest.mark.parametrize("wounded", [False, True], ids=["fresh", "wounded"])
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_crown_attacking_non_crown_always_wins(d, wounded):
    pieces = [crown(0, "c2", "a1", wounded=wounded), (1, d, "c3")]
    assert_valid(challenge(pieces=pieces, turns=["c2-c3"], result=wipeout(0)))


@rule("R4.1")
@pytest.mark.parametrize("d", [1, 4, 7])
def test_crown_attacking_non_crown_always_wins_7x7(d):
    pieces = [crown(0, "d3", "a1", board=7), (1, d, "d4")]
    assert_valid(challenge(board=7, pieces=pieces, turns=["d3-d4"], result=wipeout(0)))


@rule("R4.2")
@pytest.mark.parametrize("wounded", [False, True], ids=["fresh", "wounded"])
@pytest.mark.parametrize("a", [1, 2, 3, 4, 5])
def test_non_crown_attacking_a_crown_is_removed(a, wounded):
    # a wounded (not stunned) crown is stunned again, not removed
    pieces = [(0, a, "c2"), crown(1, "c3", "e5", wounded=wounded)]
    assert_valid(challenge(pieces=pieces, turns=["c2-c3"], result=wipeout(1)))


@rule("R4.2")
def test_crown_hit_by_a_non_crown_becomes_wounded():
    # side 0: 2 on c2, fresh crown on a2; side 1: fresh crown X on c3 only.
    # 0: the 2 hits X (removed; X stunned + wounded). 1: side 1 cannot move: pass.
    # 2: side 0's crown steps to b2 without catching. 3: X, wounded, attacks the fresh crown:
    # the fresh one wins (R4.4), side 1 is wiped out. Were X still fresh, both would go: draw.
    pieces = [(0, 2, "c2"), crown(0, "a2", "a1"), crown(1, "c3", "c5")]
    turns = ["c2-c3", PASS, "a2-b2", "c3-b2"]
    assert_valid(challenge(pieces=pieces, turns=turns, result=wipeout(0)))
    assert_invalid(challenge(pieces=pieces, turns=turns, result=wipeout(None)), "R6.2", None)


# side 0: 2 on c2 (the stunner), 1 on a3; side 1: a fresh crown on c3 and nothing else
CATCH = [(0, 2, "c2"), (0, 1, "a3"), crown(1, "c3", "c5")]


@rule("R4.2")
def test_stunned_crown_is_catchable_on_the_attackers_next_turn():
    rec = challenge(pieces=CATCH, turns=["c2-c3", PASS, "a3-c3"], result=wipeout(0))
    assert_valid(rec)


@rule("R4.2")
def test_stun_ends_after_the_attackers_next_turn():
    # side 0 lets turn 2 go by; X moves on turn 3 and the 1 that hits it on turn 4 loses
    turns = ["c2-c3", PASS, "a3-a4", "c3-c4", "a4-c4"]
    assert_valid(challenge(pieces=CATCH, turns=turns, result=wipeout(1)))
    assert_invalid(challenge(pieces=CATCH, turns=turns, result=wipeout(0)), "R6.2", None)


@rule("R4.2")
def test_side_1_stunning_and_catching_side_0s_crown():
    pieces = [(1, 2, "c4"), (1, 1, "a3"), crown(0, "c3", "c1")]
    rec = challenge(pieces=pieces, to_move=1, turns=["c4-c3", PASS, "a3-c3"], result=wipeout(1))
    assert_valid(rec)


@rule("R4.3")
@pytest.mark.parametrize("catcher", [1, 2, 3, 4, 5])
def test_stunned_crown_is_caught_by_any_rank(catcher):
    stunner = 1 if catcher != 1 else 2
    pieces = [(0, stunner, "c2"), (0, catcher, "a3"), crown(1, "c3", "c5")]
    rec = challenge(pieces=pieces, turns=["c2-c3", PASS, "a3-c3"], result=wipeout(0))
    assert_valid(rec)


@rule("R4.3")
@pytest.mark.parametrize("wounded", [False, True], ids=["fresh", "wounded"])
def test_stunned_crown_is_caught_by_a_crown(wounded):
    # a wounded crown catching the stunned (wounded) crown wins by R4.3; R4.4 between two
    # wounded crowns would remove both and make it a draw
    pieces = [(0, 2, "c2"), crown(0, "b4", "a1", wounded=wounded), crown(1, "c3", "c5")]
    rec = challenge(pieces=pieces, turns=["c2-c3", PASS, "b4-c3"], result=wipeout(0))
    assert_valid(rec)


@rule("R4.2")
def test_wounded_crown_hit_again_is_stunned_again_and_catchable():
    pieces = [(0, 2, "c2"), (0, 1, "a3"), crown(1, "c3", "c5", wounded=True)]
    rec = challenge(pieces=pieces, turns=["c2-c3", PASS, "a3-c3"], result=wipeout(0))
    assert_valid(rec)


@rule("R4.4")
@pytest.mark.parametrize(
    "attacker_wounded,defender_wounded,winner",
    [(False, False, None), (True, True, None), (False, True, 0), (True, False, 1)],
    ids=["fresh-fresh", "wounded-wounded", "fresh-beats-wounded", "wounded-loses-to-fresh"],
)
def test_crown_attacks_crown(attacker_wounded, defender_wounded, winner):
    pieces = [crown(0, "c2", "a1", attacker_wounded), crown(1, "c3", "e5", defender_wounded)]
    assert_valid(challenge(pieces=pieces, turns=["c2-c3"], result=wipeout(winner)))


@rule("R4.4")
def test_stunned_crown_cannot_attack():
    pieces = [crown(1, "c3", "c5", wounded=True, stunned=True), (1, 5, "e5"), (0, 1, "c2")]
    rec = challenge(pieces=pieces, to_move=1, turns=["c3-c2"], result=resign())
    assert_invalid(rec, "R2.3", 0)
