"""Compressed upload bodies (Content-Encoding gzip or deflate), inflated as they are read.

Mobile clients compress their uploads (Snowplow, Segment and Amplitude accept gzip). The body
is inflated a piece at a time (`decompressobj().decompress(data, max_length)`), never whole,
and the readers of bodies.py apply the same limits to what comes out (the batch size, a
record's 64 KiB): a bomb (a gigabyte of zeros in a megabyte of gzip) is answered 413 once the
limit's worth of it has been inflated, and no more than a piece is held at once.

"deflate" is liberal, as browsers are: RFC 9110 says zlib format (RFC 1950), but some clients
send raw deflate (RFC 1951); the first bytes tell which. "gzip" (and its old name "x-gzip")
accepts concatenated members, as gunzip does.
"""

from __future__ import annotations

import zlib

ACCEPTED = ("identity", "gzip", "deflate")  # as the 415 and the OpenAPI document list them
_NAMES = {"": "identity", "identity": "identity", "gzip": "gzip", "x-gzip": "gzip"} | {
    "deflate": "deflate"
}
PIECE = 64 * 1024  # bytes inflated (or read) at a step


class BadEncoding(Exception):
    """The body is not valid in its Content-Encoding."""

    def __init__(self, encoding: str, why: str):
        super().__init__(f"the body is not valid {encoding} ({why})")
        self.encoding = encoding


def coding(header: str) -> str | None:
    """The body's encoding by its Content-Encoding header ("identity", "gzip", "deflate"), or
    None when it is not accepted (another coding, or several applied one over another)."""
    return _NAMES.get(header.strip().lower())


class Inflating:
    """A file-like reader (read, readline) of `raw`'s body inflated from `encoding`."""

    def __init__(self, raw, encoding: str):
        self.raw = raw
        self.encoding = encoding
        self._buf = bytearray()
        self._inflater: zlib._Decompress | None = None
        self._pending = b""  # raw bytes not yet handed to the inflater
        self._eof = False

    def _start(self, head: bytes):
        if self.encoding == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        zlib_header = len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0
        return zlib.decompressobj(zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS)

    def _fill(self) -> bool:
        """Inflate one more piece into the buffer; False at the end of the body."""
        if self._eof:
            return False
        d = self._inflater
        if d is not None and d.unconsumed_tail:
            data = d.unconsumed_tail
        elif self._pending:
            data, self._pending = self._pending, b""
        else:
            data = self.raw.read(PIECE)
            if not data:
                self._eof = True
                if d is None or not d.eof:
                    raise BadEncoding(self.encoding, "it ends before the end of its stream")
                return False
        if d is None or d.eof:
            if d is not None and self.encoding != "gzip":
                return self._drop_trailer()
            if d is not None and not data.startswith(b"\x1f\x8b"):
                return self._drop_trailer()  # not another gzip member: ignored, as gunzip does
            d = self._inflater = self._start(data)
        try:
            out = d.decompress(data, PIECE)
        except zlib.error as exc:
            self._eof = True
            raise BadEncoding(self.encoding, str(exc).partition(": ")[2] or "corrupt") from None
        if d.eof and d.unused_data:
            self._pending = d.unused_data
        self._buf += out
        return True

    def _drop_trailer(self) -> bool:
        self._eof = True
        return False

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            while self._fill():
                pass
            size = len(self._buf)
        while len(self._buf) < size and self._fill():
            pass
        out = bytes(self._buf[:size])
        del self._buf[:size]
        return out

    def readline(self, size: int | None = -1) -> bytes:
        limit = size if size is not None and size >= 0 else None
        start = 0
        while True:
            end = self._buf.find(b"\n", start)
            if end >= 0 and (limit is None or end < limit):
                return self.read(end + 1)
            if limit is not None and len(self._buf) >= limit:
                return self.read(limit)
            start = len(self._buf)
            if not self._fill():
                return self.read(len(self._buf) if limit is None else min(limit, len(self._buf)))
