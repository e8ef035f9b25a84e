"""Slide rules (slide-rules.md S1-S4): the spec examples, then one test per rule with its edge
cases. Results are worked out by hand in each test, never taken from the engine.

Most records here are "turntable" games: every round each seat reveals the card at one fixed
edge cell of a row (or column) and takes back the value it revealed, then slides it in from the
opposite edge, so the line rotates by one. Four rounds per line bring every line back to the
deal, so after 16 rounds each final grid equals the dealt grid: a test chooses the final grids
by choosing the deal, and the result is computable by hand.
"""

from __future__ import annotations

import copy
import itertools
import json

import pytest
from support import examples_dir

from replays.slide.engine import (
    SIDES,
    edge_blocked,
    groups,
    legal_sides,
    push,
    score_grid,
    taking_order,
    winners,
)
from replays.slide.verify import replay, verify

EXAMPLES = examples_dir()

# The worked check of the seed (S3): three 9s in a row, two 4s, two pairs of 10s, a pair of 1s
# cancel (eleven cards); 3, 6, 2, 7 and 1 are left: 19 points with 5 cards.
WORKED = (
    9, 9, 9, 3,
    4, 6, 10, 10,
    4, 1, 1, 2,
    10, 10, 7, 1,
)  # fmt: skip
# 19 points too, but 6 cards left (1, 2, 3, 4, 4, 5 left; pairs of 6, 7, 8, 9, 10 cancel).
NINETEEN_SIX = (
    1, 2, 3, 4,
    5, 4, 7, 7,
    8, 8, 9, 9,
    10, 10, 6, 6,
)  # fmt: skip
# No two equal cards share a side: nothing cancels, 76 points with 16 cards.
NO_PAIRS = (
    1, 2, 3, 4,
    5, 6, 7, 8,
    9, 10, 1, 2,
    3, 4, 5, 6,
)  # fmt: skip

_ids = itertools.count(1)

# plan -> (revealed cell of line k, side the card comes back in from)
PLANS = {
    "col0": (lambda k: (k, 0), "right"),  # gaps in column 0; rows rotate left
    "col3": (lambda k: (k, 3), "left"),  # gaps in column 3; rows rotate right
    "row0": (lambda k: (0, k), "bottom"),  # gaps in row 0; columns rotate up
    "row3": (lambda k: (3, k), "top"),  # gaps in row 3; columns rotate down
}


