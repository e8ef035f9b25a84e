"""Slide players for the simulator: a uniformly random one and a greedy group builder.

A bot sees what a player at the table sees (`Table.visible`): face-up values, the gaps, the
middle. It never reads a face-down value, its own included.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from replays.slide.engine import CELLS, NEIGHBOURS, Table, legal_sides, shift

DECK_MEAN = 5.5  # expected value of an unseen card (values 1..10, evenly represented)
SPOIL_SLACK = 2.0  # points of own expected score the greedy bot gives up to deny the next taker

T = TypeVar("T")
# (side, the grid after the push with the entry cell empty, entry, its expected cost)
Option = tuple[str, list[int], int, float]


class Bot(Protocol):
    """A Slide player: its choice at each step of a round."""

    def reveal(self, table: Table, seat: int) -> int: ...

    def take(self, table: Table, seat: int) -> int: ...

    def slide(self, table: Table, seat: int) -> str: ...


class RandomBot:
    """Uniformly random among the legal actions: reveal cell, distinct value to take, side."""

    name = "random"

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def reveal(self, table: Table, seat: int) -> int:
        return self.rng.choice(table.legal_reveals(seat))

    def take(self, table: Table, seat: int) -> int:
        return self.rng.choice(table.legal_takes())

    def slide(self, table: Table, seat: int) -> str:
        return self.rng.choice(legal_sides(table.gap(seat)))


def expected_cost(vis: list[int]) -> float:
    """Expected final score of a visible grid if nothing changed: face-up cards without an equal
    neighbour count their value, face-down cards (-1) the deck mean, the gap (0) nothing."""
    total = 0.0
    for i in range(CELLS):
        v = vis[i]
        if v > 0:
            for j in NEIGHBOURS[i]:
                if vis[j] == v:
                    break
            else:
                total += v
        elif v < 0:
            total += DECK_MEAN
    return total


def _placed_delta(after: list[int], entry: int, v: int) -> float:
    """Change of `expected_cost(after)` when the empty `entry` cell receives value `v`."""
    delta = 0.0
    joined = False
    for j in NEIGHBOURS[entry]:
        if after[j] == v:
            joined = True
            for k in NEIGHBOURS[j]:
                if after[k] == v:
                    break  # j already cancels with another neighbour
            else:
                delta -= v  # j was single; now it cancels with the new card
    return delta if joined else delta + v


def _options(vis: list[int], gap: int) -> list[Option]:
    """Per legal side: (side, grid after the push with the entry cell empty, entry, its cost)."""
    out = []
    for side in legal_sides(gap):
        after = vis.copy()
        entry = shift(after, gap, side, 0)
        out.append((side, after, entry, expected_cost(after)))
    return out


def _best_with(options: list[Option], v: int) -> float:
    return min(cost + _placed_delta(after, entry, v) for _, after, entry, cost in options)


class GreedyBot:
    """Builds groups and spoils the next taker's.

    - reveal: the face-down cell whose gap leaves the best expected grid (pushes that keep
      pairs, edge cells next to face-up cards that an unknown card could pair with);
    - take: the value that lowers its own expected score most; among values within
      SPOIL_SLACK of that, the one the next taker wants most;
    - slide: the side that gives the lowest expected score with the card taken.
    """

    name = "greedy"

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def _pick(self, scored: Sequence[tuple[float, T]]) -> T:
        best = min(score for score, _ in scored)
        return self.rng.choice([x for score, x in scored if score <= best + 1e-9])

    def reveal(self, table: Table, seat: int) -> int:
        vis = table.visible(seat)
        scored: list[tuple[float, int]] = []
        for cell in table.legal_reveals(seat):
            trial = vis.copy()
            trial[cell] = 0
            best = math.inf
            for _, after, entry, cost in _options(trial, cell):
                # An unknown card: the deck mean, unless it lands next to a value it can join.
                exp = DECK_MEAN
                for u in {after[j] for j in NEIGHBOURS[entry] if after[j] > 0}:
                    exp += (_placed_delta(after, entry, u) - u) / 10.0
                total = cost + exp
                if total < best:
                    best = total
            scored.append((best, cell))
        return self._pick(scored)

    def take(self, table: Table, seat: int) -> int:
        values = table.legal_takes()
        if len(values) == 1:
            return values[0]
        mine = _options(table.visible(seat), table.gap(seat))
        own = {v: _best_with(mine, v) for v in values}
        best = min(own.values())
        candidates = [v for v in values if own[v] <= best + SPOIL_SLACK]
        order = table.order()
        k = order.index(seat)
        if len(candidates) > 1 and k + 1 < len(order):
            nxt = order[k + 1]
            theirs = _options(table.visible(nxt), table.gap(nxt))
            # Deny the card the next taker wants most; own score breaks ties.
            return self._pick([(_best_with(theirs, v) * 100 + own[v], v) for v in candidates])
        return self._pick([(own[v], v) for v in candidates])

    def slide(self, table: Table, seat: int) -> str:
        card = table.card(seat)
        options = _options(table.visible(seat), table.gap(seat))
        return self._pick(
            [
                (cost + _placed_delta(after, entry, card), side)
                for side, after, entry, cost in options
            ]
        )


BOTS: dict[str, Callable[[random.Random], Bot]] = {"random": RandomBot, "greedy": GreedyBot}


def make_bot(name: str, rng: random.Random) -> Bot:
    return BOTS[name](rng)
