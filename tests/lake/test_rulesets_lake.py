"""Rulesets on a lake (rulesets.md RS4.2, RS5.1): two real servers on one lake see a ruleset as
soon as it is registered (by either, or by `balance rules add --lake`), RS5.1 uploads are
recovered by `balance reverify --lake` and counted by the next `balance jobs run --lake`;
two registrations of one name at once cannot both succeed; a lake made before rulesets is
upgraded with the column and the table. Skipped, with the reason, where PostgreSQL or the
ducklake extension cannot be had (lake_cluster.py)."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time

import pytest
from support import balance, example_records, spec_dir

pytest.register_assert_rewrite("lake_cluster")
from lake_cluster import LakeServer  # noqa: E402

from ingest.server import rulesets as ops  # noqa: E402
from ingest.server.pipeline import Judge  # noqa: E402
from ingest.server.rulesets_api import FRESH  # noqa: E402
from ingest.storage import Store  # noqa: E402
from ingest.storage.lake import LAKE_SCHEMA_VERSION, connect, stored_version  # noqa: E402
from ingest.storage.lake.admin import init_lake  # noqa: E402
from ingest.storage.registry import Refused  # noqa: E402

pytestmark = pytest.mark.slow

RULESETS = spec_dir() / "examples" / "rulesets"
TOKEN = "lake-op"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/toml"}


def of(ruleset: str, n: int, game: str = "slow6") -> list[dict]:
    found = [
        r
        for r in example_records("rulesets/rulesets-valid")
        if r.get("ruleset") == ruleset and r["game"] == game
    ]
    return found[:n]


def line(record: dict) -> bytes:
    return json.dumps(record).encode()


def lake_rows(catalog: str, sql: str) -> list[tuple]:
    con = connect(catalog, claims=False)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_two_servers_one_registry_and_recovery(lake, tmp_path):
    # judged on the request threads: the judge processes' registry is the file store test's
    env = {"BALANCE_TOKEN": TOKEN, "BALANCE_WORKERS": "0"}
    a = LakeServer(tmp_path / "a", lake, env=env).start()
    b = LakeServer(tmp_path / "b", lake, env=env).start()
    try:
        early = of("reach-3", 2) + of("slide-groups-3", 1, "slide")
        standard = example_records("slow6-valid")[:2]
        reply = a.upload([line(r) for r in early + standard])
        got = [(r["verdict"], r["rule"], r["ruleset"]) for r in reply.json()["results"]]
        assert (
            got
            == [("quarantined", "RS5.1", r["ruleset"]) for r in early]
            + [("accepted", None, "standard")] * 2
        )
        # registered on the lake directly: server b, which read the registry at start, judges
        # the next reach-3 record by it (it reads the registry again before an RS5.1)
        files = [str(RULESETS / f"{n}.toml") for n in ("reach-3", "slide-groups-3")]
        ran = balance("rules", "add", *files, "--lake", lake)
        assert ran.returncode == 0, ran.stderr
        late = of("reach-3", 3)[2]
        res = b.upload([line(late)]).json()["results"][0]
        assert (res["verdict"], res["ruleset"]) == ("accepted", "reach-3"), res
        # registered through server a's admin API: server b lists it and judges by it
        few = (RULESETS / "few-powers.toml").read_text()
        assert a.request("POST", "/v1/admin/rulesets", few.encode(), AUTH).status == 200
        assert b.request("POST", "/v1/admin/rulesets", few.encode(), {}).status == 401
        time.sleep(FRESH)  # how far another server's list may lag (judging never does)
        names = {e["name"] for e in json.loads(b.get("/v1/rulesets").body)["rulesets"]}
        assert {"reach-3", "slide-groups-3", "few-powers"} <= names
        res = b.upload([line(of("few-powers", 1)[0])]).json()["results"][0]
        assert (res["verdict"], res["ruleset"]) == ("accepted", "few-powers"), res
        # reverify beside the running servers (the file store's test shows a jobs run
        # before it leaving them out)
        ran = balance("reverify", "--lake", lake)
        assert ran.returncode == 0, ran.stderr
        moved = sorted(x.split()[0] for x in ran.stdout.splitlines() if "-> verified" in x)
        assert moved == sorted(r["game_id"] for r in early)
        ran = balance("jobs", "run", "--lake", lake)
        assert ran.returncode == 0, ran.stderr
        assert lake_rows(lake, "SELECT sum(games) FROM agg_games_daily") == [(6,)]
    finally:
        a.stop()
        b.stop()
    uploaded = {r["game_id"] for r in early + standard + [late, of("few-powers", 1)[0]]}
    stored = lake_rows(lake, "SELECT game_id::VARCHAR FROM raw_records")
    assert sorted(g for (g,) in stored) == sorted(uploaded)  # nothing lost, nothing twice
    assert lake_rows(lake, "SELECT count(*) FROM quarantine") == [(0,)]
    by_ruleset = dict(lake_rows(lake, "SELECT ruleset, count(*) FROM games GROUP BY ALL"))
    assert by_ruleset == {"reach-3": 3, "few-powers": 1, "standard": 2}
    assert lake_rows(lake, "SELECT ruleset FROM slide_games") == [("slide-groups-3",)]


def test_one_name_registered_at_once_by_two_cannot_differ(lake):
    text = (RULESETS / "freeze-1.toml").read_text()
    variants = [text.replace("freeze_turns = 1", f"freeze_turns = {k}") for k in (1, 3, 4, 1)]
    outcomes: list[object] = [None] * len(variants)

    def register(i: int) -> None:
        try:
            outcomes[i] = ops.register_lake(lake, [(f"v{i}.toml", variants[i])])[0]["status"]
        except Refused as exc:
            outcomes[i] = exc.param

    threads = [threading.Thread(target=register, args=(i,)) for i in range(len(variants))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stored = lake_rows(lake, "SELECT params->>'freeze_turns' FROM rulesets")
    assert len(stored) == 1  # one ruleset, whichever came first
    winner = int(stored[0][0])
    for variant, outcome in zip((1, 3, 4, 1), outcomes, strict=True):
        if variant == winner:
            assert outcome in ("added", "unchanged")
        else:
            assert outcome == "freeze_turns"
    assert outcomes.count("added") == 1


def test_a_lake_made_before_rulesets_is_upgraded(lake):
    con = connect(lake)
    try:
        con.execute(
            "INSERT INTO quarantine (game_id, game, rule, turn, seat, message, platform, "
            "client_version, mode, ended_at, received_at) VALUES (uuid(), 'slow6', 'R2.2', 1, "
            "NULL, 'm', 'ios', '1.0', 'online', now()::TIMESTAMP, now()::TIMESTAMP)"
        )
        con.execute("DROP TABLE rulesets")
        for table in ("games", "slide_games", "quarantine"):
            con.execute(f"ALTER TABLE {table} DROP COLUMN ruleset")
        con.execute("UPDATE store_meta SET value = '2' WHERE key = 'lake_schema_version'")
    finally:
        con.close()
    ran = balance("lake", "upgrade", "--lake", lake)
    assert ran.returncode == 0, ran.stderr
    con = connect(lake)
    try:
        assert stored_version(con) == LAKE_SCHEMA_VERSION
        assert con.execute("SELECT rule, ruleset FROM quarantine").fetchall() == [
            ("R2.2", "standard")
        ]
        assert con.execute("SELECT count(*) FROM rulesets").fetchall() == [(0,)]
    finally:
        con.close()
    assert ops.register_lake(lake, [("f.toml", (RULESETS / "freeze-1.toml").read_text())])


def test_import_brings_a_files_rulesets_and_refuses_a_clash(pg_cluster, lake, tmp_path):
    """`balance lake import` copies a store file's rulesets with its games; a lake that has
    one of its names with other parameters refuses the import, copying nothing (RS1.3)."""
    db = str(tmp_path / "s.duckdb")
    assert balance("rules", "add", str(RULESETS / "reach-3.toml"), "--db", db).returncode == 0
    with Store(db) as store:
        judge = Judge(registry=store.registry)
        text = line(of("reach-3", 1)[0])
        assert store.ingest([judge.judge(0, text, dt.datetime(2026, 11, 1)).pending]) == [
            "accepted"
        ]
    ran = balance("lake", "import", "--lake", lake, "--db", db)
    assert ran.returncode == 0, ran.stderr
    assert lake_rows(lake, "SELECT ruleset FROM games") == [("reach-3",)]
    assert lake_rows(lake, "SELECT name, params->>'reach' FROM rulesets") == [("reach-3", "3")]
    # another lake, where reach-3 means something else
    other = pg_cluster.create_db(f"{lake.split('dbname=')[-1]}_b")
    init_lake(other, str(tmp_path / "data-b"))
    clash = tmp_path / "reach-3.toml"
    clash.write_text(
        (RULESETS / "reach-3.toml").read_text().replace("trap_turns = 3", "trap_turns = 4")
    )
    assert balance("rules", "add", str(clash), "--lake", other).returncode == 0
    ran = balance("lake", "import", "--lake", other, "--db", db)
    assert ran.returncode != 0 and "trap_turns" in ran.stderr, (ran.stdout, ran.stderr)
    assert lake_rows(other, "SELECT count(*) FROM raw_records") == [(0,)]
