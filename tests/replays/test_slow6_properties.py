"""Property tests of the Slow6 engine: simulated games verify; move generation and move
validation agree; a single corruption of a valid game is caught, or the corrupted game really
is legal by the move generator."""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import examples_dir

from replays.slow6.board import MOVE_XY, SQUARE_XY, square_name
from replays.slow6.position import Position, RuleBroken
from replays.slow6.simulate import random_game_settings, simulate_game
from replays.slow6.verify import judge_result, play_turn, setup, verify

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _game(seed: int, board: int | None = None, powers: bool | None = None) -> dict:
    rng = random.Random(seed)
    s = random_game_settings(rng, board, powers, None if powers is None else False)
    s["levels"] = tuple(min(lv, 1) for lv in s["levels"])  # fast players, still realistic
    return simulate_game(rng, quit_rate=0.1, **s)


@pytest.mark.slow
@SETTINGS
@given(seed=st.integers(0, 10**9), board=st.sampled_from([5, 7]), powers=st.booleans())
def test_every_simulated_game_verifies(seed, board, powers):
    record = _game(seed, board, powers)
    verdict = verify(record)
    assert verdict.ok, verdict.message


def replay_by_generator(record: dict) -> Position:
    """Replay using only legal-move GENERATION: every logged move must be one the generator
    offers, a pass only when it offers none. Independent of `Position.move`'s own checks."""
    pos = setup(record)
    n = pos.n
    for turn in record["turns"]:
        assert not pos.over, "a turn after the end"
        s = pos.to_move
        power = turn.get("power")
        if power:
            t = turn.get("target")
            target = None
            if power == "swap":
                target = tuple(_sq(x, n) for x in t)
            elif power != "double":
                target = _sq(t, n)
            pos.use_power(power, target)
        moves = turn["moves"]
        if not moves:
            assert not pos.legal_moves(s), "passed with a legal move"
        exclude = -1
        for i, text in enumerate(moves):
            assert i == 0 or power == "double"
            fx, fy, tx, ty = MOVE_XY[text]
            mv = (fy * n + fx, ty * n + tx)
            assert max(fx, fy, tx, ty) < n and mv in pos.legal_moves(s, exclude), text
            mover = pos.move(*mv)
            if pos.over:
                assert i == len(moves) - 1
                break
            exclude = mover if pos.rank[mover] == pos.crown else -1
        if power == "double" and len(moves) == 1 and not pos.over:
            assert not pos.legal_moves(s, exclude), "double stopped after one move"
        pos.end_turn()
    return pos


def _sq(text: str, n: int) -> int:
    f, r = SQUARE_XY[text]
    return r * n + f if f < n and r < n else -1


def corrupt(record: dict, rng: random.Random) -> tuple[dict, int | None]:
    """One random corruption; returns the record and the first turn it touches (None: result)."""
    rec = copy.deepcopy(record)
    turns = rec["turns"]
    n = rec["rules"]["board"]
    kind = rng.choice(["move", "move", "drop", "result"]) if turns else "result"
    if kind == "move":
        movers = [i for i, t in enumerate(turns) if t["moves"]]
        if movers:
            i = rng.choice(movers)
            j = rng.randrange(len(turns[i]["moves"]))
            frm, to = turns[i]["moves"][j].split("-")
            squares = [square_name(q, n) for q in range(n * n)]
            if rng.random() < 0.5:
                frm = rng.choice(squares)
            else:
                to = rng.choice(squares)
            turns[i]["moves"][j] = f"{frm}-{to}"
            return rec, i
        kind = "drop"
    if kind == "drop":
        i = rng.randrange(len(turns))
        del turns[i]
        return rec, i
    res = rec["result"]
    field = rng.choice(["winner", "reason", "points"])
    if field == "winner":
        res["winner"] = rng.choice([w for w in (0, 1, None) if w != res["winner"]])
    elif field == "reason":
        res["reason"] = rng.choice(
            [r for r in ("home", "wipeout", "points", "timeout", "resign") if r != res["reason"]]
        )
        if res["reason"] == "points" and res.get("points") is None:
            res["points"] = [rng.randrange(20), rng.randrange(20)]
    else:
        p = res.get("points") or [0, 0]
        res["points"] = [p[0] + rng.choice([-1, 1]), p[1]]
    return rec, None


@pytest.mark.slow
@SETTINGS
@given(seed=st.integers(0, 10**9), board=st.sampled_from([5, 7]), powers=st.booleans())
def test_a_single_corruption_is_caught_or_really_legal(seed, board, powers):
    record = _game(seed, board, powers)
    bad, first_touched = corrupt(record, random.Random(seed + 1))
    verdict = verify(bad)
    if verdict.ok:
        # The engine calls it legal: the move generator must agree turn by turn, and the
        # claimed result must be the replay's.
        pos = replay_by_generator(bad)
        judge_result(pos, bad["result"])
    else:
        assert verdict.verdict == "invalid"
        if first_touched is not None and verdict.turn is not None:
            # Everything before the corruption is the original, legal game.
            assert verdict.turn >= first_touched, verdict.message


@pytest.mark.slow
@SETTINGS
@given(seed=st.integers(0, 10**9), board=st.sampled_from([5, 7]), powers=st.booleans())
def test_generated_moves_are_exactly_the_accepted_moves(seed, board, powers):
    """At positions from real games, `legal_moves` and `move` agree on every (from, to)."""
    record = _game(seed, board, powers)
    pos = setup(record)
    n = pos.n
    rng = random.Random(seed)
    for turn in record["turns"][: rng.randrange(1, len(record["turns"]) + 1)]:
        s = pos.to_move
        legal = set(pos.legal_moves(s))
        for frm in range(n * n):
            for to in range(n * n):
                trial = pos.copy()
                try:
                    trial.move(frm, to)
                    accepted = True
                except RuleBroken:
                    accepted = False
                assert accepted == ((frm, to) in legal), (square_name(frm, n), square_name(to, n))
        from replays.slow6.verify import play_turn

        play_turn(pos, turn)


def test_replay_by_generator_agrees_on_the_spec_examples(spec_examples):
    for record in spec_examples["slow6-valid"]:
        pos = replay_by_generator(record)
        judge_result(pos, record["result"])


@pytest.fixture
def spec_examples():
    import json

    root = examples_dir()
    return {
        "slow6-valid": [json.loads(line) for line in open(root / "slow6-valid.ndjson")],
    }


def plain_reach(pos: Position, pid: int) -> int:
    """What `Position.reach` must say of an on-board piece: the reach of a move `play_log` may
    play on its plain path (R2.2: 2, a crown 1), 0 while dash, leap or surge is on it (R8)."""
    if pos.dash[pid] or pos.leap[pid] or pos.surge[pid]:
        return 0
    return 1 if pos.rank[pid] == pos.crown else 2


@pytest.mark.slow
@SETTINGS
@given(seed=st.integers(0, 10**9), board=st.sampled_from([5, 7]))
def test_the_plain_paths_reach_follows_every_promotion_and_power(seed, board):
    # play_log trusts `reach` to send a crown's or a powered piece's move through `play`
    record = _game(seed, board, powers=True)
    pos = setup(record)
    for i, turn in enumerate(record["turns"]):
        pos.play_log([turn], play_turn)
        for pid, square in enumerate(pos.pos):
            if square >= 0:
                assert pos.reach[pid] == plain_reach(pos, pid), (i, pid, turn)
    assert verify(record).ok
