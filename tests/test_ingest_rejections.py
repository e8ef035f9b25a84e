"""Rejected uploads are counted, never stored (issue 20: the Data quality page shows the
rejected counts): per day, field and kind of problem, with nothing of the record's text or
values, keys a client cannot grow, and counts that survive a failing store and a shutdown."""

from __future__ import annotations

import csv
import io
import json
import uuid

import pytest
from support import AppClient, example_lines, fresh_slow6, query

from ingest.demo import load_records
from ingest.rejections import MAX_KEYS, RejectionTally
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
