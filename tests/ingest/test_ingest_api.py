"""POST /v1/games on the app `balance serve` runs, in-process (Flask's test client): every
verdict, the spec examples, mixed batches, unknown fields, status codes; and the other
endpoints. The apps judge on the request threads; the mixed batch goes through judge processes
and the gatherer, as on a server."""

from __future__ import annotations

import json

import pytest
from support import (
    JSON,
    NDJSON,
    SLIDE,
    SLOW6,
    AppClient,
    dumps,
    example_lines,
    example_records,
    fresh,
    fresh_slow6,
    query,
    verdicts,
)

SERVER_JUDGES = {"BALANCE_WORKERS": "2"}  # judge processes and the gatherer, as on a server


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = AppClient(tmp_path_factory.mktemp("api")).start()
    yield s
    s.stop()


def one(srv, record, content_type=JSON) -> dict:
    r = srv.post("/v1/games", dumps(record) if isinstance(record, dict) else record, content_type)
    assert r.headers["content-type"].startswith("application/json")
    return r.json()["results"][0]


# -- verdicts ---------------------------------------------------------------------------------


def test_accepted_then_duplicate_then_conflict(srv):
    rec = fresh_slow6(3)
    r = srv.post("/v1/games", dumps(rec), JSON)
    assert r.status == 200
    assert r.json() == {
        "results": [
            {
                "line": 0,
                "game_id": rec["game_id"],
                "verdict": "accepted",
                "rule": None,
                "turn": None,
                "message": None,
                "field": None,
                "ruleset": "standard",
            }
        ]
    }
    assert one(srv, rec)["verdict"] == "duplicate"
    changed = json.loads(json.dumps(rec))
    changed["client"]["version"] = "9.9.9"  # still a valid game, different content
    res = one(srv, changed)
    assert res["verdict"] == "conflict" and res["game_id"] == rec["game_id"]


def test_duplicate_ignores_whitespace_and_key_order(srv):
    rec = fresh_slow6(5)
    assert one(srv, rec)["verdict"] == "accepted"
    reordered = json.dumps(dict(reversed(list(rec.items()))), indent=2).encode()
    assert one(srv, reordered)["verdict"] == "duplicate"


def test_quarantined_names_rule_and_turn(srv):
    rec = example_records("slow6-invalid")[0]
    expected = json.loads(example_lines("slow6-invalid.expected")[0])
    res = one(srv, fresh(rec))
    assert res["verdict"] == "quarantined"
    assert res["rule"] in [expected["rule"], *expected["also_acceptable"]]
    assert res["turn"] == expected["turn"] and res["message"]
    assert "seat" not in res  # Slide only


def test_slide_quarantine_names_the_seat(srv):
    rec = example_records("slide-invalid")[0]
    expected = json.loads(example_lines("slide-invalid.expected")[0])
    res = one(srv, fresh(rec))
    assert res["verdict"] == "quarantined" and res["turn"] == expected["turn"]
    assert isinstance(res["seat"], int)


@pytest.mark.parametrize("where", ["top", "client", "result"])
@pytest.mark.parametrize("name", ["player_name", "email"])
def test_personal_fields_are_rejected(srv, where, name):
    rec = fresh_slow6(1)
    (rec if where == "top" else rec[where])[name] = "someone@example.com"
    r = srv.post("/v1/games", dumps(rec), JSON)
    assert r.status == 422
    res = r.json()["results"][0]
    assert res["verdict"] == "rejected" and name in res["field"] and res["message"]
    assert res["game_id"] == rec["game_id"]  # still says which game it was


def test_rejected_record_is_not_stored(srv):
    rec = fresh_slow6(2)
    rec["email"] = "x@example.com"
    assert one(srv, rec)["verdict"] == "rejected"
    del rec["email"]
    assert one(srv, rec)["verdict"] == "accepted"  # not a duplicate or conflict


# -- the spec examples, line by line -----------------------------------------------------------


@pytest.mark.parametrize("name", ["slow6-valid", "slide-valid"])
def test_valid_examples_are_accepted(srv, name):
    r = srv.post("/v1/games", "\n".join(example_lines(name)) + "\n", NDJSON)
    assert r.status == 200
    results = r.json()["results"]
    assert len(results) == len(example_lines(name))
    # the module's server may have them already from another test: accepted or duplicate
    assert {res["verdict"] for res in results} <= {"accepted", "duplicate"}
    assert [res["line"] for res in results] == list(range(len(results)))


