"""One interface for every game: text or record in, verdict (and replay facts) out.

Each record is judged under the ruleset it names (rulesets.md): `rulesets`, a lookup
(game, name) -> Ruleset, says which rulesets exist besides the built-in `standard` (None: only
`standard`). Order of judgement (RS7.2): well-formedness, then RS5.1 (an unknown ruleset), then
every other rule under the ruleset's parameters (RS5.2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from . import wellformed
from .rulesets import STANDARD, STANDARD_NAME, Ruleset, RulesetLookup
from .verdict import Record, Verdict, invalid, malformed

if TYPE_CHECKING:
    from .slide.facts import SlideFacts
    from .slow6.facts import Slow6Facts


class _Engine(Protocol):
    """What a game's verify module gives (`replays.slow6.verify`, `replays.slide.verify`)."""

    def verify(self, record: Record, ruleset: Ruleset = ...) -> Verdict: ...

    def replay(
        self, record: Record, collect: bool = ..., ruleset: Ruleset = ...
    ) -> tuple[Verdict, Slow6Facts | SlideFacts | None]: ...


_ENGINES: dict[str, _Engine] = {}  # game -> its verify module, imported on first use


def _engine(game: str) -> _Engine:
    engine = _ENGINES.get(game)
    if engine is None:  # an import statement costs a few us even when cached: once per game
        if game == "slow6":
            from .slow6 import verify as slow6

            engine = slow6
        else:
            from .slide import verify as slide

            engine = slide
        _ENGINES[game] = engine
    return engine


_STANDARD: dict[str, Ruleset] = dict(STANDARD)  # (a dict: a mapping proxy reads slower)


def ruleset_of(record: Record, rulesets: RulesetLookup | None = None) -> Ruleset | Verdict:
    """The ruleset a well-formed record is judged under, or its RS5.1 verdict when that ruleset
    is not known for the record's game."""
    game = record["game"]
    name = record.get("ruleset")
    if name is None or name == STANDARD_NAME:
        return _STANDARD[game]
    found = rulesets(game, name) if rulesets is not None else None
    if found is None or found.game != game:
        return invalid(
            record.get("game_id"),
            "RS5.1",
            None,
            f"ruleset {name!r} is not known for {game} (RS5.1): the record is kept, and judged "
            "again once that ruleset is registered",
            ruleset=name,
        )
    return found


def verify_record(record: Record, rulesets: RulesetLookup | None = None) -> Verdict:
    """Judge a well-formed record: valid, or the first rule it breaks (RS5.1 first)."""
    game = record["game"]
    if "ruleset" not in record:  # (the common case, inline)
        return _engine(game).verify(record, _STANDARD[game])
    ruleset = ruleset_of(record, rulesets)
    if isinstance(ruleset, Verdict):
        return ruleset
    return _engine(game).verify(record, ruleset)


def replay_record(
    record: Record, rulesets: RulesetLookup | None = None
) -> tuple[Verdict, Slow6Facts | SlideFacts | None]:
    """Judge a well-formed record and, when valid, return what the replay found (facts)."""
    ruleset = ruleset_of(record, rulesets)
    if isinstance(ruleset, Verdict):
        return ruleset, None
    return _engine(record["game"]).replay(record, True, ruleset)


def check_text(
    text: str | bytes, rulesets: RulesetLookup | None = None
) -> tuple[Record | None, Verdict]:
    """Parse, check well-formedness, then replay: the whole path of one upload record."""
    try:
        record = wellformed.load(text)
    except wellformed.Malformed as e:
        shape = e.record
        gid = shape.get("game_id") if shape is not None else None
        return shape, malformed(gid if isinstance(gid, str) else None, e.field, e.message)
    return record, verify_record(record, rulesets)
