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


def test_one_address_looping_heavy_pages_leaves_the_other_slots_to_others(tmp_path):
    """Six slots (`balance serve`'s default): one address's pages stuck on their queries
    hold at most half of them, the next is refused at once, and another address's page is
    answered while they are still stuck."""
    app = AppClient(tmp_path / "six", {"BALANCE_DASHBOARD_SLOTS": 6}).start()
    try:
        release, entered = _hold(app, "dashboard.index")
        answers: list[int] = []

        def visit(address: str):
            client = app.app.test_client()
            answers.append(
                client.get("/dashboard/", environ_base={"REMOTE_ADDR": address}).status_code
            )

        looping = [threading.Thread(target=visit, args=("198.51.100.7",)) for _ in range(3)]
        for t in looping:
            t.start()
        for _ in looping:
            assert entered.acquire(timeout=10)  # three slots held by one address
        refused = app.app.test_client().get(
            "/dashboard/", environ_base={"REMOTE_ADDR": "198.51.100.7"}
        )
        assert refused.status_code == 503 and "share" in refused.get_data(as_text=True)
        other = threading.Thread(target=visit, args=("203.0.113.9",))
        other.start()
        assert entered.acquire(timeout=10)  # another address gets in while they are stuck
        assert answers == []
        release.set()
        for t in [*looping, other]:
            t.join(30)
        assert answers == [200] * 4
        text = app.get("/metrics").body.decode()
        assert 'balance_dashboard_refused_total{reason="share"} 1' in text
    finally:
        app.stop()
