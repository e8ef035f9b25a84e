"""The Slide rules engine (slide-rules.md S1-S4): grids, the three steps of a round, scoring, and
which rule a fault breaks.

A seat's grid is two flat lists of 16 entries, row by row (index = 4 * row + col): `values`
(card values 1..10; 0 marks the gap while the revealed card is in the middle) and `down`
(True while the card is face down). No object per card.

`Table` is the one place the rules are decided: the bots and the simulator play on it, and the
replay verifier's fast path (`replays.slide.verify`) hands it every record that breaks a rule,
so that the rule, round, seat and message of a verdict all come from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

_T = TypeVar("_T")

SIZE = 4
CELLS = 16
ROUNDS = 16
MIN_VALUE, MAX_VALUE = 1, 10
SIDES = ("left", "right", "top", "bottom")

# Orthogonal neighbours of each cell (S3.2: corner contact does not count).
NEIGHBOURS: tuple[tuple[int, ...], ...] = tuple(
    tuple(
        (r + dr) * SIZE + (c + dc)
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
        if 0 <= r + dr < SIZE and 0 <= c + dc < SIZE
    )
    for r in range(SIZE)
    for c in range(SIZE)
)

# Orthogonally adjacent cell pairs (i < j), for scoring.
PAIRS: tuple[tuple[int, int], ...] = tuple(
    (i, j) for i in range(CELLS) for j in NEIGHBOURS[i] if i < j
)


class RuleBroken(ValueError):
    """A move or a claim that breaks `rule`; `round` is the 0-based round it happened in (None
    for the deal and the result, S4.2-S4.3) and `seat` the seat at fault, if one is."""

    def __init__(self, rule: str, message: str, *, round: int | None, seat: int | None) -> None:
        super().__init__(f"{message} ({rule})")
        self.rule = rule
        self.message = message
        self.round = round
        self.seat = seat


def position(index: int) -> tuple[int, int]:
    """(row, col) of a cell index."""
    return divmod(index, SIZE)


def taking_order(first: int, round_index: int, players: int) -> list[int]:
    """S2.1, S2.3: the seats in taking order, clockwise from the round leader, who is seat
    (first + round_index) mod P."""
    leader = (first + round_index) % players
    return [(leader + k) % players for k in range(players)]


def edge_blocked(gap: int, side: str) -> bool:
    """S2.4: True when the gap itself touches `side`, so a card cannot enter from there."""
    row, col = divmod(gap, SIZE)
    if side == "left":
        return col == 0
    if side == "right":
        return col == SIZE - 1
    if side == "top":
        return row == 0
    if side == "bottom":
        return row == SIZE - 1
    raise ValueError(f"unknown side {side!r}")


def legal_sides(gap: int) -> list[str]:
    return [side for side in SIDES if not edge_blocked(gap, side)]


def _push_plan(gap: int, side: str) -> tuple[slice, slice, int] | None:
    """(destination slice, source slice, edge cell) of a push, None when S2.4 forbids it."""
    if edge_blocked(gap, side):
        return None
    row, col = divmod(gap, SIZE)
    if side == "left":
        edge = row * SIZE
        return slice(edge + 1, gap + 1), slice(edge, gap), edge
    if side == "right":
        edge = row * SIZE + SIZE - 1
        return slice(gap, edge), slice(gap + 1, edge + 1), edge
    if side == "top":
        return slice(col + SIZE, gap + 1, SIZE), slice(col, gap, SIZE), col
    edge = (SIZE - 1) * SIZE + col
    return slice(gap, edge, SIZE), slice(gap + SIZE, edge + 1, SIZE), edge


# side -> per gap cell the push plan, so that a push is a lookup and one slice copy.
PUSH_PLANS: dict[str, tuple[tuple[slice, slice, int] | None, ...]] = {
    side: tuple(_push_plan(gap, side) for gap in range(CELLS)) for side in SIDES
}


def shift(cells: list[_T], gap: int, side: str, card: _T) -> int:
    """S2.4 on one list in place: the entries between `side`'s edge and the gap move one step
    towards the gap and `card` lands on the edge cell, whose index is returned. ValueError when
    the gap touches that edge."""
    plan = PUSH_PLANS[side][gap]
    if plan is None:
        raise ValueError(f"the gap {position(gap)} touches the {side} edge (S2.4)")
    into, out_of, edge = plan
    cells[into] = cells[out_of]
    cells[edge] = card
    return edge


def push(values: list[int], down: list[bool], gap: int, side: str, card: int) -> None:
    """S2.4 on a seat's grid: the pushed cards keep their face-down flag, the taken card
    enters face up."""
    shift(values, gap, side, card)
    shift(down, gap, side, False)


MIN_GROUP = 2  # S3.2 under `standard`: a group of two or more cards cancels


def score_grid(values: Sequence[int], min_group: int = MIN_GROUP) -> tuple[int, int]:
    """S3.2-S3.3 on a final (all face-up) grid: (score, cards left). Under `standard` a card
    is removed iff it shares a side with an equal card (its group then has two or more cards
    and goes whole); a ruleset's larger `min_group` removes only groups that large."""
    if min_group == MIN_GROUP:
        gone = {k for i, j in PAIRS if values[i] == values[j] for k in (i, j)}
    else:
        gone = {k for cells in _group_cells(values) if len(cells) >= min_group for k in cells}
    return sum(values) - sum([values[k] for k in gone]), CELLS - len(gone)


