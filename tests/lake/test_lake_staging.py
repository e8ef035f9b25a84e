"""Staging on a real lake (lake/staging.py): an upload acknowledged once PostgreSQL holds it,
the elected loader moving it into the lake once, a loader dying between its lake commit and
its delete, a loader that lost its election fenced off, a stage of unknown outcome, a claim
lost while staging, back-pressure past the staging limit. In-process LakeStores on the
session's PostgreSQL cluster (lake_cluster.py); skipped with the reason where it cannot be
had."""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import time

import psycopg
import pytest
from support import wait_for
from test_lake import SLOW6, altered, fresh, lake_rows, pending

from ingest.storage import StorageUnavailable
from ingest.storage.lake import LakeStore, conninfo
from ingest.storage.lake import loader as lake_loader
from ingest.storage.lake import staging as lake_staging
from ingest.storage.lake import store as lake_store
from ingest.storage.lake.admin import check
from ingest.storage.lake.loader import _LoaderFences


def _staged(catalog: str) -> int:
    with psycopg.connect(conninfo(catalog), autocommit=True) as con:
        return lake_staging.backlog(con)[0]


def _until(what, timeout: float = 30.0) -> None:
    wait_for(what, timeout, getattr(what, "__name__", "the condition"))


def test_acknowledged_from_staging_then_loaded_once(stores, lake):
    """With no loader anywhere an upload is still acknowledged (staged, its claim stored): a
    duplicate at another server is answered at once, `lake check` counts it as stored. A
    server with a loader then moves it into the lake, once, and its reader sees it."""
    a = stores(loader=False)
    records = [fresh(r) for r in SLOW6[:12]]
    assert a.ingest([pending(r) for r in records]) == ["accepted"] * 12
    b = stores(loader=False)
    assert b.ingest([pending(records[0]), pending(altered(records[1]))]) == [
        "duplicate",
        "conflict",
    ]
    assert lake_rows(lake, "SELECT count(*) FROM raw_records") == [(0,)]
    assert _staged(lake) == 12
    result = check(lake)
    assert result["ok"] and result["staged"] == 12 and result["claims"] == {"stored": 12}
    loader = stores(load_every=0.2)
    cur = loader.reader()  # waits for the loader: sees every game acknowledged before
    try:
        assert cur.execute("SELECT count(*) FROM raw_records").fetchall() == [(12,)]
    finally:
        cur.close()
    result = check(lake)
    assert result["ok"] and result["staged"] == 0 and result["rows"]["raw_records"] == 12
    assert result["rows"]["games"] == 12
    assert loader.gauges()["balance_lake_loaded_games_total"][1] == 12


def test_a_loader_dying_after_its_lake_commit_doubles_nothing(stores, lake, monkeypatch):
    """The loader commits into the lake, then fails before deleting the groups from staging
    (as a kill -9 there would). The next election fences it and finds the groups in the lake:
    they are deleted, not loaded again."""
    a = stores(loader=False)
    records = [fresh(SLOW6[i % len(SLOW6)]) for i in range(30)]
    for k in range(0, 30, 10):
        assert a.ingest([pending(r) for r in records[k : k + 10]]) == ["accepted"] * 10
    died = []
    real = lake_loader.load_commit

    def commit_then_die(con, tables, owner, *rest):
        real(con, tables, owner, *rest)
        if not died:
            died.append(owner)
            raise psycopg.OperationalError("the loader died after its lake commit")

    monkeypatch.setattr(lake_loader, "load_commit", commit_then_die)
    b = stores(load_every=0.2)
    b.wait_loaded(30)
    assert died and b._loader is not None and b._loader.counters["recovered"] == 3
    result = check(lake)
    assert result["ok"] and result["duplicate_game_ids"] == 0, result
    assert result["rows"]["raw_records"] == 30 and result["staged"] == 0


