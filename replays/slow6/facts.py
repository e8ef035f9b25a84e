"""What a verified Slow6 replay tells storage and analysis, beyond the record itself."""

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
class Slow6Facts:
    winner: int | None  # None = draw
    reason: str  # home | wipeout | points | timeout | resign
    points: tuple[int, int]  # R6.3 totals at the end of the log
    turns: list[TurnFacts] = field(default_factory=list)
    pieces: list[PieceFacts] = field(default_factory=list)
    power_used: dict[tuple[int, str], int] = field(default_factory=dict)  # (side, power) -> turn
