"""The ruleset registry in a store file (rulesets.md RS1.3, RS4): the `rulesets` table, the
`ruleset` column of games, slide_games and quarantine (a store made before them migrated),
immutable registration, and the registry a store judges by."""

from __future__ import annotations

import datetime as dt
import json
import shutil

import duckdb
import pytest
from support import example_records, query, spec_dir

from ingest.server.pipeline import Judge, recheck_unknown
from ingest.storage import Store, open_db, registry
from replays import rulesets as R

RULESETS = spec_dir() / "examples" / "rulesets"
TOML = {p.stem: p.read_text() for p in RULESETS.glob("*.toml")}


def parsed(*names: str) -> list[R.Ruleset]:
    return registry.parse_files([(f"{n}.toml", TOML[n]) for n in names])


def old_store(path) -> None:
    """A store file as the code before rulesets left it: a game in each of games, slide_games
    and quarantine, no `ruleset` column, no `rulesets` table."""
    judge = Judge()
    now = dt.datetime(2026, 11, 1)
    lines = [
        example_records("slow6-valid")[0],
        example_records("slide-valid")[0],
        example_records("slow6-invalid")[0],
    ]
    with Store(path, defer_rows=False) as store:
        store.ingest([judge.judge(0, json.dumps(r).encode(), now).pending for r in lines])
    con = duckdb.connect(str(path))
    con.execute("DROP TABLE rulesets")
    for table in ("games", "slide_games", "quarantine"):
        con.execute(f"ALTER TABLE {table} DROP COLUMN ruleset")
    con.close()


