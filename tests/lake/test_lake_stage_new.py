"""The one-statement stage of a group of new games (lake/staging.py `Stager.stage_new`): used
for a group no server has claimed any of, with no transaction around it; a group holding a game
claimed before (a retry, an altered record, a game in a repeat within the group) falls back to
the claim-then-stage transaction; an answer lost after the statement landed is found landed,
one lost before it is a 503 that leaves nothing; two stores storing the same games at once
store each once; a closed claims gate is not stepped over. In-process LakeStores on the
session's PostgreSQL cluster."""

from __future__ import annotations

import threading

import psycopg
import pytest
from test_lake import SLOW6, altered, fresh, lake_rows, pending

from ingest.storage import StorageUnavailable
from ingest.storage.lake import conninfo
from ingest.storage.lake import staging as lake_staging
from ingest.storage.lake.admin import check


def _transactions(monkeypatch) -> list[int]:
    """Counts the claim-then-stage transactions entered (every committer thread's)."""
    entered: list[int] = []
    real = lake_staging.Stager.transaction

    def counted(self):
        entered.append(1)
        return real(self)

    monkeypatch.setattr(lake_staging.Stager, "transaction", counted)
    return entered


def test_new_games_in_one_statement_and_claimed_ones_through_the_transaction(
    stores, lake, monkeypatch
):
    store = stores(loader=False)
    entered = _transactions(monkeypatch)
    records = [fresh(r) for r in SLOW6[:6]]
    assert store.ingest([pending(r) for r in records[:4]]) == ["accepted"] * 4
    assert entered == [], "a group of new games took the transaction"
    # a repeat inside one group of new games answers from its first occurrence
    again = fresh(SLOW6[6])
    assert store.ingest([pending(again), pending(again), pending(altered(again))]) == [
        "accepted",
        "duplicate",
        "conflict",
    ]
    assert entered == []
    # a group holding a game stored before: nothing of the statement is kept, the transaction
    # claims and stages it, its new games accepted
    mixed = [pending(records[4]), pending(records[0]), pending(altered(records[1]))]
    assert store.ingest(mixed) == ["accepted", "duplicate", "conflict"]
    assert len(entered) == 1
    result = check(lake)
    assert result["ok"] and result["staged"] == 6 and result["claims"] == {"stored": 6}, result
    with psycopg.connect(conninfo(lake), autocommit=True) as con:
        owners = con.execute("SELECT DISTINCT owner FROM balance_claims").fetchall()
        staged = con.execute(
            "SELECT sum(cardinality(game_ids)) FROM balance_staging.groups"
        ).fetchone()
    assert owners == [(store.owner,)] and staged == (6,)


def test_a_lost_answer_of_the_statement(stores, monkeypatch):
    """The statement landed and its answer was lost: found landed, `accepted`; it failed
    before it ran: a 503, no claim or row left, and the retry is stored."""
    store = stores(loader=False)
    real = lake_staging.Stager.stage_new

    def lost_after(self, *args, **kw):
        real(self, *args, **kw)
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(lake_staging.Stager, "stage_new", lost_after)
    first = fresh(SLOW6[0])
    assert store.ingest([pending(first)]) == ["accepted"]

    def lost_before(self, *args, **kw):
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(lake_staging.Stager, "stage_new", lost_before)
    second = fresh(SLOW6[1])
    with pytest.raises(StorageUnavailable):
        store.ingest([pending(second)])
    monkeypatch.undo()
    result = check(store.catalog)
    assert result["ok"] and result["staged"] == 1 and result["claims"] == {"stored": 1}, result
    from support import wait_for

    wait_for(lambda: store.failure is None, 15, "the failure cleared", every=0.2)
    assert store.ingest([pending(second), pending(first)]) == ["accepted", "duplicate"]
    result = check(store.catalog)
    assert result["ok"] and result["staged"] == 2 and result["claims"] == {"stored": 2}, result


def test_the_same_games_at_two_stores_at_once(stores, lake):
    """Two stores each send the same 40 new games in groups at the same moment: each game is
    staged once; every game is `accepted` at exactly one store and `duplicate` at the
    other."""
    a, b = stores(loader=False), stores(loader=False)
    records = [fresh(SLOW6[i % len(SLOW6)]) for i in range(40)]
    answers: dict[str, list[str]] = {}
    go = threading.Barrier(2)

    def send(name, store, order):
        go.wait(10)
        got = []
        for i in range(0, len(order), 4):  # groups of 4, in opposite orders
            got += store.ingest([pending(r) for r in order[i : i + 4]])
        answers[name] = got if name == "a" else got[::-1]

    threads = [
        threading.Thread(target=send, args=("a", a, records)),
        threading.Thread(target=send, args=("b", b, records[::-1])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    pairs = sorted(zip(answers["a"], answers["b"], strict=True))
    assert set(pairs) <= {("accepted", "duplicate"), ("duplicate", "accepted")}, pairs
    result = check(lake)
    assert result["ok"] and result["staged"] == 40 and result["claims"] == {"stored": 40}, result
    assert lake_rows(lake, "SELECT count(*) FROM raw_records") == [(0,)]


def test_a_closed_gate_is_not_stepped_over(stores, lake):
    """While the claims' gate is closed (a re-judge's swap) the statement claims nothing and
    the group goes the way of every claim: it waits, then 503; once open, it is stored."""
    store = stores(loader=False, in_flight_wait=0.5)
    from ingest.storage.lake import connect
    from ingest.storage.lake.claims import Claims

    con = connect(lake)
    try:
        Claims(con, "balance_pg").close_gate("gate_test", 3.0)
        record = fresh(SLOW6[0])
        with pytest.raises(StorageUnavailable):
            store.ingest([pending(record)])
        assert check(lake)["claims"] == {}
        Claims(con, "balance_pg").open_gate("gate_test")
    finally:
        con.close()
    assert store.ingest([pending(record)]) == ["accepted"]


def test_the_loader_reads_many_groups_as_one_stream_a_table():
    """`gather` (the loader's read of staged groups) gives what reading each group's streams
    and concatenating them gives; groups whose schemas differ (a column all null in one) are
    read one by one and promoted."""
    import pyarrow as pa

    groups = [
        lake_staging.pack(
            {
                "a": pa.table({"x": [i, i + 1], "y": [f"g{i}", None]}),
                "b": pa.table({"z": [float(i)]}),
            }
        )
        for i in range(30)
    ]
    one = lake_staging.gather(groups)
    each = lake_staging.merge([lake_staging.unpack(n, b) for n, b in groups])
    assert set(one) == {"a", "b"} and all(one[n].equals(each[n]) for n in one)
    assert one["a"]["x"].num_chunks == 1 and one["a"].num_rows == 60
    odd = lake_staging.pack({"a": pa.table({"x": pa.array([None], pa.null()), "y": ["n"]})})
    mixed = lake_staging.gather([groups[0], odd])
    assert mixed["a"].column("x").to_pylist() == [0, 1, None]