def test_a_loader_that_lost_its_election_cannot_commit(stores, lake):
    """A loader whose session lost the lock without noticing (a network cut) keeps a lake
    connection: once another loader is elected, that connection's commits fail (its fence
    was dropped), so a group is never loaded twice."""
    a = stores(load_every=0.2)
    _until(lambda: a._loader is not None and a._loader.owner is not None)
    old = a._loader
    assert old is not None
    old_owner, old_lake = old.owner, old._lake
    old._stop.set()  # the old loader's thread stops; its lake connection stays open
    old._kick.set()
    old._thread.join(10)
    old._lake = None  # (kept by the test: `_resign` would close it)
    old._resign()  # the lock goes with its session
    b = stores(load_every=0.2)
    _until(lambda: b._loader is not None and b._loader.owner is not None)
    assert old_owner not in _LoaderFences.loaders(old_lake)
    record = fresh(SLOW6[0])
    assert b.ingest([pending(record)]) == ["accepted"]
    b.flush_rows()
    with pytest.raises(Exception, match="does not exist|conflict|Conflict"):
        lake_loader.load_commit(old_lake, {}, old_owner)
    old_lake.close()
    assert check(lake)["ok"]


def test_a_stage_of_unknown_outcome(stores, monkeypatch):
    """A staging COMMIT whose answer was lost is found landed (accepted); a transaction that
    failed before its COMMIT is a 503 and leaves nothing (the retry is stored). (The claim-then-
    stage transaction, which groups holding a game claimed before take; the one-statement
    stage of new games: test_lake_stage_new.py.)"""
    store = stores(loader=False, stage_new=False)
    real = lake_staging.Stager.transaction  # (every committer thread's)

    @contextlib.contextmanager
    def lost_answer(self):
        with real(self):
            yield
        raise psycopg.OperationalError("connection lost after COMMIT")

    monkeypatch.setattr(lake_staging.Stager, "transaction", lost_answer)
    first = fresh(SLOW6[0])
    assert store.ingest([pending(first)]) == ["accepted"]
    monkeypatch.undo()

    def lost(self, *args, **kw):
        raise psycopg.OperationalError("connection lost before COMMIT")

    monkeypatch.setattr(lake_staging.Stager, "stage", lost)
    second = fresh(SLOW6[1])
    with pytest.raises(StorageUnavailable):
        store.ingest([pending(second)])
    monkeypatch.undo()
    result = check(store.catalog)  # no claim of the failed one is left behind
    assert result["ok"] and result["claims"] == {"stored": 1}, result
    _until(lambda: store.failure is None)
    assert store.ingest([pending(second), pending(first)]) == ["accepted", "duplicate"]
    result = check(store.catalog)
    assert result["ok"] and result["staged"] == 2 and result["claims"] == {"stored": 2}


def test_a_concurrent_claim_waits_for_the_staging_transaction(stores, monkeypatch):
    """A group's claims are made in its staging transaction: another server asking for the
    same game meanwhile waits for it (PostgreSQL's row lock) and then reads it stored,
    `duplicate`; a connection that dies inside it leaves no claim (rolled back): nothing
    waits for a lease. (The claim-then-stage transaction; the one-statement stage has no
    moment between its claims and its rows.)"""
    a, b = stores(loader=False, stage_new=False), stores(loader=False, stage_new=False)
    record = fresh(SLOW6[0])
    real = lake_staging.Stager.stage
    inside = threading.Event()
    go = threading.Event()

    def slow_stage(self, *args, **kw):
        inside.set()
        go.wait(30)
        return real(self, *args, **kw)

    monkeypatch.setattr(lake_staging.Stager, "stage", slow_stage)
    answers: dict[str, list[str]] = {}
    first = threading.Thread(target=lambda: answers.update(a=a.ingest([pending(record)])))
    first.start()
    assert inside.wait(30)
    monkeypatch.undo()
    second = threading.Thread(target=lambda: answers.update(b=b.ingest([pending(record)])))
    second.start()
    second.join(1.0)
    assert second.is_alive(), "b answered while a's transaction was open"
    go.set()
    first.join(30)
    second.join(30)
    assert answers == {"a": ["accepted"], "b": ["duplicate"]}
    assert _staged(a.catalog) == 1

    # a's connection dies inside its transaction: rolled back, claim and all; a's committer
    # tries the request again on a new connection, so the game is stored once, by a
    other = fresh(SLOW6[1])
    monkeypatch.setattr(lake_staging.Stager, "stage", slow_stage)
    inside.clear()
    go.clear()

    def dying_upload() -> None:
        answers["dying"] = a.ingest([pending(other)])

    dying = threading.Thread(target=dying_upload)
    dying.start()
    assert inside.wait(30)
    for stager in a._stagers:
        if stager._con is not None:
            stager._con.pgconn.finish()
    monkeypatch.undo()
    go.set()
    dying.join(30)
    assert answers["dying"] == ["accepted"]
    assert check(a.catalog)["claims"] == {"stored": 2}  # no pending claim left behind
    assert b.ingest([pending(other)]) == ["duplicate"]


