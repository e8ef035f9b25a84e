"""The ruleset registry over HTTP and on the command line (rulesets.md RS4, RS5): GET
/v1/rulesets is public, POST /v1/admin/rulesets needs the token (a client cannot register),
an invalid file is refused naming its parameter (400), a changed one too (409, RS1.3); the
verdict records the ruleset (RS5.3); `balance rules add | list | show` on a stopped store."""

from __future__ import annotations

import json

import pytest
from support import JSON, AppClient, balance, example_records, query, spec_dir

RULESETS = spec_dir() / "examples" / "rulesets"
TOKEN = "s3cret-admin"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TOML = "application/toml"


def toml(name: str) -> str:
    return (RULESETS / f"{name}.toml").read_text()


def files_body(*names: str) -> str:
    return json.dumps({"files": [{"name": f"{n}.toml", "toml": toml(n)} for n in names]})


def named(ruleset: str, game: str = "slow6") -> dict:
    """A spec example record of `ruleset` (its verdict under it: accepted)."""
    for rec in example_records("rulesets/rulesets-valid"):
        if rec.get("ruleset") == ruleset and rec["game"] == game:
            return rec
    raise LookupError(ruleset)


def rows(srv, sql: str) -> list[tuple]:
    """A query on the running app's store (its own connection: the file is open)."""
    cur = srv.app.extensions["store"].reader()
    try:
        return cur.execute(sql).fetchall()
    finally:
        cur.close()


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = AppClient(tmp_path_factory.mktemp("rulesets"), env={"BALANCE_TOKEN": TOKEN}).start()
    yield s
    s.stop()


def test_a_client_cannot_register(srv, tmp_path):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        r = srv.post("/v1/admin/rulesets", toml("long-5"), TOML, headers=headers)
        assert r.status == 401, r.body
    names = [r["name"] for r in srv.get("/v1/rulesets").json()["rulesets"]]
    assert "long-5" not in names
    # a server without a token has no admin routes at all
    bare = AppClient(tmp_path / "bare").start()
    try:
        r = bare.post("/v1/admin/rulesets", toml("long-5"), TOML, headers=AUTH)
        assert r.status == 403
    finally:
        bare.stop()
    assert query(bare.db, "SELECT count(*) FROM rulesets") == [(0,)]


def test_unknown_ruleset_then_registered_then_judged_by_it(srv):
    rec = named("reach-3")
    r = srv.post("/v1/games", json.dumps(rec), JSON)
    res = r.json()["results"][0]
    assert (res["verdict"], res["rule"], res["turn"], res["ruleset"]) == (
        "quarantined",
        "RS5.1",
        None,
        "reach-3",
    )
    assert rows(srv, "SELECT rule, ruleset FROM quarantine") == [("RS5.1", "reach-3")]
    listed = srv.get("/v1/rulesets").json()["rulesets"]
    assert [(e["game"], e["name"], e["builtin"]) for e in listed] == [
        ("slow6", "standard", True),
        ("slide", "standard", True),
    ]
    r = srv.post("/v1/admin/rulesets", files_body("reach-3", "slide-groups-3"), JSON, headers=AUTH)
    assert r.status == 200, r.body
    assert [e["status"] for e in r.json()["rulesets"]] == ["added", "added"]
    # the next record of that ruleset is judged by it, and its verdict says so (RS5.3)
    other = named("reach-3")
    other["game_id"] = "0b9d6f0e-4c1a-4d55-9a77-3c1f2e8d9a10"
    res = srv.post("/v1/games", json.dumps(other), JSON).json()["results"][0]
    assert (res["verdict"], res["ruleset"]) == ("accepted", "reach-3"), res
    assert rows(
        srv, "SELECT ruleset FROM games WHERE game_id = '0b9d6f0e-4c1a-4d55-9a77-3c1f2e8d9a10'"
    ) == [("reach-3",)]
    std = example_records("slow6-valid")[0]
    res = srv.post("/v1/games", json.dumps(std), JSON).json()["results"][0]
    assert res["ruleset"] == "standard"
    # public reads: the list with its parameters, one ruleset, an unknown one
    listed = {(e["game"], e["name"]): e for e in srv.get("/v1/rulesets").json()["rulesets"]}
    assert listed[("slow6", "reach-3")]["params"]["reach"] == 3
    assert listed[("slow6", "reach-3")]["registered_at"].endswith("Z")
    assert listed[("slide", "slide-groups-3")]["params"]["min_group"] == 3
    one = srv.get("/v1/rulesets/slow6/reach-3").json()
    assert one["params"]["surge_rest"] == 0 and one["builtin"] is False
    assert srv.get("/v1/rulesets/slide/reach-3").status == 404  # the other game's
    assert srv.get("/v1/rulesets/slow6/nothing").status == 404


