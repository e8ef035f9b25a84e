"""Property tests under random valid rulesets (rulesets.md RS3): bot games played under a
ruleset are legal under it, and a single fault that breaks one of its parameters is caught at
the right turn with the right rule.

The mutations are built from the spec's numbers, not the engine's verdicts: one square beyond
`reach` (R2.2), a frozen piece that moves on the last of its owner's `freeze_turns` turns
(R2.3), a turn after `turn_limit` turns each (R6.5), a pick outside `powers` or a count other
than `picks` (R8.1, no turn), a Slide result scored with another `min_group` (S3.3).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from replays.rulesets import PARAMS, Ruleset, RulesetLookup
from replays.slide.engine import score_grid, winners
from replays.slide.simulate import simulate_games as slide_games
from replays.slide.verify import verify_plainly
from replays.slow6.board import FILES, SQUARE_XY, square_name
from replays.slow6.position import Position
from replays.slow6.simulate import simulate_game
from replays.verifier import verify_record
from replays.vocabulary import POWERS

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def slow6_rulesets(draw: st.DrawFn, must_offer: tuple[str, ...] = ()) -> Ruleset:
    """Any valid Slow6 ruleset (RS3's ranges and cross-checks)."""
    p: dict[str, Any] = {}
    for name in ("turn_limit_5", "turn_limit_7", "crown_reach", "leap_reach", "freeze_turns",
                 "trap_turns", "surge_rest"):  # fmt: skip
        spec = PARAMS["slow6"][name]
        p[name] = draw(st.integers(spec.low, spec.high))
    p["turn_limit_5"] = min(p["turn_limit_5"], 25)  # (long games cost time, not coverage)
    p["turn_limit_7"] = min(p["turn_limit_7"], 25)
    p["reach"] = draw(st.integers(1, 3))
    p["dash_reach"] = draw(st.integers(max(2, p["reach"] + 1), 5))
    p["crown_points"] = draw(st.none() | st.integers(0, 20))
    offered = draw(st.sets(st.sampled_from(POWERS), min_size=1)) | set(must_offer)
    p["powers"] = [x for x in POWERS if x in offered]
    p["picks"] = draw(st.integers(1, min(5, len(offered))))
    return Ruleset("random", "slow6", p)


def lookup_of(rs: Ruleset) -> RulesetLookup:
    return lambda game, name: rs if (game, name) == (rs.game, rs.name) else None


def play(rs: Ruleset, seed: int, board: int, powers: bool, levels=(0, 1)) -> dict:
    return simulate_game(random.Random(seed), board=board, powers=powers, levels=levels,
                         rules=rs, quit_rate=0.0)  # fmt: skip


@pytest.mark.slow
@SETTINGS
@given(rs=slow6_rulesets(), seed=st.integers(0, 10**9), board=st.sampled_from([5, 7]),
       powers=st.booleans())  # fmt: skip
def test_bot_games_under_a_random_ruleset_are_legal_under_it(rs, seed, board, powers):
    record = play(rs, seed, board, powers)
    assert record["ruleset"] == "random"
    if powers:
        assert all(len(side) == rs.params["picks"] for side in record["powers"])
    verdict = verify_record(record, lookup_of(rs))
    assert verdict.ok, (rs.params, verdict)
    assert verdict.ruleset == "random"


def _replay_to(record: dict, rs: Ruleset, upto: int) -> Position:
    """The position before turn `upto` (plays the log's turns through the engine's `play`)."""
    from replays.slow6.verify import play_turn, setup

    pos = setup(record, rs)
    for turn in record["turns"][:upto]:
        play_turn(pos, turn)
    return pos


@pytest.mark.slow
@SETTINGS
@given(rs=slow6_rulesets(), seed=st.integers(0, 10**9), board=st.sampled_from([5, 7]),
       pick=st.integers(0, 10**6))  # fmt: skip
def test_one_square_beyond_reach_is_r2_2_at_that_turn(rs, seed, board, pick):
    record = play(rs, seed, board, powers=False)
    turns = record["turns"]
    n = board
    # candidate turns: one straight move by a piece with no power on it (this game has none)
    found = []
    for i, turn in enumerate(turns):
        if len(turn["moves"]) != 1:
            continue
        fx, fy, tx, ty = (*SQUARE_XY[turn["moves"][0][:2]], *SQUARE_XY[turn["moves"][0][3:]])
        found.append((i, fx, fy, tx, ty))
    assume(found)
    i, fx, fy, tx, ty = found[pick % len(found)]
    pos = _replay_to(record, rs, i)
    crown = pos.rank[pos.board[fy * n + fx]] == pos.crown
    reach = rs.params["crown_reach"] if crown else rs.params["reach"]
    dx, dy = (tx > fx) - (tx < fx), (ty > fy) - (ty < fy)
    ex, ey = fx + dx * (reach + 1), fy + dy * (reach + 1)
    assume(0 <= ex < 7 and 0 <= ey < 7)  # a square the format can write (off this board: R2.2)
    mutated = dict(record, turns=[*turns[:i], {"moves": [turns[i]["moves"][0][:3] +
                                                         f"{FILES[ex]}{ey + 1}"]}])  # fmt: skip
    verdict = verify_record(mutated, lookup_of(rs))
    assert (verdict.rule, verdict.turn) == ("R2.2", i), (rs.params, verdict)


def _frozen_game(rs: Ruleset, move_at: int) -> dict:
    """Side 0 freezes side 1's a7 piece at turn 0 (7x7); side 1 moves it at `move_at`."""
    picks0 = ["freeze"] + [x for x in rs.params["powers"] if x != "freeze"]
    picks0 = picks0[: rs.params["picks"]]
    picks1 = list(rs.params["powers"][: rs.params["picks"]])
    turns: list[dict] = [{"power": "freeze", "target": "a7", "moves": ["g1-g2"]}]
    for i in range(1, move_at):
        if i % 2:
            turns.append({"moves": ["g7-g6" if (i // 2) % 2 == 0 else "g6-g7"]})
        else:
            turns.append({"moves": ["g2-g1" if (i // 2) % 2 == 1 else "g1-g2"]})
    turns.append({"moves": ["a7-a6"]})
    lineup = [1, 2, 3, 4, 5, 6, 7]
    return {
        "schema": 1, "game_id": "0f0f0f0f-0000-4000-8000-000000000001", "game": "slow6",
        "client": {"platform": "bot", "version": "1"}, "mode": "online",
        "ended_at": "2026-12-01T00:00:00Z", "ruleset": rs.name,
        "rules": {"board": 7, "powers": True, "hidden": False}, "ai": None, "challenge": None,
        "first": 0, "lineups": [lineup, lineup], "powers": [picks0, picks1], "turns": turns,
        "result": {"winner": 1 if len(turns) % 2 == 0 else 0, "reason": "resign"},
    }  # fmt: skip


@SETTINGS
@given(rs=slow6_rulesets(must_offer=("freeze",)))
def test_a_frozen_piece_moving_on_its_last_frozen_turn_is_r2_3(rs):
    k = rs.params["freeze_turns"]
    assume(rs.params["turn_limit_7"] > k + 1)
    lookup = lookup_of(rs)
    last = 2 * k - 1  # its owner's turns 1, 3, .., 2K-1
    verdict = verify_record(_frozen_game(rs, last), lookup)
    assert (verdict.rule, verdict.turn) == ("R2.3", last), (rs.params, verdict)
    assert verify_record(_frozen_game(rs, last + 2), lookup).ok


@pytest.mark.slow
@SETTINGS
@given(rs=slow6_rulesets(), seed=st.integers(0, 10**9), board=st.sampled_from([5, 7]))
def test_a_turn_after_the_limit_is_r6_5(rs, seed, board):
    record = play(rs, seed, board, powers=False, levels=(0, 0))
    assume(record["result"]["reason"] == "points")
    limit = rs.params[f"turn_limit_{board}"]
    assert len(record["turns"]) == 2 * limit
    extra = dict(record, turns=[*record["turns"], {"moves": []}])
    verdict = verify_record(extra, lookup_of(rs))
    assert (verdict.rule, verdict.turn) == ("R6.5", 2 * limit), verdict


@SETTINGS
@given(rs=slow6_rulesets(), seed=st.integers(0, 10**9), change=st.sampled_from(["out", "count"]))
def test_a_pick_outside_powers_or_a_wrong_count_is_r8_1(rs, seed, change):
    record = play(rs, seed, 5, powers=True)
    lookup = lookup_of(rs)
    assert verify_record(record, lookup).ok
    picks = [list(x) for x in record["powers"]]
    if change == "out":
        unoffered = [x for x in POWERS if x not in rs.params["powers"] and x not in picks[1]]
        assume(unoffered)
        picks[1][-1] = unoffered[0]
    else:
        spare = [x for x in POWERS if x not in picks[0]]
        if len(picks[0]) < 5:
            picks[0].append(spare[0])
        else:
            picks[0].pop()
    verdict = verify_record(dict(record, powers=picks), lookup)
    assert (verdict.rule, verdict.turn) == ("R8.1", None), verdict


@SETTINGS
@given(min_group=st.integers(2, 4), target=st.integers(20, 1000), seed=st.integers(0, 10**6),
       players=st.integers(2, 6))  # fmt: skip
def test_slide_under_a_random_ruleset(min_group, target, seed, players):
    rs = Ruleset("random-slide", "slide", {"min_group": min_group, "match_target": target})
    lookup = lookup_of(rs)
    for record in slide_games(3, players, seed, policy="greedy", rules=rs):
        assert record["ruleset"] == "random-slide"
        assert verify_record(record, lookup).ok
        assert verify_plainly(record, rs).ok  # the rules engine's own path agrees
        # the same final grids scored with another min_group: S3.3, no turn, unless equal
        other = 2 if min_group != 2 else 3
        final = _final_grids(record, min_group)
        scored = [score_grid(g, other) for g in final]
        result = {"scores": [s for s, _ in scored], "cards_left": [c for _, c in scored]}
        result["winners"] = winners(result["scores"], result["cards_left"])
        if result["scores"] != record["result"]["scores"]:
            verdict = verify_record(dict(record, result=result), lookup)
            assert (verdict.rule, verdict.turn) == ("S3.3", None), verdict


def _final_grids(record: dict, min_group: int) -> list[list[int]]:
    from replays.slide.engine import SIZE, Table

    table = Table(record["grids"], record["first"], min_group)
    for rnd in record["rounds"]:
        cells = [r * SIZE + c for r, c in rnd["reveals"]]
        table.play_round(cells, rnd["takes"], [e["side"] for e in rnd["slides"]])
    return [list(v) for v in table.values]


def test_square_names_round_trip():  # (the mutations write squares by name)
    assert square_name(3 * 7 + 2, 7) == "c4" and SQUARE_XY["c4"] == (2, 3)
