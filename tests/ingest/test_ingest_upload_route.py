"""The upload route answered straight from WSGI (ingest/server/upload.py) and the Flask view behind
it give the same answers: the view is what a Flask test client or a mounted app reaches."""

from __future__ import annotations

import gzip

import orjson
import pytest
from support import JSON, NDJSON, SLOW6, dumps, fresh
from werkzeug.test import Client

from ingest.server.app import close_app, create_app


@pytest.fixture
def app(tmp_path):
    a = create_app(
        {"BALANCE_DB": str(tmp_path / "u.duckdb"), "BALANCE_JOBS_INTERVAL": 0, "BALANCE_WORKERS": 0}
    )
    yield a
    close_app(a)


def answers(wsgi, requests):
    client = Client(wsgi)
    out = []
    for body, ctype, headers in requests:
        r = client.post("/v1/games", data=body, content_type=ctype, headers=headers)
        payload = orjson.loads(r.data)
        for result in payload.get("results", []):
            result.pop("game_id", None)  # each side uploads its own fresh ids
        out.append((r.status_code, r.headers.get("Content-Type"), r.headers.get("Retry-After"),
                    payload))  # fmt: skip
    return out


def requests():
    good = dumps(fresh(SLOW6[0]))
    bad_field = dumps({**fresh(SLOW6[1]), "player_name": "x"})
    batch = b"\n".join([dumps(fresh(SLOW6[2])), b"{nope", bad_field]) + b"\n"
    return [
        (good, JSON, {}),
        (bad_field, JSON, {}),
        (b"{nope", JSON, {}),
        (b"", JSON, {}),
        (batch, NDJSON, {}),
        (b"{nope\nnot json\n", NDJSON, {}),
        (good, "text/plain", {}),
        (good, JSON, {"Content-Encoding": "br"}),
        (good, JSON, {"Content-Encoding": "gzip"}),  # not gzip at all: 400 naming it
        (gzip.compress(good), JSON, {"Content-Encoding": "gzip"}),
        (b"x" * (70 * 1024), JSON, {}),
    ]


def test_the_wsgi_route_and_the_flask_view_answer_alike(app):
    fast = answers(app.wsgi_app, requests())
    assert [a[0] for a in fast] == [200, 422, 400, 400, 200, 400, 415, 415, 400, 200, 413]
    assert {a[1] for a in fast} == {"application/json"}
    # Flask's own wsgi_app, without the GuardedUploadRoute and headers (ingest/) in front
    flask_view = app.wsgi_app.app.app
    assert answers(flask_view, requests()) == fast


def test_other_routes_and_methods_still_reach_flask(app):
    client = Client(app.wsgi_app)
    assert client.get("/v1/games").status_code == 405
    assert client.get("/healthz").status_code == 200
    assert client.get("/nowhere").status_code == 404
