"""Uploads that arrive before their ruleset (rulesets.md RS5.1), end to end on a real server
over a store file: stored as RS5.1, never lost; `balance rules add` through the admin API
reaches the judge processes at once; `balance reverify` moves the stored ones to the verified
tables with their rows; the next `balance jobs run` counts them."""

from __future__ import annotations

import json

import pytest
from support import Server, balance, example_records, query, spec_dir

pytestmark = pytest.mark.slow

RULESETS = spec_dir() / "examples" / "rulesets"
TOKEN = "op-token"


def of(ruleset: str, n: int, game: str = "slow6") -> list[dict]:
    found = [
        r
        for r in example_records("rulesets/rulesets-valid")
        if r.get("ruleset") == ruleset and r["game"] == game
    ]
    assert len(found) >= n
    return found[:n]


def test_unknown_ruleset_stored_then_registered_reverified_and_counted(tmp_path):
    early = of("reach-3", 2) + of("few-powers", 1) + of("slide-groups-3", 1, "slide")
    standard = example_records("slow6-valid")[:3]
    late = of("reach-3", 4)[2:]  # after registration: judged by it, on arrival
    server = Server(tmp_path / "srv", env={"BALANCE_TOKEN": TOKEN, "BALANCE_WORKERS": "1"}).start()
    try:
        reply = server.upload(early + standard)
        assert reply.status == 200, reply.body
        results = reply.json()["results"]
        assert [(r["verdict"], r["rule"], r["turn"], r["ruleset"]) for r in results] == [
            ("quarantined", "RS5.1", None, rec["ruleset"]) for rec in early
        ] + [("accepted", None, None, "standard")] * 3
        # a jobs run meanwhile: the RS5.1 records are out of the balance tables
        assert server.stop() == 0
        ran = balance("jobs", "run", "--db", str(server.db))
        assert ran.returncode == 0, ran.stderr
        assert query(server.db, "SELECT sum(games) FROM agg_games_daily") == [(3,)]
        rs51 = "SELECT sum(records) FROM agg_ingest_status WHERE rule = 'RS5.1'"
        assert query(server.db, rs51) == [(4,)]
        server.start()
        env = {"BALANCE_TOKEN": TOKEN}
        files = [str(RULESETS / f"{n}.toml") for n in ("reach-3", "few-powers", "slide-groups-3")]
        # the file is the running server's: the command says to go through it
        held = balance("rules", "add", *files, "--db", str(server.db))
        assert held.returncode == 2 and "--server" in held.stderr, held.stderr
        ran = balance("rules", "add", *files, "--server", server.url, env=env)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.count("added:") == 3
        # a client's token-less attempt changes nothing
        denied = balance("rules", "add", files[0], "--server", server.url)
        assert denied.returncode == 1
        # the judge processes judge by it at once: a batch (the pool) and one record (gathered)
        batch = server.upload(late[:1] + standard[:1])
        single = server.upload(late[1:])
        assert [r["verdict"] for r in batch.json()["results"]] == ["accepted", "duplicate"]
        assert [(r["verdict"], r["ruleset"]) for r in single.json()["results"]] == [
            ("accepted", "reach-3")
        ]
        ran = balance("reverify", "--server", server.url, env=env)
        assert ran.returncode == 0, ran.stderr
        moved = [line for line in ran.stdout.splitlines() if "quarantined -> verified" in line]
        assert sorted(line.split()[0] for line in moved) == sorted(r["game_id"] for r in early)
        listed = balance("rules", "list", "--server", server.url)
        assert "reach-3" in listed.stdout and "few-powers" in listed.stdout
    finally:
        assert server.stop() == 0
    db = server.db
    rs51 = "SELECT sum(records) FROM agg_ingest_status WHERE rule = 'RS5.1'"
    uploaded = {r["game_id"] for r in early + standard + late}
    stored = {g for (g,) in query(db, "SELECT game_id::VARCHAR FROM raw_records")}
    assert stored == uploaded  # nothing lost, nothing twice
    assert query(db, "SELECT count(*) FROM quarantine") == [(0,)]
    by_ruleset = dict(query(db, "SELECT ruleset, count(*) FROM games GROUP BY ALL"))
    assert by_ruleset == {"reach-3": 4, "few-powers": 1, "standard": 3}
    assert query(db, "SELECT ruleset FROM slide_games") == [("slide-groups-3",)]
    turns = query(
        db,
        "SELECT count(*) FROM game_turns WHERE game_id IN "
        "(SELECT game_id FROM games WHERE ruleset = 'few-powers')",
    )
    assert turns[0][0] == len(early[2]["turns"])
    ran = balance("jobs", "run", "--db", str(db))
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)
    assert summary["weeks_recomputed"], summary  # incremental: the weeks reverify changed
    assert query(db, "SELECT sum(games) FROM agg_games_daily") == [(8,)]
    assert query(db, rs51) == [(None,)]