def turntable(grids, first=0, plan="col0", result=None) -> dict:
    """A legal 16-round game whose final grids equal the dealt ones (see the module doc)."""
    p = len(grids)
    cell, side = PLANS[plan]
    rounds = []
    state = [list(g) for g in grids]  # the lines rotate: track them to know what is revealed
    for i in range(16):
        r, c = cell(i // 4)
        revealed = [state[s][r * 4 + c] for s in range(p)]
        order = [((first + i) % p + k) % p for k in range(p)]
        rounds.append(
            {
                "reveals": [[r, c] for _ in range(p)],
                "takes": [revealed[s] for s in order],
                "slides": [{"side": side} for _ in range(p)],
            }
        )
        for s in range(p):
            push(state[s], [False] * 16, r * 4 + c, side, revealed[s])
    assert state == [list(g) for g in grids]  # the construction really is an identity
    return {
        "schema": 1,
        "game_id": f"511de000-0000-4000-8000-{next(_ids):012x}",
        "game": "slide",
        "client": {"platform": "web", "version": "3.0.0"},
        "mode": "friend",
        "ended_at": "2026-03-01T12:00:00Z",
        "players": p,
        "match": None,
        "first": first,
        "grids": [list(g) for g in grids],
        "rounds": rounds,
        "result": result,
    }


def _res(scores, cards_left, win):
    return {"scores": scores, "cards_left": cards_left, "winners": win}


def assert_invalid(record, rule, turn, seat="any"):
    v = verify(record)
    assert (v.verdict, v.rule, v.turn) == ("invalid", rule, turn), v
    if seat != "any":
        assert v.seat == seat, v
    assert v.message and f"({rule})" in v.message
    return v


# --- the spec examples -----------------------------------------------------------------------


def _lines(name):
    return [json.loads(line) for line in (EXAMPLES / name).read_text().splitlines() if line]


VALID = _lines("slide-valid.ndjson")
INVALID = list(
    zip(_lines("slide-invalid.ndjson"), _lines("slide-invalid.expected.ndjson"), strict=True)
)


@pytest.mark.parametrize("record", VALID, ids=[r["game_id"][:8] for r in VALID])
def test_valid_examples_verify(record):
    assert verify(record).verdict == "valid"
    verdict, facts = replay(record)
    assert verdict.ok
    assert [f.score for f in facts.seats] == record["result"]["scores"]
    assert [f.cards_left for f in facts.seats] == record["result"]["cards_left"]
    assert set(facts.winners) == set(record["result"]["winners"])


@pytest.mark.parametrize("record,expected", INVALID, ids=[e["kind"] for _, e in INVALID])
def test_invalid_examples_name_rule_and_round(record, expected):
    assert record["game_id"] == expected["game_id"]
    v = verify(record)
    assert v.verdict == "invalid"
    assert v.rule == expected["rule"] or v.rule in expected["also_acceptable"], v
    assert v.turn == expected["turn"], v
    assert replay(record)[1] is None


# --- S1 --------------------------------------------------------------------------------------


@pytest.mark.rule("S1.3")
@pytest.mark.parametrize("bad", [0, 11, -3])
def test_dealt_value_outside_1_to_10(bad):
    grids = [NO_PAIRS, list(WORKED)]
    grids[1][5] = bad
    record = turntable(grids, result=_res([76, 19], [16, 5], [1]))
    v = assert_invalid(record, "S1.3", None, seat=1)
    assert "(1,1)" in v.message and str(bad) in v.message


@pytest.mark.rule("S1.3")
def test_bad_deal_is_reported_before_a_round_fault():
    grids = [list(NO_PAIRS), WORKED]
    grids[0][15] = 12
    record = turntable(grids, result=_res([76, 19], [16, 5], [1]))
    record["rounds"][0]["reveals"][0] = [0, 0]
    record["rounds"][1]["reveals"][0] = [0, 3]  # face up after round 0: would be S2.2
    assert_invalid(record, "S1.3", None, seat=0)


# --- S2.1 / S2.3 taking order ----------------------------------------------------------------


@pytest.mark.rule("S2.1")
def test_the_round_leader_passes_to_the_left_each_round():
    assert taking_order(first=2, round_index=0, players=4) == [2, 3, 0, 1]
    assert taking_order(first=2, round_index=1, players=4) == [3, 0, 1, 2]
    assert taking_order(first=2, round_index=3, players=4) == [1, 2, 3, 0]
    assert taking_order(first=1, round_index=15, players=3) == [1, 2, 0]


@pytest.mark.rule("S2.3")
def test_takes_are_read_in_taking_order_from_the_round_leader():
    # Three different decks so that every round the three revealed values differ: reading the
    # takes in seat order instead of taking order would hand seats the wrong cards.
    grids = [NO_PAIRS, WORKED, NINETEEN_SIX]
    record = turntable(grids, first=1, result=_res([76, 19, 19], [16, 5, 6], [1]))
    assert verify(record).ok
    seat_order = copy.deepcopy(record)
    for i, rnd in enumerate(seat_order["rounds"]):
        leader = (1 + i) % 3
        by_seat = [None] * 3
        for k, v in enumerate(rnd["takes"]):
            by_seat[(leader + k) % 3] = v
        rnd["takes"] = by_seat
    assert not verify(seat_order).ok


# --- S2.2 ------------------------------------------------------------------------------------


@pytest.mark.rule("S2.2")
def test_reveal_of_a_face_up_card():
    record = turntable([NO_PAIRS, WORKED], result=_res([76, 19], [16, 5], [1]))
    # col0 plan: round 0 slid the revealed card back in at (0,3), face up.
    record["rounds"][1]["reveals"][1] = [0, 3]
    v = assert_invalid(record, "S2.2", 1, seat=1)
    assert v.message.startswith("round 1, seat 1: reveals (0,3)")
    assert "already face up" in v.message


@pytest.mark.rule("S2.2")
def test_reveal_faults_name_the_lowest_seat():
    record = turntable([NO_PAIRS, WORKED, NO_PAIRS], result=_res([76, 19, 76], [16, 5, 16], [1]))
    record["rounds"][4]["reveals"][2] = [0, 3]
    record["rounds"][4]["reveals"][1] = [0, 2]
    assert_invalid(record, "S2.2", 4, seat=1)


@pytest.mark.rule("S2.2")
def test_a_seventeenth_round_finds_no_face_down_card():
    record = turntable([NO_PAIRS, WORKED], result=_res([76, 19], [16, 5], [1]))
    assert verify(record).ok
    record["rounds"].append(copy.deepcopy(record["rounds"][0]))
    v = assert_invalid(record, "S2.2", 16, seat=0)
    assert "every card is already face up" in v.message


# --- S2.3 ------------------------------------------------------------------------------------


@pytest.mark.rule("S2.3")
def test_take_of_a_value_not_in_the_middle():
    record = turntable([NO_PAIRS, WORKED], first=0, result=_res([76, 19], [16, 5], [1]))
    # Round 0: seat 0 reveals 1, seat 1 reveals 9; the middle is {1, 9}.
    assert record["rounds"][0]["takes"] == [1, 9]
    record["rounds"][0]["takes"][0] = 5
    v = assert_invalid(record, "S2.3", 0, seat=0)
    assert "takes 5" in v.message and "[1, 9]" in v.message


@pytest.mark.rule("S2.3")
def test_the_last_player_takes_the_one_left():
    record = turntable([NO_PAIRS, WORKED], first=1, result=_res([76, 19], [16, 5], [1]))
    # Round 0 is led by seat 1: takes [9, 1]. Seat 0, last, may not take the 9 again.
    assert record["rounds"][0]["takes"] == [9, 1]
    record["rounds"][0]["takes"] = [9, 9]
    v = assert_invalid(record, "S2.3", 0, seat=0)
    assert "[1]" in v.message


@pytest.mark.rule("S2.3")
def test_taking_your_own_card_and_duplicate_values_are_legal():
    # Both seats reveal the same value: the middle holds it twice, both may take it.
    record = turntable([WORKED, WORKED], result=_res([19, 19], [5, 5], [0, 1]))
    assert record["rounds"][0]["takes"] == [9, 9]
    assert verify(record).ok


@pytest.mark.rule("S2.3")
def test_take_fault_is_reported_before_a_slide_fault_of_a_lower_seat():
    record = turntable([NO_PAIRS, WORKED], first=0, result=_res([76, 19], [16, 5], [1]))
    # Round 3 is led by seat 1 and both gaps are at (0,0); the middle is {4, 3}.
    record["rounds"][3]["slides"][0] = {"side": "left"}  # S2.4 for seat 0
    record["rounds"][3]["takes"][0] = 10  # S2.3 for seat 1, the first taker
    assert_invalid(record, "S2.3", 3, seat=1)


@pytest.mark.rule("S2.2")
def test_reveal_fault_comes_before_take_and_slide_faults():
    record = turntable([NO_PAIRS, WORKED], result=_res([76, 19], [16, 5], [1]))
    record["rounds"][3]["takes"][0] = 10
    record["rounds"][3]["slides"][0] = {"side": "left"}
    record["rounds"][3]["reveals"][1] = [0, 3]
    assert_invalid(record, "S2.2", 3, seat=1)


# --- S2.4 ------------------------------------------------------------------------------------


@pytest.mark.rule("S2.4")
@pytest.mark.parametrize(
    "plan,bad_side,gap",
    [
        ("col0", "left", "(1,0)"),  # gap in column 0, from the left
        ("col3", "right", "(1,3)"),  # gap in column 3, from the right
        ("row0", "top", "(0,1)"),  # gap in row 0, from the top
        ("row3", "bottom", "(3,1)"),  # gap in row 3, from the bottom
    ],
)
def test_slide_from_an_edge_the_gap_touches(plan, bad_side, gap):
    record = turntable([NO_PAIRS, WORKED], plan=plan, result=_res([76, 19], [16, 5], [1]))
    assert verify(record).ok
    record["rounds"][4]["slides"][1] = {"side": bad_side}  # round 4: line 1
    v = assert_invalid(record, "S2.4", 4, seat=1)
    assert f"gap {gap}" in v.message and bad_side in v.message


@pytest.mark.rule("S2.4")
@pytest.mark.parametrize(
    "plan,gap,bad", [("col0", 0, ("left", "top")), ("col3", 15, ("right", "bottom"))]
)
def test_corner_gaps_block_both_of_their_edges(plan, gap, bad):
    # col0 round 0 has the gap at (0,0); col3 round 12 has it at (3,3).
    i = 0 if gap == 0 else 12
    for side in bad:
        record = turntable([NO_PAIRS, WORKED], plan=plan, result=_res([76, 19], [16, 5], [1]))
        record["rounds"][i]["slides"][0] = {"side": side}
        assert_invalid(record, "S2.4", i, seat=0)
    assert sorted(legal_sides(gap)) == sorted(set(SIDES) - set(bad))


@pytest.mark.rule("S2.4")
@pytest.mark.parametrize("side,rule", [("right", "S3.1"), ("bottom", "S3.1"), ("left", "S2.4")])
def test_the_other_edges_of_a_corner_gap_are_legal(side, rule):
    # Keep round 0 only (gap (0,0) for both seats): a legal round 0 leaves just the short log
    # to complain about (S3.1), an illegal slide is reported at round 0.
    record = turntable([NO_PAIRS, WORKED], result=_res([76, 19], [16, 5], [1]))
    record["rounds"] = record["rounds"][:1]
    record["rounds"][0]["slides"][1] = {"side": side}
    v = verify(record)
    assert (v.rule, v.turn) == (rule, 0 if rule == "S2.4" else None)


@pytest.mark.rule("S2.4")
def test_edge_blocked_matches_the_gap_position_everywhere():
    for gap in range(16):
        r, c = divmod(gap, 4)
        assert edge_blocked(gap, "left") == (c == 0)
        assert edge_blocked(gap, "right") == (c == 3)
        assert edge_blocked(gap, "top") == (r == 0)
        assert edge_blocked(gap, "bottom") == (r == 3)
    assert legal_sides(5) == list(SIDES)  # an inner gap can be filled from any edge


@pytest.mark.rule("S2.4")
def test_slide_faults_name_the_lowest_seat():
    record = turntable([NO_PAIRS, WORKED, WORKED], result=_res([76, 19, 19], [16, 5, 5], [1, 2]))
    record["rounds"][6]["slides"][2] = {"side": "left"}
    record["rounds"][6]["slides"][1] = {"side": "left"}
    assert_invalid(record, "S2.4", 6, seat=1)


@pytest.mark.rule("S2.4")
@pytest.mark.parametrize(
    "side,gap,values,down",
    [
        # row 1 = cells 4..7 = [a b c d], gap at (1,2): from the left, a and b move right.
        ("left", 6, [5, 1, 2, 0, 3, 4], [True, False, False, True, True, False]),
        ("right", 5, [1, 2, 0, 3, 4, 5], [True, True, False, True, False, True]),
    ],
)
def test_push_along_a_row_keeps_face_down_cards_face_down(side, gap, values, down):
    vals = [0] * 16
    fd = [False] * 16
    vals[4:8] = [1, 2, 3, 4]
    fd[4:8] = [True, False, True, False]
    vals[gap], fd[gap] = 0, False  # the revealed card is in the middle
    push(vals, fd, gap, side, 5)
    # expected row 1 after the push, written as values then flags of cells 4..7
    if side == "left":
        assert vals[4:8] == [5, 1, 2, 4] and fd[4:8] == [False, True, False, False]
    else:
        assert vals[4:8] == [1, 3, 4, 5] and fd[4:8] == [True, True, False, False]


@pytest.mark.rule("S2.4")
def test_push_along_a_column_keeps_face_down_cards_face_down():
    vals = list(range(1, 17))
    fd = [i % 2 == 0 for i in range(16)]  # column 2 = cells 2, 6, 10, 14: all face down
    vals[10], fd[10] = 0, False  # gap at (2,2)
    push(vals, fd, 10, "top", 9)
    assert [vals[i] for i in (2, 6, 10, 14)] == [9, 3, 7, 15]
    assert [fd[i] for i in (2, 6, 10, 14)] == [False, True, True, True]
    vals[6], fd[6] = 0, False  # gap at (1,2), from the bottom: 7 and 15 move up
    push(vals, fd, 6, "bottom", 8)
    assert [vals[i] for i in (2, 6, 10, 14)] == [9, 7, 15, 8]
    assert [fd[i] for i in (2, 6, 10, 14)] == [False, True, True, False]


@pytest.mark.rule("S2.4")
def test_pushed_face_down_cards_can_still_be_revealed():
    # The turntable reveals (0,0) four rounds running: legal only because the cards pushed
    # into (0,0) stayed face down. Revealing the card that entered at (0,3) is not.
    record = turntable([NO_PAIRS, WORKED], result=_res([76, 19], [16, 5], [1]))
    assert verify(record).ok
    record["rounds"][2]["reveals"][0] = [0, 2]  # holds the card that entered in round 0
    assert_invalid(record, "S2.2", 2, seat=0)


# --- S3 --------------------------------------------------------------------------------------


@pytest.mark.rule("S3.2")
def test_worked_example_of_the_seed():
    assert score_grid(WORKED) == (19, 5)
    assert groups(WORKED) == [(1, 2), (4, 2), (9, 3), (10, 2), (10, 2)]
    record = turntable([WORKED, NO_PAIRS], result=_res([19, 76], [5, 16], [0]))
    verdict, facts = replay(record)
    assert verdict.ok
    assert (facts.seats[0].score, facts.seats[0].cards_left) == (19, 5)
    assert facts.seats[0].sizes_by_value() == {1: [2], 4: [2], 9: [3], 10: [2, 2]}


@pytest.mark.rule("S3.2")
def test_corner_contact_is_not_a_group():
    grid = [
        7, 1, 2, 3,
        4, 7, 5, 6,
        8, 9, 10, 1,
        2, 3, 4, 5,
    ]  # fmt: skip
    # (0,0) and (1,1) are both 7 but touch at a corner only; no two equal cards share a side
    assert groups(grid) == []
    assert score_grid(grid) == (77, 16)


@pytest.mark.rule("S3.2")
def test_a_group_of_three_goes_whole():
    # an L of three 8s: (0,0)-(0,1) and (0,1)-(1,1); all three go, not just a pair
    grid = [
        8, 8, 1, 2,
        3, 8, 4, 5,
        6, 7, 1, 2,
        3, 4, 5, 6,
    ]  # fmt: skip
    assert groups(grid) == [(8, 3)]
    assert score_grid(grid) == (73 - 24, 13)


@pytest.mark.rule("S3.3")
def test_lowest_score_wins():
    assert winners([76, 19], [16, 5]) == [1]
    assert verify(turntable([NO_PAIRS, WORKED], result=_res([76, 19], [16, 5], [1]))).ok


@pytest.mark.rule("S3.3")
def test_score_tie_broken_by_fewest_cards_left():
    assert winners([19, 19], [6, 5]) == [1]
    ok = turntable([NINETEEN_SIX, WORKED], result=_res([19, 19], [6, 5], [1]))
    assert verify(ok).ok
    ok["result"]["winners"] = [0, 1]
    v = assert_invalid(ok, "S3.3", None)
    assert "winners" in v.message


@pytest.mark.rule("S3.3")
def test_tie_on_score_and_cards_is_shared():
    assert winners([19, 76, 19], [5, 16, 5]) == [0, 2]
    record = turntable([WORKED, NO_PAIRS, WORKED], result=_res([19, 76, 19], [5, 16, 5], [2, 0]))
    assert verify(record).ok  # winners compared as a set: order does not matter
    record["result"]["winners"] = [0]
    assert_invalid(record, "S3.3", None)


@pytest.mark.rule("S3.3")
def test_result_checked_scores_then_cards_left_then_winners():
    base = _res([76, 19], [16, 5], [1])
    record = turntable([NO_PAIRS, WORKED], result=copy.deepcopy(base))
    record["result"] = _res([76, 20], [15, 5], [0])
    v = assert_invalid(record, "S3.3", None, seat=1)
    assert v.message.startswith("result.scores[1] is 20") and "gives 19" in v.message
    record["result"] = _res([76, 19], [15, 5], [0])
    v = assert_invalid(record, "S3.3", None, seat=0)
    assert v.message.startswith("result.cards_left[0] is 15")
    record["result"] = _res([76, 19], [16, 5], [0])
    v = assert_invalid(record, "S3.3", None)
    assert v.message.startswith("result.winners is [0]")


@pytest.mark.rule("S3.1")
@pytest.mark.parametrize("kept", [0, 1, 15])
def test_fewer_than_16_rounds(kept):
    record = turntable([NO_PAIRS, WORKED], result=_res([76, 19], [16, 5], [1]))
    record["rounds"] = record["rounds"][:kept]
    v = assert_invalid(record, "S3.1", None)
    assert f"{kept} rounds" in v.message


@pytest.mark.rule("S3.1")
def test_a_round_fault_in_a_short_log_is_reported_first():
    record = turntable([NO_PAIRS, WORKED], result=_res([76, 19], [16, 5], [1]))
    record["rounds"] = record["rounds"][:8]
    record["rounds"][5]["takes"][0] = 10
    assert verify(record).rule == "S2.3"


# --- shape the schema cannot check (malformed) -----------------------------------------------


@pytest.mark.parametrize(
    "mutate,field",
    [
        (lambda r: r["rounds"][3]["takes"].pop(), "rounds[3].takes"),
        (lambda r: r["rounds"][0]["reveals"].append([0, 0]), "rounds[0].reveals"),
        (lambda r: r["rounds"][15]["slides"].pop(), "rounds[15].slides"),
        (lambda r: r["grids"].append(list(NO_PAIRS)), "grids"),
        (lambda r: r.update(first=2), "first"),
        (lambda r: r["result"]["scores"].append(3), "result.scores"),
        (lambda r: r["result"]["cards_left"].pop(), "result.cards_left"),
        (lambda r: r["result"].update(winners=[1, 2]), "result.winners[1]"),
        (lambda r: r["rounds"][2]["reveals"].__setitem__(0, [4, 0]), "rounds[2].reveals[0]"),
    ],
)
def test_counts_tied_to_players_are_malformed(mutate, field):
    record = turntable([NO_PAIRS, WORKED], result=_res([76, 19], [16, 5], [1]))
    record["rounds"][1]["takes"][0] = 10  # a rule fault too: malformed still comes first
    mutate(record)
    v = verify(record)
    assert (v.verdict, v.field) == ("malformed", field), v
    assert replay(record) == (v, None)


# --- facts -----------------------------------------------------------------------------------


def test_facts_of_a_replay():
    record = turntable([NO_PAIRS, WORKED], first=1, result=_res([76, 19], [16, 5], [1]))
    verdict, facts = replay(record)
    assert verdict.ok and facts.winners == (1,) and (facts.players, facts.first) == (2, 1)
    assert [(f.round, f.seat) for f in facts.takes[:4]] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    t = facts.takes[0]  # round 0, seat 0: reveals NO_PAIRS (0,0) = 1; seat 1 led and took 9
    assert (t.order, t.revealed, t.reveal_pos, t.took, t.side) == (1, 1, (0, 0), 1, "right")
    assert (t.available, t.choice) == ((1,), False)
    t = facts.takes[1]  # seat 1 led: both values were there
    assert (t.order, t.took, t.available, t.choice) == (0, 9, (1, 9), True)
    same = turntable([WORKED, WORKED], result=_res([19, 19], [5, 5], [0, 1]))
    first_take = replay(same)[1].takes[0]
    assert first_take.available == (9, 9) and first_take.choice is False  # one distinct value
    assert replay(dict(record, result=_res([76, 19], [16, 5], [0])))[1] is None


@pytest.mark.parametrize(
    "where,entry,field",
    [
        ("slides", {"side": "diagonal"}, "rounds[5].slides[1]"),
        ("slides", "left", "rounds[5].slides[1]"),
        ("takes", "9", "rounds[5].takes"),
        ("takes", True, "rounds[5].takes"),
        ("takes", 9.0, "rounds[5].takes"),
        ("reveals", [4, 0], "rounds[5].reveals[1]"),
        ("reveals", [1, True], "rounds[5].reveals[1]"),
        ("reveals", {"row": 1, "col": 0}, "rounds[5].reveals[1]"),
        ("reveals", [1], "rounds[5].reveals[1]"),
    ],
)
def test_a_bad_entry_is_malformed_never_a_crash(where, entry, field):
    # Entry types are the schema's to check, but a record that skipped that check must still
    # get a verdict naming the field, not an exception (and not a quarantine).
    record = turntable([NO_PAIRS, WORKED], result=_res([76, 19], [16, 5], [1]))
    record["rounds"][5][where][1] = entry
    v = verify(record)
    assert (v.verdict, v.field) == ("malformed", field), v