def test_refusals_name_the_parameter_and_register_nothing(srv):
    r = srv.post("/v1/admin/rulesets", toml("freeze-1"), TOML, headers=AUTH)
    assert r.status == 200 and r.json()["rulesets"][0]["status"] == "added"
    again = srv.post("/v1/admin/rulesets", toml("freeze-1"), TOML, headers=AUTH)
    assert again.status == 200 and again.json()["rulesets"][0]["status"] == "unchanged"
    changed = toml("freeze-1").replace("freeze_turns = 1", "freeze_turns = 3")
    r = srv.post("/v1/admin/rulesets", changed, TOML, headers=AUTH)
    assert r.status == 409 and r.json()["param"] == "freeze_turns", r.body
    bad = toml("long-5").replace("turn_limit_5 = 19", "turn_limit_5 = 41")
    body = json.dumps(
        {
            "files": [
                {"name": "few.toml", "toml": toml("few-powers")},
                {"name": "x.toml", "toml": bad},
            ]
        }
    )
    r = srv.post("/v1/admin/rulesets", body, JSON, headers=AUTH)
    assert r.status == 400, r.body
    assert (r.json()["param"], r.json()["file"]) == ("turn_limit_5", "x.toml")
    std = 'name = "standard"\ngame = "slide"\n[params]\nmin_group = 3\n'
    r = srv.post("/v1/admin/rulesets", std, TOML, headers=AUTH)
    assert r.status in (400, 409) and r.json()["param"] == "name"
    r = srv.post("/v1/admin/rulesets", b"name = [", TOML, headers=AUTH)
    assert r.status == 400
    names = {e["name"] for e in srv.get("/v1/rulesets").json()["rulesets"]}
    assert "few-powers" not in names and "long-5" not in names
    stored = rows(srv, "SELECT params->>'freeze_turns' FROM rulesets WHERE name = 'freeze-1'")
    assert stored == [("1",)]


def test_openapi_documents_rulesets(srv):
    doc = srv.get("/openapi.json").json()
    assert {"/v1/rulesets", "/v1/rulesets/{game}/{name}", "/v1/admin/rulesets"} <= set(doc["paths"])
    result = doc["components"]["schemas"]["Result"]["properties"]
    assert "ruleset" in result
    assert "RS5.1" in json.dumps(doc)
    assert "RS1.1" in srv.get("/v1/schema").body.decode()  # the record's `ruleset` (i32a)


def test_balance_rules_on_a_stopped_store(tmp_path):
    db = str(tmp_path / "s.duckdb")
    files = [str(RULESETS / f"{n}.toml") for n in ("freeze-1", "long-5")]
    ran = balance("rules", "add", *files, "--db", db)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [
        "added: slow6 ruleset freeze-1",
        "added: slow6 ruleset long-5",
    ]
    again = balance("rules", "add", files[0], "--db", db)
    assert again.returncode == 0 and "unchanged" in again.stdout
    changed = tmp_path / "freeze-1.toml"
    changed.write_text(toml("freeze-1").replace("dash_reach = 4", "dash_reach = 5"))
    ran = balance("rules", "add", str(changed), "--db", db)
    assert ran.returncode == 1 and "dash_reach" in ran.stderr, ran.stderr
    invalid = tmp_path / "bad.toml"
    invalid.write_text('name = "bad"\ngame = "slide"\n[params]\nfreeze_turns = 1\n')
    ran = balance("rules", "add", str(invalid), files[0], "--db", db)
    assert ran.returncode == 2 and "freeze_turns" in ran.stderr and "bad.toml" in ran.stderr
    ran = balance("rules", "list", "--db", db)
    assert ran.returncode == 0
    lines = ran.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [
        ["slow6", "standard"],
        ["slide", "standard"],
        ["slow6", "freeze-1"],
        ["slow6", "long-5"],
    ]
    assert "freeze_turns 2 -> 1" in lines[2] and "dash_reach 3 -> 4" in lines[2]
    shown = balance("rules", "show", "long-5", "--db", db)
    assert shown.returncode == 0
    doc = json.loads(shown.stdout)
    assert doc["params"]["crown_points"] == 8
    assert {c["param"] for c in doc["changes_from_standard"]} == {
        "turn_limit_5",
        "turn_limit_7",
        "crown_points",
    }
    missing = balance("rules", "show", "nothing", "--db", db)
    assert missing.returncode == 1
    nowhere = balance("rules", "list", "--db", str(tmp_path / "none.duckdb"))
    assert nowhere.returncode == 2 and not (tmp_path / "none.duckdb").exists()


def test_rules_add_then_reverify_on_a_stopped_store(tmp_path):
    """The operator's recovery with the server stopped: RS5.1 records stored, the ruleset
    added to the file, `balance reverify --db` moves them to the verified tables."""
    import datetime as dt

    from ingest.server.pipeline import Judge
    from ingest.storage import Store

    db = tmp_path / "s.duckdb"
    early = [named("long-5"), named("slide-groups-3", "slide")]
    with Store(db) as store:
        judge = Judge(registry=store.registry)
        at = dt.datetime(2026, 11, 2)
        judged = [judge.judge(0, json.dumps(r).encode(), at) for r in early]
        assert [j.result["rule"] for j in judged] == ["RS5.1", "RS5.1"]
        assert store.ingest([j.pending for j in judged]) == ["quarantined"] * 2
    files = [str(RULESETS / f"{n}.toml") for n in ("long-5", "slide-groups-3")]
    assert balance("rules", "add", *files, "--db", str(db)).returncode == 0
    ran = balance("reverify", "--db", str(db))
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.count("quarantined -> verified") == 2
    assert query(db, "SELECT ruleset FROM games") == [("long-5",)]
    assert query(db, "SELECT ruleset FROM slide_games") == [("slide-groups-3",)]
    assert query(db, "SELECT count(*) FROM quarantine") == [(0,)]
