"""The independent Slow6 referee (tests/referee/slow6.py) against the spec's example records,
plus small hand-built records for the trickier rules (each test names the rule it checks).

The hand-built records use identity lineups ([1..N] for both sides) unless stated, so side s's
rank r promotes in file r (a=1) on its far row (row N for side 0, row 1 for side 1).
"""

from __future__ import annotations

import copy
import json
import random

import pytest
from referee.slow6 import judge
from support import examples_dir

EXAMPLES = examples_dir()


def _ndjson(name: str) -> list[dict]:
    with open(EXAMPLES / name, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _slow6(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("game") == "slow6"]


VALID = _slow6(_ndjson("slow6-valid.ndjson"))
INVALID = _slow6(_ndjson("slow6-invalid.ndjson"))
EXPECTED = {e["game_id"]: e for e in _ndjson("slow6-invalid.expected.ndjson")}


# The spec text and these example records disagree on one point, and the referee follows the
# spec text. R8.12 says a shielded piece that "would be removed in a fight (a loss, an equal-rank
# trade, ...)" is "not removed: it stays on the square where it stood before the fight", and
# R8.15 speaks of "an attacker that a shield sends back (its own or the defender's)". In each of
# these records a shielded attacker trades with an equal rank and the later moves assume it now
# stands on the defender's square, so the referee finds an R2.2 error at a later move.
def _cases(records: list[dict]) -> list:
    cases = []
    for r in records:
        cases.append(pytest.param(r, id=r["game_id"]))
    return cases


def test_examples_are_loaded():
    assert len(VALID) >= 10 and len(INVALID) >= 10
    assert {r["game_id"] for r in INVALID} == set(EXPECTED)


@pytest.mark.parametrize("record", _cases(VALID))
def test_valid_example(record):
    assert judge(record) == ("valid", None, None)


@pytest.mark.parametrize("record", _cases(INVALID))
def test_invalid_example(record):
    expected = EXPECTED[record["game_id"]]
    verdict, rule, turn = judge(record)
    acceptable = [expected["rule"], *expected.get("also_acceptable", [])]
    assert (verdict, turn) == ("invalid", expected["turn"]), expected["note"]
    assert rule in acceptable, expected["note"]


# ---------------------------------------------------------------------------------------------
# Hand-built records
# ---------------------------------------------------------------------------------------------

PICKS = [["shield", "double", "trap"], ["shield", "double", "trap"]]


def record(turns, result, *, board=5, powers=None, lineups=None, first=0, challenge=None):
    """A well-formed Slow6 record (5x5 by default; identity lineups)."""
    n = board
    return {
        "schema": 1,
        "game_id": "00000000-0000-4000-8000-000000000001",
        "game": "slow6",
        "client": {"platform": "web", "version": "1.0.0"},
        "mode": "challenge" if challenge else "friend",
        "ended_at": "2026-01-01T00:00:00Z",
        "rules": {"board": n, "powers": powers is not None, "hidden": False},
        "ai": None,
        "challenge": challenge,
        "first": challenge["position"]["to_move"] if challenge else first,
        "lineups": lineups or [list(range(1, n + 1)), list(range(1, n + 1))],
        "powers": powers,
        "turns": turns,
        "result": result,
    }


def pc(side, rank, square, start, wounded=False, stunned=False):
    return {
        "side": side,
        "rank": rank,
        "square": square,
        "start": start,
        "wounded": wounded,
        "stunned": stunned,
    }


def position(pieces, to_move=0, turns_taken=(0, 0)):
    return {
        "id": "test",
        "position": {"to_move": to_move, "turns_taken": list(turns_taken), "pieces": pieces},
    }


def mv(*moves, power=None, target=None):
    turn = {"moves": list(moves)}
    if power is not None:
        turn["power"] = power
    if target is not None:
        turn["target"] = target
    return turn


def res(winner, reason, points=None):
    return {"winner": winner, "reason": reason, "points": points}


VALID_VERDICT = ("valid", None, None)


# R8.12 / R8.15 shields ---------------------------------------------------------------------


def _shield_loss(turn2_move, with_shield=True):
    pieces = [
        pc(0, 1, "c2", "a1"),
        pc(0, 5, "e1", "e1"),
        pc(1, 2, "c3", "b5"),
        pc(1, 5, "e5", "e5"),
    ]
    first = mv("c2-c3", power="shield", target="c2") if with_shield else mv("c2-c3")
    turns = [first, mv("e5-e4"), mv(turn2_move)]
    points = [6, 7] if with_shield else [5, 7]
    return record(turns, res(0, "resign", points), powers=PICKS, challenge=position(pieces))


def test_r8_12_shielded_attacker_that_loses_stays_on_its_own_square():
    """R8.12/R8.15: 1 attacks 2 and loses (R3.3); its shield keeps it on c2."""
    assert judge(_shield_loss("c2-b2")) == VALID_VERDICT


def test_r3_3_unshielded_attacker_that_loses_is_removed():
    """R3.3: without the shield the 1 is removed, so a later move from c2 breaks R2.2."""
    assert judge(_shield_loss("c2-b2", with_shield=False)) == ("invalid", "R2.2", 2)


def _shield_trade(turn2_move):
    pieces = [
        pc(0, 2, "c2", "b1"),
        pc(0, 5, "e1", "e1"),
        pc(1, 2, "c3", "b5"),
        pc(1, 5, "e5", "e5"),
    ]
    turns = [mv("c2-c3", power="shield", target="c2"), mv("e5-e4"), mv(turn2_move)]
    return record(turns, res(0, "resign", [7, 5]), powers=PICKS, challenge=position(pieces))


def test_r8_12_shielded_attacker_in_a_trade_takes_the_defenders_square():
    """R8.12 in an equal-rank trade: the defender is removed and the shielded attacker stands on
    c3, as the six slow6-valid.ndjson games with such a trade require (the rule's text says "the
    square where it stood before the fight"; the module docstring gives the conflict)."""
    assert judge(_shield_trade("c3-b3")) == VALID_VERDICT
    assert judge(_shield_trade("c2-b2")) == ("invalid", "R2.2", 2)


# R4 crowns -----------------------------------------------------------------------------------


def _stunned_crown(turns, result):
    pieces = [
        pc(0, 6, "c3", "c1"),
        pc(0, 5, "e1", "e1"),
        pc(1, 1, "c4", "a5"),
        pc(1, 2, "b4", "b5"),
        pc(1, 5, "e5", "e5"),
    ]
    return record(turns, result, challenge=position(pieces, to_move=1))


def test_r4_2_stunned_crown_cannot_move_on_its_owners_next_turn():
    """R4.2/R2.3: the 1 that attacks the crown is removed and the crown is stunned: it cannot
    move during its owner's next turn (an R2.3 fault)."""
    rec = _stunned_crown([mv("c4-c3"), mv("c3-c2")], res(0, "resign"))
    assert judge(rec) == ("invalid", "R2.3", 1)


def test_r4_3_stunned_crown_is_caught_by_any_piece():
    """R4.3: on the attacking side's next turn even a 2 takes the stunned crown."""
    turns = [mv("c4-c3"), mv("e1-e2"), mv("b4-c3")]
    assert judge(_stunned_crown(turns, res(1, "resign", [5, 7]))) == VALID_VERDICT
    assert judge(_stunned_crown(turns, res(1, "resign", [11, 7]))) == ("invalid", "R6.3", None)


def test_r4_2_stun_ends_and_a_wounded_crown_is_stunned_again():
    """R4.2: after the attacking side's next turn the stun ends; a non-crown that attacks the
    (wounded) crown later loses again and stuns it again."""
    turns = [mv("c4-c3"), mv("e1-e2"), mv("e5-e4"), mv("e2-d2"), mv("b4-c3")]
    assert judge(_stunned_crown(turns, res(1, "resign", [11, 5]))) == VALID_VERDICT
    # ... and being stunned again, it cannot move on its owner's next turn
    rec = _stunned_crown([*turns, mv("c3-c2")], res(0, "resign"))
    assert judge(rec) == ("invalid", "R2.3", 5)


@pytest.mark.parametrize(
    "att_wounded, def_wounded, points",
    [(False, False, [5, 5]), (False, True, [11, 5]), (True, False, [5, 11]), (True, True, [5, 5])],
)
def test_r4_4_crown_attacks_crown(att_wounded, def_wounded, points):
    """R4.4: if exactly one of them is wounded the fresh one wins; otherwise both are removed."""
    pieces = [
        pc(0, 6, "c3", "c1", wounded=att_wounded),
        pc(0, 5, "e1", "e1"),
        pc(1, 6, "c4", "c5", wounded=def_wounded),
        pc(1, 5, "e5", "e5"),
    ]
    rec = record([mv("c3-c4")], res(0, "resign", points), challenge=position(pieces))
    assert judge(rec) == VALID_VERDICT


# R5 promotion, R6 end of the game ------------------------------------------------------------


def _promotion(turns, result):
    # side 1's lineup puts its rank 3 on file a: side 0's 3 promotes on a5, not on c5.
    pieces = [
        pc(0, 3, "a4", "c1"),
        pc(0, 4, "c4", "d1"),
        pc(0, 5, "e1", "e1"),
        pc(1, 5, "e5", "e5"),
    ]
    lineups = [[1, 2, 3, 4, 5], [3, 1, 2, 4, 5]]
    return record(turns, result, lineups=lineups, challenge=position(pieces))


def test_r5_1_promotion_in_the_lane_makes_a_crown():
    """R5.1: the 3 ending a move on a5 (its lane's far-row square) becomes a crown (N+1 = 6
    points, R6.3) and then moves exactly 1 square (R2.2)."""
    assert judge(_promotion([mv("a4-a5")], res(0, "resign", [15, 5]))) == VALID_VERDICT
    turns = [mv("a4-a5"), mv("e5-e4"), mv("a5-a3")]
    assert judge(_promotion(turns, res(0, "resign"))) == ("invalid", "R2.2", 2)


def test_r5_1_far_row_outside_the_lane_does_not_promote():
    """R5.1: the 4 on c5 is outside its lane (d): it stays a 4 and may still move 2 squares."""
    turns = [mv("c4-c5"), mv("e5-e4"), mv("c5-c3")]
    assert judge(_promotion(turns, res(0, "resign", [12, 5]))) == VALID_VERDICT


def _home(turns, result):
    pieces = [pc(0, 6, "c2", "c1"), pc(0, 2, "a2", "b1"), pc(1, 5, "e5", "e5")]
    return record(turns, result, challenge=position(pieces))


def test_r6_1_crown_home_wins_at_once():
    """R6.1: a crown that ends a move on its own start square wins at once."""
    assert judge(_home([mv("c2-c1")], res(0, "home"))) == VALID_VERDICT


def test_r6_1_home_claims_that_did_not_happen():
    """R10: a claimed reason that did not happen names that reason's rule (no turn); a wrong
    winner names the rule of the real reason; timeout/resign after a natural end is R6.4."""
    assert judge(_home([mv("c2-d1")], res(0, "home"))) == ("invalid", "R6.1", None)
    assert judge(_home([mv("c2-c1")], res(1, "home"))) == ("invalid", "R6.1", None)
    assert judge(_home([mv("c2-c1")], res(0, "wipeout"))) == ("invalid", "R6.2", None)
    assert judge(_home([mv("c2-c1")], res(1, "resign"))) == ("invalid", "R6.4", None)


def test_r6_5_nothing_after_home():
    """R6.5: nothing may be logged after the game has ended."""
    rec = _home([mv("c2-c1"), mv("e5-e4")], res(0, "home"))
    assert judge(rec) == ("invalid", "R6.5", 1)


def test_r8_6_swap_never_wins_home():
    """R8.6/R6.1: a crown swapped onto its start square does not win."""
    powers = [["swap", "dash", "shield"], ["swap", "dash", "shield"]]
    pieces = [pc(0, 6, "c2", "c1"), pc(0, 2, "c1", "b1"), pc(1, 5, "e5", "e5")]
    turns = [mv("c2-d2", power="swap", target=["c2", "c1"])]
    rec = record(turns, res(0, "resign", [8, 5]), powers=powers, challenge=position(pieces))
    assert judge(rec) == VALID_VERDICT
    rec["result"] = res(0, "home")
    assert judge(rec) == ("invalid", "R6.1", None)


def _points_end(turns, result):
    pieces = [pc(0, 5, "e1", "e1"), pc(0, 1, "a1", "a1"), pc(1, 4, "d5", "d5")]
    return record(turns, result, challenge=position(pieces, turns_taken=(14, 14)))


def test_r6_3_points_after_t_turns_each():
    """R6.3/R2.5: on 5x5 the game ends when both sides have taken 15 turns; the higher total of
    ranks left wins."""
    turns = [mv("e1-e2"), mv("d5-d4")]
    assert judge(_points_end(turns, res(0, "points", [6, 4]))) == VALID_VERDICT
    assert judge(_points_end(turns, res(0, "points", [6, 5]))) == ("invalid", "R6.3", None)
    assert judge(_points_end(turns, res(None, "points", [6, 4]))) == ("invalid", "R6.3", None)
    assert judge(_points_end(turns, res(1, "timeout"))) == ("invalid", "R6.4", None)
    extra = [*turns, mv("e2-e3")]
    assert judge(_points_end(extra, res(0, "points", [6, 4]))) == ("invalid", "R6.5", 2)


def test_r6_3_log_cut_short_with_a_natural_reason():
    """R10: a log that stops before the game ended, with a natural reason claimed, names the
    claimed reason's rule, no turn."""
    rec = _points_end([mv("e1-e2")], res(0, "points", [6, 4]))
    assert judge(rec) == ("invalid", "R6.3", None)


def test_r6_4_timeout_loser_is_the_side_to_move():
    """R6.4: the game ends with the side whose turn it is losing; given points must still be the
    true totals (upload format, R6.3)."""
    turns = [mv("c1-c3")]
    assert judge(record(turns, res(0, "timeout"))) == VALID_VERDICT
    assert judge(record(turns, res(0, "timeout", [15, 15]))) == VALID_VERDICT
    assert judge(record(turns, res(1, "timeout"))) == ("invalid", "R6.4", None)
    assert judge(record(turns, res(None, "resign"))) == ("invalid", "R6.4", None)
    assert judge(record(turns, res(0, "timeout", [15, 14]))) == ("invalid", "R6.3", None)


def test_r6_2_both_last_pieces_in_one_fight_is_a_draw():
    """R6.2/R3.1: equal ranks remove each other; both sides' last pieces gone is a draw."""
    pieces = [pc(0, 2, "c3", "b1"), pc(1, 2, "c4", "b5")]
    rec = record([mv("c3-c4")], res(None, "wipeout"), challenge=position(pieces))
    assert judge(rec) == VALID_VERDICT
    rec["result"] = res(0, "wipeout")
    assert judge(rec) == ("invalid", "R6.2", None)


# R8 powers -----------------------------------------------------------------------------------


def _double(moves, result=None):
    pieces = [
        pc(0, 6, "c3", "d1"),
        pc(0, 3, "a4", "c1"),
        pc(0, 5, "e1", "e1"),
        pc(1, 5, "e5", "e5"),
    ]
    lineups = [[1, 2, 3, 4, 5], [3, 1, 2, 4, 5]]
    turn = {"power": "double", "moves": list(moves)}
    return record(
        [turn],
        result or res(0, "resign"),
        lineups=lineups,
        powers=PICKS,
        challenge=position(pieces),
    )


def test_r8_3_double_moves():
    """R8.3: two moves by the same non-crown are fine; a crown makes at most one of the two; a
    piece that promoted with the first move is a crown for the second; one move when a second
    was possible is an R8.3 fault."""
    assert judge(_double(["e1-e2", "e2-e3"])) == VALID_VERDICT
    assert judge(_double(["c3-c4", "e1-e2"])) == VALID_VERDICT
    assert judge(_double(["c3-c4", "c4-b4"])) == ("invalid", "R8.3", 0)
    assert judge(_double(["a4-a5", "a5-b5"])) == ("invalid", "R8.3", 0)
    assert judge(_double(["e1-e2"])) == ("invalid", "R8.3", 0)


def test_r2_1_two_moves_without_double():
    """R2.1: two moves without double."""
    turns = [mv("c1-c2", "d1-d2")]
    assert judge(record(turns, res(0, "resign"))) == ("invalid", "R2.1", 0)


def _trap(turns, result):
    powers = [["trap", "dash", "shield"], ["dash", "shield", "double"]]
    pieces = [
        pc(0, 5, "e1", "e1"),
        pc(0, 2, "b1", "b1"),
        pc(1, 3, "c5", "c5"),
        pc(1, 4, "d5", "d5"),
    ]
    return record(turns, result, powers=powers, challenge=position(pieces))


def test_r8_8_trap_stops_a_move_and_holds_the_piece_two_turns():
    """R8.8: an enemy move through the trap stops on it (the log may write the intended
    destination or the stop square); that piece cannot move during its owner's next two turns."""
    for written in ("c5-c3", "c5-c4"):
        turns = [
            mv("b1-b2", power="trap", target="c4"),
            mv(written),
            mv("b2-a2"),
            mv("d5-d4"),
            mv("a2-a3"),
            mv("d4-d3"),
            mv("e1-e2"),
            mv("c4-c3"),
        ]
        assert judge(_trap(turns, res(1, "resign", [7, 7]))) == VALID_VERDICT
        held = [*turns[:3], mv("c4-c3")]
        assert judge(_trap(held, res(0, "resign"))) == ("invalid", "R2.3", 3)
        held = [*turns[:5], mv("c4-c3")]
        assert judge(_trap(held, res(0, "resign"))) == ("invalid", "R2.3", 5)


def test_r8_8_trap_on_an_occupied_square():
    """R8.8: the trap's target is one empty square."""
    rec = _trap([mv("b1-b2", power="trap", target="c5")], res(0, "resign"))
    assert judge(rec) == ("invalid", "R8.8", 0)


def _recall(turns, result):
    powers = [["recall", "shield", "dash"], ["dash", "shield", "trap"]]
    pieces = [
        pc(0, 1, "c3", "a1"),
        pc(0, 5, "e1", "e1"),
        pc(1, 3, "c4", "c5"),
        pc(1, 5, "e5", "e5"),
    ]
    return record(turns, result, powers=powers, challenge=position(pieces, to_move=1))


def test_r8_7_recall_a_piece_just_lost():
    """R8.7: the piece lost on the other side's turn returns to its start square with its
    original rank (lineups), and cannot move this turn (R2.3)."""
    turns = [mv("c4-c3"), mv("e1-e2", power="recall", target="a1")]
    assert judge(_recall(turns, res(0, "resign", [6, 8]))) == VALID_VERDICT
    turns = [mv("c4-c3"), mv("a1-a2", power="recall", target="a1")]
    assert judge(_recall(turns, res(0, "resign"))) == ("invalid", "R2.3", 1)


def test_r8_7_recall_too_late():
    """R8.7: only pieces removed during the side's own previous turn or the other side's turn
    since can be recalled."""
    turns = [
        mv("c4-c3"),
        mv("e1-e2"),
        mv("e5-e4"),
        mv("e2-d2", power="recall", target="a1"),
    ]
    assert judge(_recall(turns, res(0, "resign"))) == ("invalid", "R8.7", 3)


def _shove(pieces, target, move):
    powers = [["shove", "dash", "shield"], ["shove", "dash", "shield"]]
    turns = [mv(move, power="shove", target=target)]
    return record(turns, res(0, "resign"), powers=powers, challenge=position(pieces))


def test_r8_9_shove_pushes_towards_its_own_back_row():
    """R8.9: the enemy piece next to an own piece goes one square towards its own back row (row
    N for side 1), onto an empty square; then the side moves as normal."""
    pieces = [
        pc(0, 5, "c3", "e1"),
        pc(0, 1, "a1", "a1"),
        pc(1, 2, "c4", "b5"),
        pc(1, 5, "e5", "e5"),
    ]
    rec = _shove(pieces, "c4", "a1-a2")
    rec["turns"].append(mv("c5-b4"))  # the 2 now stands on c5
    rec["result"] = res(1, "resign")
    assert judge(rec) == VALID_VERDICT
    blocked = [*pieces, pc(1, 4, "c5", "d5")]
    assert judge(_shove(blocked, "c4", "a1-a2")) == ("invalid", "R8.9", 0)
    assert judge(_shove(pieces, "e5", "a1-a2")) == ("invalid", "R8.9", 0)  # not next to an own


def _surge(turns, result, surge=True):
    powers = [["surge", "dash", "shield"], ["dash", "shield", "trap"]]
    pieces = [
        pc(0, 4, "c3", "d1"),
        pc(0, 5, "e1", "e1"),
        pc(1, 1, "c4", "a5"),
        pc(1, 5, "e5", "e5"),
    ]
    if surge:
        turns = [dict(turns[0], power="surge", target="c3"), *turns[1:]]
    return record(turns, result, powers=powers, challenge=position(pieces))


def test_r8_10_surge_wins_and_rests():
    """R8.10: on 5x5 a surged 4 also beats a 1; won only because of the surge, it rests during
    its owner's next turn (R2.3)."""
    turns = [mv("c3-c4"), mv("e5-e4"), mv("e1-e2"), mv("e4-d4"), mv("c4-c3")]
    assert judge(_surge(turns, res(0, "resign", [9, 5]))) == VALID_VERDICT
    rested = [mv("c3-c4"), mv("e5-e4"), mv("c4-c3")]
    assert judge(_surge(rested, res(1, "resign"))) == ("invalid", "R2.3", 2)
    # without the surge the 4 loses to the 1 (R3.3)
    assert judge(_surge([mv("c3-c4")], res(0, "resign", [5, 6]), surge=False)) == VALID_VERDICT


def test_r8_11_leap_lands_anywhere_within_two_but_cannot_attack():
    """R8.11: a leap lands on an empty square at most 2 away in file and row, over anything;
    it cannot attack; it cannot target a crown."""
    powers = [["leap", "dash", "shield"], ["leap", "dash", "shield"]]
    assert (
        judge(record([mv("b1-c3", power="leap", target="b1")], res(0, "resign"), powers=powers))
        == VALID_VERDICT
    )
    pieces = [pc(0, 2, "b1", "b1"), pc(0, 6, "e2", "e1"), pc(1, 1, "c3", "a5")]
    knight_attack = [mv("b1-c3", power="leap", target="b1")]
    rec = record(knight_attack, res(0, "resign"), powers=powers, challenge=position(pieces))
    assert judge(rec) == ("invalid", "R8.11", 0)  # a leap cannot attack (see the docstring)
    on_crown = [mv("b1-b2", power="leap", target="e2")]
    rec = record(on_crown, res(0, "resign"), powers=powers, challenge=position(pieces))
    assert judge(rec) == ("invalid", "R8.11", 0)


def test_r8_1_power_picks_and_uses():
    """R8.1: duplicate picks (no turn); a power not picked, used twice, or in a game without
    powers (at its turn)."""
    dup = [["dash", "dash", "shield"], ["dash", "leap", "shield"]]
    assert judge(record([mv("c1-c3")], res(0, "resign"), powers=dup)) == ("invalid", "R8.1", None)
    turns = [mv("c1-c3", power="leap", target="c1")]
    assert judge(record(turns, res(0, "resign"), powers=PICKS)) == ("invalid", "R8.1", 0)
    assert judge(record(turns, res(0, "resign"))) == ("invalid", "R8.1", 0)
    twice = [
        mv("c1-c3", power="shield", target="c1"),
        mv("c5-c4"),
        mv("d1-d2", power="shield", target="d1"),
    ]
    assert judge(record(twice, res(0, "resign"), powers=PICKS)) == ("invalid", "R8.1", 2)


# R2.4 passes, R9 challenges --------------------------------------------------------------------


def test_r2_4_pass_only_without_a_legal_move():
    """R2.4: a side that has a legal move may not pass. R9.3: a stunned crown of the side to
    move is immobile on the first turn (so a lone one must pass) and catchable through the
    second."""
    assert judge(record([mv()], res(0, "resign"))) == ("invalid", "R2.4", 0)
    pieces = [pc(0, 6, "c3", "c1", wounded=True, stunned=True), pc(1, 5, "e5", "e5")]
    rec = record([mv(), mv("e5-e4")], res(1, "resign", [6, 5]), challenge=position(pieces))
    assert judge(rec) == VALID_VERDICT
    pieces = [*pieces, pc(1, 1, "c4", "a5")]
    rec = record([mv(), mv("c4-c3")], res(1, "wipeout"), challenge=position(pieces))
    assert judge(rec) == VALID_VERDICT


@pytest.mark.parametrize(
    "change",
    [
        {"to_move": 1},  # first != to_move
        {"turns_taken": [15, 15]},
        {"turns_taken": [5, 4]},  # side to move ahead
        {"pieces": [pc(0, 3, "c3", "c1", wounded=True), pc(1, 5, "e5", "e5")]},
        {"pieces": [pc(0, 3, "c3", "c2"), pc(1, 5, "e5", "e5")]},  # start not on back row
        {"pieces": [pc(0, 3, "c3", "c1")]},  # side 1 has no pieces
    ],
)
def test_r9_2_inconsistent_position_breaks_r9_1(change):
    """R9.2: an inconsistent position breaks R9.1, turn none."""
    pieces = [pc(0, 3, "c3", "c1"), pc(1, 5, "e5", "e5")]
    rec = record([mv("c3-c4")], res(0, "resign"), challenge=position(pieces))
    rec["challenge"]["position"].update(change)
    assert judge(rec) == ("invalid", "R9.1", None)


# Robustness ------------------------------------------------------------------------------------


def test_judge_never_crashes_on_mutated_examples():
    """Any well-formed record gets a verdict (the referee never raises)."""
    rng = random.Random(6)
    squares = [f + str(r) for f in "abcdefg" for r in range(1, 8)]
    powers = ["double", "dash", "leap", "shield", "freeze", "swap", "recall", "trap", "shove"]
    for _ in range(400):
        rec = copy.deepcopy(rng.choice(VALID + INVALID))
        turns = rec["turns"]
        if turns:
            i = rng.randrange(len(turns))
            kind = rng.randrange(4)
            if kind == 0:
                turns[i]["moves"] = [f"{rng.choice(squares)}-{rng.choice(squares)}"]
            elif kind == 1:
                del turns[i:]
            elif kind == 2:
                turns[i]["power"] = rng.choice(powers)
                turns[i]["target"] = rng.choice(squares)
            else:
                turns.insert(i, copy.deepcopy(turns[rng.randrange(len(turns))]))
        verdict, rule, turn = judge(rec)
        assert verdict in ("valid", "invalid")
        assert (rule is None) == (verdict == "valid")
        assert turn is None or 0 <= turn < len(rec["turns"])
