"""Every verified game is exported whatever its client's clock said (year 1 to 9999), and the
Data quality page counts the games whose end time is far from their receipt."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pyarrow.parquet as pq
import pytest
from support import REPO, SLIDE, SLOW6, Server, fresh, wait_for

pytestmark = pytest.mark.slow  # a real server and `balance export` processes

AHEAD = (datetime.now(UTC) + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
CLOCKS = {
    "0001-01-01T00:00:00Z": "behind",
    "1969-07-20T20:17:00Z": "behind",
    "2000-01-01T00:00:00Z": "behind",
    "9999-01-01T00:00:00Z": "ahead",
    "9999-12-31T23:59:59Z": "ahead",
    AHEAD: "ahead",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("dates")).start()
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    records = [fresh(SLOW6[i % len(SLOW6)], ended_at=t) for i, t in enumerate([*CLOCKS, now])]
    records.append(fresh(SLIDE[0], ended_at="9999-12-31T23:59:59Z"))
    r = s.upload(records)
    assert [x["verdict"] for x in r.json()["results"]] == ["accepted"] * len(records)
    s.ids = {"games": {r["game_id"] for r in records[:-1]}, "slide_games": {records[-1]["game_id"]}}
    wait_for_games(s, len(records))
    yield s
    s.stop()


def wait_for_games(s: Server, n: int) -> None:
    """Until a snapshot holds the `n` games (the server stores a game's rows within a second
    or so of its answer)."""
    body = json.dumps({"sql": "SELECT (SELECT count(*) FROM games) + (SELECT count(*) FROM "
                              "slide_games) AS n"})  # fmt: skip

    def in_snapshot() -> bool:
        assert s.post("/sql/snapshot", b"").status == 200
        return s.post("/sql/api", body, "application/json").json()["rows"][0][0] == n

    wait_for(in_snapshot, 30, "the games in a snapshot", every=0.2)


def exported_ids(out, table: str) -> set[str]:
    ids = set()
    for part in out.glob(f"{table}/*/*.parquet"):
        ids |= set(pq.read_table(part).column("game_id").to_pylist())
    return ids


def test_every_verified_game_is_exported_whatever_its_clock(server, tmp_path):
    out = tmp_path / "public"
    ran = subprocess.run(
        [sys.executable, "-m", "ingest.cli", "export", "--server", server.url, "--out", str(out)],
        cwd=REPO, env=server.environment(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tables"]["games"]["rows"] == len(server.ids["games"])
    assert exported_ids(out, "games") == server.ids["games"]
    assert exported_ids(out, "slide_games") == server.ids["slide_games"]
    assert "0001-01-01" in manifest["weeks"] and "9999-12-27" in manifest["weeks"]
    turns = pq.read_table(next(out.glob("turns/week=9999-12-27/*.parquet")))
    assert turns.num_rows > 0  # a game's turns go with it
    # bounded: the years given, and only those
    ran = subprocess.run(
        [sys.executable, "-m", "ingest.cli", "export", "--server", server.url, "--out",
         str(tmp_path / "late"), "--from", "9999-01-01", "--to", "9999-12-31"],
        cwd=REPO, env=server.environment(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert len(exported_ids(tmp_path / "late", "games")) == 2


def test_the_data_quality_page_counts_clock_skewed_games(server):
    r = server.get("/dashboard/p/quality")
    assert r.status == 200
    page = html.unescape(r.body.decode())
    ahead = sum(1 for v in CLOCKS.values() if v == "ahead") + 1  # the Slide game of 9999
    behind = sum(1 for v in CLOCKS.values() if v == "behind")
    assert (
        f"{ahead + behind} verified games have a clock-skewed end time: {ahead} more than a day "
        f"ahead of their receipt, {behind} more than a year behind it (5 of them outside "
        "1970-9999)."
    ) in page
