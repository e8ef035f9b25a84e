"""Which store or server a command acts on (ingest/storage/where.py: one precedence for every
command) and the one client of the server's API (ingest/storage/remote.py: bearer token, HTTP
errors to exit codes), against a real HTTP server."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from support import REPO, balance, free_port

from ingest.storage.remote import Api, Reset, Unreachable
from ingest.storage.where import (
    COMMANDS,
    DEFAULT_DB,
    DEFAULT_URL,
    WhereError,
    precedence_table,
    resolve,
)

DOCS = REPO / "docs" / "settings.md"
LAKE, OTHER = "postgresql://u@h/lake", "postgresql://u@h/other"
BOTH = {"BALANCE_LAKE": LAKE, "BALANCE_DB": "env.duckdb", "BALANCE_URL": "http://env:1"}

# (command, arguments, environment) -> (kind, location, what decided)
PRECEDENCE = [
    ("jobs run", {}, {}, ("file", DEFAULT_DB, "default")),
    ("jobs run", {}, {"BALANCE_DB": "env.duckdb"}, ("file", "env.duckdb", "$BALANCE_DB")),
    ("jobs run", {}, BOTH, ("lake", LAKE, "$BALANCE_LAKE")),  # the lake before the file
    ("jobs run", {"db": "a.duckdb"}, BOTH, ("file", "a.duckdb", "--db")),  # argument first
    ("jobs run", {"lake": OTHER}, BOTH, ("lake", OTHER, "--lake")),
    ("serve", {"db": "a.duckdb"}, BOTH, ("file", "a.duckdb", "--db")),
    ("serve", {}, BOTH, ("lake", LAKE, "$BALANCE_LAKE")),
    ("reverify", {"server": "http://s:1/"}, BOTH, ("server", "http://s:1/", "--server")),
    ("reverify", {}, BOTH, ("lake", LAKE, "$BALANCE_LAKE")),  # a server only when named
    ("sql", {}, {}, ("server", DEFAULT_URL, "default")),
    ("sql", {}, BOTH, ("server", "http://env:1", "$BALANCE_URL")),  # not the file or lake
    ("sql", {"db": "a.duckdb"}, BOTH, ("file", "a.duckdb", "--db")),
    ("sql", {"lake": OTHER}, BOTH, ("lake", OTHER, "--lake")),
    ("report", {}, BOTH, ("file", "env.duckdb", "$BALANCE_DB")),  # reads no lake
    ("export", {}, BOTH, ("lake", LAKE, "$BALANCE_LAKE")),
    ("export", {"server": "http://s:1"}, BOTH, ("server", "http://s:1", "--server")),
    ("rules", {}, {"BALANCE_DB": "env.duckdb"}, ("file", "env.duckdb", "$BALANCE_DB")),
    ("lab", {"db": "a.duckdb"}, BOTH, ("file", "a.duckdb", "--db")),
    ("lake", {}, BOTH, ("lake", LAKE, "$BALANCE_LAKE")),
    ("lake", {"lake": OTHER}, {}, ("lake", OTHER, "--lake")),
]


@pytest.mark.parametrize(("command", "given", "env", "expected"), PRECEDENCE)
def test_one_precedence_argument_then_environment_then_default(command, given, env, expected):
    where = resolve(command, env=env, **given)
    assert (where.kind, where.location, where.via) == expected


@pytest.mark.parametrize(
    ("command", "given", "env", "says"),
    [
        ("jobs run", {"db": "a", "lake": LAKE}, {}, "give one of --db or --lake, not 2"),
        ("sql", {"db": "a", "lake": LAKE}, {}, "give one of --db or --lake, not 2"),
        ("reverify", {"db": "a", "server": "http://s"}, {}, "give one of --db or --server"),
        ("export", {"db": "a", "data_path": "/d"}, {}, "--data-path goes with --lake"),
        ("lake", {}, {"BALANCE_DB": "env.duckdb"}, "give --lake ... (or set BALANCE_LAKE)"),
        ("report", {"lake": LAKE}, {}, "takes no --lake"),
    ],
)
def test_a_mistaken_choice_is_refused_naming_it(command, given, env, says):
    with pytest.raises(WhereError, match=re.escape(says)):
        resolve(command, env=env, **given)


def test_a_lake_keeps_its_data_path_and_makes_the_storage_target():
    where = resolve("export", lake=LAKE, data_path="/data")
    assert where.target().lake == LAKE and where.target().data_path == "/data"
    assert resolve("jobs run", db="a.duckdb", env={}).target().db == "a.duckdb"
    with pytest.raises(WhereError, match="a server, not a store"):
        resolve("sql", env={}).target()


@pytest.mark.parametrize(
    "argv",
    [
        ("jobs", "run", "--db", "a.duckdb", "--lake", LAKE),
        ("sql", "SELECT 1", "--db", "a.duckdb", "--lake", LAKE),
        ("report", "--db", "a.duckdb", "--server", "http://127.0.0.1:9"),
        ("export", "--out", "x", "--db", "a.duckdb", "--lake", LAKE),
        ("reverify", "--db", "a.duckdb", "--server", "http://127.0.0.1:9"),
        ("load-demo", "--db", "a.duckdb", "--lake", LAKE),
        ("rules", "list", "--db", "a.duckdb", "--lake", LAKE),
        ("serve", "--db", "a.duckdb", "--lake", LAKE),
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_every_command_refuses_two_stores_in_one_line_with_exit_2(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be created: the refusal comes first
    ran = balance(*argv)
    assert ran.returncode == 2, ran
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and "give one of" in lines[0], ran.stderr
    assert list(tmp_path.iterdir()) == []


def test_docs_hold_the_precedence_table():
    text = DOCS.read_text(encoding="utf-8")
    for row in precedence_table():
        assert "| " + " | ".join(row) + " |" in text, row
    assert set(COMMANDS) == {
        row[0].strip("`").removeprefix("balance ") for row in precedence_table()
    }


def test_balance_sql_names_the_same_default_server():
    from dashboard import commands

    assert commands.DEFAULT_URL == DEFAULT_URL


# -- the API client, against a real HTTP server ---------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    script: list = []  # (status, headers, body) per request, in order
    seen: list = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.append((self.command, self.path, self.headers.get("Authorization"), body))
        status, headers, payload = self.script.pop(0)
        if status == "reset":  # the connection closed mid-answer
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
            self.close_connection = True
            return
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def api_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _script(*answers) -> None:
    _Handler.script[:] = list(answers)
    _Handler.seen[:] = []


def test_the_client_sends_the_token_and_json_and_reads_the_answer(api_server):
    _script((200, {"Content-Type": "application/json"}, b'{"rows": [[1]]}'))
    got = Api(api_server + "/", token="s3cret").request("POST", "/sql/api", json_body={"sql": "x"})
    assert got.ok and got.json() == {"rows": [[1]]}
    method, path, auth, body = _Handler.seen[0]
    assert (method, path, auth, json.loads(body)) == (
        "POST",
        "/sql/api",
        "Bearer s3cret",
        {"sql": "x"},
    )


def test_the_client_sends_no_authorization_without_a_token(api_server, monkeypatch):
    monkeypatch.delenv("BALANCE_TOKEN", raising=False)
    _script((200, {}, b"{}"))
    Api(api_server).request("GET", "/v1/rulesets")
    assert _Handler.seen[0][2] is None
    monkeypatch.setenv("BALANCE_TOKEN", "from-env")
    _script((200, {}, b"{}"))
    Api(api_server).request("GET", "/v1/rulesets")
    assert _Handler.seen[0][2] == "Bearer from-env"


def test_http_errors_become_exit_codes(api_server):
    _script((409, {}, b'{"error": "conflict", "message": "RS1.3 reach differs"}'))
    got = Api(api_server).request("POST", "/v1/admin/rulesets", json_body={})
    assert got.refusal() == ("conflict: RS1.3 reach differs", 1)  # the API refused: 1
    _script((502, {}, b"<html>bad gateway</html>"))
    got = Api(api_server).request("GET", "/v1/rulesets")
    assert got.refusal() == ("the server answered HTTP 502", 2)  # not the API answering: 2


def test_a_busy_server_is_waited_out_and_a_refusal_is_not_retried(api_server, monkeypatch):
    from ingest.storage import remote

    waits: list[float] = []
    monkeypatch.setattr(remote.time, "sleep", waits.append)
    _script((503, {"Retry-After": "3"}, b"{}"), ("reset", {}, b""), (200, {}, b'{"ok": 1}'))
    got = Api(api_server).request("GET", "/sql/download.parquet?q=1", retry_busy=True)
    assert got.json() == {"ok": 1} and len(_Handler.seen) == 3
    assert 3.0 <= waits[0] <= 3.75 and len(waits) == 2  # its Retry-After, then a backoff
    _script((400, {}, b'{"error": "bad"}'))
    assert Api(api_server).request("GET", "/x", retry_busy=True).status == 400
    assert len(_Handler.seen) == 1
    _script(("reset", {}, b""))
    with pytest.raises(Reset) as reset:
        Api(api_server).request("GET", "/x")  # without retry_busy: once
    assert reset.value.code == 2


def test_an_unreachable_server_is_exit_2_in_one_line():
    with pytest.raises(Unreachable, match=r"cannot reach http://127\.0\.0\.1:\d+") as caught:
        Api(f"http://127.0.0.1:{free_port()}", timeout=5).request("GET", "/healthz")
    assert caught.value.code == 2
    ran = balance("reverify", "--server", f"http://127.0.0.1:{free_port()}")
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1 and "cannot reach" in ran.stderr
