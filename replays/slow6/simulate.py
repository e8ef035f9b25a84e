"""Simulated Slow6 traffic: complete, valid schema-1 records played by the bots.

Deterministic for a seed: every random choice comes from one `random.Random`, and dates are
spread over the 90 days before a fixed epoch, never the wall clock.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

from ..rulesets import STANDARD, STANDARD_NAME, Ruleset
from ..verdict import Record
from .board import square_name
from .bots import Move, make_player
from .position import Lineups, Position, Target, Turn

_T = TypeVar("_T")

EPOCH = datetime(2026, 11, 30, tzinfo=UTC)
# Weighted tables: the names are replays/vocabulary.py's (tests/replays/test_vocabulary.py
# holds them).
MODES = (("online", 45), ("friend", 15), ("computer", 25), ("challenge", 8), ("tutorial", 7))
PLATFORMS = (("ios", 35), ("android", 35), ("web", 15), ("desktop", 10), ("bot", 5))
VERSIONS = (("2.4.0", 10), ("2.5.0", 15), ("2.5.3", 25), ("3.0.0", 35), ("3.1.0-beta.2", 15))
HUMAN_LEVELS = ((0, 5), (1, 30), (2, 40), (3, 20), (4, 5))  # how well people play, as bot levels
QUIT_RATE = 0.06  # games that end in a timeout or a resignation


def _weighted(rng: random.Random, table: Sequence[tuple[_T, int]]) -> _T:
    return rng.choices([v for v, _ in table], [w for _, w in table])[0]


def game_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def simulate_game(
    rng: random.Random,
    *,
    board: int = 5,
    powers: bool = False,
    hidden: bool = False,
    mode: str = "online",
    levels: tuple[int, int] = (2, 2),
    picks: tuple[list[str], list[str]] | None = None,
    first: int | None = None,
    lineups: Lineups | None = None,
    ai: dict[str, int] | None = None,
    challenge_id: str | None = None,
    quit_rate: float = 0.0,
    client: dict[str, str] | None = None,
    ended_at: str | None = None,
    rules: Ruleset | None = None,
) -> Record:
    """Play one game between two players of the given levels (0 = random, 1..4 bots), under
    `rules` (None: standard; another ruleset is named in the record)."""
    n = board
    rules = rules or STANDARD["slow6"]
    if rules.game != "slow6":
        raise ValueError(f"ruleset {rules.name} is for {rules.game}, not slow6")
    limit = cast(int, rules.params[f"turn_limit_{n}"])
    players = [make_player(levels[0], rng), make_player(levels[1], rng)]
    if lineups is None:
        lineups = [players[s].choose_lineup(n) for s in (0, 1)]
    if powers and picks is None:
        if rules.name == STANDARD_NAME:  # (the same draws as before rulesets existed)
            picks = (players[0].pick_powers(), players[1].pick_powers())
        else:
            picks = (players[0].pick_powers(rules), players[1].pick_powers(rules))
    if not powers:
        picks = None
    challenge = None
    if mode == "challenge":
        challenge_id = challenge_id or f"set-{rng.randrange(1, 201):03d}"
        position = challenge_position(challenge_id, n, lineups, limit)
        first = position["to_move"]
        challenge = {"id": challenge_id, "position": position}
        pos = Position.from_challenge(n, lineups, position, picks, rules)
    else:
        first = rng.randrange(2) if first is None else first
        pos = Position.start_position(n, lineups, first, picks, rules)
    turns: list[Turn] = []
    quit_at = rng.randrange(2, 2 * limit) if rng.random() < quit_rate else None
    while not pos.over and len(turns) != quit_at:
        power, target, moves = players[pos.to_move].turn(pos)
        turns.append(_turn_record(power, target, moves, n))
        if power:
            pos.use_power(power, target)
        for i, mv in enumerate(moves):
            pos.move(*mv)
            if pos.over and i == 0:
                break
        pos.end_turn()
    result: dict[str, Any]
    if pos.over:
        result = {"winner": pos.winner, "reason": pos.reason}
        result["points"] = (
            list(pos.points()) if pos.reason == "points" or rng.random() < 0.3 else None
        )
    else:
        reason = "timeout" if rng.random() < 0.3 else "resign"
        result = {"winner": 1 - pos.to_move, "reason": reason, "points": None}
    named = {} if rules.name == STANDARD_NAME else {"ruleset": rules.name}
    return {
        "schema": 1,
        "game_id": game_uuid(rng),
        "game": "slow6",
        "client": client
        or {"platform": _weighted(rng, PLATFORMS), "version": _weighted(rng, VERSIONS)},
        "mode": mode,
        "ended_at": ended_at or _date(rng),
        **named,
        "rules": {"board": n, "powers": bool(picks), "hidden": hidden},
        "ai": ai,
        "challenge": challenge,
        "first": first,
        "lineups": [list(lineups[0]), list(lineups[1])],
        "powers": [list(picks[0]), list(picks[1])] if picks else None,
        "turns": turns,
        "result": result,
    }


def _turn_record(power: str | None, target: Target, moves: list[Move], n: int) -> Turn:
    t: Turn = {}
    if power:
        t["power"] = power
        if power == "swap":  # (the power decides the target's type: see Position.use_power)
            a, b = cast("tuple[int, int]", target)
            t["target"] = [square_name(a, n), square_name(b, n)]
        elif power != "double":
            t["target"] = square_name(cast(int, target), n)
    t["moves"] = [f"{square_name(a, n)}-{square_name(b, n)}" for a, b in moves]
    return t


def _date(rng: random.Random) -> str:
    when = EPOCH - timedelta(seconds=rng.randrange(90 * 86400))
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


# (id, board, lineups, plies played) -> the position
_CHALLENGES: dict[tuple[str, int, tuple[tuple[int, ...], ...], int], Record] = {}


def challenge_position(
    challenge_id: str, n: int, lineups: Lineups, limit: int | None = None
) -> Record:
    """The set position of a challenge: the same for everyone with the same id (R9). `limit`:
    the ruleset's turn limit T, which the turns taken stay below (R9.2; None: standard's)."""
    plies = 2 * n if limit is None else min(2 * n, 2 * limit - 1)
    key = (challenge_id, n, tuple(map(tuple, lineups)), plies)
    if key not in _CHALLENGES:
        rng = random.Random(f"{challenge_id}/{n}/{key[2]}")
        while True:
            pos = Position.start_position(n, lineups, rng.randrange(2))
            players = [make_player(1, rng), make_player(1, rng)]
            for _ in range(rng.randrange(4, plies)):
                if pos.over:
                    break
                _, _, moves = players[pos.to_move].turn(pos)
                for mv in moves:
                    pos.move(*mv)
                pos.end_turn()
            stunned = any(pos.catchable(p) for p in range(len(pos.side)))
            if not pos.over and not stunned:
                break
        pieces = [
            {"side": pos.side[p], "rank": pos.rank[p], "square": square_name(pos.pos[p], n),
             "start": square_name(pos.start[p], n), "wounded": pos.wounded[p], "stunned": False}
            for p in range(len(pos.side)) if pos.pos[p] >= 0
        ]  # fmt: skip
        _CHALLENGES[key] = {
            "to_move": pos.to_move,
            "turns_taken": list(pos.taken),
            "pieces": pieces,
        }
    return _CHALLENGES[key]


def random_game_settings(
    rng: random.Random,
    board: int | None = None,
    powers: bool | None = None,
    hidden: bool | None = None,
) -> dict[str, Any]:
    """Mode, rules and players for one realistic game."""
    mode = _weighted(rng, MODES)
    n = board or (5 if rng.random() < 0.75 else 7)
    if hidden is None:
        hidden = rng.random() < 0.15 and not powers
    if powers is None:
        powers = (not hidden) and rng.random() < 0.55
    human = [_weighted(rng, HUMAN_LEVELS), _weighted(rng, HUMAN_LEVELS)]
    ai = None
    if mode == "computer":
        side, level = rng.randrange(2), rng.randrange(1, 5)
        human[side] = level
        ai = {"side": side, "level": level}
    elif mode == "tutorial":
        n, powers, hidden = 5, False, False
    return {"board": n, "powers": powers, "hidden": hidden, "mode": mode,
            "levels": tuple(human), "ai": ai}  # fmt: skip


def simulate_games(
    n: int, *, board: int | None = None, powers: bool | None = None,
    hidden: bool | None = None, seed: int = 0, max_level: int = 4,
    rules: Ruleset | None = None,
) -> Iterator[Record]:  # fmt: skip
    """`n` realistic games: a spread of modes, platforms, client versions, dates and players,
    played under `rules` (None: standard)."""
    rng = random.Random(seed)
    for _ in range(n):
        settings = random_game_settings(rng, board, powers, hidden)
        settings["levels"] = tuple(min(lv, max_level) for lv in settings["levels"])
        yield simulate_game(rng, quit_rate=QUIT_RATE, rules=rules, **settings)
