"""Access: open on loopback; a token when the server listens on any other address.

The exposed app is told it listens on 0.0.0.0 (BALANCE_HOST, as `balance serve --host 0.0.0.0`
sets it) and is reached in-process, or on a loopback port for `balance sql` (which runs in this
process too): the app knows from its host that it is exposed, so dashboard and SQL answer 401
without the token, while uploads stay anonymous.
"""

from __future__ import annotations

import json

import pytest
from support import AppClient, balance, fresh_slow6

TOKEN = "s3cret-dashboard-token"
# listen everywhere (the tests still reach it locally); the console's queries run in this
# process (no SQL worker processes to start): who may ask is the point here, not where it runs
EXPOSED = {"BALANCE_HOST": "0.0.0.0", "SQL_WORKERS": 0}


@pytest.fixture(scope="module")
def exposed(tmp_path_factory):
    env = {**EXPOSED, "BALANCE_TOKEN": TOKEN}
    s = AppClient(tmp_path_factory.mktemp("exposed"), env=env).start().serve_http()
    yield s
    s.stop()


PROTECTED = [
    "/dashboard/",
    "/dashboard/p/powers",
    "/dashboard/games",
    "/sql",
    "/sql/schema",
    "/sql/download.csv?q=SELECT%201",
]


@pytest.mark.parametrize("path", PROTECTED)
def test_without_token_dashboard_and_sql_answer_401(exposed, path):
    r = exposed.get(path)
    assert r.status == 401
    assert r.headers.get("www-authenticate", "").startswith("Bearer")
    wrong = exposed.get(path, headers={"Authorization": "Bearer nope"})
    assert wrong.status == 401


def test_sql_api_needs_the_token(exposed):
    body = json.dumps({"sql": "SELECT 1 AS x"})
    r = exposed.post("/sql/api", body, "application/json")
    assert r.status == 401 and r.json()["error"] == "unauthorized"
    ok = exposed.post(
        "/sql/api", body, "application/json", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert ok.status == 200 and ok.json()["rows"] == [[1]]


def test_uploads_stay_anonymous(exposed):
    r = exposed.upload([fresh_slow6()])
    assert r.status == 200 and r.json()["results"][0]["verdict"] == "accepted"


def test_bearer_token_opens_pages(exposed):
    r = exposed.get("/sql", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status == 200 and b"SQL console" in r.body


def test_browser_token_once_sets_a_cookie(exposed):
    r = exposed.get(f"/dashboard/games?status=verified&token={TOKEN}")
    assert r.status == 303
    assert r.headers["location"].endswith("/dashboard/games?status=verified")  # token dropped
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    value = cookie.split(";")[0]
    again = exposed.get("/dashboard/games?status=verified", headers={"Cookie": value})
    assert again.status == 200
    bad = exposed.get("/dashboard/games?token=wrong")
    assert bad.status == 401


def test_balance_sql_sends_the_token(exposed):
    env = {"BALANCE_URL": exposed.url}
    denied = balance("sql", "SELECT 42 AS answer", env=env)
    assert denied.returncode == 1 and "unauthorized" in denied.stderr
    env["BALANCE_TOKEN"] = TOKEN
    ok = balance("sql", "SELECT 42 AS answer", env=env)
    assert ok.returncode == 0 and "42" in ok.stdout


def test_exposed_without_a_token_configured_refuses_everyone(app_factory):
    s = app_factory(env=EXPOSED)
    r = s.get("/dashboard/")
    assert r.status == 401 and b"no BALANCE_TOKEN" in r.body
    assert s.upload([fresh_slow6()]).status == 200


def test_loopback_server_needs_no_token(app_factory):
    loopback = app_factory(env={"SQL_WORKERS": 0})
    assert loopback.get("/dashboard/").status == 200
    assert loopback.get("/sql").status == 200
