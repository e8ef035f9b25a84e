"""The Vega/Vega-Lite/vega-embed JavaScript, built offline by vl-convert and served by the app.

`vl_convert.javascript_bundle()` takes seconds, so it is built once per vl-convert version, kept
in a cache file (its gzip beside it), and served from a versioned URL with a year-long immutable
cache and gzip.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import tempfile
import threading
from pathlib import Path

import vl_convert

VERSION = vl_convert.__version__  # type: ignore[attr-defined]  # set at run time, not in its stub
FILENAME = f"vega-bundle-{VERSION}.js"


class Bundle:
    def __init__(self, cache_dir: str | Path | None = None):
        self.cache_dir = Path(cache_dir or tempfile.gettempdir())
        self._lock = threading.Lock()
        self._js: bytes | None = None
        self._gz: bytes | None = None
        self.etag = ""

    def _load(self) -> tuple[bytes, bytes]:
        """(the bundle, gzipped), built or read from the cache files at the first call."""
        with self._lock:
            if self._js is not None and self._gz is not None:
                return self._js, self._gz
            path = self.cache_dir / f"balance-{FILENAME}"
            js, gz = _read(path), _read(path.with_name(path.name + ".gz"))
            if not js:
                # the stub makes `snippet` required; vl-convert defaults it (its docstring)
                js = vl_convert.javascript_bundle().encode()  # type: ignore[call-arg]
                _write(path, js)
            # gzip's trailer holds the length it unpacks to: a copy of another bundle is redone
            if len(gz) < 18 or int.from_bytes(gz[-4:], "little") != len(js) % 2**32:
                # made once and kept: compressing it cost every app's start ~25 ms of CPU
                gz = gzip.compress(js, 6, mtime=0)
                _write(path.with_name(path.name + ".gz"), gz)
            self._gz = gz
            self.etag = hashlib.sha256(js).hexdigest()[:20]
            self._js = js
            return js, gz

    def warm(self) -> None:
        """Build in the background so the first page view does not wait for it."""
        threading.Thread(target=self._load, daemon=True).start()

    def body(self, gzip_ok: bool) -> bytes:
        js, gz = self._load()
        return gz if gzip_ok else js


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _write(path: Path, data: bytes) -> None:
    """Written whole or not at all (another server may read it meanwhile)."""
    tmp = path.with_suffix(f".{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError:  # no cache, no harm: it is made again at the next start
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)  # a full disk: leave no part of it behind
