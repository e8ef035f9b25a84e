"""One interface for every game: text or record in, verdict (and replay facts) out."""

from __future__ import annotations

from . import wellformed
from .verdict import Verdict, malformed

_ENGINES: dict = {}  # game -> its verify module, imported on first use


def _engine(game: str):
    engine = _ENGINES.get(game)
    if engine is None:  # an import statement costs a few us even when cached: once per game
        if game == "slow6":
            from .slow6 import verify as engine
        else:
            from .slide import verify as engine
        _ENGINES[game] = engine
    return engine


def verify_record(record: dict) -> Verdict:
    """Judge a well-formed record: valid, or the first rule it breaks."""
    return _engine(record["game"]).verify(record)


def replay_record(record: dict):
    """Judge a well-formed record and, when valid, return what the replay found (facts)."""
    engine = _engine(record["game"])
    if record["game"] == "slow6":
        return engine.replay(record, collect=True)
    return engine.replay(record)


def check_text(text: str | bytes) -> tuple[dict | None, Verdict]:
    """Parse, check well-formedness, then replay: the whole path of one upload record."""
    try:
        record = wellformed.load(text)
    except wellformed.Malformed as e:
        record = e.record
        gid = record.get("game_id") if record is not None else None
        return record, malformed(gid if isinstance(gid, str) else None, e.field, e.message)
    return record, verify_record(record)
