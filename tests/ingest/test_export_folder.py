"""`balance export --out DIR` and `balance report --out FILE` never delete or overwrite what
they did not write, never follow a symbolic link, and a failed run (a full disk, a file in the
way, a missing folder) leaves nothing behind and says why in one line, without a traceback.

An earlier export is recognised by its manifest's content (its marker, and the files it lists
with their checksums); a folder holding anything else, even a `manifest.json`, is refused and
left as it was. The full disk is a real tmpfs (mounted here when the tests run as root)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support import balance, build_demo_db


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return build_demo_db(tmp_path_factory.mktemp("small") / "store.duckdb", games=12, slide=6)


def export(store: Path, out: Path, *extra: str):
    return balance("export", "--db", str(store), "--out", str(out), *extra)


def one_line(r) -> str:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr + r.stdout, r.stderr
    return lines[0]


def tree(top: Path) -> dict[str, bytes]:
    return {
        p.relative_to(top).as_posix(): (p.read_bytes() if p.is_file() else b"<dir>")
        for p in sorted(top.rglob("*"))
    }


def leftovers(parent: Path) -> list[str]:
    return [p.name for p in parent.iterdir() if ".partial" in p.name or ".old-" in p.name]


def test_a_folder_it_did_not_write_is_refused_and_left_as_it_was(tmp_path, store):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.js").write_text("console.log('mine')")
    for manifest in ("{}", '{"dataset": "something else", "tables": {}}', "not json"):
        (project / "manifest.json").write_text(manifest)
        before = tree(project)
        r = export(store, project)
        assert r.returncode == 2
        assert "nothing replaced" in one_line(r) or "not an export's" in one_line(r)
        assert tree(project) == before
    # an export's own manifest with a file it does not list beside it: refused too
    out = tmp_path / "public"
    assert export(store, out).returncode == 0
    (out / "notes.txt").write_text("mine")
    before = tree(out)
    r = export(store, out)
    assert r.returncode == 2 and "notes.txt" in one_line(r)
    assert tree(out) == before
    (out / "notes.txt").unlink()
    # a listed file changed since: refused (it is not what the export wrote any more)
    manifest = json.loads((out / "manifest.json").read_text())
    first = manifest["tables"]["games"]["files"][0]["path"]
    (out / first).write_bytes((out / first).read_bytes() + b"x")
    r = export(store, out)
    assert r.returncode == 2 and "changed since the export" in one_line(r)
    # its own README and SHA256SUMS are checked too (someone's notes added to the README)
    fresh = tmp_path / "fresh"
    assert export(store, fresh).returncode == 0
    for name in ("README.md", "SHA256SUMS"):
        before = (fresh / name).read_bytes()
        (fresh / name).write_bytes(before + b"my notes\n")
        r = export(store, fresh)
        assert r.returncode == 2 and f"{name} is missing or changed" in one_line(r)
        assert (fresh / name).read_bytes() == before + b"my notes\n"
        (fresh / name).write_bytes(before)
    assert export(store, fresh).returncode == 0
    assert leftovers(tmp_path) == []


def test_an_earlier_export_is_replaced_file_by_file(tmp_path, store):
    out = tmp_path / "public"
    assert export(store, out).returncode == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["written_by"] == "balance export"
    weeks = manifest["weeks"]
    r = export(store, out, "--format", "csv", "--from", weeks[-1])
    assert r.returncode == 0, r.stderr
    assert not list(out.rglob("*.parquet")) and list(out.rglob("*.csv"))
    again = json.loads((out / "manifest.json").read_text())
    listed = {f["path"] for t in again["tables"].values() for f in t["files"]}
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert files == listed | {"manifest.json", "README.md", "SHA256SUMS"}
    assert leftovers(tmp_path) == []
    empty = tmp_path / "empty"
    empty.mkdir()
    assert export(store, empty).returncode == 0 and (empty / "manifest.json").is_file()


def test_symbolic_links_are_never_followed(tmp_path, store):
    elsewhere = tmp_path / "elsewhere"
    assert export(store, elsewhere).returncode == 0  # an export, even: reached through a link
    before = tree(elsewhere)
    link = tmp_path / "link"
    link.symlink_to(elsewhere)
    r = export(store, link)
    assert r.returncode == 2 and "symbolic link" in one_line(r)
    assert tree(elsewhere) == before and link.is_symlink()
    # a link inside an earlier export (to a folder of someone else's)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep")
    (elsewhere / "games" / "more").symlink_to(victim)
    r = export(store, elsewhere)
    assert r.returncode == 2 and "symbolic link" in one_line(r)
    assert (victim / "keep.txt").read_text() == "keep"
    # the report: never written through a link
    target = tmp_path / "target.txt"
    target.write_text("keep")
    (tmp_path / "report.html").symlink_to(target)
    r = balance("report", "--db", str(store), "--out", str(tmp_path / "report.html"))
    assert r.returncode == 2 and "symbolic link" in one_line(r)
    assert target.read_text() == "keep"


def test_a_file_in_the_way_or_a_missing_folder_says_so_in_one_line(tmp_path, store):
    in_the_way = tmp_path / "file"
    in_the_way.write_text("mine")
    r = export(store, in_the_way)
    assert r.returncode == 2 and "is a file" in one_line(r)
    r = export(store, in_the_way / "sub")
    assert r.returncode == 2 and "not a folder" in one_line(r)
    r = export(store, tmp_path / "missing" / "out")
    assert r.returncode == 2 and "not a folder" in one_line(r)
    assert in_the_way.read_text() == "mine" and not (tmp_path / "missing").exists()
    report = tmp_path / "report.html"
    for out, says in (
        (tmp_path / "missing" / "r.html", "not a folder"),
        (tmp_path, "is a folder"),
        (in_the_way, "not a balance report"),
    ):
        r = balance("report", "--db", str(store), "--out", str(out))
        assert r.returncode == 2 and says in one_line(r)
    assert in_the_way.read_text() == "mine"
    r = balance("report", "--db", str(store), "--out", str(report))
    assert r.returncode == 0, r.stderr
    r = balance("report", "--db", str(store), "--out", str(report))  # its own: replaced
    assert r.returncode == 0, r.stderr
    assert leftovers(tmp_path) == [] and not list(tmp_path.glob(".report.html*"))


@pytest.fixture
def full_disk(tmp_path):
    """A real tmpfs of 2 MiB, filled to a few KiB (mounted as root; else skipped)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)])
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (no privilege in this container)")
    try:
        filler = disk / "filler"
        st = os.statvfs(disk)
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:  # all but a little room: an export's start
            os.posix_fallocate(fd, 0, st.f_bavail * st.f_frsize - 16 * 1024)
        finally:
            os.close(fd)
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)])


def test_a_full_disk_leaves_nothing_behind(full_disk, store):
    r = export(store, full_disk / "public")
    assert r.returncode == 1
    assert "No space left on device" in one_line(r) and "nothing written" in one_line(r)
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler"]
    st = os.statvfs(full_disk)
    with open(full_disk / "filler", "r+b") as f:  # no room at all now: a report is small
        os.posix_fallocate(f.fileno(), os.fstat(f.fileno()).st_size, st.f_bavail * st.f_frsize)
    r = balance("report", "--db", str(store), "--out", str(full_disk / "report.html"))
    assert r.returncode == 1 and "No space left on device" in one_line(r)
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler"]
