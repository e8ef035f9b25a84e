"""Shared pieces of the well-formedness checker: the error type, vocabularies, field helpers.

Private to `replays.wellformed` (import `Malformed` from there). The patterns here are the very
strings of `replays/schema/upload-v1.schema.json`; a test keeps the two equal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import orjson

from replays import vocabulary
from replays.verdict import Record

MAX_BYTES = 64 * 1024  # a record is at most 64 KiB of JSON text
MAX_DEPTH = 32  # nesting levels; the record object itself is level 1
MAX_VERSION = 64  # client.version characters
MAX_ID = 128  # challenge.id and match.id characters


class Malformed(ValueError):
    """A record that does not follow the upload format: `field` names where, `message` what.
    `record`: the parsed object, for a fault of its shape found by `wellformed.load` (not
    pickled)."""

    record: Record | None = None

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    # keep both attributes across process pools
    def __reduce__(self) -> tuple[type[Malformed], tuple[str, str]]:
        return (type(self), (self.field, self.message))


Malformed.__module__ = "replays.wellformed"

# --- vocabularies (replays/vocabulary.py), as sets for membership tests -------------------------

PLATFORMS = frozenset(vocabulary.PLATFORMS)
MODES = frozenset(vocabulary.MODES)
REASONS = frozenset(vocabulary.REASONS)
POWERS = frozenset(vocabulary.POWERS)
ONE_SQUARE_POWERS = frozenset(vocabulary.ONE_SQUARE_POWERS)
EDGES = frozenset(vocabulary.EDGES)
BOARDS = vocabulary.BOARDS
CLIENT_KEYS = ("platform", "version")  # the client object, in the format's order

SQUARES = frozenset(f + r for f in "abcdefg" for r in "1234567")
MOVES = frozenset(a + "-" + b for a in SQUARES for b in SQUARES)

# --- patterns, exactly as in the JSON Schema ----------------------------------------------------

SQUARE_PATTERN = "^[a-g][1-7]$"
MOVE_PATTERN = "^[a-g][1-7]-[a-g][1-7]$"
RULESET_PATTERN = "^[a-z0-9][a-z0-9._-]{0,63}$"  # rulesets.md RS1.1 (= rulesets.NAME_PATTERN)
UUID_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
# Days 01-28 in any month, 29-30 in all but February, 31 in the long months, February 29 in
# leap years (divisible by 4 and not by 100, or by 400); there is no year 0000.
_LEAP_YEAR = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
_DATE = (
    "(?!0000)(?:[0-9]{4}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"
    "|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)"
    f"|{_LEAP_YEAR}-02-29)"
)
_TIME = "T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]+)?(?:Z|\\+00:00)"
ENDED_AT_PATTERN = f"^{_DATE}{_TIME}$"


def _whole(pattern: str) -> re.Pattern[str]:
    # The schema's ^...$ mean the whole string (ECMA-262); fullmatch says the same in Python.
    return re.compile(pattern[1:-1])


UUID_RE = _whole(UUID_PATTERN)
ENDED_AT_RE = _whole(ENDED_AT_PATTERN)
RULESET_RE = _whole(RULESET_PATTERN)
OPTIONAL_KEYS = frozenset({"ruleset"})  # top-level fields a record may leave out (RS2.1)
MIN_PICKS, MAX_PICKS = 1, 5  # a side's picks: how many is a rule (R8.1, RS7.3), this is form
ENDED_AT_SHAPE_RE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|\+00:00)"
)

MISSING = object()  # a key that is not there (None is JSON null)


# --- helpers ------------------------------------------------------------------------------------


def show(value: object) -> str:
    """The value as JSON (what the client sent), shortened for a message."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def dumps(value: object) -> bytes:
    """orjson's bytes for JSON data; b"" for anything else (only a Python caller can pass that),
    which no fast-path pattern matches, so the step-by-step checks decide."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return b""


def kind(value: object) -> str:
    """JSON type name of a decoded value, for messages."""
    if value is None:
        return "null"
    if type(value) is bool:
        return "a boolean"
    if type(value) is int:
        return "an integer"
    if type(value) is float:
        return "a number with a fraction or exponent"
    if type(value) is str:
        return "a string"
    if type(value) is list:
        return "an array"
    if type(value) is dict:
        return "an object"
    return type(value).__name__


def check_keys(
    obj: dict[str, Any],
    required: frozenset[str],
    order: Iterable[str],
    prefix: str,
    optional: frozenset[str] = frozenset(),
) -> None:
    """Unknown keys first (that is how personal data sneaks in), then missing ones in order."""
    if obj.keys() == required:
        return
    for key in obj:
        if key not in required and key not in optional:
            raise Malformed(f"{prefix}{key}", "unknown field: the upload format has no such field")
    for key in order:
        if key not in obj:
            raise Malformed(
                f"{prefix}{key}", "missing field (a field with no value is sent as null)"
            )


def check_int_list(value: object, count: int | None, field: str, what: str) -> None:
    """A list of `count` integers (any count when None)."""
    if type(value) is not list or (count is not None and len(value) != count):
        n = f"{count} " if count is not None else ""
        raise Malformed(field, f"{what} must be a list of {n}integers, got {show(value)}")
    for item in value:
        if type(item) is not int:
            raise Malformed(field, f"{what} must hold integers only, got {show(item)}")


def check_string(value: object, limit: int, field: str, what: str) -> None:
    if type(value) is not str:
        raise Malformed(field, f"{what} must be a string, got {kind(value)}")
    if len(value) > limit:
        raise Malformed(field, f"{what} is {len(value)} characters long; at most {limit} allowed")
