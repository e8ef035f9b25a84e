"""Rejected uploads are counted, never stored (the Data quality page shows the
rejected counts): per day, field and kind of problem, with nothing of the record's text or
values, keys a client cannot grow, and counts that survive a failing store and a shutdown."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import uuid

import pytest
from support import AppClient, example_lines, fresh_slow6, query, wait_for

from ingest.server.demo import load_records
from ingest.server.rejections import INSERT, MAX_KEYS, RejectionTally
from ingest.storage import Store


@pytest.fixture
def app(tmp_path):
    client = AppClient(tmp_path / "app").start()
    yield client
    client.stop()


def _upload(app, lines: list[str]) -> list[dict]:
    reply = app.post("/v1/games", "\n".join(lines) + "\n", "application/x-ndjson")
    assert reply.status == 200
    return reply.json()["results"]


def _tally(app) -> RejectionTally:
    return app.app.extensions["ingest"].rejections


def _rows(app, sql: str) -> list[tuple]:
    """Read the running app's store (its own reader: the file is the app's)."""
    cur = app.app.extensions["store"].reader()
    try:
        return cur.execute(sql).fetchall()
    finally:
        cur.close()


def test_rejected_records_are_counted_by_field_and_problem(app):
    results = _upload(app, example_lines("malformed"))
    rejected = [r for r in results if r["verdict"] == "rejected"]
    assert len(rejected) > 30
    assert _tally(app).flush() == len(rejected)
    rows = _rows(app, "SELECT field, problem, records FROM rejections")
    assert sum(n for *_, n in rows) == len(rejected)
    by_problem: dict[str, int] = {}
    for _, problem, n in rows:
        by_problem[problem] = by_problem.get(problem, 0) + n
    unknown = sum(r["message"].startswith("unknown field") for r in rejected)
    not_json = sum(r["message"].startswith("not JSON") for r in rejected)
    assert by_problem["unknown field"] == unknown > 0
    assert by_problem["not JSON"] == not_json > 0
    fields = {f for f, *_ in rows}
    assert {"lineups", "ended_at", "device_id"} <= fields
    assert "turns[]" in fields and not any("[7]" in f for f in fields)  # indices folded


def test_nothing_of_a_rejected_record_is_kept(app):
    record = fresh_slow6(1)
    record["game"] = "slide6-secret-value"
    record["<script>alert(1)</script>"] = "x"
    for bad in (dict(record), {**fresh_slow6(2), "../../etc/passwd": 1}):
        _upload(app, [json.dumps(bad)])
    _tally(app).flush()
    app.stop()
    text = json.dumps(query(app.db, "SELECT * FROM rejections"), default=str)
    assert "secret" not in text and "script" not in text and "passwd" not in text
    assert "(unknown)" in text and "game" in text
    app.start()


def test_a_client_cannot_grow_the_table_with_made_up_fields(app):
    lines = [json.dumps({**fresh_slow6(i), f"field_{uuid.uuid4().hex}": 1}) for i in range(600)]
    for i in range(0, len(lines), 200):
        _upload(app, lines[i : i + 200])
    assert _tally(app).flush() == 600
    rows = _rows(app, "SELECT field, records FROM rejections")
    assert len(rows) <= MAX_KEYS + 1 and sum(n for _, n in rows) == 600
    assert dict(rows)["(other)"] == 600 - (MAX_KEYS - 0)
    # spread over later flushes, more made-up names make no more keys that day
    _upload(app, [json.dumps({**fresh_slow6(0), f"field_{uuid.uuid4().hex}": 1})] * 5)
    assert _tally(app).flush() == 5
    rows = _rows(app, "SELECT DISTINCT field FROM rejections")
    assert len(rows) <= MAX_KEYS + 1


def test_counts_survive_a_failing_store_and_reach_the_next_flush(tmp_path):
    db = tmp_path / "s.duckdb"
    store = Store(db)
    tally = RejectionTally(store, every=0)
    tally.count([{"verdict": "rejected", "field": "lineups", "message": "bad"}] * 3)
    store.close()  # every write now fails: the counts are kept, not lost
    assert tally.flush() == 0 and tally.pending() == 3
    tally.store = Store(db)
    try:
        tally.count([{"verdict": "rejected", "field": "lineups", "message": "bad"}])
        assert tally.flush() == 4 and tally.pending() == 0
    finally:
        tally.store.close()
    assert query(db, "SELECT sum(records) FROM rejections") == [(4,)]


def test_a_tally_left_on_a_closed_store_stops_instead_of_warning_forever(tmp_path, caplog):
    store = Store(tmp_path / "s.duckdb")
    tally = RejectionTally(store, every=0.02)
    tally.count([{"verdict": "rejected", "field": "lineups", "message": "bad"}])
    # the loop flushed while the store was open
    wait_for(lambda: tally.pending() == 0, 10, "the tally flushed", every=0.01)
    tally.roll_up()  # today's roll-up done (the loop may have done it already)
    store.close()  # closed by its owner, the tally never told
    tally._thread.join(timeout=5)
    assert not tally._thread.is_alive()
    tally.count([{"verdict": "rejected", "field": "lineups", "message": "bad"}])
    assert tally.pending() == 1  # kept for whoever flushes it, not lost
    assert not [r for r in caplog.records if r.name == "ingest.rejections"]


def test_stopping_the_server_stores_what_it_counted(app):
    _upload(app, [json.dumps({**fresh_slow6(3), "players": 1})])
    assert _tally(app).pending() == 1
    app.stop()  # no flush by hand: close_app flushes before the store closes
    assert query(app.db, "SELECT field, problem, records FROM rejections") == [
        ("players", "unknown field", 1)
    ]
    app.start()


def test_the_data_quality_page_shows_the_rejected_counts(app):
    results = _upload(app, example_lines("malformed"))
    rejected = sum(r["verdict"] == "rejected" for r in results)
    _tally(app).flush()
    assert app.post("/sql/snapshot", b"", "application/json").status == 200
    page = app.get("/dashboard/p/quality").body.decode()
    assert "Rejected uploads by field and problem" in page
    reply = app.get("/dashboard/chart/rejected-fields.csv")
    rows = list(csv.DictReader(io.StringIO(reply.body.decode())))
    assert sum(int(r["records"]) for r in rows) == rejected


def test_the_demo_loader_counts_its_rejected_records(tmp_path):
    db = tmp_path / "demo.duckdb"
    with Store(db) as store:
        counts = load_records(store, example_lines("malformed"), echo=lambda _line: None)
    assert counts["rejected"] > 30
    assert query(db, "SELECT sum(records) FROM rejections") == [(counts["rejected"],)]


def _sums(db) -> dict[tuple, int]:
    rows = query(db, "SELECT day, field, problem, sum(records) FROM rejections GROUP BY ALL")
    return {tuple(r[:3]): r[3] for r in rows}


def test_past_days_are_rolled_up_once_a_day_and_every_count_kept(tmp_path):
    db = tmp_path / "s.duckdb"
    today = dt.datetime.now(dt.UTC).date()
    days = [today - dt.timedelta(days=d) for d in (3, 1, 0)]
    flushes = [
        (day, field, problem, n)
        for n in range(1, 40)  # 39 flushes of a steady flood, and of a second key
        for day in days
        for field, problem in (("lineups", "invalid value"), ("line", "not JSON"))
    ] + [(days[0], "turns[]", "missing field", 7)]  # a key with one row already
    with Store(db) as store:
        store.submit(lambda con: con.executemany(INSERT, flushes)).result()
        tally = RejectionTally(store, every=0)
        before = query_store(store, "SELECT count(*), sum(records) FROM rejections")
        assert tally.roll_up() == 4  # two keys on each of the two past days
        assert tally.roll_up() == 0  # the same day: nothing asked of the store
        after = query_store(store, "SELECT count(*), sum(records) FROM rejections")
        per_key = query_store(
            store, "SELECT day, count(*) FROM rejections GROUP BY day ORDER BY day"
        )
    assert before[0][1] == after[0][1]  # every count kept
    assert after[0][0] == 39 * 2 + 2 * 2 + 1  # today's rows as they were, one row a past key
    assert dict(per_key) == {days[0]: 3, days[1]: 2, days[2]: 78}
    assert _sums(db) == {
        (day, field, problem): sum(
            n for d, f, p, n in flushes if (d, f, p) == (day, field, problem)
        )
        for day, field, problem, _ in flushes
    }


def test_a_roll_up_that_fails_is_tried_again_and_loses_nothing(tmp_path):
    db = tmp_path / "s.duckdb"
    yesterday = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
    store = Store(db)
    store.submit(
        lambda con: con.executemany(INSERT, [(yesterday, "lineups", "invalid value", 2)] * 5)
    ).result()
    tally = RejectionTally(store, every=0)
    store.close()  # every write now fails
    assert tally.roll_up() == 0
    tally.store = Store(db)
    try:
        assert tally.roll_up() == 1
    finally:
        tally.store.close()
    assert query(db, "SELECT records FROM rejections") == [(10,)]


def query_store(store, sql: str) -> list[tuple]:
    cur = store.reader()
    try:
        return cur.execute(sql).fetchall()
    finally:
        cur.close()
