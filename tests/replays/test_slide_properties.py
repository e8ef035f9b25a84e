"""Property tests of the Slide rules engine and the verifier's two paths.

`verify` replays on a fast path and hands every record it does not accept to the rules engine
(`Table`), which names the fault; `verify_plainly` is the engine alone. Here: simulated games
verify on both; a single corruption of one is judged the same by both, and as the corruption
can only be judged (a take can only break S2.3 in its own round, ...); games played on the table
with now and then an arbitrary move are judged the same by both; and the engine's own
invariants hold (a round turns one card per seat face up, a push shifts one line, scoring and
groups agree, winners are the lowest score then fewest cards).
"""

from __future__ import annotations

import copy
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replays.slide.engine import (
    CELLS,
    NEIGHBOURS,
    SIDES,
    RuleBroken,
    Table,
    groups,
    legal_sides,
    position,
    score_grid,
    shift,
    taking_order,
    winners,
)
from replays.slide.simulate import deal, simulate_games
from replays.slide.verify import replay, verify, verify_plainly

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _game(seed: int, players: int, policy: str = "random") -> dict:
    return next(simulate_games(1, players, seed, policy=policy))


def _play(record: dict, rounds: int | None = None) -> Table:
    """The record's first `rounds` rounds (all by default) played on a table."""
    table = Table(record["grids"], record["first"])
    for rnd in record["rounds"][:rounds]:
        cells = [r * 4 + c for r, c in rnd["reveals"]]
        table.play_round(cells, rnd["takes"], [edge["side"] for edge in rnd["slides"]])
    return table


def assert_both_paths_agree(record: dict):
    """`verify` (fast path, engine on a fault) and the engine alone give the same verdict, and
    `replay` has facts exactly for a valid game."""
    v = verify(record)
    assert verify_plainly(record) == v
    verdict, facts = replay(record)
    assert verdict == v
    assert (facts is not None) == v.ok
    return v


@SETTINGS
@given(
    seed=st.integers(0, 2**32),
    players=st.integers(2, 6),
    policy=st.sampled_from(["random", "random", "greedy"]),
)
def test_every_simulated_game_verifies(seed, players, policy):
    record = _game(seed, players, policy)
    assert verify(record).ok
    verdict, facts = replay(record)
    assert verdict.ok
    assert [f.score for f in facts.seats] == record["result"]["scores"]
    assert assert_both_paths_agree(record).ok
    assert _play(record).result() == record["result"]
    assert len(facts.takes) == 16 * players
    assert all(
        f.took in f.available and f.choice == (len(set(f.available)) > 1) for f in facts.takes
    )


# What a single corruption of round i can break, and when. Which cards are face down and where
# the gaps are never depends on card values, and whether a slide is legal depends on its gap
# alone: so a changed take can only break S2.3 in its own round (the takes no longer match the
# middle), S2.4 only in the round of the changed reveal or slide (later gaps and sides are the
# logged ones, legal before), and a dropped round leaves the rounds before it legal.
CAN_BREAK = {
    "take": {("S2.3", "this round")},
    "slide": {("S2.4", "this round"), ("S2.2", "later"), ("S2.3", "later"), ("S3.3", None)},
    "reveal": {("S2.2", "this round"), ("S2.3", "this round"), ("S2.4", "this round")}
    | {("S2.2", "later"), ("S2.3", "later"), ("S3.3", None)},
    "drop": {("S2.2", "at or after"), ("S2.3", "at or after"), ("S3.1", None)},
    "score": {("S3.3", None)},
    "left": {("S3.3", None)},
    "winners": {("S3.3", None)},
}


def _when(turn: int | None, i: int) -> str | None:
    if turn is None:
        return None
    return "this round" if turn == i else "later" if turn > i else "before"


