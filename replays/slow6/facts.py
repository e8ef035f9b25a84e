"""What a verified Slow6 replay tells storage and analysis, beyond the record itself.

The per-turn and per-piece facts are kept column by column (one list per fact, as the replay
counted them): storage builds its Arrow columns from these lists directly, with no object per
turn or piece (ingest/storage/rows.py). `Slow6Facts.turns` and `.pieces` give them as one object per
turn / piece (`TurnFacts`, `PieceFacts`) for code that wants them so; they are built on each
access. The lists are the facts' own: read them, do not change them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class TurnFacts:
    side: int
    power: str | None
    moves: tuple[str, ...]
    fights: int = 0
    removed: int = 0
    stuns: int = 0
    catches: int = 0
    promotions: int = 0
    trapped: int = 0


@dataclass(slots=True)
class PieceFacts:
    side: int
    start: str  # 'c1'
    rank: int  # original rank 1..N
    promoted_turn: int | None = None
    removed_turn: int | None = None
    revealed_turn: int | None = None  # first turn it moved or fought (R7.2)
    moves: int = 0
    stunned: int = 0
    home: bool = False


@dataclass(slots=True)
class TurnColumns:
    """The facts of every turn, one list per fact, indexed by turn."""

    first: int  # the side of turn 0 (sides strictly alternate)
    powers: list[str | None]
    moves: list[list[str]]  # each turn's moves, as in the record
    fights: list[int]
    removed: list[int]
    stuns: list[int]
    catches: list[int]
    promotions: list[int]
    trapped: list[int]

    def sides(self) -> list[int]:
        n, first = len(self.powers), self.first
        return ([first, 1 - first] * ((n + 1) // 2))[:n]


@dataclass(slots=True)
class PieceColumns:
    """The facts of every piece, one list per fact, indexed by pid."""

    side: list[int]
    start: list[str]  # 'c1'
    rank: list[int]  # original rank 1..N
    promoted_turn: list[int | None]
    removed_turn: list[int | None]
    revealed_turn: list[int | None]  # first turn it moved or fought (R7.2)
    moves: list[int]
    stunned: list[int]
    home: list[bool]


@dataclass(slots=True)
class Slow6Facts:
    winner: int | None  # None = draw
    reason: str  # home | wipeout | points | timeout | resign
    points: tuple[int, int]  # R6.3 totals at the end of the log
    turn_columns: TurnColumns
    piece_columns: PieceColumns
    power_used: dict[tuple[int, str], int] = field(default_factory=dict)  # (side, power) -> turn

    @property
    def turns(self) -> list[TurnFacts]:
        t = self.turn_columns
        return list(
            map(TurnFacts, t.sides(), t.powers, map(tuple, t.moves), t.fights, t.removed, t.stuns,
                t.catches, t.promotions, t.trapped)
        )  # fmt: skip

    @property
    def pieces(self) -> list[PieceFacts]:
        p = self.piece_columns
        return list(
            map(PieceFacts, p.side, p.start, p.rank, p.promoted_turn, p.removed_turn,
                p.revealed_turn, p.moves, p.stunned, p.home)
        )  # fmt: skip
