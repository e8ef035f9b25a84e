"""From JSON text to a record: size, syntax, nesting depth and duplicate keys, fast and exact.

orjson parses (and silently keeps the last of duplicate keys, and knows no depth limit below
1024), so two properties are checked on the text beside it, cheaply in the common case:

* Duplicate keys. Every key is followed by one colon outside strings, so the colons of the text
  are (key count as written) + (colons inside strings). `orjson.dumps` of the parsed object writes
  (keys kept) + (colons inside the strings kept), colons never escaped. Without a backslash in the
  text its strings are the parsed strings verbatim, so the two colon counts are equal exactly when
  no key was dropped, i.e. when there is no duplicate. With a backslash, strings are cut out of
  both texts first (the regex is exact on valid JSON) and the structural colons compared.
* Depth. The brackets outside strings make a balanced skeleton. Each pass of deleting every
  "[]" and then every "{}" removes all pairs of the current innermost level and at most two
  levels, so after p passes the depth was at most (pairs left) + 2p: for a real record one or
  two passes prove "<= 32"; pairs left after 32 passes prove "> 32"; otherwise an exact running
  sum decides. Strings are kept out of the skeleton without cutting them: brackets
  and quotes are kept, and if the non-overlapping '""' (counted left to right) account for every
  quote, each string's two quotes are adjacent, so no string holds a bracket and deleting the
  quotes leaves the skeleton; otherwise the exact regex cut is used instead.

Only when one of these finds a fault does `locate` walk the tokens to name the field.
"""

from __future__ import annotations

import re
from array import array
from itertools import accumulate
from typing import Any

import orjson

from replays._wf_common import MAX_BYTES, MAX_DEPTH, Malformed, kind
from replays.verdict import Record

_ALL = bytes(range(256))
_NOT_MARK = bytes(c for c in _ALL if c not in b'[]{}"\\')  # keep brackets, quotes, backslash
_NOT_BRACKET = bytes(c for c in _ALL if c not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 / -1 as signed bytes
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},:]', re.DOTALL)


def to_bytes(text: str | bytes) -> bytes:
    """The UTF-8 text, its size checked before anything else."""
    if isinstance(text, str):
        if len(text) > MAX_BYTES:  # UTF-8 is never shorter than the character count
            raise _too_big(len(text.encode("utf-8", "surrogatepass")))
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise Malformed("line", "not valid UTF-8 text (a lone surrogate)") from None
    elif isinstance(text, bytes):
        data = text
    elif isinstance(text, (bytearray, memoryview)):
        data = bytes(text)
    else:
        raise TypeError(f"parse() takes str or bytes, not {type(text).__name__}")
    if len(data) > MAX_BYTES:
        raise _too_big(len(data))
    return data


def _too_big(size: int) -> Malformed:
    return Malformed("record", f"the record is {size} bytes of JSON; at most {MAX_BYTES} allowed")


def parse(text: str | bytes) -> Record:
    data = to_bytes(text)
    record = load_object(data)
    raise_structure_fault(data, record)
    return record


def load_object(data: bytes) -> Record:
    """orjson's parse of `data`, which must be one JSON object (duplicates and depth unproven)."""
    try:
        record = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "depth" in str(exc):  # orjson's own limit (1024): far past ours, name the field
            fault = locate(data)
            if fault is not None:
                raise fault from None
        raise Malformed("line", f"not JSON: {exc}") from None
    if type(record) is not dict:
        raise Malformed("record", f"a record is a JSON object, got {kind(record)}")
    return record


def raise_structure_fault(data: bytes, record: Record) -> None:
    """Raise the first duplicate key or too-deep value of the text, if it has one."""
    if not _structure_ok(data, record):
        fault = locate(data)
        if fault is not None:
            raise fault


