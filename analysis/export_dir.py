"""Where `balance export` writes: it replaces only what it wrote itself.

An export is written into a fresh folder beside `--out` (`.<name>.partial-<random>`, made by
this run alone), then put in place by renames. What may be at `--out` before:

- nothing, or an empty folder: the export takes its place;
- an earlier export: recognised by its manifest's content (`written_by` and `dataset`, and the
  list of its files with their sizes and SHA-256), and only if the folder holds nothing else
  and every file still has the bytes the manifest names (README.md: `readme_sha256`;
  SHA256SUMS: the manifest's list). It is moved aside, the new
  export renamed in, and then only the files it lists (and the folders they emptied) are
  removed;
- anything else (other files, a manifest that is not an export's or names files that changed,
  a symbolic link anywhere, a file in the way): refused, nothing touched.

A symbolic link is never followed: `--out` itself, a folder or a file inside it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path, PurePosixPath

import orjson

WRITTEN_BY = "balance export"
DATASET = "balance public games"
OWN_FILES = ("manifest.json", "README.md", "SHA256SUMS")  # beside the listed data files


class Refused(Exception):
    """`--out` holds something this command did not write (message for a person)."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _listed(manifest: dict) -> dict[str, dict] | None:
    """data file path -> its entry, when `manifest` is an export's (else None)."""
    if not isinstance(manifest, dict) or manifest.get("dataset") != DATASET:
        return None
    if manifest.get("written_by", WRITTEN_BY) != WRITTEN_BY:  # exports before the marker
        return None
    tables = manifest.get("tables")
    if not isinstance(tables, dict):
        return None
    files: dict[str, dict] = {}
    for table in tables.values():
        for f in table.get("files", []) if isinstance(table, dict) else [None]:
            if not isinstance(f, dict) or not isinstance(f.get("path"), str):
                return None
            rel = PurePosixPath(f["path"])
            if rel.is_absolute() or ".." in rel.parts or not rel.parts:
                return None
            if not isinstance(f.get("sha256"), str) or not isinstance(f.get("bytes"), int):
                return None
            files[rel.as_posix()] = f
    return files


def check_out(out: Path) -> list[str] | None:
    """The files of an earlier export at `out` to remove once the new one is in place (None:
    nothing there, or an empty folder); Refused when `out` holds anything else."""
    try:
        st = os.lstat(out)
    except (FileNotFoundError, NotADirectoryError):
        parent = out.parent
        if not parent.is_dir():
            raise Refused(f"{parent} is not a folder: make it first") from None
        return None
    if stat.S_ISLNK(st.st_mode):
        raise Refused(f"{out} is a symbolic link: give the folder itself")
    if not stat.S_ISDIR(st.st_mode):
        raise Refused(f"{out} is a file, not a folder: give another --out")
    entries = _walk(out)
    if not entries:
        return None
    manifest_path = out / "manifest.json"
    if "manifest.json" not in entries:
        raise Refused(
            f"{out} holds other files (no manifest.json of an earlier export): give an empty "
            "or new folder"
        )
    try:
        manifest = orjson.loads(manifest_path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        manifest = None
    files = _listed(manifest) if manifest is not None else None
    if files is None:
        raise Refused(
            f"{out} holds a manifest.json that is not an export's: give an empty or new folder"
        )
    others = sorted(set(entries) - set(files) - set(OWN_FILES))
    if others:
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise Refused(f"{out} holds files an export did not write ({shown}): nothing replaced")
    for rel, f in files.items():
        path = out / rel
        if rel not in entries or path.stat().st_size != f["bytes"] or _sha256(path) != f["sha256"]:
            raise _changed(out, rel)
    readme_sum = manifest.get("readme_sha256")  # exports before it: the README is taken as is
    readme = out / "README.md"
    if "README.md" in entries and readme_sum is not None and _sha256(readme) != readme_sum:
        raise _changed(out, "README.md")
    if "SHA256SUMS" in entries:
        lines = set((out / "SHA256SUMS").read_text(encoding="utf-8", errors="replace").splitlines())
        if lines != {f"{f['sha256']}  {rel}" for rel, f in files.items()}:
            raise _changed(out, "SHA256SUMS")
    return sorted(set(files) | (set(OWN_FILES) & set(entries)))


def _changed(out: Path, rel: str) -> Refused:
    return Refused(
        f"{out}/{rel} is missing or changed since the export that wrote it: nothing replaced "
        "(move the folder away to export there)"
    )


def _walk(top: Path) -> list[str]:
    """Every file under `top`, relative (POSIX); Refused at a symbolic link or a special file."""
    found = []
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            mode = os.lstat(path).st_mode
            rel = path.relative_to(top).as_posix()
            if stat.S_ISLNK(mode):
                raise Refused(f"{top}/{rel} is a symbolic link: nothing replaced")
            if stat.S_ISREG(mode):
                found.append(rel)
            elif not stat.S_ISDIR(mode):
                raise Refused(f"{top}/{rel} is not a regular file: nothing replaced")
    return found


def partial(out: Path) -> Path:
    """A new, empty folder beside `out`, this run's own (mkdtemp: created exclusively)."""
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))


def discard(tmp: Path) -> None:
    """Remove this run's partial folder (it made everything in it)."""
    shutil.rmtree(tmp, ignore_errors=True)


def put_in_place(tmp: Path, out: Path, old_files: list[str] | None) -> None:
    """Rename the finished export at `tmp` to `out`; an earlier export there (`old_files`) is
    moved aside first and then only its listed files are removed."""
    if old_files is None:
        if out.is_dir() and not out.is_symlink():
            out.rmdir()  # empty (checked): fails rather than removes if something arrived
        tmp.rename(out)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    aside.rmdir()  # a free name: rename needs it absent
    out.rename(aside)
    try:
        tmp.rename(out)
    except OSError:
        aside.rename(out)  # put the earlier export back
        raise
    remove_listed(aside, old_files)


def remove_listed(top: Path, files: list[str]) -> None:
    """Remove `files` under `top`, then the folders they leave empty and `top` if empty;
    anything else stays where it is."""
    folders: set[PurePosixPath] = set()
    for rel in files:
        path = top / rel
        try:
            if not path.is_symlink() and path.is_file():
                path.unlink()
        except FileNotFoundError:
            pass
        folders.update(p for p in PurePosixPath(rel).parents if str(p) != ".")
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        try:
            (top / folder).rmdir()
        except OSError:  # not empty: something not ours is there
            pass
    try:
        top.rmdir()
    except OSError:
        pass
