"""The verdict of checking one upload record: the one shape every checker returns; and
`Record`, the type of the record itself."""

from __future__ import annotations

from typing import Any, NamedTuple, TypeAlias

Record: TypeAlias = dict[str, Any]
"""An upload record as parsed from its JSON text (`wellformed.load`): a JSON object, whose
values are JSON data (the format fixes their types; the checkers test them)."""

VALID = "valid"
INVALID = "invalid"  # well-formed, but breaks a rule: quarantined by ingest
MALFORMED = "malformed"  # does not follow the upload format: rejected by ingest


class Verdict(NamedTuple):
    # A named tuple, not a frozen dataclass: as immutable, and made in a third of the time
    # (one is made per record; a frozen dataclass sets each field through object.__setattr__).
    verdict: str
    game_id: str | None = None
    rule: str | None = None  # "R2.2", "S2.4": the first broken rule (R10 / S4)
    turn: int | None = None  # 0-based turn (Slow6) or round (Slide); None = whole record
    message: str | None = None
    field: str | None = None  # for malformed: the offending field, "turns[7].moves"
    seat: int | None = None  # Slide only: the seat that broke the rule
    # the ruleset judged under (RS5.3); for RS5.1, the unknown name the record asked for;
    # None only for a malformed record
    ruleset: str | None = None

    @property
    def ok(self) -> bool:
        return self.verdict == VALID

    def as_dict(self) -> dict[str, str | int | None]:
        out: dict[str, str | int | None] = {
            "game_id": self.game_id,
            "verdict": self.verdict,
            "rule": self.rule,
            "turn": self.turn,
            "message": self.message,
            "field": self.field,
            "ruleset": self.ruleset,
        }
        if self.seat is not None:
            out["seat"] = self.seat
        return out


def valid(game_id: str | None, ruleset: str | None = None) -> Verdict:
    return Verdict(VALID, game_id, None, None, None, None, None, ruleset)


def invalid(
    game_id: str | None,
    rule: str,
    turn: int | None,
    message: str,
    seat: int | None = None,
    ruleset: str | None = None,
) -> Verdict:
    return Verdict(INVALID, game_id, rule, turn, message, None, seat, ruleset)


def malformed(game_id: str | None, field: str, message: str) -> Verdict:
    return Verdict(MALFORMED, game_id, None, None, message, field)