def _group_cells(values: Sequence[int]) -> list[list[int]]:
    """The cells of every group of two or more touching equal cards (S3.2)."""
    paired = [False] * CELLS
    for i, j in PAIRS:
        if values[i] == values[j]:
            paired[i] = paired[j] = True
    found = []
    for start in range(CELLS):
        if not paired[start]:
            continue
        v = values[start]
        paired[start] = False
        stack, cells = [start], []
        while stack:
            i = stack.pop()
            cells.append(i)
            for j in NEIGHBOURS[i]:
                if paired[j] and values[j] == v:
                    paired[j] = False
                    stack.append(j)
        found.append(cells)
    return found


def groups(values: Sequence[int], min_group: int = MIN_GROUP) -> list[tuple[int, int]]:
    """The groups S3.2 removes (at least `min_group` cards), as (value, size) pairs sorted by
    value then size."""
    if min_group != MIN_GROUP:
        sized = [(values[cells[0]], len(cells)) for cells in _group_cells(values)]
        return sorted(g for g in sized if g[1] >= min_group)
    paired = [False] * CELLS
    for i, j in PAIRS:
        if values[i] == values[j]:
            paired[i] = paired[j] = True
    found = []
    for start in range(CELLS):
        if not paired[start]:
            continue  # a single card, or a card of a group already counted
        v = values[start]
        paired[start] = False
        stack = [start]
        size = 0
        while stack:
            i = stack.pop()
            size += 1
            for j in NEIGHBOURS[i]:
                if paired[j] and values[j] == v:
                    paired[j] = False
                    stack.append(j)
        found.append((v, size))
    found.sort()
    return found


def winners(scores: Sequence[int], cards_left: Sequence[int]) -> list[int]:
    """S3.3: lowest score; ties by fewest cards left; still tied = shared victory."""
    best = min(zip(scores, cards_left, strict=True))
    return [s for s, key in enumerate(zip(scores, cards_left, strict=True)) if key == best]


