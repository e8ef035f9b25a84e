"""One interface for every game: text or record in, verdict (and replay facts) out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from . import wellformed
from .verdict import Record, Verdict, malformed

if TYPE_CHECKING:
    from .slide.facts import SlideFacts
    from .slow6.facts import Slow6Facts


class _Engine(Protocol):
    """What a game's verify module gives (`replays.slow6.verify`, `replays.slide.verify`)."""

    def verify(self, record: Record) -> Verdict: ...

    def replay(
        self, record: Record, collect: bool = ...
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


def verify_record(record: Record) -> Verdict:
    """Judge a well-formed record: valid, or the first rule it breaks."""
    return _engine(record["game"]).verify(record)


def replay_record(record: Record) -> tuple[Verdict, Slow6Facts | SlideFacts | None]:
    """Judge a well-formed record and, when valid, return what the replay found (facts)."""
    return _engine(record["game"]).replay(record, collect=True)


def check_text(text: str | bytes) -> tuple[Record | None, Verdict]:
    """Parse, check well-formedness, then replay: the whole path of one upload record."""
    try:
        record = wellformed.load(text)
    except wellformed.Malformed as e:
        shape = e.record
        gid = shape.get("game_id") if shape is not None else None
        return shape, malformed(gid if isinstance(gid, str) else None, e.field, e.message)
    return record, verify_record(record)
