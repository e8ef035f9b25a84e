"""Is an upload record well-formed? (upload-format.md, "Well-formed means"; schema 1.)

    record = parse(text)   # JSON text -> dict: size, UTF-8, syntax, depth, duplicate keys
    check(record)          # the format: fields, types, enums, patterns, limits, shapes

Both raise `Malformed` (`.field`, `.message`); a malformed record is rejected, nothing stored.
`replays/schema/upload-v1.schema.json` is the same contract as a JSON Schema (a test keeps the
two in agreement); this module is the fast hand-written form of it, plus what a schema cannot
say (size, depth, duplicate keys, 5.0 is not an integer).

Which field an error names (the notation of the examples' malformed.expected.ndjson):

* the text: "line" when it is not JSON (bad syntax, bad UTF-8, NaN), "record" when it is too
  large or not an object; a too-deep value names the field holding it ("first"); a duplicate
  key names itself ("client.version").
* a missing required field or an unknown field: its own path ("client.version", "ip",
  "turns[3].foo", "result.points" when the reason is points).
* a wrong value: the field as the format tables list it. Top-level fields and the members of
  `rules` name themselves; the small fixed objects `client`, `ai`, `match`, `result`, a turn
  `turns[i]`, a piece `challenge.position.pieces[i]`, a slide `rounds[i].slides[j]` and a reveal
  `rounds[i].reveals[j]` are named whole; so are the per-side lists `lineups`, `powers`,
  `rounds[i].takes`, `challenge.position.turns_taken` and a grid `grids[i]`; but one side's picks
  that are not a list of 1 to 5 name that side (`powers[1]`, as the rulesets examples do). A
  container of the wrong kind or length names itself (`turns`, `grids`, `rounds[i].reveals`).
  A length limit names the limited field, as the format's Limits line does (`client.version`,
  `match.id`).
* fields that disagree: the object holding both (`rules` for hidden + powers, `turns[i]` for a
  target without power, `result` for points: null with reason points); a mode mismatch names
  the field that should (not) be there (`ai`, `challenge`).

Checks run in the order of the format tables and stop at the first fault: `game` first (it
decides the shape), then unknown top-level fields, then missing ones, then each field in order.
"""

from __future__ import annotations

from typing import Protocol

from replays import _wf_slide, _wf_slow6
from replays._wf_common import (
    CLIENT_KEYS,
    ENDED_AT_RE,
    ENDED_AT_SHAPE_RE,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_ID,
    MAX_VERSION,
    MISSING,
    MODES,
    OPTIONAL_KEYS,
    PLATFORMS,
    RULESET_RE,
    UUID_RE,
    Malformed,
    check_keys,
    check_string,
    kind,
    show,
)
from replays._wf_text import (
    keys_all_kept,
    load_object,
    parse,
    raise_structure_fault,
    to_bytes,
)
from replays.verdict import Record

__all__ = ["Malformed", "parse", "check", "load", "MAX_BYTES", "MAX_DEPTH", "MAX_VERSION", "MAX_ID"]


class _Format(Protocol):
    """A game's part of the checker (`_wf_slow6`, `_wf_slide`)."""

    @property
    def KEYS(self) -> frozenset[str]: ...  # (module constants: read-only here)

    @property
    def ORDER(self) -> tuple[str, ...]: ...

    def check(self, record: Record) -> int | None: ...


_GAMES: dict[str, _Format] = {"slow6": _wf_slow6, "slide": _wf_slide}
_CLIENT = frozenset(CLIENT_KEYS)


