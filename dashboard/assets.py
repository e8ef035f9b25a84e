"""The Vega/Vega-Lite/vega-embed JavaScript, built offline by vl-convert and served by the app.

`vl_convert.javascript_bundle()` takes seconds, so it is built once per vl-convert version, kept
in a cache file, and served from a versioned URL with a year-long immutable cache and gzip.
"""

from __future__ import annotations

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
        """(the bundle, gzipped), built or read from the cache file at the first call."""
        with self._lock:
            if self._js is not None and self._gz is not None:
                return self._js, self._gz
            path = self.cache_dir / f"balance-{FILENAME}"
            try:
                js = path.read_bytes()
            except OSError:
                js = b""
            if not js:
                # the stub makes `snippet` required; vl-convert defaults it (its docstring)
                js = vl_convert.javascript_bundle().encode()  # type: ignore[call-arg]
                try:
                    self.cache_dir.mkdir(parents=True, exist_ok=True)
                    tmp = path.with_suffix(f".{threading.get_ident()}.tmp")
                    tmp.write_bytes(js)
                    tmp.replace(path)
                except OSError:
                    pass  # no cache, no harm: it is rebuilt at the next start
            self._gz = gz = gzip.compress(js, 6, mtime=0)
            self.etag = hashlib.sha256(js).hexdigest()[:20]
            self._js = js
            return js, gz

    def warm(self) -> None:
        """Build in the background so the first page view does not wait for it."""
        threading.Thread(target=self._load, daemon=True).start()

    def body(self, gzip_ok: bool) -> bytes:
        js, gz = self._load()
        return gz if gzip_ok else js
