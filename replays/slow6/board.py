"""Squares, moves and the constants of the Slow6 board (R1, R2.5, R8.2).

A square is an int `row * N + file` (0-based). Text squares are parsed once, through tables, so
the replay loop never slices strings.
"""

from __future__ import annotations

from ..vocabulary import BOARDS

TURN_LIMIT = {5: 15, 7: 21}  # R2.5: turns each
DIRECTIONS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))

FILES = "abcdefg"

# "c3" -> (file, row), for every square any board may name; on-board-ness is checked per game.
SQUARE_XY: dict[str, tuple[int, int]] = {
    f"{f}{r + 1}": (FILES.index(f), r) for f in FILES for r in range(7)
}
# "c1-c3" -> (file, row, file, row).
MOVE_XY: dict[str, tuple[int, int, int, int]] = {
    f"{a}-{b}": SQUARE_XY[a] + SQUARE_XY[b] for a in SQUARE_XY for b in SQUARE_XY
}


def square_name(square: int, n: int) -> str:
    return f"{FILES[square % n]}{square // n + 1}"


# "c3" -> its square on each board, -1 when off it (R2.6)
SQUARE_INDEX: dict[int, dict[str, int]] = {
    n: {text: r * n + f if f < n and r < n else -1 for text, (f, r) in SQUARE_XY.items()}
    for n in BOARDS
}


def parse_square(text: str, n: int) -> int:
    """The square index of `text`, or -1 when it is off this board (R2.6)."""
    return SQUARE_INDEX[n][text]


def back_row(side: int, n: int) -> int:
    return 0 if side == 0 else n - 1