@st.composite
def corruption(draw):
    """A simulated game with exactly one thing changed, as a client bug would."""
    players = draw(st.integers(2, 6))
    record = _game(draw(st.integers(0, 2**32)), players)
    bad = copy.deepcopy(record)
    kind = draw(st.sampled_from(["take", "slide", "reveal", "drop", "score", "left", "winners"]))
    i = draw(st.integers(0, 15))
    s = draw(st.integers(0, players - 1))
    rnd = bad["rounds"][i]
    if kind == "take":
        rnd["takes"][s] = draw(st.integers(1, 10))
    elif kind == "slide":
        rnd["slides"][s] = {"side": draw(st.sampled_from(SIDES))}
    elif kind == "reveal":
        rnd["reveals"][s] = [draw(st.integers(0, 3)), draw(st.integers(0, 3))]
    elif kind == "drop":
        del bad["rounds"][i]
    elif kind == "score":
        bad["result"]["scores"][s] += draw(st.integers(-5, 5))
    elif kind == "left":
        bad["result"]["cards_left"][s] += draw(st.integers(-2, 2))
    else:
        bad["result"]["winners"] = draw(
            st.lists(st.integers(0, players - 1), min_size=1, max_size=players)
        )
    return kind, i, record, bad


@SETTINGS
@given(corruption())
def test_a_single_corruption_is_judged_as_the_rules_say(case):
    kind, i, original, bad = case
    plain = verify_plainly(bad)  # the engine alone
    rule, turn, seat = plain.rule, plain.turn, plain.seat
    v = assert_both_paths_agree(bad)
    if rule is None:
        # The corrupted game is itself legal: then the claimed result is the true one.
        assert v.ok, v
        truth = _play(bad).result()
        assert truth["scores"] == bad["result"]["scores"]
        assert truth["cards_left"] == bad["result"]["cards_left"]
        assert set(truth["winners"]) == set(bad["result"]["winners"])
    else:
        assert (v.verdict, v.rule, v.turn) == ("invalid", rule, turn), (kind, v)
        if seat is not None:
            assert v.seat == seat, (kind, v)
        when = _when(turn, i)
        allowed = CAN_BREAK[kind]
        if kind == "drop" and when in ("this round", "later"):
            when = "at or after"
        assert (rule, when) in allowed, (kind, i, v)
    if kind == "drop":
        assert not v.ok  # a game of 15 rounds is never complete (S3.1)
    if bad == original:
        assert v.ok


@SETTINGS
@given(seed=st.integers(0, 2**32), players=st.integers(2, 6), i=st.integers(0, 15))
def test_revealing_a_face_up_card_is_always_caught(seed, players, i):
    record = _game(seed, players)
    # Before round i >= 1 every grid has i face-up cards: the last seat reveals one of them.
    table = _play(record, rounds=i)
    face_up = [cell for cell in range(16) if not table.down[players - 1][cell]]
    if not face_up:  # round 0: nothing is face up yet
        assert i == 0
        return
    bad = copy.deepcopy(record)
    bad["rounds"][i]["reveals"][players - 1] = list(divmod(face_up[0], 4))
    v = verify(bad)
    assert (v.rule, v.turn, v.seat) == ("S2.2", i, players - 1)
    assert verify_plainly(bad) == v


