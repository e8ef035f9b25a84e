"""Simulated Slide uploads: complete, legal schema-1 records played by bots, deterministic for
a seed, with a realistic spread of modes, platforms, client versions, dates and matches."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from replays.rulesets import STANDARD, STANDARD_NAME, Ruleset
from replays.slide.bots import Bot, make_bot
from replays.slide.engine import CELLS, MAX_VALUE, MIN_VALUE, ROUNDS, Table, position
from replays.verdict import Record

MODES = (("online", 55), ("friend", 25), ("computer", 20))
PLATFORMS = (("ios", 30), ("android", 35), ("web", 15), ("desktop", 12), ("bot", 8))
VERSIONS = (("2.4.0", 12), ("2.5.0", 18), ("2.5.3", 30), ("3.0.0", 28), ("3.1.0-beta.2", 12))
MATCH_SHARE = 0.2  # share of tables that play a match (S3.4) rather than a single game
MATCH_TARGET = 100  # S3.4 (standard): a match ends after the game where a total reaches this
MAX_MATCH_GAMES = 50  # a safety stop; bots reach 100 in a handful of games
COPIES = 10  # deck: every value 1..10 ten times (100 cards; 6 players use 96)
POLICIES = ("mixed", "random", "greedy")
WINDOW_DAYS = 90


def _weighted(rng: random.Random, table: Sequence[tuple[str, int]]) -> str:
    names = [name for name, _ in table]
    return rng.choices(names, weights=[w for _, w in table])[0]


def _uuid4(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def deal(rng: random.Random, players: int) -> list[list[int]]:
    deck = [v for v in range(MIN_VALUE, MAX_VALUE + 1) for _ in range(COPIES)]
    rng.shuffle(deck)
    return [deck[s * CELLS : (s + 1) * CELLS] for s in range(players)]


def play(
    grids: list[list[int]], first: int, bots: Sequence[Bot], min_group: int = 2
) -> tuple[list[dict[str, Any]], dict[str, list[int]]]:
    """Play a whole game; returns the logged rounds and the result, as the format writes them
    (scored with the ruleset's `min_group`, S3.2)."""
    table = Table(grids, first, min_group)
    seats = range(table.players)
    rounds: list[dict[str, Any]] = []
    while not table.finished():
        cells = [bot.reveal(table, s) for s, bot in enumerate(bots)]  # simultaneous (S2.2)
        for s in seats:
            table.reveal(s, cells[s])
        takes = []
        for s in table.order():
            v = bots[s].take(table, s)
            table.take(s, v)
            takes.append(v)
        sides = [bots[s].slide(table, s) for s in seats]
        for s in seats:
            table.slide(s, sides[s])
        table.end_round()
        rounds.append(
            {
                "reveals": [list(position(c)) for c in cells],
                "takes": takes,
                "slides": [{"side": side} for side in sides],
            }
        )
    return rounds, table.result()


def _policies(rng: random.Random, players: int, policy: str) -> list[str]:
    if policy == "mixed":
        return ["greedy" if rng.random() < 0.5 else "random" for _ in range(players)]
    return [policy] * players


def simulate_games(
    n: int, players: int, seed: int, *, policy: str = "mixed", rules: Ruleset | None = None
) -> Iterator[Record]:
    """Yield `n` valid schema-1 Slide records for `players` seats, deterministic for `seed`,
    played under `rules` (None: standard; another ruleset is named in each record).

    `policy`: "mixed" (each seat greedy or random at random), "random" or "greedy". About a
    fifth of the tables play a match: games chained under one match id until some running total
    reaches the ruleset's match_target (100, S3.4), the first player moving on each game; a
    match that would not fit in the
    remaining count is left out whole, so every match in the output is complete.
    """
    if not 2 <= players <= 6:
        raise ValueError(f"players must be 2..6, got {players}")
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    rules = rules or STANDARD["slide"]
    if rules.game != "slide":
        raise ValueError(f"ruleset {rules.name} is for {rules.game}, not slide")
    rng = random.Random(seed)
    # A fixed epoch from the seed, never the wall clock: same seed, same dates.
    epoch = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=rng.randrange(365))
    left = n
    while left > 0:
        games = _table(rng, players, policy, epoch, rng.random() < MATCH_SHARE, rules)
        if len(games) > left:
            continue
        yield from games
        left -= len(games)


def _table(
    rng: random.Random,
    players: int,
    policy: str,
    epoch: datetime,
    as_match: bool,
    rules: Ruleset | None = None,
) -> list[Record]:
    """One table's games: a single game, or a whole match (under `rules`; None: standard)."""
    rules = rules or STANDARD["slide"]
    min_group, target = rules.params["min_group"], rules.params["match_target"]
    named = {} if rules.name == STANDARD_NAME else {"ruleset": rules.name}
    bots = [make_bot(name, rng) for name in _policies(rng, players, policy)]
    client = {"platform": _weighted(rng, PLATFORMS), "version": _weighted(rng, VERSIONS)}
    mode = _weighted(rng, MODES)
    when = epoch - timedelta(seconds=rng.randrange(WINDOW_DAYS * 86400))
    first = rng.randrange(players)
    match_id = _uuid4(rng) if as_match else None
    totals = [0] * players
    games: list[Record] = []
    for number in range(1, MAX_MATCH_GAMES + 1):
        grids = deal(rng, players)
        game_first = (first + number - 1) % players
        rounds, result = play(grids, game_first, bots, min_group)  # type: ignore[arg-type]
        games.append(
            {
                "schema": 1,
                "game_id": _uuid4(rng),
                "game": "slide",
                "client": dict(client),
                "mode": mode,
                "ended_at": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                **named,
                "players": players,
                "match": {"id": match_id, "game": number} if as_match else None,
                "first": game_first,
                "grids": grids,
                "rounds": rounds,
                "result": result,
            }
        )
        totals = [t + s for t, s in zip(totals, result["scores"], strict=True)]
        if not as_match or max(totals) >= target:  # type: ignore[operator]
            break
        when += timedelta(seconds=rng.randrange(240, 900))  # the next game of the match
    assert len(games[-1]["rounds"]) == ROUNDS
    return games