def test_staging_past_its_limit_refuses_uploads_until_the_loader_catches_up(stores, lake):
    """No loader and more staged than BALANCE_LAKE_STAGING_MAX: uploads 503 with
    Retry-After, /healthz's failure says why; a loader starting drains staging and uploads
    resume by themselves. Nothing acknowledged is lost."""
    a = stores(loader=False, staging_max=5, load_every=0.2)
    acked = [fresh(SLOW6[i]) for i in range(6)]
    assert a.ingest([pending(r) for r in acked]) == ["accepted"] * 6
    _until(lambda: a.failure is not None)
    with pytest.raises(StorageUnavailable) as err:
        a.ingest([pending(fresh(SLOW6[7]))])
    assert "loader is behind" in err.value.reason and err.value.retry_after >= 1
    assert "loader is behind" in (a.health()["failure"] or "")
    stores(load_every=0.2)  # a loader
    _until(lambda: a.failure is None)
    late = fresh(SLOW6[8])
    assert a.ingest([pending(late)]) == ["accepted"]
    a.flush_rows()
    result = check(lake)
    assert result["ok"] and result["rows"]["raw_records"] == 7, result


def test_catalog_failures_reach_the_log_without_the_password(stores, lake, caplog):
    """The rejection roll-up's and flush's warnings carry the store's error, which names the
    catalog's connection string when the catalog fails: its password is masked (as on the
    upload path). A real store whose catalog string has a password (trust auth ignores it)
    and whose calls fail as an unreachable catalog's do."""
    import logging

    from ingest.server.rejections import RejectionTally

    secret = "password=s3cret-Pa55"
    store = stores(loader=False)
    store.catalog = f"{lake} {secret}"

    def unreachable(_fn, **_kw):
        raise psycopg.OperationalError(
            f'connection to server failed: "{store.catalog}": Connection refused'
        )

    store.submit = unreachable  # type: ignore[method-assign]
    tally = RejectionTally(store, every=0)
    tally.count([{"verdict": "rejected", "field": "turns", "problem": "missing"}])
    with caplog.at_level(logging.WARNING):
        assert tally.flush(timeout=5) == 0
        assert tally.roll_up(timeout=5) == 0
    text = caplog.text
    assert "not stored yet" in text and "not rolled up yet" in text
    assert "s3cret-Pa55" not in text and "password=***" in text