def load(text: str | bytes) -> Record:
    """`check(parse(text))` in one step, returning the record: the same record or the same
    `Malformed`, faster. A Slow6 record written as orjson writes it in the format's order is
    proved well-formed by its text (`_wf_slow6.text_proves`); any other is parsed and checked.
    A record of the format's shape nests 5 levels at most, so once `check` has passed, the
    depth proof is only "no key was dropped" (`keys_all_kept`). A `Malformed`
    raised here for a fault of the shape carries `.record`, the parsed object (as `parse` would
    return it); one of the text (syntax, size, duplicate key, depth) carries None."""
    data = to_bytes(text)
    record = load_object(data)
    if _wf_slow6.text_proves(data):  # the common layout, proved from the text alone
        return record
    try:
        colons = _check(record)
    except Malformed as shape_fault:
        shape_fault.record = record
        raise_structure_fault(data, record)  # a duplicate or too-deep value is named first
        raise
    if not keys_all_kept(data, record, colons):
        raise_structure_fault(data, record)
    return record


def check(record: Record) -> None:
    """Raise `Malformed` unless `record` (as `parse` returns it) follows upload schema 1.

    The record is JSON data (dict, list, str, int, float, bool, None); other Python types, such
    as tuples built by hand, are outside the contract."""
    _check(record)


def _check(record: Record) -> int | None:
    """`check`, returning the colons orjson would write for the record (its keys and the colons
    in its strings) when that came cheap on the way, else None (see `keys_all_kept`)."""
    if type(record) is not dict:
        raise Malformed("record", f"a record is a JSON object, got {kind(record)}")
    game = record.get("game", MISSING)
    rules = _GAMES.get(game) if type(game) is str else None
    if rules is None:
        if game is MISSING:
            raise Malformed("game", "missing field: which game, slow6 or slide")
        raise Malformed("game", f"game is slow6 or slide, got {show(game)}")
    if record.keys() != rules.KEYS:  # (inline: this is the hot path)
        check_keys(record, rules.KEYS, rules.ORDER, "", OPTIONAL_KEYS)
    _check_common(record)
    return rules.check(record)


def _check_common(record: Record) -> None:
    schema = record["schema"]
    if not (type(schema) is int and schema == 1):
        raise Malformed("schema", f"schema is the integer 1, got {show(schema)}")
    game_id = record["game_id"]
    if not (type(game_id) is str and UUID_RE.fullmatch(game_id) is not None):
        raise Malformed(
            "game_id", f"game_id is a UUID written 8-4-4-4-12 in hexadecimal, got {show(game_id)}"
        )
    client = record["client"]
    if type(client) is not dict:
        raise Malformed("client", f"client is an object {{platform, version}}, got {show(client)}")
    if client.keys() != _CLIENT:
        check_keys(client, _CLIENT, CLIENT_KEYS, "client.")
    platform = client["platform"]
    if not (type(platform) is str and platform in PLATFORMS):
        raise Malformed(
            "client",
            f"client.platform is one of ios, android, web, desktop, bot; got {show(platform)}",
        )
    version = client["version"]
    if type(version) is not str:
        raise Malformed("client", f"client.version is a string, got {show(version)}")
    check_string(version, MAX_VERSION, "client.version", "client.version")
    mode = record["mode"]
    if not (type(mode) is str and mode in MODES):
        raise Malformed(
            "mode",
            f"mode is one of online, friend, computer, challenge, tutorial; got {show(mode)}",
        )
    ended_at = record["ended_at"]
    if type(ended_at) is not str or ENDED_AT_RE.fullmatch(ended_at) is None:
        if type(ended_at) is str and ENDED_AT_SHAPE_RE.fullmatch(ended_at):
            raise Malformed("ended_at", f"{show(ended_at)} is not a real calendar time")
        raise Malformed(
            "ended_at",
            f"ended_at is YYYY-MM-DDTHH:MM:SS[.fraction] then Z or +00:00, got {show(ended_at)}",
        )
    ruleset = record.get("ruleset", MISSING)
    if ruleset is not MISSING and (
        type(ruleset) is not str or RULESET_RE.fullmatch(ruleset) is None
    ):
        raise Malformed(
            "ruleset",
            "ruleset is a name of 1 to 64 characters of a-z, 0-9, '.', '_', '-' starting with a "
            f"letter or digit (rulesets.md RS1.1, RS2.1), got {show(ruleset)}",
        )
