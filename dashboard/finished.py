"""Finished downloads, kept a short while so that byte ranges of them can be asked for.

A notebook reading a download URL (`polars.read_parquet(url)`, `pl.read_csv(url)`, pyarrow,
DuckDB's httpfs) asks for the file's size, then for byte ranges of it (a Parquet footer first,
then its row groups). Every range must come from the same file: running the query again for
each one could give other bytes (another snapshot, another row order). So a whole download is
copied, once finished, into a kept file named for its query (format, SQL, parameters); a request
with a `Range` header (or a HEAD) is answered from that file while it is fresh, a plain GET
computes the result again and replaces it.

Bounded: KEEP_FILES files, KEEP_BYTES bytes in all, KEEP_SECONDS each (oldest out first); a
file is kept only while the disk keeps its reserve. They live in a directory of their own beside
the downloads being written (`<snapshot dir>/kept`), named with their process id: the first
download of a process deletes those of processes that are gone (a server killed).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from .lifetime import alive

KEEP_FILES = 8
KEEP_BYTES = 256 * 1024 * 1024
KEEP_SECONDS = 600.0


@dataclass
class Kept:
    path: Path
    size: int
    meta: dict
    etag: str
    at: float


def _alive(pid: str) -> bool:
    """Whether the process named in a kept file's name is still there."""
    return pid.isdigit() and alive(int(pid))


def key_of(fmt: str, sql: str, params: dict | None) -> str:
    text = orjson.dumps([fmt, sql, params or {}], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(text).hexdigest()[:32]


class Finished:
    def __init__(self, directory: Path, reserve: int):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.reserve = reserve
        self._lock = threading.Lock()
        self._kept: dict[str, Kept] = {}
        for old in self.directory.glob("kept-*"):
            if not _alive(old.name.split("-")[1]):
                old.unlink(missing_ok=True)

    def get(self, key: str) -> Kept | None:
        """The kept file of a query while it is fresh (None: none, or too old)."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is None:
                return None
            if time.monotonic() - kept.at > KEEP_SECONDS or not kept.path.exists():
                self._drop(key)
                return None
            return kept

    def keep(self, key: str, file, size: int, meta: dict) -> Kept | None:
        """Copy a finished download (an open file at its start) into the kept file of its query;
        None when it may not be kept (too big, or the disk has no room beyond its reserve)."""
        if size > KEEP_BYTES or shutil.disk_usage(self.directory).free < size + self.reserve:
            return None
        etag = f"{key[:16]}-{time.time_ns():x}"  # another result of the same query: another tag
        path = self.directory / f"kept-{os.getpid()}-{etag}"
        try:
            with open(path, "wb") as out:
                shutil.copyfileobj(file, out, 1024 * 1024)
        except OSError:
            path.unlink(missing_ok=True)
            return None
        kept = Kept(path, size, meta, etag, time.monotonic())
        with self._lock:
            self._drop(key)
            self._kept[key] = kept
            while len(self._kept) > KEEP_FILES or (
                sum(k.size for k in self._kept.values()) > KEEP_BYTES and len(self._kept) > 1
            ):
                self._drop(min(self._kept, key=lambda k: self._kept[k].at))
        return kept

    def _drop(self, key: str) -> None:
        kept = self._kept.pop(key, None)
        if kept is not None:  # a response still sending it holds it open: unlinking is safe
            kept.path.unlink(missing_ok=True)

    def close(self) -> None:
        with self._lock:
            for key in list(self._kept):
                self._drop(key)