def keys_all_kept(data: bytes, record: Record, colons: int | None = None) -> bool:
    """True: `record` kept every key of its text (no duplicate). Then the text nests exactly as
    the record does, so for a record of the upload format's shape (5 levels at most) this is
    the whole structure proof, at a third of `_structure_ok`'s cost. False: look closer.
    (The colon argument of the module docstring, without a backslash in the text.) `colons`:
    the count of colons in `orjson.dumps(record)`, when the caller knows it."""
    if b"\\" in data:
        return False
    if colons is None:
        colons = orjson.dumps(record).count(b":")
    return data.count(b":") == colons


def _structure_ok(data: bytes, record: Record) -> bool:
    """True: no duplicate key and depth <= MAX_DEPTH, for certain. False: look closer."""
    try:
        canon = orjson.dumps(record)
    except orjson.JSONEncodeError:  # cannot happen for what orjson parsed; be safe
        return False
    marks = data.translate(None, _NOT_MARK)
    if b"\\" not in marks:
        if canon != data and data.count(b":") != canon.count(b":"):
            return False
        if 2 * marks.count(b'""') == marks.count(b'"'):  # every string's quotes adjacent
            skeleton = marks.translate(None, b'"')
        else:  # a string holds a bracket: cut strings out exactly
            skeleton = _STRING.sub(b"", data).translate(None, _NOT_BRACKET)
    else:
        bare = _STRING.sub(b"", data)
        if bare.count(b":") != _STRING.sub(b"", canon).count(b":"):
            return False
        skeleton = bare.translate(None, _NOT_BRACKET)
    return depth_at_most(skeleton, MAX_DEPTH)


def depth_at_most(skeleton: bytes, limit: int) -> bool:
    """Whether a balanced bracket string nests at most `limit` levels."""
    if len(skeleton) <= 2 * limit:  # too few pairs to nest deeper
        return True
    rest = skeleton
    for passes in range(1, limit + 1):
        rest = rest.replace(b"[]", b"").replace(b"{}", b"")
        # A pair of height h is left with height >= h - 2 * passes, and a height is at most
        # the number of pairs left: so h <= len(rest) / 2 + 2 * passes.
        if len(rest) // 2 + 2 * passes <= limit:
            return True
        if not rest:
            break
    else:
        return False  # pairs of height <= limit are all gone after `limit` passes
    return max(accumulate(array("b", skeleton.translate(_STEPS)))) <= limit


def _path(frames: list[list[Any]]) -> str:
    out: list[str] = []
    for is_object, _keys, at in frames:
        if is_object:
            out.append(at if not out else f".{at}")
        else:
            out.append(f"[{at}]")
    return "".join(out)


def locate(data: bytes) -> Malformed | None:
    """The first duplicate key or too-deep value in document order, named by field."""
    frames: list[list[Any]] = []  # [is_object, keys seen, current key or index]
    expect_key = False
    for match in _TOKEN.finditer(data):
        token = match.group()
        char = token[0]
        if char == 0x22:  # '"'
            if expect_key:
                key = orjson.loads(token) if b"\\" in token else token[1:-1].decode("utf-8")
                frame = frames[-1]
                if key in frame[1]:
                    return Malformed(
                        _path(frames[:-1] + [[True, None, key]]),
                        "duplicate key: each field may appear only once",
                    )
                frame[1].add(key)
                frame[2] = key
                expect_key = False
        elif char in b"[{":
            if not frames and char != 0x7B:
                return Malformed("record", "a record is a JSON object, got an array")
            if len(frames) >= MAX_DEPTH:
                holder = list(frames)
                while holder and not holder[-1][0]:  # name the field, not an index in it
                    holder.pop()
                return Malformed(
                    _path(holder) if holder else "record",
                    f"nested deeper than {MAX_DEPTH} levels (the record itself is level 1)",
                )
            frames.append([char == 0x7B, set(), 0])
            expect_key = char == 0x7B
        elif char in b"]}":
            if frames:
                frames.pop()
            expect_key = False
        elif char == 0x2C:  # ','
            if frames:
                if frames[-1][0]:
                    expect_key = True
                else:
                    frames[-1][2] += 1
    return None
