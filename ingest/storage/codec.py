"""How raw records are stored: canonical JSON, deflated against a preset dictionary per game.

A record is ~1 KB of JSON that repeats the same keys and values in every game. Per-record
deflate alone halves it; a preset dictionary of typical record text (zlib `zdict`) cuts it to a
sixth. Codecs 3 and 4 first replace the record's most repeated fragments (`"]},{"moves":["`)
by single control bytes, which canonical JSON never contains (orjson escapes them), so the
substitution is exactly reversible and deflate spends a few bits instead of a match on each.
That keeps a stored game under 500 bytes (benchmarks/ingest_size.py). A codec id names its
tokens and dictionary forever: a file in ingest/storage/zdicts/ never changes once shipped; a better
one gets a new id, and old rows keep decoding with their own.
"""

from __future__ import annotations

import functools
import hashlib
import json
import zlib
from importlib import resources

import orjson

PLAIN = 0  # canonical JSON bytes, uncompressed
# codec id -> file in ingest/storage/zdicts/ (never edit a shipped file: add a new id)
DICTIONARIES = {1: "slow6-v1.json", 2: "slide-v1.json", 3: "slow6-v2.json", 4: "slide-v2.json"}
CODEC_FOR_GAME = {"slow6": 3, "slide": 4}  # what new records are stored with
_WBITS = -15  # raw deflate: no zlib header or checksum (the content hash is the check)


def canonical(record: dict) -> bytes:
    """The canonical form of a parsed record: compact JSON with sorted keys."""
    return orjson.dumps(record, option=orjson.OPT_SORT_KEYS)


def content_hash(canonical_bytes: bytes) -> int:
    """64-bit hash of the canonical record; the same content always gives the same number."""
    return int.from_bytes(hashlib.blake2b(canonical_bytes, digest_size=8).digest(), "little")


@functools.cache
def _spec(codec: int) -> dict:
    name = DICTIONARIES[codec]
    text = resources.files(__package__).joinpath("zdicts", name).read_text(encoding="utf-8")
    return json.loads(text)


def dictionary(codec: int) -> bytes:
    return _spec(codec)["zdict"].encode("utf-8")


@functools.cache
def tokens(codec: int) -> tuple[tuple[bytes, bytes], ...]:
    """(fragment, control byte) pairs in the order they are substituted when encoding."""
    frags = [t.encode() for t in _spec(codec).get("tokens", [])]
    assert len(frags) < 32
    return tuple((frag, bytes([i + 1])) for i, frag in enumerate(frags))


def substitute(data: bytes, pairs) -> bytes:
    for frag, code in pairs:
        data = data.replace(frag, code)
    return data


def restore(data: bytes, pairs) -> bytes:
    for frag, code in reversed(pairs):
        data = data.replace(code, frag)
    return data


# How hard the encoder works is not part of a codec (any level decodes with its dictionary),
# so it is chosen here, not in the frozen files: level 3 with a 16 KiB hash table (memLevel 5,
# cheap to copy) compresses a Slow6 record in half the time of level 9 at memLevel 8, for
# ~12 bytes more a record (benchmarks/ingest_size.py: still under 500 bytes a stored game).
_LEVEL, _MEM_LEVEL = 3, 5


@functools.cache
def _primed(codec: int):
    # Loading a dictionary costs more than compressing a record: copy a primed compressor.
    zd = dictionary(codec)
    return zlib.compressobj(_LEVEL, zlib.DEFLATED, _WBITS, _MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY, zd)


def encode(canonical_bytes: bytes, game: str) -> tuple[int, bytes]:
    """(codec id, stored bytes) for a record of `game`."""
    codec = CODEC_FOR_GAME.get(game, PLAIN)
    return codec, encode_with(codec, canonical_bytes)


def encode_with(codec: int, canonical_bytes: bytes) -> bytes:
    if codec == PLAIN:
        return canonical_bytes
    comp = _primed(codec).copy()
    return comp.compress(substitute(canonical_bytes, tokens(codec))) + comp.flush()


def decode(codec: int, data: bytes) -> bytes:
    """The canonical JSON bytes of a stored record."""
    if codec == PLAIN:
        return bytes(data)
    dec = zlib.decompressobj(_WBITS, dictionary(codec))
    return restore(dec.decompress(data) + dec.flush(), tokens(codec))


def register_sql(con) -> None:
    """Make `raw_json(record, codec)` available in SQL on `con` (and its cursors)."""

    def raw_json(data: bytes, codec: int) -> str:
        return decode(codec, data).decode("utf-8")

    try:
        con.create_function("raw_json", raw_json, ["BLOB", "UTINYINT"], "VARCHAR")
    except Exception as exc:  # already registered on this database instance
        if "already" not in str(exc).lower():
            raise