def test_setup_as_documented_needs_the_database_owned_by_the_lakes_user(pg_cluster, tmp_path):
    """docs/lake.md's setup on PostgreSQL 15: a database made by another role refuses the
    lake's user its `public` schema (`lake init` fails); `createdb -O balance` works."""
    from ingest.storage.lake import LakeError
    from ingest.storage.lake.admin import init_lake

    tag = f"{time.monotonic_ns() % 10**9}"
    role = f"balance_{tag}"
    pg_cluster.psql(f"CREATE ROLE {role} LOGIN")
    pg_cluster.psql(f"CREATE DATABASE wrong_{tag}")
    pg_cluster.psql(f"CREATE DATABASE right_{tag} OWNER {role}")
    base = pg_cluster.conninfo().replace("user=postgres", f"user={role}")
    wrong = base.replace("dbname=postgres", f"dbname=wrong_{tag}")
    right = base.replace("dbname=postgres", f"dbname=right_{tag}")
    with pytest.raises((LakeError, Exception), match="permission denied for schema public"):
        init_lake(wrong, str(tmp_path / "wrong"))
    assert init_lake(right, str(tmp_path / "right")) is not None
    store = LakeStore(right)
    try:
        assert store.ingest([pending(fresh(SLOW6[0]))]) == ["accepted"]
    finally:
        store.close()
    assert check(right)["ok"]


def test_healthz_says_degraded_while_the_loader_is_behind(stores, monkeypatch):
    """No loader: the staged game waits. Past LOADER_LATE /healthz stays 200 (the server
    still stores uploads) but says "degraded" and why, with the staging backlog."""
    from ingest.server.app import create_app

    monkeypatch.setattr(lake_store, "LOADER_LATE", 1.0)
    store = stores(loader=False, load_every=0.2)
    client = create_app({"STORE": store}).test_client()
    first = client.get("/healthz").get_json()
    assert first["status"] == "ok" and first["staging"]["staged_games"] == 0
    assert store.ingest([pending(fresh(SLOW6[0]))]) == ["accepted"]
    _until(lambda: client.get("/healthz").get_json()["status"] == "degraded")
    reply = client.get("/healthz")
    body = reply.get_json()
    assert reply.status_code == 200 and "loader" in body["degraded"]
    assert body["staging"]["staged_games"] == 1 and body["staging"]["loader_here"] is False
    stores(load_every=0.2)  # a loader: caught up, ok again
    _until(lambda: client.get("/healthz").get_json()["status"] == "ok")


def test_the_documented_analyst_user_keeps_reading_tables_made_later(pg_cluster, tmp_path):
    """docs/lake.md's read-only analyst: granted before the lake's later commits, which make
    new catalog tables (DuckLake's inlined rows of a small commit). With the documented ALTER
    DEFAULT PRIVILEGES it reads them; with GRANT ... ON ALL TABLES alone it does not."""
    from ingest.storage.lake import connect
    from ingest.storage.lake.admin import init_lake

    tag = f"{time.monotonic_ns() % 10**9}"
    owner, db = f"balance_{tag}", f"lake_{tag}"
    pg_cluster.psql(f"CREATE ROLE {owner} LOGIN")
    pg_cluster.psql(f"CREATE DATABASE {db} OWNER {owner}")
    base = pg_cluster.conninfo().replace("dbname=postgres", f"dbname={db}")
    catalog = base.replace("user=postgres", f"user={owner}")
    init_lake(catalog, str(tmp_path / "data"), inline_rows=10)  # small commits inlined
    grants = (
        "GRANT CONNECT ON DATABASE {db} TO {who}; GRANT USAGE ON SCHEMA public TO {who}; "
        "GRANT SELECT ON ALL TABLES IN SCHEMA public TO {who};"
    )
    for who, default in ((f"analyst_{tag}", True), (f"partial_{tag}", False)):
        sql = f"CREATE ROLE {who} LOGIN; " + grants.format(db=db, who=who)
        if default:
            sql += (f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public "
                    f"GRANT SELECT ON TABLES TO {who};")  # fmt: skip
        pg_cluster.psql(sql, dbname=db)
    store = LakeStore(catalog, staging=False)  # a small commit: its rows inlined in the catalog
    try:
        assert store.ingest([pending(fresh(SLOW6[0]))]) == ["accepted"]
    finally:
        store.close()
    from ingest import cli

    assert cli.main(["jobs", "run", "--lake", catalog]) == 0  # new lake tables (agg_*)

    def runs_as(who: str) -> int:
        con = connect(base.replace("user=postgres", f"user={who}"), read_only=True, claims=False)
        try:
            return con.execute("SELECT count(*) FROM games, agg_runs").fetchone()[0]
        finally:
            con.close()

    assert runs_as(f"analyst_{tag}") == 1
    # without it the inlined rows' new table is unreadable: DuckDB 1.5.5's ducklake says so
    # as an internal error, or PostgreSQL's "permission denied"
    with pytest.raises(Exception, match="permission denied|INTERNAL Error"):
        runs_as(f"partial_{tag}")


