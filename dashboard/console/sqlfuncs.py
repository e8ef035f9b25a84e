"""Trusted Python functions of the console's engine: `raw_json(record, codec)`, bounded.

`ingest.storage.codec.decode` inflates whatever it is given, and the console lets anyone hand it a
literal: a 40 KB deflate stream of one token byte inflates to 41 MB and the token substitution
turns that into 1.1 GB. Stored records are at most 64 KiB of JSON (replays/wellformed.py), so
here the inflated stream is capped at MAX_INFLATED bytes and the decoded text at MAX_DECODED:
anything bigger is no stored record, and the query gets an error instead of eating the memory.
The decoding itself is the codec's (its dictionaries and tokens), so the text is the same.
"""

from __future__ import annotations

import zlib

MAX_INFLATED = 1024 * 1024  # bytes after inflating (a stored record: under 64 KiB)
MAX_DECODED = 4 * 1024 * 1024  # bytes of JSON after restoring the tokens


class RecordTooLarge(ValueError):
    pass


def decode_bounded(codec_id: int, data: bytes) -> bytes:
    from ingest.storage import codec

    if codec_id == codec.PLAIN:
        if len(data) > MAX_DECODED:
            raise RecordTooLarge(f"a plain record is at most {MAX_DECODED:,} bytes here")
        return bytes(data)
    wbits = getattr(codec, "_WBITS", -15)
    dec = zlib.decompressobj(wbits, codec.dictionary(codec_id))
    inflated = dec.decompress(data, MAX_INFLATED + 1)
    if len(inflated) > MAX_INFLATED or dec.unconsumed_tail:
        raise RecordTooLarge(
            f"raw_json: this record inflates beyond {MAX_INFLATED:,} bytes, so it is no stored "
            f"record (those are at most 64 KiB)"
        )
    inflated += dec.flush(MAX_INFLATED + 1 - len(inflated))
    if len(inflated) > MAX_INFLATED:
        raise RecordTooLarge(f"raw_json: this record inflates beyond {MAX_INFLATED:,} bytes")
    text = codec.restore(inflated, codec.tokens(codec_id))
    if len(text) > MAX_DECODED:
        raise RecordTooLarge(f"raw_json: this record decodes to more than {MAX_DECODED:,} bytes")
    return text


def register(con) -> None:
    """Make the bounded `raw_json(record, codec)` available on `con` (and its cursors)."""
    try:
        import ingest.storage.codec  # noqa: F401  (the dictionaries live there)
    except ImportError:
        return

    def raw_json(data: bytes, codec_id: int) -> str:
        # one clean line for the analyst whatever went wrong (the engine also cuts DuckDB's
        # traceback off: sqlsafe.scrub)
        try:
            return decode_bounded(codec_id, data).decode("utf-8")
        except RecordTooLarge:
            raise
        except KeyError:
            raise ValueError(f"raw_json: no codec {codec_id} (see raw_records.codec)") from None
        except UnicodeDecodeError:
            raise ValueError("raw_json: this record does not decode to UTF-8 text") from None
        except Exception as exc:  # zlib.error, ...: not a record this codec wrote
            raise ValueError(
                f"raw_json: not a record of codec {codec_id} ({type(exc).__name__})"
            ) from None

    try:
        con.create_function("raw_json", raw_json, ["BLOB", "UTINYINT"], "VARCHAR")
    except Exception as exc:  # already registered on this database instance
        if "already" not in str(exc).lower():
            raise