class Table:
    """A game in play: the grids plus the round in progress.

    A round is `reveal` for every seat, `take` in taking order, `slide` for every seat, then
    `end_round` (`play_round` does all of it for a logged round). A move that breaks a rule
    raises `RuleBroken` (a ValueError) naming the rule, round and seat as S4 does, and changes
    nothing; a step before its time (a slide before the seat's reveal and take, ending a round
    not played out) raises a plain ValueError. The deal is checked (S1.3) when the table is
    set, a claimed result by `check_result` (S3.1, S3.3).
    """

    __slots__ = (
        "players", "first", "values", "down", "round", "gaps", "middle", "took", "min_group",
    )  # fmt: skip

    def __init__(
        self, grids: Sequence[Sequence[int]], first: int, min_group: int = MIN_GROUP
    ) -> None:
        """`min_group`: S3.2's smallest cancelling group, from the record's ruleset."""
        for seat, grid in enumerate(grids):
            for cell, v in enumerate(grid):
                if not MIN_VALUE <= v <= MAX_VALUE:
                    r, c = divmod(cell, SIZE)
                    why = f"the card dealt at ({r},{c}) has value {v}, outside 1..10"
                    raise RuleBroken("S1.3", f"seat {seat}: {why}", round=None, seat=seat)
        self.players = len(grids)
        self.first = first
        self.min_group = min_group
        self.values = [list(g) for g in grids]
        self.down = [[True] * CELLS for _ in grids]
        self.round = 0
        self.gaps: list[int | None] = [None] * self.players
        self.middle: list[int] = []  # values still in the middle (a multiset)
        self.took: list[int | None] = [None] * self.players

    def order(self) -> list[int]:
        """The seats in this round's taking order (S2.3)."""
        return taking_order(self.first, self.round, self.players)

    def gap(self, seat: int) -> int:
        """The seat's gap (S2.2), between its reveal and its slide."""
        gap = self.gaps[seat]
        if gap is None:
            raise ValueError(f"seat {seat} has no gap: it has not revealed this round")
        return gap

    def card(self, seat: int) -> int:
        """The value the seat took this round (S2.3), until its slide."""
        card = self.took[seat]
        if card is None:
            raise ValueError(f"seat {seat} has not taken a card this round")
        return card

    def legal_reveals(self, seat: int) -> list[int]:
        return [i for i, d in enumerate(self.down[seat]) if d]

    def legal_takes(self) -> list[int]:
        """S2.3: the distinct values still in the middle, for whoever takes next."""
        return sorted(set(self.middle))

    def visible(self, seat: int) -> list[int]:
        """What everyone sees of a grid: face-up values, -1 for face down, 0 for the gap."""
        return [-1 if d else v for v, d in zip(self.values[seat], self.down[seat], strict=True)]

    def _round_fault(self, rule: str, seat: int, what: str) -> RuleBroken:
        return RuleBroken(
            rule, f"round {self.round}, seat {seat}{what}", round=self.round, seat=seat
        )

    def reveal(self, seat: int, cell: int) -> int:
        """S2.2: the seat's face-down card at `cell` goes to the middle; returns its value."""
        if not self.down[seat][cell]:
            r, c = divmod(cell, SIZE)
            why = (
                "every card is already face up after 16 rounds"
                if self.round >= ROUNDS
                else "which is already face up"
            )
            raise self._round_fault("S2.2", seat, f": reveals ({r},{c}), {why}")
        value = self.values[seat][cell]
        self.down[seat][cell] = False
        self.values[seat][cell] = 0
        self.gaps[seat] = cell
        self.middle.append(value)
        return value

    def take(self, seat: int, value: int) -> None:
        """S2.3: the seat takes a card of `value` from the middle."""
        if value not in self.middle:
            k = self.order().index(seat)
            raise self._round_fault(
                "S2.3",
                seat,
                f" (taker {k + 1} of {self.players}): takes {value}, which is not in the "
                f"middle {sorted(self.middle)}",
            )
        self.middle.remove(value)
        self.took[seat] = value

    def slide(self, seat: int, side: str) -> None:
        """S2.4: the seat's card enters from `side`, pushing the cards up to the gap."""
        gap, card = self.gap(seat), self.card(seat)
        if edge_blocked(gap, side):
            r, c = divmod(gap, SIZE)
            raise self._round_fault(
                "S2.4",
                seat,
                f": slides in from the {side}, but the gap ({r},{c}) touches the {side} edge; "
                f"a card never enters directly into the gap",
            )
        push(self.values[seat], self.down[seat], gap, side, card)
        self.gaps[seat] = None
        self.took[seat] = None

    def end_round(self) -> None:
        if self.middle or any(g is not None for g in self.gaps):
            raise ValueError("round not finished")
        self.round += 1

    def play_round(self, cells: Sequence[int], takes: Sequence[int], sides: Sequence[str]) -> None:
        """A whole round as the log gives it, checked in S4.1's order: the reveals of `cells`
        in seat order, `takes` in taking order, the slides from `sides` in seat order."""
        for seat, cell in enumerate(cells):
            self.reveal(seat, cell)
        for seat, value in zip(self.order(), takes, strict=True):
            self.take(seat, value)
        for seat, side in enumerate(sides):
            self.slide(seat, side)
        self.end_round()

    def finished(self) -> bool:
        return self.round >= ROUNDS

    def result(self) -> dict[str, list[int]]:
        """S3.2-S3.3 on the final grids: `scores`, `cards_left` and `winners` by seat."""
        scored = [score_grid(v, self.min_group) for v in self.values]
        scores = [s for s, _ in scored]
        left = [n for _, n in scored]
        return {"scores": scores, "cards_left": left, "winners": winners(scores, left)}

    def check_result(self, claimed: dict[str, Any]) -> None:
        """S3.1, then S3.3 on a claimed result: `scores`, then `cards_left` (each naming the
        first wrong seat), then `winners` compared as a set (S4.2-S4.3)."""
        if not self.finished():
            raise RuleBroken(
                "S3.1",
                f"the log has {self.round} rounds; a game has 16, so cards are still face down",
                round=None,
                seat=None,
            )
        truth = self.result()
        for key in ("scores", "cards_left"):
            said, real = claimed[key], truth[key]
            for s in range(self.players):
                if said[s] != real[s]:
                    raise RuleBroken(
                        "S3.3",
                        f"result.{key}[{s}] is {said[s]}, but seat {s}'s final grid gives "
                        f"{real[s]} (replayed {key}: {real})",
                        round=None,
                        seat=s,
                    )
        won = truth["winners"]
        if set(claimed["winners"]) != set(won):
            raise RuleBroken(
                "S3.3",
                f"result.winners is {sorted(set(claimed['winners']))}, but the lowest score with "
                f"the fewest cards left wins: {won} (scores {truth['scores']}, cards left "
                f"{truth['cards_left']})",
                round=None,
                seat=None,
            )
