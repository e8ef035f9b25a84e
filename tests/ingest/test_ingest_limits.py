"""Every limit of the upload at its boundary and one over: in-process (Flask's test client), and
over real HTTP on a real `balance serve` where the socket matters (a chunked body, a declared
length whose body is never sent)."""

from __future__ import annotations

import http.client
import json

import pytest
from support import (
    JSON,
    NDJSON,
    SLIDE,
    SLOW6,
    AppClient,
    Server,
    dumps,
    fresh,
    fresh_slow6,
    padded,
    verdicts,
)

KiB, MiB = 1024, 1024 * 1024
RECORD = 64 * KiB


SMALL = {"BALANCE_MAX_BODY": "200000", "BALANCE_MAX_LINES": "5"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = AppClient(tmp_path_factory.mktemp("limits")).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """The app with a 200,000-byte batch limit and 5 records a batch."""
    s = AppClient(tmp_path_factory.mktemp("small"), env=SMALL).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def real_srv(tmp_path_factory):
    """A real server with the default limits, for what only a socket can send."""
    s = Server(tmp_path_factory.mktemp("limits-real")).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def real_small(tmp_path_factory):
    """A real server with the small limits (SMALL), for a chunked body."""
    s = Server(tmp_path_factory.mktemp("small-real"), env=SMALL).start()
    yield s
    s.stop()


# -- record size: 64 KiB of JSON --------------------------------------------------------------


def test_single_record_of_exactly_64_kib_is_accepted(srv):
    r = srv.post("/v1/games", padded(fresh_slow6(), RECORD), JSON)
    assert r.status == 200 and verdicts(r) == ["accepted"]


def test_single_record_one_byte_over_is_413(srv):
    rec = fresh_slow6()
    r = srv.post("/v1/games", padded(rec, RECORD + 1), JSON)
    assert r.status == 413 and r.json()["limit"] == RECORD
    assert verdicts(srv.post("/v1/games", dumps(rec), JSON)) == ["accepted"]  # nothing stored


def test_batch_line_of_64_kib_and_one_over(srv):
    ok, over = fresh_slow6(1), fresh_slow6(2)
    body = padded(ok, RECORD) + b"\n" + padded(over, RECORD + 1) + b"\n"
    r = srv.post("/v1/games", body, NDJSON)
    assert r.status == 200
    first, second = r.json()["results"]
    assert first["verdict"] == "accepted"
    assert second["verdict"] == "rejected" and second["field"] == "record"


def test_huge_line_is_rejected_and_the_next_line_still_counts(srv):
    after = fresh_slow6(3)
    body = b'{"x": "' + b"a" * (5 * MiB) + b'"}\n' + dumps(after) + b"\n"
    r = srv.post("/v1/games", body, NDJSON)
    assert r.status == 200
    assert [(x["line"], x["verdict"], x["field"]) for x in r.json()["results"]] == [
        (0, "rejected", "record"),
        (1, "accepted", None),
    ]


# -- batch body size ---------------------------------------------------------------------------


def batch_of_size(size: int, lines: int) -> bytes:
    """`lines` fresh valid records (one a line) making a body of exactly `size` bytes."""
    per = size // lines
    out = [padded(fresh_slow6(i), per - 1) + b"\n" for i in range(lines - 1)]
    rest = size - sum(map(len, out))
    out.append(padded(fresh_slow6(lines), rest - 1) + b"\n")
    body = b"".join(out)
    assert len(body) == size
    return body


def test_batch_at_the_limit_is_processed_and_one_over_is_413(small):
    r = small.post("/v1/games", batch_of_size(200_000, 5), NDJSON)
    assert r.status == 200 and verdicts(r) == ["accepted"] * 5
    over = batch_of_size(200_001, 5)
    r = small.post("/v1/games", over, NDJSON)
    assert r.status == 413 and r.json()["status"] == 413
    assert set(verdicts(small.post("/v1/games", over[:-1], NDJSON))) == {"accepted"}


def post_chunked(server, body: bytes, ctype: str):
    conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
    try:
        chunks = (body[i : i + 65536] for i in range(0, len(body), 65536))
        conn.request(
            "POST", "/v1/games", body=chunks, headers={"Content-Type": ctype}, encode_chunked=True
        )
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


@pytest.mark.slow
def test_chunked_body_without_length_is_limited_too(real_small):
    status, body = post_chunked(real_small, batch_of_size(200_001, 5), NDJSON)
    assert status == 413 and body["status"] == 413
    status, body = post_chunked(real_small, batch_of_size(150_000, 3), NDJSON)
    assert status == 200 and [x["verdict"] for x in body["results"]] == ["accepted"] * 3


def declare(server, length: int, ctype: str, timeout: float = 5.0):
    """Send only the headers of an upload declaring `length` bytes: (status, JSON, headers)."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=timeout)
    try:
        conn.putrequest("POST", "/v1/games")
        conn.putheader("Content-Type", ctype)
        conn.putheader("Content-Length", str(length))
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read()), {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


@pytest.mark.slow
def test_default_limit_is_8_mib(real_srv):
    r = real_srv.post("/v1/games", batch_of_size(8 * MiB, 1000), NDJSON)
    assert r.status == 200 and len(r.json()["results"]) == 1000
    # one byte over: refused on its Content-Length alone, before a byte of it is sent
    status, body, headers = declare(real_srv, 8 * MiB + 1, NDJSON)
    assert status == 413 and body["limit"] == 8 * MiB
    assert headers["connection"] == "close"


@pytest.mark.slow
@pytest.mark.parametrize(
    "length, ctype, limit",
    [(100 * MiB, NDJSON, 8 * MiB), (RECORD + 3, JSON, RECORD)],
    ids=["batch of 100 MiB", "record of 64 KiB + 3"],
)
def test_a_declared_length_over_the_limit_is_413_before_the_body_is_read(
    real_srv, length, ctype, limit
):
    """The old server read (and dropped) up to 17 MiB of such a body before answering: a
    client that declared it and sent nothing waited forever, holding a request thread: an
    answer at all, with not a byte of the body sent, is the proof."""
    status, body, _ = declare(real_srv, length, ctype)
    assert status == 413 and body["limit"] == limit


# -- records in a batch ------------------------------------------------------------------------


def test_batch_record_count_limit(small):
    recs = [fresh_slow6(i) for i in range(6)]
    r = small.upload(recs[:5])
    assert r.status == 200 and len(r.json()["results"]) == 5
    r = small.upload(recs)  # six records: refused whole
    assert r.status == 413
    assert verdicts(small.upload(recs[5:])) == ["accepted"]  # the sixth was not stored


def test_blank_lines_do_not_count_as_records(small):
    recs = [fresh_slow6(i) for i in range(5)]
    body = b"\n\n".join(dumps(r) for r in recs) + b"\n\n\n"
    r = small.post("/v1/games", body, NDJSON)
    assert r.status == 200
    assert [x["line"] for x in r.json()["results"]] == [0, 2, 4, 6, 8]


def test_crlf_lines(srv):
    recs = [fresh_slow6(i) for i in range(2)]
    r = srv.post("/v1/games", b"\r\n".join(dumps(x) for x in recs) + b"\r\n", NDJSON)
    assert verdicts(r) == ["accepted", "accepted"]


# -- string lengths and nesting (upload-format.md "Limits") -------------------------------------


def test_client_version_64_and_65(srv):
    ok, over = fresh_slow6(1), fresh_slow6(2)
    ok["client"]["version"] = "v" * 64
    over["client"]["version"] = "v" * 65
    res = srv.upload([ok, over]).json()["results"]
    assert res[0]["verdict"] == "accepted"
    assert res[1]["verdict"] == "rejected" and res[1]["field"] == "client.version"


def test_challenge_id_128_and_129(srv):
    challenge = next(r for r in SLOW6 if r["mode"] == "challenge")
    ok, over = fresh(challenge), fresh(challenge)
    ok["challenge"]["id"] = "c" * 128
    over["challenge"]["id"] = "c" * 129
    res = srv.upload([ok, over]).json()["results"]
    assert res[0]["verdict"] == "accepted"
    assert res[1]["verdict"] == "rejected" and res[1]["field"] == "challenge.id"


def test_match_id_128_and_129(srv):
    ok, over = fresh(SLIDE[0]), fresh(SLIDE[0])
    ok["match"] = {"id": "m" * 128, "game": 1}
    over["match"] = {"id": "m" * 129, "game": 1}
    res = srv.upload([ok, over]).json()["results"]
    assert res[0]["verdict"] == "accepted"
    assert res[1]["verdict"] == "rejected" and res[1]["field"] == "match.id"


def test_nesting_32_levels_and_33(srv):
    def nested(levels_below_record: int) -> bytes:
        text = dumps(fresh_slow6())
        return (
            text[:-1] + b', "x": ' + b"[" * levels_below_record + b"]" * levels_below_record + b"}"
        )

    res = srv.post("/v1/games", nested(31) + b"\n" + nested(32), NDJSON).json()["results"]
    # 32 levels parse (then "x" is an unknown field); 33 levels are refused as too deep
    assert res[0]["verdict"] == "rejected" and "deep" not in res[0]["message"]
    assert res[1]["verdict"] == "rejected" and "deeper than 32" in res[1]["message"]
