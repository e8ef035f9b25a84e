"""An upload has one code path: the middleware in front of Flask (guard.GuardedUploadRoute,
then upload.handle). An upload reaching the Flask app itself (mounted without its middleware)
is handed to that same middleware, and other methods on the route get 405 naming POST."""

from __future__ import annotations

import orjson
import pytest
from support import JSON, SLOW6, dumps, fresh
from werkzeug.test import Client

from ingest.server import api
from ingest.server.app import close_app, create_app


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    db = tmp_path_factory.mktemp("entry") / "u.duckdb"
    a = create_app({"BALANCE_DB": str(db), "BALANCE_JOBS_INTERVAL": 0, "BALANCE_WORKERS": 0})
    yield a
    close_app(a)


def test_both_ways_in_are_answered_by_the_one_middleware(app, monkeypatch):
    route = app.extensions[api.EXT_ROUTE]
    answered = []
    original = route.upload

    def counted(environ):  # the middleware's own upload, counted
        answered.append(environ["PATH_INFO"])
        return original(environ)

    monkeypatch.setattr(route, "upload", counted)
    bare_flask = route.app  # Flask's own wsgi_app, behind the middleware
    for wsgi in (app.wsgi_app, bare_flask):
        r = Client(wsgi).post("/v1/games", data=dumps(fresh(SLOW6[0])), content_type=JSON)
        assert r.status_code == 200, r.data
        assert orjson.loads(r.data)["results"][0]["verdict"] == "accepted"
    assert answered == ["/v1/games", "/v1/games"]


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_other_methods_on_the_upload_route_are_405_allowing_post(app, method):
    for wsgi in (app.wsgi_app, app.extensions[api.EXT_ROUTE].app):
        r = Client(wsgi).open("/v1/games", method=method)
        assert r.status_code == 405, (method, r.data)
        assert "POST" in [m.strip() for m in r.headers["Allow"].split(",")]
        assert r.headers["Content-Type"] == "application/json"
