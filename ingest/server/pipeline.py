"""From upload lines to verdicts and rows: parse, check, replay, encode; no storage here.

Each record is judged on its own (a bad line never spoils its neighbours). A well-formed record
is always replayed before it is acknowledged; the store then decides duplicate / conflict.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import uuid
from dataclasses import dataclass
from typing import Any

from replays import verdict as V
from replays.slide.facts import SlideFacts
from replays.slow6.facts import Slow6Facts

from ..storage import VERIFIED, Pending, Rejudge, codec, rows

log = logging.getLogger("ingest.pipeline")

MAX_RECORD = 64 * 1024  # upload-format.md: a record is at most 64 KiB of JSON
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


@dataclass(slots=True)
class Judged:
    """A record's verdict so far, and what to store when it is well-formed."""

    result: dict  # the answer entry (its verdict may still become duplicate / conflict)
    pending: Pending | None  # None: rejected, nothing to store
    json_ok: bool  # the text was JSON (for "400: no JSON at all")


class TooLong:
    """A line over the record limit, cut off while streaming (its size so far)."""

    __slots__ = ("size",)

    def __init__(self, size: int):
        self.size = size


def result(
    line: int, game_id, verdict: str, rule=None, turn=None, message=None, field=None, ruleset=None
):
    """An answer entry; `ruleset` is the one an accepted or quarantined record was judged
    under (rulesets.md RS5.3; for RS5.1, the unknown one it named), None for the others."""
    return {
        "line": line,
        "game_id": game_id,
        "verdict": verdict,
        "rule": rule,
        "turn": turn,
        "message": message,
        "field": field,
        "ruleset": ruleset,
    }


def _game_id(record) -> str | None:
    """The record's game_id when it has a well-formed one (for the reply of a rejection)."""
    gid = record.get("game_id") if type(record) is dict else None
    return gid if isinstance(gid, str) and _UUID.match(gid) else None


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class Judge(Rejudge):
    """Turns one line of upload text into a verdict and, if well-formed, a Pending game
    (`verifier`, `wellformed`: see storage.Rejudge)."""

    def judge(
        self, line: int, text: bytes | TooLong, received: dt.datetime, with_rows: bool = True
    ) -> Judged:
        """`with_rows=False`: a verified game's Pending has no rows (None), for the store to
        rebuild later (gather.py); a quarantined game's row is always there."""
        wf = self.wellformed
        if isinstance(text, TooLong) or len(text) > MAX_RECORD:
            size = text.size if isinstance(text, TooLong) else len(text)
            msg = f"record is over {MAX_RECORD} bytes of JSON (at least {size}): not stored"
            return Judged(result(line, None, "rejected", message=msg, field="record"), None, False)
        try:
            record = wf.load(text)
        except wf.Malformed as exc:
            gid = _game_id(exc.record)
            rej = result(line, gid, "rejected", message=exc.message, field=exc.field)
            return Judged(rej, None, exc.field != "line")
        gid = _game_id(record)
        verdict, facts = self.replay(record)
        if verdict.verdict == V.MALFORMED:  # a shape the schema cannot tie (counts per seat)
            rej = result(line, gid, "rejected", message=verdict.message, field=verdict.field)
            return Judged(rej, None, True)
        return Judged(*self._pending(line, gid, record, verdict, facts, received, with_rows), True)

    def _pending(
        self,
        line: int,
        gid: str | None,
        record: V.Record,
        verdict: V.Verdict,
        facts: Slow6Facts | SlideFacts | None,
        received: dt.datetime,
        with_rows: bool = True,
    ) -> tuple[dict[str, Any], Pending]:
        canonical = codec.canonical(record)
        codec_id, blob = codec.encode(canonical, record["game"])
        if verdict.verdict == V.VALID and facts is not None and not with_rows:
            status, table_rows = VERIFIED, None
        else:
            status, table_rows, verdict = self.rows_for(record, verdict, facts, received)
        ruleset = getattr(verdict, "ruleset", None) or rows.ruleset_of(record)
        if status == VERIFIED:
            res = result(line, gid, "accepted", ruleset=ruleset)
        else:
            res = result(
                line, gid, "quarantined", verdict.rule, verdict.turn, verdict.message, None, ruleset
            )
            if record["game"] == "slide":
                res["seat"] = verdict.seat
        key = uuid.UUID(gid)
        pending = Pending(
            str(key),
            key.int,
            record["game"],
            codec.content_hash(canonical),
            codec_id,
            blob,
            status,
            table_rows,
            received,
        )
        return res, pending


UNKNOWN_RULESET = "RS5.1"


def recheck_unknown(
    judge: Judge,
    judged: list[Judged],
    lines: list,
    received: list[dt.datetime],
    with_rows: bool = True,
) -> list[Judged]:
    """`judged` with its RS5.1 quarantines judged again if a ruleset was registered since this
    process last read the store's (another server of a lake registered it): the registry is
    reloaded first unless it was read after the records arrived (`received`, one per line).
    Without a miss, nothing is read."""
    misses = [i for i, j in enumerate(judged) if j.result.get("rule") == UNKNOWN_RULESET]
    if not misses:
        return judged
    since = min(received[i] for i in misses).replace(tzinfo=dt.UTC).timestamp()
    try:
        if not judge.registry.refresh(since):
            return judged
    except Exception as exc:  # the store unreadable now: RS5.1 stands (reverify recovers it)
        log.warning("rulesets not read again before an RS5.1 verdict: %s", type(exc).__name__)
        return judged
    out = list(judged)
    for i in misses:
        number, text = lines[i]
        out[i] = judge.judge(number, text, received[i], with_rows)
    return out


def settle(judged: list[Judged], outcomes: list[str]) -> list[dict]:
    """Final answer entries: the store's duplicate / conflict replaces the replay verdict."""
    stored = iter(outcomes)
    out = []
    for j in judged:
        res = j.result
        if j.pending is not None:
            outcome = next(stored)
            if outcome == "duplicate":
                res = result(
                    res["line"],
                    res["game_id"],
                    "duplicate",
                    message="this game_id is already stored with the same content",
                )
            elif outcome == "conflict":
                res = result(
                    res["line"],
                    res["game_id"],
                    "conflict",
                    message="this game_id is already stored with different content; "
                    "nothing was changed",
                )
        out.append(res)
    return out
