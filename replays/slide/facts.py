"""What a verified Slide replay tells storage and analysis, beyond the record itself."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class SlideTakeFacts:
    """One seat's part of one round."""

    round: int  # 0-based round index
    seat: int
    order: int  # position in the round's taking order, 0 = the round leader
    revealed: int  # value of the card the seat revealed (S2.2)
    reveal_pos: tuple[int, int]  # (row, col) of that card, the seat's gap
    took: int  # value the seat took (S2.3)
    available: tuple[int, ...]  # values in the middle when the seat took, sorted (a multiset)
    choice: bool  # more than one distinct value was available
    side: str  # edge the card entered from (S2.4)


@dataclass(slots=True)
class SlideSeatFacts:
    seat: int
    score: int  # S3.3, as replayed
    cards_left: int
    groups: list[tuple[int, int]] = field(default_factory=list)  # removed (value, size), sorted

    def sizes_by_value(self) -> dict[int, list[int]]:
        """Removed group sizes per card value, e.g. {9: [3], 10: [2, 2]}."""
        out: dict[int, list[int]] = {}
        for value, size in self.groups:
            out.setdefault(value, []).append(size)
        return out


@dataclass(slots=True)
class SlideFacts:
    players: int
    first: int
    winners: tuple[int, ...]  # sorted seats (S3.3)
    seats: list[SlideSeatFacts] = field(default_factory=list)  # indexed by seat
    takes: list[SlideTakeFacts] = field(default_factory=list)  # by round, then seat
