"""Hostile bodies never produce a 5xx and never stop the app (hypothesis, in-process through
Flask's test client: the bodies are the app's to handle, their bytes arrive whole either way)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import JSON, NDJSON, SLIDE, SLOW6, AppClient, dumps


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = AppClient(tmp_path_factory.mktemp("fuzz")).start()
    yield s
    # still up after everything (the app runs in this process: a body that killed it would
    # have ended the test run too)
    assert s.get("/healthz").status == 200
    s.stop()


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def paths(record, prefix=()):
    """Every (path) into a record, for mutation."""
    yield prefix
    if isinstance(record, dict):
        for k, v in record.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(record, list):
        for i, v in enumerate(record):
            yield from paths(v, (*prefix, i))


@st.composite
def mutated_records(draw) -> bytes:
    """A valid example with one value replaced by anything (wrong type, huge, nested...)."""
    rec = json.loads(json.dumps(draw(st.sampled_from(SLOW6[:10] + SLIDE[:5]))))
    where = draw(st.sampled_from(list(paths(rec))[1:]))
    target = rec
    for step in where[:-1]:
        target = target[step]
    target[where[-1]] = draw(
        json_values
        | st.just(10**400)  # beyond any int64: orjson refuses, the stdlib does not
        | st.just("[" * 50 + "]" * 50)
        | st.integers(min_value=2**63, max_value=2**80)
    )
    text = json.dumps(rec).encode()
    return text.replace(b'"[[[[', b"[[[[").replace(b']]]]"', b"]]]]")  # unquote nesting


@st.composite
def hostile_bodies(draw) -> bytes:
    kind = draw(st.sampled_from(["bytes", "mutated", "truncated", "utf8", "deep", "huge", "mix"]))
    if kind == "bytes":
        return draw(st.binary(max_size=2000))
    if kind == "mutated":
        return draw(mutated_records())
    if kind == "truncated":
        body = b"\n".join(dumps(r) for r in SLOW6[:3])
        return body[: draw(st.integers(0, len(body)))]
    if kind == "utf8":
        body = bytearray(dumps(SLOW6[0]))
        at = draw(st.integers(0, len(body) - 1))
        body[at:at] = draw(
            st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xf4\x90"])
        )
        return bytes(body)
    if kind == "deep":
        n = draw(st.integers(30, 5000))
        opener = draw(st.sampled_from([b"[", b'{"a":']))
        return b'{"schema": ' + opener * n
    if kind == "huge":
        return b'{"game_id": "' + b"9" * draw(st.integers(60_000, 200_000)) + b'"}'
    lines = draw(st.lists(mutated_records() | st.binary(max_size=200), min_size=1, max_size=8))
    return b"\n".join(lines)


@pytest.mark.slow
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=hostile_bodies(), ctype=st.sampled_from([JSON, NDJSON]))
def test_hostile_bodies_get_a_json_answer_below_500(srv, body, ctype):
    r = srv.post("/v1/games", body, ctype)
    assert r.status < 500, (r.status, r.body[:300])
    payload = json.loads(r.body)
    if r.status in (200, 422):
        for res in payload["results"]:
            assert res["verdict"] in {
                "accepted",
                "duplicate",
                "conflict",
                "quarantined",
                "rejected",
            }
            if res["verdict"] == "rejected":
                assert res["field"] and res["message"]