def test_a_store_made_before_rulesets_opens_with_the_column_and_the_table(tmp_path):
    db = tmp_path / "old.duckdb"
    old_store(db)
    before = query(db, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'rulesets'")
    assert before == [(0,)]
    with Store(db) as store:
        assert store.registry.all() == []
    for table in ("games", "slide_games", "quarantine"):
        assert query(db, f"SELECT ruleset, count(*) FROM {table} GROUP BY ALL") == [("standard", 1)]
        nullable = query(
            db,
            "SELECT is_nullable, column_default FROM information_schema.columns "
            f"WHERE table_name = '{table}' AND column_name = 'ruleset'",
        )
        assert nullable == [("NO", "'standard'")]
    # the column is last, as in a new store: the positional inserts of new games fit
    cols = query(db, "SELECT column_name FROM duckdb_columns() WHERE table_name = 'games'")
    assert cols[-1] == ("ruleset",)
    assert query(db, "SELECT count(*) FROM rulesets") == [(0,)]


def test_registration_is_immutable(tmp_path):
    con = open_db(tmp_path / "s.duckdb")
    freeze, groups = parsed("freeze-1", "slide-groups-3")
    assert registry.register(con, [freeze, groups]) == [
        {"game": "slow6", "name": "freeze-1", "status": "added"},
        {"game": "slide", "name": "slide-groups-3", "status": "added"},
    ]
    # the same again: a no-op (a new description alone is no parameter: the first is kept)
    again = R.parse_toml(TOML["freeze-1"].replace("Freeze lasts", "Freeze now lasts"))
    assert registry.register(con, [again]) == [
        {"game": "slow6", "name": "freeze-1", "status": "unchanged"}
    ]
    # changed parameters: refused, naming the first that differs in RS3 order
    changed = R.parse_toml(TOML["freeze-1"].replace("dash_reach = 4", "dash_reach = 5"))
    changed_two = R.parse_toml(
        TOML["freeze-1"].replace("dash_reach = 4", "dash_reach = 5\nturn_limit_7 = 22")
    )
    for ruleset, param in ((changed, "dash_reach"), (changed_two, "turn_limit_7")):
        with pytest.raises(registry.Refused) as err:
            registry.register(con, [ruleset])
        assert err.value.param == param and err.value.status == 409
        assert "RS1.3" in err.value.message
    stored = registry.load(con)
    assert [r.name for r in stored] == ["slide-groups-3", "freeze-1"]
    assert stored[1].params["dash_reach"] == 4 and stored[1].params["freeze_turns"] == 1
    assert stored[1].description.startswith("Freeze lasts")
    # the full parameter set is stored, not the file's few
    ((params,),) = con.execute(
        "SELECT params::VARCHAR FROM rulesets WHERE name = 'freeze-1'"
    ).fetchall()
    assert set(json.loads(params)) == set(R.STANDARD["slow6"].params)
    con.close()


def test_standard_cannot_be_registered(tmp_path):
    con = open_db(tmp_path / "s.duckdb")
    with pytest.raises((registry.Refused, R.RulesetError)) as err:
        registry.register(con, [R.Ruleset("standard", "slow6", {"freeze_turns": 1})])
    assert getattr(err.value, "param", None) == "name"
    with pytest.raises(registry.Refused) as err2:
        registry.parse_files([("std.toml", 'name = "standard"\ngame = "slow6"\n')])
    assert err2.value.param == "name" and err2.value.status == 400
    assert con.execute("SELECT count(*) FROM rulesets").fetchall() == [(0,)]
    con.close()


def test_a_refused_batch_registers_nothing(tmp_path):
    con = open_db(tmp_path / "s.duckdb")
    registry.register(con, parsed("freeze-1"))
    changed = R.parse_toml(TOML["freeze-1"].replace("freeze_turns = 1", "freeze_turns = 3"))
    con.execute("BEGIN")
    with pytest.raises(registry.Refused):
        registry.register(con, [*parsed("long-5"), changed])
    con.execute("ROLLBACK")
    assert [r.name for r in registry.load(con)] == ["freeze-1"]
    con.close()


@pytest.mark.parametrize(
    ("text", "param"),
    [
        ('name = "x"\ngame = "slow6"\n[params]\nfreeze_turns = 9\n', "freeze_turns"),
        ('name = "x"\ngame = "slow6"\n[params]\nmin_group = 3\n', "min_group"),
        ('name = "x"\ngame = "slow6"\n[params]\nwarp = 1\n', "warp"),
        ('name = "X"\ngame = "slow6"\n', "name"),
        ('name = "x"\ngame = "slow6"\nbased_on = "nowhere"\n', "based_on"),
    ],
)
def test_an_invalid_file_is_refused_naming_the_parameter(text, param):
    with pytest.raises(registry.Refused) as err:
        registry.parse_files([("bad.toml", text)])
    assert err.value.param == param and err.value.status == 400
    assert err.value.source == "bad.toml" and "bad.toml" in err.value.message


def test_based_on_resolves_against_the_store_and_other_files_in_any_order():
    base = 'name = "a"\ngame = "slow6"\nbased_on = "freeze-1"\n[params]\nreach = 3\n'
    top = 'name = "b"\ngame = "slow6"\nbased_on = "a"\n[params]\nsurge_rest = 0\n'
    known = registry.Snapshot(1, {("slow6", "freeze-1"): parsed("freeze-1")[0]})
    got = registry.parse_files([("b.toml", top), ("a.toml", base)], known.lookup)
    b = {r.name: r for r in got}["b"]
    assert (b.params["freeze_turns"], b.params["dash_reach"], b.params["reach"]) == (1, 4, 3)
    assert b.params["surge_rest"] == 0


def test_registry_state_travels_to_a_judge_process_and_refresh_reads_once():
    loads = []
    rulesets = parsed("freeze-1", "few-powers")

    def load():
        loads.append(1)
        return rulesets

    reg = registry.Registry(load)
    assert reg.lookup("slow6", "freeze-1") is None
    assert reg.refresh(0.0) is True and len(loads) == 1
    assert reg.refresh(0.0) is False and len(loads) == 1  # read after `since`: not again
    assert reg.lookup("slow6", "freeze-1").params["freeze_turns"] == 1
    assert reg.lookup("slide", "freeze-1") is None  # registered for the other game: unknown
    assert reg.lookup("slide", "standard") is R.STANDARD["slide"]
    worker = registry.Registry()
    worker.adopt(reg.state())
    assert worker.lookup("slow6", "few-powers") == reg.lookup("slow6", "few-powers")
    assert worker.snapshot.version == reg.snapshot.version
    exclusive = registry.Registry(load, exclusive=True)
    assert exclusive.refresh(1e18) is False and len(loads) == 1


def test_an_unreadable_registry_leaves_rs51_standing():
    """A lake server that cannot read the registry again (the catalog down) answers RS5.1 as
    judged, rather than failing the upload: the record is stored, reverify recovers it."""

    def load():
        raise OSError("catalog unreachable")

    judge = Judge(registry=registry.Registry(load))
    rec = next(r for r in example_records("rulesets/rulesets-valid") if r.get("ruleset"))
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    lines = [(0, json.dumps(rec).encode())]
    judged = [judge.judge(0, lines[0][1], now)]
    assert judged[0].result["rule"] == "RS5.1"
    again = recheck_unknown(judge, judged, lines, [now])
    assert again[0].result["rule"] == "RS5.1" and again[0].pending is not None


def test_refresh_reads_the_rulesets_only_when_the_counter_moved():
    """A lake server checks the registry's counter (cheap) before it reads the rulesets (tens
    of milliseconds on a lake): a flood of unknown-ruleset uploads costs counter checks."""
    loads, counter = [], [0]
    rulesets: list = []

    def load():
        loads.append(1)
        return list(rulesets)

    reg = registry.Registry(load, version=lambda: counter[0])
    reg.reload()
    assert len(loads) == 1
    for _ in range(5):
        assert reg.refresh(1e18) is False
    assert len(loads) == 1  # the counter did not move
    rulesets.extend(parsed("freeze-1"))
    counter[0] += 1
    assert reg.refresh(1e18) is True and len(loads) == 2
    assert reg.lookup("slow6", "freeze-1") is not None

    def broken():
        raise OSError("down")

    flaky = registry.Registry(load, version=broken)
    assert flaky.refresh(1e18) is True and len(loads) == 3  # unreadable counter: read them


def test_journaled_games_are_judged_by_the_registry_after_a_crash(tmp_path):
    """Games acknowledged (journaled) but not yet in DuckDB when the server dies are judged
    again at the next start: by the store's rulesets, read before the journal, so a game of
    a registered ruleset stays verified (it would be RS5.1 judged by `standard` alone)."""
    live = tmp_path / "live"
    live.mkdir()
    db = live / "s.duckdb"
    rec = next(
        r for r in example_records("rulesets/rulesets-valid") if r.get("ruleset") == "long-5"
    )
    store = Store(db, rows_interval=3600)  # the rows thread waits: the game stays journaled
    try:
        store.submit(lambda con: registry.register(con, parsed("long-5"))).result()
        store.registry.reload()
        judge = Judge(registry=store.registry)
        now = dt.datetime(2026, 11, 3)
        pending = judge.judge(0, json.dumps(rec).encode(), now).pending
        assert store.ingest([pending]) == ["accepted"]
        crashed = tmp_path / "crashed"  # the files as a kill -9 would leave them
        shutil.copytree(live, crashed)
    finally:
        store.close()
    copy = crashed / "s.duckdb"
    assert query(copy, "SELECT count(*) FROM games") == [(0,)]
    assert [p.name for p in crashed.iterdir() if ".journal." in p.name]
    with Store(copy) as again:
        assert again.journaled == 1
    assert query(copy, "SELECT ruleset FROM games") == [("long-5",)]
    assert query(copy, "SELECT status FROM raw_records") == [("verified",)]
    assert query(copy, "SELECT count(*) FROM quarantine") == [(0,)]