@pytest.mark.parametrize("name", ["slow6-invalid", "slide-invalid"])
def test_invalid_examples_are_quarantined_with_their_rule(srv, name):
    lines = example_lines(name)
    expected = [json.loads(x) for x in example_lines(f"{name}.expected")]
    records = [fresh(json.loads(x)) for x in lines]  # fresh ids: independent of other tests
    results = srv.upload(records).json()["results"]
    for res, exp, rec in zip(results, expected, records, strict=True):
        assert res["verdict"] == "quarantined", (exp, res)
        assert res["rule"] in [exp["rule"], *exp["also_acceptable"]], (exp, res)
        assert res["turn"] == exp["turn"], (exp, res)
        assert res["game_id"] == rec["game_id"]


def test_malformed_examples_are_rejected_naming_the_field(srv):
    lines = example_lines("malformed")
    expected = [json.loads(x) for x in example_lines("malformed.expected")]
    r = srv.post("/v1/games", "\n".join(lines) + "\n", NDJSON)
    assert r.status == 200  # some lines are JSON: a processed batch
    for res, exp in zip(r.json()["results"], expected, strict=True):
        assert res["verdict"] == "rejected", (exp, res)
        assert res["field"] == exp["field"], (exp, res)
        assert res["line"] == exp["line"] - 1  # 0-based here, 1-based in the expected file


# -- batches ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_mixed_batch_stores_the_good_lines(app_factory):
    s = app_factory(env=SERVER_JUDGES)
    stored = fresh_slow6(7)
    assert s.upload([stored]).json()["results"][0]["verdict"] == "accepted"
    good, good2 = fresh_slow6(8), fresh(SLIDE[0])
    clash = json.loads(json.dumps(stored))
    clash["client"]["version"] = "0.0.1"
    inner = json.loads(json.dumps(good))
    inner["client"]["version"] = "0.0.2"
    bad = fresh_slow6(9) | {"email": "a@b.c"}
    quarantined = fresh(example_records("slow6-invalid")[1])
    lines = [
        dumps(good),
        b"{not json",
        dumps(stored),
        dumps(clash),
        b"",
        dumps(good),
        dumps(inner),
        dumps(bad),
        dumps(quarantined),
        b"   ",
        dumps(good2),
    ]
    r = s.post("/v1/games", b"\n".join(lines), NDJSON)
    assert r.status == 200
    got = [(x["line"], x["verdict"]) for x in r.json()["results"]]
    assert got == [
        (0, "accepted"),
        (1, "rejected"),
        (2, "duplicate"),
        (3, "conflict"),
        (5, "duplicate"),
        (6, "conflict"),
        (7, "rejected"),
        (8, "quarantined"),
        (10, "accepted"),
    ]  # lines 4 and 9 are blank: no record
    s.stop()
    ids = {g for (g,) in query(s.db, "SELECT game_id::VARCHAR FROM raw_records")}
    assert ids == {stored["game_id"], good["game_id"], good2["game_id"], quarantined["game_id"]}
    assert query(s.db, "SELECT count(*) FROM games")[0][0] == 2
    assert query(s.db, "SELECT count(*) FROM slide_games")[0][0] == 1
    q = query(s.db, "SELECT game_id::VARCHAR, rule FROM quarantine")
    assert [g for g, _ in q] == [quarantined["game_id"]]
    # what was stored for the accepted record is the record, canonical
    from ingest.storage.codec import canonical, decode

    blob, codec_id = query(
        s.db, "SELECT record, codec FROM raw_records WHERE game_id = ?", [good["game_id"]]
    )[0]
    assert decode(codec_id, blob) == canonical(good)


def test_batch_of_only_non_json_is_400(srv):
    r = srv.post("/v1/games", b"{oops\nnot json either\n", NDJSON)
    assert r.status == 400
    assert verdicts(r) == ["rejected", "rejected"] and r.json()["error"]


# -- status codes ------------------------------------------------------------------------------


@pytest.mark.parametrize("ctype", [None, "text/plain", "application/xml", "multipart/form-data"])
def test_wrong_content_type_is_415(srv, ctype):
    r = srv.post("/v1/games", dumps(fresh_slow6()), ctype)
    assert r.status == 415 and r.json()["status"] == 415


def test_content_type_parameters_are_fine(srv):
    r = srv.post("/v1/games", dumps(fresh_slow6(4)), "application/json; charset=utf-8")
    assert r.status == 200 and verdicts(r) == ["accepted"]


def test_an_encoding_other_than_gzip_or_deflate_is_415(srv):
    r = srv.post("/v1/games", dumps(fresh_slow6()), JSON, {"Content-Encoding": "br"})
    assert r.status == 415 and r.json()["accepted"] == ["identity", "gzip", "deflate"]