@st.composite
def played_with_slips(draw):
    """A record played on a table by random players who now and then make an arbitrary move
    (any cell, any value, any side) and then go on at random; sometimes a bad deal, a short or
    long log, or a wrong result."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    players = draw(st.integers(2, 6))
    slip = draw(st.sampled_from([0.0, 0.002, 0.01, 0.05, 0.3]))
    grids = deal(rng, players)
    if draw(st.integers(0, 9)) == 0:
        grids[rng.randrange(players)][rng.randrange(CELLS)] = draw(st.sampled_from([0, 11, -2]))
    first = rng.randrange(players)
    n_rounds = draw(st.sampled_from([16, 16, 16, 16, 0, 1, 15, 17]))
    try:
        table: Table | None = Table(grids, first)
    except RuleBroken:
        table = None
    rounds = []
    for i in range(n_rounds):
        cells = []
        for s in range(players):
            legal = table.legal_reveals(s) if table else []
            cell = rng.choice(legal) if legal and rng.random() >= slip else rng.randrange(CELLS)
            cells.append(cell)
            table = _step(table, "reveal", s, cell)
        order = taking_order(first, i, players)
        takes = []
        for s in order:
            legal = table.legal_takes() if table else []
            v = rng.choice(legal) if legal and rng.random() >= slip else rng.randint(1, 10)
            takes.append(v)
            table = _step(table, "take", s, v)
        sides = []
        for s in range(players):
            legal = legal_sides(table.gap(s)) if table else []
            side = rng.choice(legal) if legal and rng.random() >= slip else rng.choice(SIDES)
            sides.append(side)
            table = _step(table, "slide", s, side)
        if table:
            table.end_round()
        rounds.append(
            {
                "reveals": [list(position(c)) for c in cells],
                "takes": takes,
                "slides": [{"side": side} for side in sides],
            }
        )
    if table and table.finished():
        result = table.result()
    else:
        scores = [rng.randint(0, 160) for _ in range(players)]
        left = [rng.randint(0, 16) for _ in range(players)]
        result = {"scores": scores, "cards_left": left, "winners": winners(scores, left)}
    wrong = draw(st.sampled_from([None, None, None, "scores", "cards_left", "winners"]))
    if wrong == "winners":
        result["winners"] = [rng.randrange(players)]
    elif wrong is not None:
        result[wrong][rng.randrange(players)] += rng.choice([-1, 1])
    return {
        "game_id": "5e1f0000-0000-4000-8000-000000000000",
        "players": players,
        "match": None,
        "first": first,
        "grids": grids,
        "rounds": rounds,
        "result": result,
    }


def _step(table: Table | None, step: str, seat: int, move) -> Table | None:
    """Make a move on the table; None once a move broke a rule (the game is off the rails)."""
    if table is None:
        return None
    try:
        getattr(table, step)(seat, move)
    except RuleBroken:
        return None
    return table


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(played_with_slips())
def test_the_fast_path_judges_every_game_as_the_engine_does(record):
    assert_both_paths_agree(record)


# --- the engine's own invariants ------------------------------------------------------------


@SETTINGS
@given(seed=st.integers(0, 2**32), players=st.integers(2, 6))
def test_a_round_turns_one_card_face_up_per_seat_and_loses_no_card(seed, players):
    record = _game(seed, players)
    table = Table(record["grids"], record["first"])
    cards = Counter(v for g in record["grids"] for v in g)
    for i, rnd in enumerate(record["rounds"]):
        cells = [r * 4 + c for r, c in rnd["reveals"]]
        table.play_round(cells, rnd["takes"], [edge["side"] for edge in rnd["slides"]])
        assert [sum(d) for d in table.down] == [15 - i] * players
        assert Counter(v for g in table.values for v in g) == cards  # the middle is empty again
    assert table.finished() and not any(any(d) for d in table.down)  # S3.1


def test_a_push_shifts_exactly_the_line_between_the_edge_and_the_gap():
    for gap in range(CELLS):
        r, c = position(gap)
        for side in SIDES:
            cells = list(range(100, 100 + CELLS))
            if side not in legal_sides(gap):
                with pytest.raises(ValueError):
                    shift(cells, gap, side, 0)  # S2.4: never directly into the gap
                continue
            edge = shift(cells, gap, side, 0)
            line = {
                "left": [r * 4 + k for k in range(c + 1)],
                "right": [r * 4 + k for k in range(3, c - 1, -1)],
                "top": [k * 4 + c for k in range(r + 1)],
                "bottom": [k * 4 + c for k in range(3, r - 1, -1)],
            }[side]  # from the edge to the gap
            assert edge == line[0] and cells[edge] == 0
            assert [cells[k] for k in line[1:]] == [100 + k for k in line[:-1]]
            assert all(cells[k] == 100 + k for k in range(CELLS) if k not in line)


@SETTINGS
@given(st.lists(st.integers(1, 10), min_size=16, max_size=16))
def test_scoring_removes_exactly_the_groups(grid):
    found = groups(grid)
    removed = sum(size for _, size in found)
    assert score_grid(grid) == (sum(grid) - sum(v * size for v, size in found), 16 - removed)
    assert all(size >= 2 for _, size in found) and found == sorted(found)
    # A card stays exactly when no side neighbour is equal (S3.2).
    stays = [all(grid[j] != grid[i] for j in NEIGHBOURS[i]) for i in range(CELLS)]
    assert sum(stays) == 16 - removed


@SETTINGS
@given(
    st.lists(st.tuples(st.integers(0, 160), st.integers(0, 16)), min_size=2, max_size=6),
)
def test_winners_have_the_lowest_score_then_fewest_cards(seats):
    scores = [s for s, _ in seats]
    left = [n for _, n in seats]
    won = winners(scores, left)
    best = min(seats)
    assert won == [s for s, key in enumerate(seats) if key == best]
    assert won and all(scores[w] == min(scores) for w in won)
