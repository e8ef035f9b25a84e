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
short by a crash during its write ends its segment; it was never acknowledged.
"""

from __future__ import annotations

import datetime as dt
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

MAGIC = b"balance-journal 1\n"
_HEAD = struct.Struct("<II")  # payload length, crc32 of payload
_ROW = struct.Struct("<16sBBQBq")  # game_id, game, status, content_hash, codec, received µs
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
    """The open segment. Not thread-safe: only the holder of the store's commit lock appends."""

    def __init__(self, db_path: str | Path):
        self.db_path = Path(db_path)
        existing = segments(self.db_path)
        self._next = int(existing[-1].name.rsplit(".", 1)[1]) + 1 if existing else 0
        self._fd: int | None = None
        self.path: Path | None = None

    def append(self, rows: list[tuple]) -> None:
        """Write rows and make them durable (returns after fdatasync)."""
        if self._fd is None:
            self._open()
        data = memoryview(b"".join(encode(row) for row in rows))
        while data:  # a write may be short (a signal, a full disk): the rest follows it
            data = data[os.write(self._fd, data) :]
        os.fdatasync(self._fd)

    def _open(self) -> None:
        self.path = self.db_path.with_name(f"{self.db_path.name}.journal.{self._next:08d}")
        self._next += 1
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        os.write(self._fd, MAGIC)
        os.fsync(self._fd)
        _sync_dir(self.path.parent)  # the new file's name must survive a crash too

    def rotate(self) -> Path | None:
        """Close the open segment (if any) and return its path; the next append opens one."""
        if self._fd is None:
            return None
        os.close(self._fd)
        self._fd = None
        path, self.path = self.path, None
        return path


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
