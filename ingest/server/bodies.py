"""Reading an upload body within its limits, line by line, without holding more than a line."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from .pipeline import MAX_RECORD, TooLong


class BodyTooLarge(Exception):
    pass


def ndjson_lines(
    stream: BinaryIO, max_body: int, max_line: int = MAX_RECORD
) -> Iterator[tuple[int, bytes | TooLong]]:
    """(line number, text) for every non-blank line; a line longer than `max_line` comes out
    as TooLong (the rest of it is skipped unread into memory). Raises BodyTooLarge once more
    than `max_body` bytes were read (bodies sent without a Content-Length)."""
    total = 0
    number = -1
    while True:
        chunk = stream.readline(max_line + 2)  # room for "\r\n" after a full-size record
        if not chunk:
            return
        number += 1
        total += len(chunk)
        if total > max_body:
            raise BodyTooLarge
        if not chunk.endswith(b"\n") and len(chunk) >= max_line + 2:
            size = len(chunk)
            while True:  # skip to the end of this line
                more = stream.readline(65536)
                total += len(more)
                size += len(more)
                if total > max_body:
                    raise BodyTooLarge
                if not more or more.endswith(b"\n"):
                    break
            yield number, TooLong(size)
            continue
        text = chunk.rstrip(b"\r\n")
        if text.strip(b" \t"):
            yield number, text
        # blank (or whitespace-only) lines carry no record: skipped, but keep their number


def whole_body(stream: BinaryIO, limit: int) -> bytes:
    """The body, at most `limit` bytes (BodyTooLarge beyond)."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise BodyTooLarge
    return data


def drain(stream: BinaryIO, limit: int) -> None:
    """Read and drop what is left of a body, at most `limit` bytes. A client still sending
    when an early answer comes (413, 415, 429) then reads that answer: the server closes a
    connection whose body it left unread, and the client fails to send instead."""
    left = limit
    while left > 0:
        chunk = stream.read(min(65536, left))
        if not chunk:
            return
        left -= len(chunk)
