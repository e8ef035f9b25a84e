"""The cap on dashboard and console requests served at once (dashboard/slots.py): past it a
dashboard request is a 503 with Retry-After at once, while /healthz, /metrics and uploads are
still answered, and a slot is free again once its request ends (even one that raised)."""

from __future__ import annotations

import threading

import pytest
from support import AppClient, fresh_slow6


@pytest.fixture
def app(tmp_path):
    client = AppClient(tmp_path / "app", {"BALANCE_DASHBOARD_SLOTS": 2}).start()
    yield client
    client.stop()


def _hold(app, endpoint: str):
    """Make `endpoint` wait until the returned event is set (a page stuck on its queries)."""
    release, entered = threading.Event(), threading.Semaphore(0)
    view = app.app.view_functions[endpoint]

    def stuck(*args, **kwargs):
        entered.release()
        assert release.wait(30)
        return view(*args, **kwargs)

    app.app.view_functions[endpoint] = stuck
    return release, entered


def test_dashboard_requests_past_the_cap_are_refused_at_once_and_the_rest_answers(app):
    release, entered = _hold(app, "dashboard.index")
    answers: list[int] = []

    def visit():
        answers.append(app.app.test_client().get("/dashboard/").status_code)

    stuck = [threading.Thread(target=visit) for _ in range(2)]
    for t in stuck:
        t.start()
    for _ in stuck:
        assert entered.acquire(timeout=10)  # both slots held
    refused = app.app.test_client().get("/dashboard/", headers={"Accept": "text/html"})
    assert refused.status_code == 503 and refused.headers["Retry-After"] == "5"
    assert "busy" in refused.get_data(as_text=True)
    api = app.app.test_client().post("/sql/api", json={"sql": "SELECT 1"})
    assert api.status_code == 503 and api.get_json()["error"] == "busy"
    # what the cap leaves threads for
    assert app.get("/healthz").status == 200
    assert app.get("/metrics").status == 200
    assert app.upload([fresh_slow6(0)]).json()["results"][0]["verdict"] == "accepted"
    assert app.app.test_client().get("/dashboard/static/style.css").status_code == 200
    release.set()
    for t in stuck:
        t.join(30)
    assert answers == [200, 200]
    assert app.app.test_client().post("/sql/api", json={"sql": "SELECT 1"}).status_code == 200


def test_a_request_that_fails_gives_its_slot_back(app):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug in a page")

    app.app.view_functions["dashboard.index"] = broken
    for _ in range(3):  # more than the slots: each failure gave its slot back
        assert app.app.test_client().get("/dashboard/").status_code == 500
    assert app.app.test_client().post("/sql/api", json={"sql": "SELECT 1"}).status_code == 200
