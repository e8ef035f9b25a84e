"""How raw records are stored: canonical JSON, deflated against a preset dictionary per game.

A record is ~1 KB of JSON that repeats the same keys and values in every game. Per-record
deflate alone halves it; a preset dictionary of typical record text (zlib `zdict`) cuts it to a
sixth, which is what keeps a stored game under 500 bytes (benchmarks/ingest_size.py). A codec id
names the dictionary forever: a dictionary file never changes once shipped; a better one gets
a new id, and old rows keep decoding with their own.
"""

from __future__ import annotations

import functools
import hashlib
import json
import zlib
from importlib import resources

import orjson

PLAIN = 0  # canonical JSON bytes, uncompressed
# codec id -> dictionary file in ingest/zdicts/ (never edit a shipped file: add a new id)
DICTIONARIES = {1: "slow6-v1.json", 2: "slide-v1.json"}
CODEC_FOR_GAME = {"slow6": 1, "slide": 2}
_WBITS = -15  # raw deflate: no zlib header or checksum (the content hash is the check)


def canonical(record: dict) -> bytes:
    """The canonical form of a parsed record: compact JSON with sorted keys."""
    return orjson.dumps(record, option=orjson.OPT_SORT_KEYS)


def content_hash(canonical_bytes: bytes) -> int:
    """64-bit hash of the canonical record; the same content always gives the same number."""
    return int.from_bytes(hashlib.blake2b(canonical_bytes, digest_size=8).digest(), "little")


@functools.cache
def dictionary(codec: int) -> bytes:
    name = DICTIONARIES[codec]
    text = resources.files("ingest").joinpath("zdicts", name).read_text(encoding="utf-8")
    return json.loads(text)["zdict"].encode("utf-8")


@functools.cache
def _primed(codec: int):
    # Level 6, memLevel 8: most of the gain of level 9. Loading a 16 KiB dictionary costs more
    # than compressing a record, so a primed compressor is copied per record instead.
    return zlib.compressobj(6, zlib.DEFLATED, _WBITS, 8, zlib.Z_DEFAULT_STRATEGY, dictionary(codec))


def encode(canonical_bytes: bytes, game: str) -> tuple[int, bytes]:
    """(codec id, stored bytes) for a record of `game`."""
    codec = CODEC_FOR_GAME.get(game, PLAIN)
    if codec == PLAIN:
        return PLAIN, canonical_bytes
    comp = _primed(codec).copy()
    return codec, comp.compress(canonical_bytes) + comp.flush()


def decode(codec: int, data: bytes) -> bytes:
    """The canonical JSON bytes of a stored record."""
    if codec == PLAIN:
        return bytes(data)
    dec = zlib.decompressobj(_WBITS, dictionary(codec))
    return dec.decompress(data) + dec.flush()


def register_sql(con) -> None:
    """Make `raw_json(record, codec)` available in SQL on `con` (and its cursors)."""

    def raw_json(data: bytes, codec: int) -> str:
        return decode(codec, data).decode("utf-8")

    try:
        con.create_function("raw_json", raw_json, ["BLOB", "UTINYINT"], "VARCHAR")
    except Exception as exc:  # already registered on this database instance
        if "already" not in str(exc).lower():
            raise
