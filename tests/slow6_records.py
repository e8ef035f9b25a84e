"""Builders for Slow6 upload records (schema 1) used by the rule tests, and verdict assertions.

The builders only fill in the fields a test does not care about (ids, client, timestamps, the
power picks nobody uses); every move, position and result is written by the test itself. Results
are never computed by the engine: a test states the result it worked out by hand from the spec.
The one convenience is `resign()` / `timeout()` without a winner, which fills in "the side to move
loses" (R6.4) from the turn count alone (turns alternate from `first`, R1.6).
"""

from __future__ import annotations

import itertools
from typing import Any

FILES = "abcdefg"
CROWN = {5: 6, 7: 8}  # R1.5: crown rank N+1
T = {5: 15, 7: 21}  # R2.5: turns each
IDENTITY = {5: [[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]], 7: [[1, 2, 3, 4, 5, 6, 7]] * 2}
# Used to pad power picks that a test does not care about (unused picks change nothing).
FILLER_POWERS = ("shield", "dash", "leap", "swap", "recall", "trap", "shove", "surge", "freeze")

_ids = itertools.count(1)
_AUTO = object()  # "the side to move loses": filled in by the builder from the turn count
PASS: dict = {"moves": []}


def new_game_id() -> str:
    return f"5106e000-0000-4000-8000-{next(_ids):012x}"


def t(*moves: str, power: str | None = None, target: Any = None) -> dict:
    """One turn: `t("c1-c3")`, `t("a1-a2", power="freeze", target="c5")`, `t()` is a pass."""
    turn: dict = {"moves": list(moves)}
    if power is not None:
        turn["power"] = power
        if target is not None:
            turn["target"] = target
    return turn


def _turn(spec: str | dict | list | None) -> dict:
    if spec is None:
        return {"moves": []}
    if isinstance(spec, str):
        return {"moves": [spec]}
    if isinstance(spec, list):
        return {"moves": list(spec)}
    return dict(spec, moves=list(spec["moves"]))


# --- results ---------------------------------------------------------------------------------


def resign(winner: Any = _AUTO, points: list[int] | None = None) -> dict:
    return {"winner": winner, "reason": "resign", "points": points}


def timeout(winner: Any = _AUTO, points: list[int] | None = None) -> dict:
    return {"winner": winner, "reason": "timeout", "points": points}


def home(winner: int | None, points: list[int] | None = None) -> dict:
    return {"winner": winner, "reason": "home", "points": points}


def wipeout(winner: int | None, points: list[int] | None = None) -> dict:
    """`winner=None` is the double wipe-out draw (R6.2)."""
    return {"winner": winner, "reason": "wipeout", "points": points}


def points(p0: int, p1: int, winner: Any = _AUTO) -> dict:
    """R6.3 result from hand-counted totals; the winner is the higher total unless given."""
    if winner is _AUTO:
        winner = 0 if p0 > p1 else 1 if p1 > p0 else None
    return {"winner": winner, "reason": "points", "points": [p0, p1]}


def _fill_result(result: dict, first: int, n_turns: int) -> dict:
    result = dict(result)
    if result.get("winner", None) is _AUTO:
        to_move = first if n_turns % 2 == 0 else 1 - first
        result["winner"] = 1 - to_move
    return result


def _picks(powers) -> list[list[str]] | None:
    if powers is None:
        return None
    out = []
    for side_picks in powers:
        picks = list(side_picks)
        for filler in FILLER_POWERS:
            if len(picks) >= 3:
                break
            if filler not in picks:
                picks.append(filler)
        out.append(picks)
    return out


# --- records ---------------------------------------------------------------------------------


