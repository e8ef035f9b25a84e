"""Reading the live store file without dropping DuckDB's lock on it.

DuckDB keeps its file to one writing process with a POSIX record lock (fcntl). Such locks
belong to the process, and the kernel drops all of them on a file when the process closes ANY
descriptor of that file, not only the one DuckDB locked through. A copy of the store made with
`open`/`shutil.copyfile` in the server process therefore unlocked the store at its close, and
a second writer could get in beside the server (its writes then lost at the server's next
checkpoint).

So the server process reads its store through one descriptor per file, opened the first time
it is needed and never closed: `copy` copies with `os.copy_file_range` (in-kernel, a reflink
where the file system can) from explicit offsets, falling back to `os.sendfile`, and never
moves that descriptor's offset, so concurrent copies share it safely. Nothing else in the
server may `open()` the store file; `os.stat`/`os.path.getsize`/`statvfs` open nothing.
"""

from __future__ import annotations

import os
import threading

_held: dict[tuple[int, int], int] = {}  # (st_dev, st_ino) -> read-only descriptor, never closed
_lock = threading.Lock()
_CHUNK = 64 * 1024 * 1024


def descriptor(path: str) -> int:
    """A read-only descriptor of the file at `path`, the same one for the life of the process.

    Looked up by the file's identity (stat, which opens nothing). A new file is opened once
    and kept, even when the path was replaced between the stat and the open (then it is
    kept under the identity it has): closing it could drop a lock on the file it names."""
    st = os.stat(path)
    key = (st.st_dev, st.st_ino)
    with _lock:
        fd = _held.get(key)
        if fd is None:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            opened = os.fstat(fd)
            _held[(opened.st_dev, opened.st_ino)] = fd
            if (opened.st_dev, opened.st_ino) != key:  # replaced meanwhile: retry by identity
                return descriptor(path)
        return fd


def copy(src: str, dst: str) -> int:
    """Copy the file at `src` (the live store) to a new file `dst` without ever closing a
    descriptor of `src` in this process; returns the bytes copied. `dst` is replaced."""
    fd = descriptor(src)
    size = os.fstat(fd).st_size
    out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        done = 0
        use_range = hasattr(os, "copy_file_range")
        while done < size:
            n = min(_CHUNK, size - done)
            if use_range:
                try:
                    got = os.copy_file_range(fd, out, n, done, done)
                except OSError:  # across file systems on an old kernel, or unsupported
                    use_range = False
                    continue
            else:
                os.lseek(out, done, os.SEEK_SET)
                got = os.sendfile(out, fd, done, n)
            if got == 0:  # the file shrank meanwhile: copy what there is
                break
            done += got
    finally:
        os.close(out)
    return done
