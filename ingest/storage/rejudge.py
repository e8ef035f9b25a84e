"""A stored raw record judged again, for the derived rows it has not got yet: journaled games
loaded after a crash, rows the judge processes left to the store, `recover`.

The judging of uploads (ingest/server/pipeline.py) builds on this; the store uses it alone, so that
storage needs the rules engines (replays/) and nothing else of the app.
"""

from __future__ import annotations

import datetime as dt
import inspect
import logging
import uuid
from collections.abc import Callable
from types import ModuleType

from replays import verdict as V
from replays import verifier as default_verifier
from replays import wellformed as default_wellformed

from . import rows
from .registry import Registry

log = logging.getLogger("ingest.storage")

VERIFIED, QUARANTINED = "verified", "quarantined"


class Rejudge:
    """`verifier` is anything with `replay_record(record) -> (Verdict, facts | None)` (default
    `replays.verifier`); `wellformed` anything with load/Malformed (default
    `replays.wellformed`). Tests inject fakes through the app config. `registry`: the
    rulesets records are judged by (rulesets.md RS5; the store's, set by the store it judges
    for; by default `standard` only)."""

    def __init__(
        self,
        verifier: ModuleType | None = None,
        wellformed: ModuleType | None = None,
        registry: Registry | None = None,
    ):
        self.verifier = verifier or default_verifier
        self.wellformed = wellformed or default_wellformed
        self.registry = registry or Registry()
        self._takes_rulesets = _takes_rulesets(self.verifier)

    def rows_of(self, text: bytes, received: dt.datetime) -> tuple[str | None, object]:
        """(status, rows) of a stored record judged again, for rows it was stored without
        (gather.py): a verified game's rows; a game that no longer verifies gives its status
        and no rows. Only what the rows need: no canonical form, hash or compression."""
        try:
            record = self.wellformed.load(text)
        except self.wellformed.Malformed:
            return None, None
        verdict, facts = self.replay(record)
        if verdict.verdict != V.VALID or facts is None:
            return QUARANTINED, None
        gid = uuid.UUID(record["game_id"])
        try:
            return VERIFIED, rows.game_rows(gid.bytes, record, facts, received)
        except Exception as exc:
            log.error("rows for a verified %s game failed: %r", record["game"], exc)
            return VERIFIED, None

    def rows_many(self, lines: list, received: list[dt.datetime]) -> list[tuple]:
        """`rows_of` each (number, text) line, with its receive time."""
        return [self.rows_of(text, at) for (_, text), at in zip(lines, received, strict=True)]

    def stored_rows(self, text: bytes, received: dt.datetime) -> tuple[str | None, object]:
        """(status, rows) a stored record gets now: a verified game's rows, or a quarantined
        game's quarantine row (its verdict may have changed since: an engine fix); (None, None)
        for a record that is not well-formed any more (left to `balance reverify`)."""
        try:
            record = self.wellformed.load(text)
        except self.wellformed.Malformed:
            return None, None
        verdict, facts = self.replay(record)
        if verdict.verdict == V.MALFORMED:
            return None, None
        status, table_rows, _ = self.rows_for(record, verdict, facts, received)
        return status, table_rows

    def rows_for(self, record: dict, verdict, facts, received: dt.datetime) -> tuple:
        """(status, rows, verdict) of a well-formed record with its replay verdict: a verified
        game's rows, else its quarantine row. A verified game whose facts do not fit the
        tables is quarantined with rule 'internal' (kept for `balance reverify` after a fix):
        the verdict returned is the one stored."""
        key = uuid.UUID(record["game_id"])
        if verdict.verdict == V.VALID and facts is None:
            verdict = V.invalid(str(key), "internal", None, "the verifier gave no replay facts")
        if verdict.verdict == V.VALID:
            try:
                return VERIFIED, rows.game_rows(key.bytes, record, facts, received), verdict
            except Exception as exc:  # facts that do not fit the tables: keep the record
                log.error("rows for a verified %s game failed: %r", record["game"], exc)
                msg = "its replay facts did not fit the tables; kept for `balance reverify`"
                verdict = V.invalid(str(key), "internal", None, msg)
        return QUARANTINED, rows.quarantine_row(key.bytes, record, verdict, received), verdict

    def replay(self, record: dict):
        try:
            if self._takes_rulesets:
                return self.verifier.replay_record(record, rulesets=self.registry.lookup)
            return self.verifier.replay_record(record)
        except Exception as exc:  # an engine bug must not lose the game or fail the batch
            log.error("verifier failed on a well-formed %s record: %r", record["game"], exc)
            msg = (
                "the verifier failed on this record; it is kept and will be judged again "
                "by `balance reverify` after a fix"
            )
            return V.invalid(record["game_id"], "internal", None, msg), None


def _takes_rulesets(verifier) -> bool:
    """Whether `verifier.replay_record` takes `rulesets=` (an injected test fake may not)."""
    try:
        return "rulesets" in inspect.signature(verifier.replay_record).parameters
    except (TypeError, ValueError, AttributeError):
        return False


def rows_judged_again(lines: list, received: list, rebuild, judge: Callable[[], Rejudge]):
    """(status, rows) of each (number, text) line of stored records: from the judge
    processes (`rebuild`, when the app has them), else judged here by `judge()`, one record
    at a time, so that an engine bug on one gives that one (None, None) alone."""
    built = None
    if rebuild is not None:
        try:
            built = rebuild(lines, received)
        except Exception as exc:  # the judge processes stopping (close): built here
            log.warning("rows built here: the judge processes failed (%s)", exc)
    if built is None:
        here = judge()
        built = []
        for line, at in zip(lines, received, strict=True):
            try:
                built.extend(here.rows_many([line], [at]))
            except Exception as exc:  # an engine bug on this record: kept, quarantined
                log.error("rows of a stored game failed: %r", exc)
                built.append((None, None))
    return built