@pytest.mark.parametrize("ctype", [JSON, NDJSON])
@pytest.mark.parametrize("body", [b"", b"\n\n  \n"])
def test_empty_body_is_400(srv, ctype, body):
    r = srv.post("/v1/games", body, ctype)
    assert r.status == 400 and r.json()["error"] == "bad_request"


def test_single_record_not_json_is_400(srv):
    r = srv.post("/v1/games", b'{"schema": 1,', JSON)
    assert r.status == 400 and r.json()["results"][0]["field"] == "line"


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_wrong_method_is_405_json(srv, method):
    r = srv.request(method, "/v1/games")
    assert r.status == 405 and "POST" in r.headers["allow"]
    assert r.json()["status"] == 405


@pytest.mark.parametrize("path", ["/v2/games", "/v1/games/x", "/%00"])
def test_unknown_path_is_404_json(srv, path):
    r = srv.get(path)
    assert r.status == 404 and r.headers["content-type"].startswith("application/json")
    assert r.json()["error"] == "not_found"


@pytest.mark.parametrize(
    "app_server", [{"env": {"BALANCE_RATE_LIMIT": "1", "BALANCE_RATE_BURST": "3"}}], indirect=True
)
def test_rate_limit_is_429_with_retry_after(app_server):
    statuses = [app_server.post("/v1/games", dumps(fresh_slow6(i)), JSON).status for i in range(6)]
    assert statuses[:3] == [200, 200, 200] and 429 in statuses[3:]
    r = app_server.post("/v1/games", dumps(fresh_slow6()), JSON)
    assert r.status == 429 and int(r.headers["retry-after"]) >= 1
    assert r.json()["status"] == 429
    assert app_server.get("/healthz").status == 200  # only uploads are limited


# -- the other endpoints ----------------------------------------------------------------------


def test_schema_is_served(srv):
    r = srv.get("/v1/schema")
    assert r.status == 200 and r.headers["content-type"].startswith("application/schema+json")
    from ingest.server.api import schema_text

    assert r.body == schema_text()
    assert r.json()["$schema"].startswith("https://json-schema.org/")


def test_openapi_references_the_schema(srv):
    doc = srv.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    post = doc["paths"]["/v1/games"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "/v1/schema"}
    assert {"200", "400", "413", "415", "429"} <= set(post["responses"])


def test_healthz_runs_a_query(srv):
    r = srv.get("/healthz")
    assert r.status == 200 and r.json()["status"] == "ok"
    assert isinstance(r.json()["stored_records"], int)


def test_metrics_count_verdicts_and_latency(app_server):
    app_server.upload([fresh_slow6(1), fresh_slow6(1) | {"email": "e"}, b"[]"])
    text = app_server.get("/metrics").body.decode()
    assert 'balance_records_total{verdict="accepted"} 1' in text
    assert 'balance_records_total{verdict="rejected"} 2' in text
    assert 'balance_upload_batch_records_bucket{le="5"} 1' in text
    assert "# TYPE balance_http_request_duration_seconds histogram" in text
    assert 'balance_http_request_duration_seconds_count{route="/v1/games"} 1' in text
    # exposition format: every sample line is "name{labels} value"
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            float(value)


def test_game_id_is_canonicalised_in_storage(app_server):
    rec = fresh_slow6(6)
    rec["game_id"] = rec["game_id"].upper()  # either case is a valid UUID
    assert one(app_server, rec)["verdict"] == "accepted"
    app_server.stop()
    assert query(app_server.db, "SELECT game_id::VARCHAR FROM games") == [(rec["game_id"].lower(),)]


def test_unique_ids_in_every_table(app_server):
    recs = [fresh(r) for r in SLOW6[:20] + SLIDE[:5]]
    app_server.upload(recs)
    app_server.upload(recs)  # all duplicates: no new rows
    app_server.stop()
    for table, key in [
        ("games", "game_id"),
        ("game_turns", "game_id, turn"),
        ("game_pieces", "game_id, side, start"),
        ("game_powers", "game_id, side, power"),
        ("slide_games", "game_id"),
        ("slide_seats", "game_id, seat"),
        ("slide_rounds", "game_id, round, seat"),
    ]:
        dup = query(
            app_server.db,
            f"SELECT count(*) FROM (SELECT {key} FROM {table} GROUP BY ALL HAVING count(*) > 1)",
        )[0][0]
        assert dup == 0, table
    assert query(app_server.db, "SELECT count(*) FROM games")[0][0] == 20
    turns = sum(len(r["turns"]) for r in recs[:20])
    assert query(app_server.db, "SELECT count(*) FROM game_turns")[0][0] == turns
