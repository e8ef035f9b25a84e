"""The upload journal: where an uploaded game is durable before DuckDB holds it.

A DuckDB commit costs 2-3 ms of CPU however few rows it holds (and more next to busy request
threads), so committing each group of single-record uploads to DuckDB made the commit the
bottleneck of the server. Instead the commit's leader appends a group's raw records to the journal
and `fdatasync`s it: that is the commit a 2xx waits for (~0.3 ms, without the GIL). The rows
thread then moves journaled games into DuckDB in batches (raw record and derived rows in one
transaction) and deletes a segment once every game in it is committed there.

Files: `<db>.journal.<seq>`, segments written one after the other, under the store's commit lock.
A segment is a magic line, then entries `<length u32><crc32 u32><payload>`, payload
`<game_id 16 bytes><game u8><status u8><content_hash u64><codec u8><received µs i64><record>`.
On open the store loads every segment left behind (a crash, a kill) before serving: entries
whose game_id is already stored are skipped, so loading twice changes nothing. An entry cut
short by a crash during its write ends its segment; it was never acknowledged. A segment whose
write or sync failed is never appended to again (see `Journal`), so nothing acknowledged ever
follows a damaged entry. A segment is deleted only once every game in it is in DuckDB.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

MAGIC = b"balance-journal 1\n"
_HEAD = struct.Struct("<II")  # payload length, crc32 of payload
_ROW = struct.Struct("<16sBBQBq")  # game_id, game, status, content_hash, codec, received µs
# the bytes written for game and status: an on-disk format, frozen (not the vocabulary's order)
GAMES = ("slow6", "slide")
STATUSES = ("verified", "quarantined")
_EPOCH = dt.datetime(1970, 1, 1)


def encode(row: tuple) -> bytes:
    """One journal entry for a raw_records row (game_id as 16 bytes, game, status, hash, blob,
    codec, received)."""
    key, game, status, content_hash, blob, codec_id, received = row
    micros = (received - _EPOCH) // dt.timedelta(microseconds=1)
    payload = _ROW.pack(
        key,
        GAMES.index(game),
        STATUSES.index(status),
        content_hash,
        codec_id,
        micros,
    ) + bytes(blob)
    return _HEAD.pack(len(payload), zlib.crc32(payload)) + payload


def entries(data: bytes) -> Iterator[tuple]:
    """The raw_records rows of a segment's bytes, up to the first incomplete or damaged entry."""
    if not data.startswith(MAGIC):
        return
    at = len(MAGIC)
    while at + _HEAD.size <= len(data):
        length, crc = _HEAD.unpack_from(data, at)
        payload = data[at + _HEAD.size : at + _HEAD.size + length]
        if len(payload) < length or zlib.crc32(payload) != crc or length < _ROW.size:
            return  # torn by a crash mid-write: never acknowledged
        key, game, status, content_hash, codec_id, micros = _ROW.unpack_from(payload)
        received = _EPOCH + dt.timedelta(microseconds=micros)
        yield (
            key,
            GAMES[game],
            STATUSES[status],
            content_hash,
            payload[_ROW.size :],
            codec_id,
            received,
        )
        at += _HEAD.size + length


def segments(db_path: str | Path) -> list[Path]:
    """The journal segments of a store file, oldest first."""
    db = Path(db_path)
    found = []
    for path in db.parent.glob(db.name + ".journal.*"):
        seq = path.name.rsplit(".", 1)[1]
        if seq.isdigit():
            found.append((int(seq), path))
    return [path for _, path in sorted(found)]


class Journal:
    """The open segment. Not thread-safe: only the holder of the store's commit lock appends.

    A write or sync that fails (a full disk: ENOSPC; an I/O error) fails its segment: after a
    failed fsync what the page cache holds of it is unknown, and bytes cut short mid-entry
    would end the segment for a reader (`entries`), hiding whatever was appended after them.
    So the bytes past the last successful sync are cut off (best effort), the file is closed,
    and nothing is ever appended to it again: the store rotates it (its games acknowledged
    before stay in it until DuckDB holds them) and the next append opens a new segment."""

    def __init__(self, db_path: str | Path):
        self.db_path = Path(db_path)
        existing = segments(self.db_path)
        self._next = int(existing[-1].name.rsplit(".", 1)[1]) + 1 if existing else 0
        self._fd: int | None = None
        self._size = 0  # bytes of the open segment made durable so far
        self.path: Path | None = None
        self.failed = False  # the open segment failed a write: rotate before appending

    def append(self, rows: list[tuple]) -> Path:
        """Write rows and make them durable (returns after fdatasync) in the open segment, or a
        new one; returns its path. Raises OSError if they may not be durable: nothing of them
        may be acknowledged then, and the segment is failed (see the class)."""
        if self.failed:
            raise RuntimeError("the failed journal segment must be rotated first")
        if self._fd is None:
            self.open_segment()
        fd, path = self._fd, self.path
        if fd is None or path is None:  # (never: open_segment opens one or raises)
            raise RuntimeError("no journal segment is open")
        data = b"".join(encode(row) for row in rows)
        try:
            view = memoryview(data)
            while view:  # a write may be short (a signal, a full disk): the rest follows it
                view = view[os.write(fd, view) :]
            os.fdatasync(fd)
        except OSError:
            self._fail(fd)
            raise
        self._size += len(data)
        return path

    def open_segment(self) -> None:
        """Open the next segment (if none is open): its name and magic line durable. Raises
        OSError (a full disk), leaving no file behind; the store uses it as a probe too."""
        if self._fd is not None or self.failed:
            return
        path = self.db_path.with_name(f"{self.db_path.name}.journal.{self._next:08d}")
        self._next += 1
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        try:
            view = memoryview(MAGIC)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            _sync_dir(path.parent)  # the new file's name must survive a crash too
        except OSError:
            _close(fd)
            remove(path)
            raise
        self._fd, self.path, self._size = fd, path, len(MAGIC)

    def _fail(self, fd: int) -> None:
        """Fail the open segment, whose file is `fd`."""
        try:  # never count on the bytes of the failed append: cut them off if we can
            os.ftruncate(fd, self._size)
        except OSError:
            pass
        _close(fd)
        self._fd = None
        self.failed = True

    def rotate(self) -> Path | None:
        """Close the open (or failed) segment, if any, and return its path; the next append
        opens a new one."""
        if self.path is None:
            return None
        if self._fd is not None:
            _close(self._fd)
        self._fd = None
        self.failed = False
        path, self.path = self.path, None
        return path


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:  # it is loaded again at the next start: no game is lost
        logging.getLogger("ingest.journal").warning("could not delete %s: %s", path.name, exc)
