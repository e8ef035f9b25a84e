"""Slide rules engine (slide-rules.md S1-S3): compact grids, the three steps of a round, scoring.

A seat's grid is two flat lists of 16 entries, row by row (index = 4 * row + col): `values`
(card values 1..10; 0 marks the gap while the revealed card is in the middle) and `down`
(True while the card is face down). No object per card: replay speed is the point.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def position(index: int) -> tuple[int, int]:
    return divmod(index, SIZE)


def index_of(row: int, col: int) -> int:
    return row * SIZE + col


def round_leader(first: int, round_index: int, players: int) -> int:
    """S2.1: round i is led by seat (first + i) mod P."""
    return (first + round_index) % players


def taking_order(first: int, round_index: int, players: int) -> list[int]:
    """S2.3: seats in taking order, starting with the round's first player, clockwise."""
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


def entry_cell(gap: int, side: str) -> int:
    """The edge cell where the taken card ends up (at the end of the gap's row or column)."""
    row, col = divmod(gap, SIZE)
    if side == "left":
        return row * SIZE
    if side == "right":
        return row * SIZE + SIZE - 1
    if side == "top":
        return col
    return (SIZE - 1) * SIZE + col


def shift(cells: list, gap: int, side: str, card) -> int:
    """S2.4 on one list in place: the entries between `side`'s edge and the gap move one step
    towards the gap and `card` lands on the edge cell, whose index is returned. The caller
    checks `edge_blocked` first."""
    row, col = divmod(gap, SIZE)
    if side == "left":
        edge = row * SIZE
        cells[edge + 1 : gap + 1] = cells[edge:gap]
    elif side == "right":
        edge = row * SIZE + SIZE - 1
        cells[gap:edge] = cells[gap + 1 : edge + 1]
    elif side == "top":
        edge = col
        cells[col + SIZE : gap + 1 : SIZE] = cells[col:gap:SIZE]
    else:  # bottom
        edge = (SIZE - 1) * SIZE + col
        cells[gap:edge:SIZE] = cells[gap + SIZE : edge + 1 : SIZE]
    cells[edge] = card
    return edge


def push(values: list, down: list, gap: int, side: str, card: int) -> None:
    """S2.4 on a seat's grid: the pushed cards keep their face-down flag, the taken card
    enters face up."""
    shift(values, gap, side, card)
    shift(down, gap, side, False)


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


# side -> per gap cell the push plan: the verifier's hot loop does a lookup, not arithmetic.
PUSH_PLANS: dict[str, tuple[tuple[slice, slice, int] | None, ...]] = {
    side: tuple(_push_plan(gap, side) for gap in range(CELLS)) for side in SIDES
}

# Orthogonally adjacent cell pairs (i < j), for scoring.
PAIRS: tuple[tuple[int, int], ...] = tuple(
    (i, j) for i in range(CELLS) for j in NEIGHBOURS[i] if i < j
)


def score_grid(values: Sequence[int]) -> tuple[int, int]:
    """S3.2-S3.3 on a final (all face-up) grid: (score, cards left). A card is removed iff it
    shares a side with an equal card: then its group has two or more cards and goes whole."""
    gone = {k for i, j in PAIRS if values[i] == values[j] for k in (i, j)}
    return sum(values) - sum([values[k] for k in gone]), CELLS - len(gone)


def groups(values: Sequence[int]) -> list[tuple[int, int]]:
    """The groups S3.2 removes, as (value, size) pairs sorted by value then size."""
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
    """A game being played (bots, simulator): grids plus the round in progress.

    A round is `reveal` for every seat, `take` in taking order, `slide` for every seat.
    Illegal moves raise ValueError: the simulator must never produce one.
    """

    __slots__ = ("players", "first", "values", "down", "round", "gaps", "middle", "took")

    def __init__(self, grids: Sequence[Sequence[int]], first: int):
        self.players = len(grids)
        self.first = first
        self.values = [list(g) for g in grids]
        self.down = [[True] * CELLS for _ in grids]
        self.round = 0
        self.gaps: list[int | None] = [None] * self.players
        self.middle: list[int] = []  # values still in the middle (a multiset)
        self.took: list[int | None] = [None] * self.players

    def order(self) -> list[int]:
        return taking_order(self.first, self.round, self.players)

    def legal_reveals(self, seat: int) -> list[int]:
        return [i for i, d in enumerate(self.down[seat]) if d]

    def legal_takes(self) -> list[int]:
        """S2.3: the distinct values still in the middle, for whoever takes next."""
        return sorted(set(self.middle))

    def visible(self, seat: int) -> list[int]:
        """What everyone sees of a grid: face-up values, -1 for face down, 0 for the gap."""
        return [-1 if d else v for v, d in zip(self.values[seat], self.down[seat], strict=True)]

    def reveal(self, seat: int, cell: int) -> int:
        if self.round >= ROUNDS or not self.down[seat][cell]:
            raise ValueError(f"seat {seat} cannot reveal {position(cell)} (S2.2)")
        value = self.values[seat][cell]
        self.down[seat][cell] = False
        self.values[seat][cell] = 0
        self.gaps[seat] = cell
        self.middle.append(value)
        return value

    def take(self, seat: int, value: int) -> None:
        if value not in self.middle:
            raise ValueError(f"seat {seat} cannot take {value} from {self.middle} (S2.3)")
        self.middle.remove(value)
        self.took[seat] = value

    def slide(self, seat: int, side: str) -> None:
        gap = self.gaps[seat]
        card = self.took[seat]
        if gap is None or card is None or edge_blocked(gap, side):
            raise ValueError(f"seat {seat} cannot slide from the {side} (S2.4)")
        push(self.values[seat], self.down[seat], gap, side, card)
        self.gaps[seat] = None
        self.took[seat] = None

    def end_round(self) -> None:
        if self.middle or any(g is not None for g in self.gaps):
            raise ValueError("round not finished")
        self.round += 1

    def finished(self) -> bool:
        return self.round >= ROUNDS

    def result(self) -> dict:
        scored = [score_grid(v) for v in self.values]
        scores = [s for s, _ in scored]
        left = [n for _, n in scored]
        return {"scores": scores, "cards_left": left, "winners": winners(scores, left)}