def test_the_console_scrubber_hides_the_catalog_and_data_path_but_keeps_table_names():
    """What PostgreSQL tells a reader without the grant names the table: the console's scrubber
    (hiding the catalog string and the data path as "<lake>") must not cut a catalog or data
    path that is also part of a table name out of it (`dbname=lake` made
    `duck<lake>_snapshot`, a data path `data` `duckstore_inlined_<lake>_31_19`)."""
    from dashboard.console.sqlsafe import scrub_hidden

    hidden = ["lake", "data/"]  # a catalog and a data path as short as they come
    for table in ("ducklake_snapshot", "duckstore_inlined_data_31_19"):
        message = f"Failed to prepare COPY: ERROR:  permission denied for table {table}"
        assert scrub_hidden(message, hidden) == message
    assert (
        scrub_hidden("IO Error: Cannot open file data/main/raw_records/a.parquet", hidden)
        == "IO Error: Cannot open file <lake>/main/raw_records/a.parquet"
    )
    assert scrub_hidden('connection to "lake" failed', hidden) == 'connection to "<lake>" failed'


def test_a_stage_whose_claims_were_taken_over_stages_nothing(stores, lake):
    """A server's claims taken over (its lease ran out) before its staging transaction: the
    transaction marks nothing and stages nothing (LostClaims), the claims stay the new
    owner's; with its claims intact the same stage goes in, marked stored."""
    import uuid

    import pyarrow as pa

    from ingest.storage.lake.claims import STORED

    stores(loader=False)  # staging and claims installed; no loader (these rows are no games)
    pg = conninfo(lake)
    keys = sorted(uuid.uuid4().int for _ in range(3))
    received = (dt.datetime(2026, 12, 5), dt.datetime(2026, 12, 5))
    tables = {"raw_records": pa.table({"n": [1, 2, 3]})}
    old, new = lake_staging.Stager(pg), lake_staging.Stager(pg)
    try:
        claims = old.claim(keys, [1, 2, 3], "old_owner", 0.0)  # a lease already run out
        assert all(c.mine for c in claims.values())
        with new.transaction():  # (what LakeStore._take_over does, on the lease's end)
            new._connection().execute(
                "SELECT * FROM balance_take_over(%s, %s, %s, %s, %s)",
                (lake_staging._uuids(keys), ["old_owner"] * 3, [1, 2, 3], "new_owner", 60.0),
            ).fetchall()
        with pytest.raises(lake_staging.LostClaims):
            with old.transaction():
                old.stage(keys, "old_owner", received, tables)
        with psycopg.connect(pg, autocommit=True) as con:
            staged = con.execute(f"SELECT count(*) FROM {lake_staging.SCHEMA}.groups")
            assert staged.fetchone() == (0,)
            owners = con.execute(
                "SELECT DISTINCT owner, state FROM balance_claims WHERE game_id = ANY (%s)",
                (lake_staging._uuids(keys),),
            ).fetchall()
        assert owners == [("new_owner", "pending")]
        with new.transaction():
            group = new.stage(keys, "new_owner", received, tables)
        with psycopg.connect(pg, autocommit=True) as con:
            assert con.execute(
                f"SELECT games FROM {lake_staging.SCHEMA}.groups WHERE id = %s", (group,)
            ).fetchone() == (3,)
            states = con.execute(
                "SELECT DISTINCT state FROM balance_claims WHERE game_id = ANY (%s)",
                (lake_staging._uuids(keys),),
            ).fetchall()
        assert states == [(STORED,)]
        with psycopg.connect(pg, autocommit=True) as con:
            con.execute(f"DELETE FROM {lake_staging.SCHEMA}.groups")
    finally:
        old.close()
        new.close()