def game(
    board: int = 5,
    powers=None,
    lineups: list[list[int]] | None = None,
    first: int = 0,
    turns=(),
    result: dict | None = None,
    hidden: bool = False,
    mode: str = "online",
    explicit_powers: list[list[str]] | None = None,
) -> dict:
    """A full schema-1 Slow6 record from the normal start (R1.3).

    `powers`: None for a game without powers, else the two sides' picks, padded to 3 each with
    powers the test does not use; `explicit_powers` gives the picks exactly as written (for the
    R8.1 tests about what was picked). `turns`: turn dicts (see `t`), move strings or None (pass).
    """
    if result is None:
        raise ValueError("a test must state the result it expects the game to have")
    picks = explicit_powers if explicit_powers is not None else _picks(powers)
    turns = [_turn(x) for x in turns]
    return {
        "schema": 1,
        "game_id": new_game_id(),
        "game": "slow6",
        "client": {"platform": "bot", "version": "1.0.0"},
        "mode": mode,
        "ended_at": "2026-12-01T12:00:00Z",
        "rules": {"board": board, "powers": picks is not None, "hidden": hidden},
        "ai": None,
        "challenge": None,
        "first": first,
        "lineups": [list(x) for x in (lineups or IDENTITY[board])],
        "powers": picks,
        "turns": turns,
        "result": _fill_result(result, first, len(turns)),
    }


def start_square(board: int, lineups: list[list[int]], side: int, rank: int) -> str:
    """Where `side`'s piece of `rank` started (R1.3): its file in the lineup, own back row."""
    row = 1 if side == 0 else board
    return f"{FILES[lineups[side].index(rank)]}{row}"


def challenge(
    board: int = 5,
    pieces=(),
    to_move: int = 0,
    turns_taken=(0, 0),
    lineups: list[list[int]] | None = None,
    turns=(),
    result: dict | None = None,
    powers=None,
    first: int | None = None,
) -> dict:
    """A challenge record (R9): play starts from `pieces`.

    Each piece is `(side, rank, square, start=None, wounded=False, stunned=False)`; a missing
    start of a non-crown is the square where that rank started by the lineups (consistent with
    R9.1); a crown's start must be given (its original rank is `lineups[side][file of start]`).
    `first` defaults to `to_move` (R9.2).
    """
    lineups = [list(x) for x in (lineups or IDENTITY[board])]
    out_pieces = []
    for spec in pieces:
        side, rank, square, *rest = spec
        start, wounded, stunned = (list(rest) + [None, False, False][len(rest) :])[:3]
        if start is None:
            if rank == CROWN[board]:
                raise ValueError(f"crown at {square} needs its start square")
            start = start_square(board, lineups, side, rank)
        out_pieces.append(
            {
                "side": side,
                "rank": rank,
                "square": square,
                "start": start,
                "wounded": wounded,
                "stunned": stunned,
            }
        )
    rec = game(
        board=board,
        powers=powers,
        lineups=lineups,
        first=to_move if first is None else first,
        turns=turns,
        result=result,
        mode="challenge",
    )
    rec["challenge"] = {
        "id": "test-position",
        "position": {
            "to_move": to_move,
            "turns_taken": list(turns_taken),
            "pieces": out_pieces,
        },
    }
    return rec


def crown(side: int, square: str, start: str, wounded=False, stunned=False, board: int = 5):
    """A crown piece spec for `challenge(pieces=...)`."""
    return (side, CROWN[board], square, start, wounded, stunned)


# --- verdicts --------------------------------------------------------------------------------


def verify(record: dict, rulesets=None):
    """`rulesets`: the verifier's lookup, for a record that names a ruleset (rulesets.md)."""
    # Imported here so a missing engine fails each test, not the collection of the module.
    from replays.verifier import verify_record

    return verify_record(record, rulesets)


def _describe(v) -> str:
    return f"got verdict={v.verdict!r} rule={v.rule!r} turn={v.turn!r} message={v.message!r}"


def assert_valid(record: dict, rulesets=None):
    v = verify(record, rulesets)
    assert v.verdict == "valid", _describe(v)
    return v


def assert_invalid(
    record: dict, rule: str, turn: int | None, also: tuple[str, ...] = (), rulesets=None
):
    """The record breaks `rule` at `turn` (R10); `also` lists rules the spec lets it name too."""
    v = verify(record, rulesets)
    assert v.verdict == "invalid", _describe(v)
    assert v.rule == rule or v.rule in also, f"expected rule {rule} (or {also}); " + _describe(v)
    assert v.turn == turn, f"expected turn {turn}; " + _describe(v)
    assert v.message, "an invalid verdict must say why"
    return v