def test_lake_check_goes_on_from_its_last_clean_run_and_still_finds_what_is_wrong(stores, lake):
    """`balance lake check` (check_since): the first run checks everything and leaves a mark;
    the next looks at the raw records loaded since and the claims made since, and still
    finds a record whose claim went missing and a stored claim with no game, run after run
    (a run with errors does not move the mark)."""
    import uuid

    from ingest.storage.lake.admin import check_since

    store = stores(load_every=0.2)

    def load(n: int) -> None:
        assert store.ingest([pending(fresh(r)) for r in SLOW6[:n]]) == ["accepted"] * n
        cur = store.reader()  # waits for the loader
        cur.close()

    load(5)
    first = check_since(lake)
    assert first["ok"] and first["since_snapshot"] is None, first
    load(7)
    second = check_since(lake)
    assert second["ok"] and second["since_snapshot"] == first["to_snapshot"], second
    assert second["new_raw_records"] == 7 and second["recent_stored_claims"] >= 7
    assert check_since(lake)["new_raw_records"] == 0  # nothing new since

    load(3)
    (lost,) = lake_rows(lake, "SELECT game_id::VARCHAR FROM raw_records ORDER BY received_at "
                              "DESC LIMIT 1")[0]  # fmt: skip
    ghost = uuid.uuid4()
    with psycopg.connect(conninfo(lake), autocommit=True) as con:
        con.execute("DELETE FROM balance_claims WHERE game_id = %s", (uuid.UUID(lost),))
        con.execute(
            "INSERT INTO balance_claims (game_id, content_hash, state, owner, leased_until) "
            "VALUES (%s, 1, 'stored', 'nobody', now())",
            (ghost,),
        )
    for _ in range(2):
        bad = check_since(lake)
        assert not bad["ok"], bad
        assert bad["stored_without_claim"] == 1 and bad["claimed_not_stored"] == 1, bad
        assert bad["new_raw_records"] == 3 and bad["since_snapshot"] == second["to_snapshot"]
    from ingest import cli

    assert cli.main(["lake", "check", "--lake", lake]) == 1
    assert cli.main(["lake", "check", "--full", "--lake", lake]) == 1


def test_a_server_frozen_inside_its_staging_transaction_does_not_hold_its_claims(
    stores, lake, monkeypatch
):
    """A server that stops answering inside its staging transaction (a frozen host) holds its
    new claims' row locks; a claim of the same game at another server waits on them. The
    session is ended by PostgreSQL once idle in that transaction past IDLE_IN_TRANSACTION:
    the other server's claim then gets the game, and the frozen one's commit fails (its
    client was never answered: nothing acknowledged is lost)."""
    import uuid

    monkeypatch.setattr(lake_staging, "IDLE_IN_TRANSACTION", 1.0)
    stores(loader=False)  # staging and claims installed
    pg = conninfo(lake)
    key = uuid.uuid4().int
    frozen, other = lake_staging.Stager(pg), lake_staging.Stager(pg)
    got: list = []
    try:
        with pytest.raises(psycopg.Error):
            with frozen.transaction():
                assert frozen.claim([key], [7], "frozen_server", 60.0)[key].mine
                waiter = threading.Thread(
                    target=lambda: got.append(other.claim([key], [7], "other_server", 60.0))
                )
                waiter.start()
                waiter.join(60)  # ends when PostgreSQL ends the frozen session
                assert got, "the claim waited past the frozen session's end"
        assert got[0][key].mine and got[0][key].owner == "other_server"
    finally:
        frozen.close()
        other.close()
