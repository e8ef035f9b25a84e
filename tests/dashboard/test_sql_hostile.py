"""The SQL console against an attacker: what crashed, starved or exposed the server before.

On a real `balance serve` (loopback, no token):
- `enable_logging()` / `enable_profiling()` answered 200 and the next query killed the server
  (an uncaught duckdb::PermissionException): now refused, over POST /sql/api and GET
  /sql/download.csv, and the server keeps serving uploads and /healthz;
- SQL runs in worker processes: a worker killed in the middle of a query answers that query
  "too_big / stopped", is replaced, and the next query works;
- DNS rebinding (`Host: evil.example`) and cross-site requests (`Origin: http://evil.example`,
  `Sec-Fetch-Site: cross-site`) are refused;
- queries that ran for minutes and took 5-18 GB (list_sort(range(2e8)), repeat('x', 2e9), a
  deflate bomb through raw_json, 1,000 rows of 1 MB) answer within the timeout + 1.5 s, and
  the server's own processes do not grow (the worker stays under its OS limit);
- a result over the byte limit is refused, not sent after many seconds;
- duckdb_databases(), duckdb_settings() and current_setting() (paths of the store and the
  snapshot) are refused, and nothing allowed shows a path.
In process: the allow-list node by node, the bounded raw_json, the auth cookie, Host/Origin rules.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import zlib
from pathlib import Path
from urllib.parse import quote

import pytest
from support import SLOW6, Server, comm, descendants, fresh_slow6, wait_for

from dashboard.console import sqlsafe

JSON = "application/json"
TIMEOUT = 2.0  # the hostile server's BALANCE_SQL_TIMEOUT
MB = 1024 * 1024


# -- a real server --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    s = Server(
        tmp_path_factory.mktemp("hostile"), env={"BALANCE_SQL_TIMEOUT": str(TIMEOUT)}
    ).start()
    yield s
    s.stop()


def api(server, sql: str, headers: dict | None = None, **extra):
    return server.post(
        "/sql/api", json.dumps({"sql": sql, **extra}), JSON, headers=headers, timeout=120
    )


def _status(pid: int, field: str) -> int:
    """A Vm* figure of a process in MB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def _tree(server) -> list[int]:
    for _ in range(20):  # a process may end while /proc is walked (a worker being replaced)
        try:
            return [server.proc.pid, *descendants(server.proc.pid)]
        except (FileNotFoundError, ProcessLookupError):
            time.sleep(0.01)
    return [server.proc.pid]


def sql_workers(server) -> list[int]:
    return [p for p in _tree(server) if comm(p) == "balance-sql"]


def server_processes(server) -> list[int]:
    """The server and its processes, SQL workers left out (they have their own limit)."""
    return [p for p in _tree(server) if comm(p) not in ("balance-sql", "")]


def wait_workers(server, n: int = 2, timeout: float = 60.0) -> list[int]:
    """The SQL workers once there are `n` (those there are, if never)."""
    try:
        return wait_for(lambda: len(pids := sql_workers(server)) >= n and pids, timeout, "workers")
    except TimeoutError:
        return sql_workers(server)


def server_alive(server) -> None:
    assert server.proc.poll() is None, server.output()[-3000:]
    assert server.get("/healthz").status == 200
    r = server.upload([fresh_slow6()])
    assert r.status == 200 and r.json()["results"][0]["verdict"] == "accepted"

    def answered():
        r = api(server, "SELECT 42 AS x")
        # 408: queued behind a bomb's worker still being replaced, past the 2 s limit on a
        # loaded machine; liveness is the point, so ask again (any other error fails)
        return None if r.status == 408 else r

    ok = wait_for(answered, 60, "the console answering SELECT 42", every=0.5)
    assert ok.status == 200 and ok.json()["rows"] == [[42]], ok.body[:300]


@pytest.mark.parametrize(
    "sql",
    [
        "FROM enable_logging(storage='file', storage_path='x')",
        "SELECT * FROM enable_profiling()",
        "FROM enable_logging()",
    ],
)
@pytest.mark.slow
def test_logging_and_profiling_are_refused_and_the_server_keeps_serving(hostile, sql):
    r = api(hostile, sql)
    assert r.status == 400 and r.json()["error"] == "refused", r.body[:300]
    name = sql.split("(")[0].split()[-1]
    assert f"{name}()" in r.json()["message"]
    server_alive(hostile)
    # the same through a download link (what an <img> on another site would request)
    d = hostile.get("/sql/download.csv?q=" + quote(sql))
    assert d.status == 400 and d.json()["error"] == "refused"
    d = hostile.get("/sql/download.csv?q=" + quote(sql))
    assert d.status == 400
    server_alive(hostile)


@pytest.mark.slow
def test_a_killed_sql_worker_answers_its_query_and_is_replaced(hostile):
    assert api(hostile, "SELECT 1").status == 200
    before = wait_workers(hostile, 2)
    assert len(before) == 2, "the SQL console runs in two worker processes"
    answer = {}

    def slow():
        answer["r"] = api(hostile, "SELECT sleep_ms(1500) AS slept")

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.6)
    for pid in before:  # whichever runs the query dies, the idle one too
        os.kill(pid, signal.SIGKILL)
    t.join(60)
    r = answer["r"]
    assert r.status == 413, r.body[:300]
    assert r.json()["error"] == "too_big" and "stopped" in r.json()["message"]
    server_alive(hostile)  # the next query works (on a new worker)
    after = wait_workers(hostile, 2)
    assert len(after) == 2 and not set(after) & set(before)


@pytest.mark.slow
def test_dns_rebinding_and_cross_site_requests_are_refused(hostile):
    own = f"127.0.0.1:{hostile.port}"
    for path in ("/sql", "/sql/schema", "/dashboard/", "/sql/download.csv?q=SELECT%201"):
        r = hostile.get(path, headers={"Host": f"evil.example:{hostile.port}"})
        assert r.status == 400, (path, r.status)
    assert hostile.get("/healthz", headers={"Host": "evil.example"}).status == 200  # not ours
    r = api(hostile, "SELECT 1", headers={"Host": "evil.example"})
    assert r.status == 400 and r.json()["error"] == "bad_host"
    assert api(hostile, "SELECT 1", headers={"Host": f"localhost:{hostile.port}"}).status == 200
    # a cross-site form or fetch: the browser says where it comes from
    for origin in ("http://evil.example", "null", f"http://localhost:{hostile.port + 1}"):
        r = api(hostile, "SELECT 1", headers={"Origin": origin})
        assert r.status == 403 and r.json()["error"] == "cross_site", origin
    assert api(hostile, "SELECT 1", headers={"Origin": f"http://{own}"}).status == 200
    q = "/sql/download.csv?q=" + quote("SELECT 1 AS x")
    r = hostile.get(q, headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status == 403 and r.json()["error"] == "cross_site"
    assert hostile.get(q, headers={"Sec-Fetch-Site": "same-origin"}).status == 200
    r = hostile.get(q, headers={"Referer": "http://evil.example/page"})
    assert r.status == 403
    r = hostile.post("/sql/snapshot", b"", headers={"Origin": "http://evil.example"})
    assert r.status == 403
    page = hostile.get(
        "/sql?q=" + quote("SELECT 4242 AS x"), headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert page.status == 403 and b'id="sql-result"' not in page.body and b"Not run" in page.body


def _peaks(server, stop: threading.Event, out: dict) -> None:
    """Sample the RSS of the SQL workers while a query runs (the highest seen, in MB)."""
    while not stop.is_set():
        for pid in sql_workers(server):
            out["worker"] = max(out.get("worker", 0), _status(pid, "VmRSS"))
        time.sleep(0.02)


def _deflate_bomb() -> bytes:
    """40 KB that inflate (codec 3) to 41 MB of one token byte, i.e. 1.1 GB of JSON text."""
    from ingest.storage import codec

    comp = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, codec.dictionary(3))
    return comp.compress(b"\x01" * 41_000_000) + comp.flush()


BOMBS = {
    "list_sort": "SELECT len(list_sort(range(200000000)))",
    "list_sort_50m": "SELECT len(list_sort(range(50000000)))",  # fits; slow, not interruptible
    "repeat": "SELECT repeat('x', 2000000000)",
    "rows_of_1mb": "SELECT repeat('x', 1000000) AS x FROM range(1000)",
    "deflate_bomb": None,  # raw_json over 30 rows of a 40 KB literal (built below)
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BOMBS))
def test_memory_and_time_bombs_stop_in_time_and_the_server_stays_small(hostile, name, record):
    sql = BOMBS[name]
    if sql is None:
        sql = (
            f"SELECT length(raw_json(from_hex('{_deflate_bomb().hex()}'), 3::UTINYINT)) "
            "FROM range(30)"
        )
    assert api(hostile, "SELECT 1").status == 200
    wait_workers(hostile, 2)
    pids = server_processes(hostile)
    before = {p: _status(p, "VmHWM") for p in pids}
    stop, peaks = threading.Event(), {}
    sampler = threading.Thread(target=_peaks, args=(hostile, stop, peaks))
    sampler.start()
    start = time.monotonic()
    try:
        r = api(hostile, sql)
    finally:
        wall = time.monotonic() - start
        stop.set()
        sampler.join()
    body = r.json()
    after = {p: _status(p, "VmHWM") for p in pids}
    growth = max(after[p] - before[p] for p in pids if after[p])
    record(name, wall_s=round(wall, 2), status=r.status, error=body.get("error"),
           worker_peak_rss_mb=peaks.get("worker"), server_hwm_growth_mb=growth,
           server_rss_mb=max(after.values()))  # fmt: skip
    if name == "deflate_bomb":
        assert r.status == 400 and "inflates beyond" in body["message"], body
    else:
        assert r.status in (408, 413) and body["error"] in ("timeout", "too_big"), body
    assert growth < 150, (after, before)  # the server's processes did not take the result
    assert peaks.get("worker", 0) < 1400  # baseline (~150 MB) + the 1 GB limit
    server_alive(hostile)


@pytest.mark.slow
def test_a_result_over_the_byte_limit_is_refused_not_sent(hostile):
    sql = "SELECT repeat('x', 100000) AS x FROM range(1000)"  # 100 MB: more than 32 MB
    r = api(hostile, sql)
    assert r.status == 413 and r.json()["error"] == "too_big", r.body[:300]
    assert "too big for the console" in r.json()["message"] and "32 MB" in r.json()["message"]
    d = hostile.get("/sql/download.csv?q=" + quote(sql))
    assert d.status == 413 and len(d.body) < 10_000
    under = hostile.get(
        "/sql/download.csv?q=" + quote("SELECT repeat('x', 1000) FROM range(10000)")
    )
    assert under.status == 200 and len(under.body) > 10_000_000


LEAKS = [
    "SELECT * FROM duckdb_databases()",
    "SELECT * FROM duckdb_settings()",
    "SELECT current_setting('temp_directory')",
    "SELECT current_setting('secret_directory')",
    "SELECT * FROM duckdb_extensions()",
    "SELECT * FROM duckdb_temporary_files()",
    "FROM pragma_database_list",
    "PRAGMA database_list",
    "SELECT * FROM duckdb_logs()",
    "SELECT path FROM duckdb_databases",
]


@pytest.mark.slow
@pytest.mark.parametrize("sql", LEAKS)
def test_paths_of_the_store_and_the_snapshot_are_refused(hostile, sql):
    r = api(hostile, sql)
    assert r.status == 400 and r.json()["error"] == "refused", r.body[:300]
    assert str(hostile.workdir) not in r.body.decode()


@pytest.mark.slow
def test_nothing_the_console_allows_shows_a_path(hostile):
    secret = str(hostile.workdir)
    for sql in (
        "SELECT * FROM duckdb_tables()",
        "SELECT * FROM duckdb_columns()",
        "SELECT * FROM duckdb_views()",
        "SELECT * FROM duckdb_schemas()",
        "SELECT * FROM duckdb_functions()",
        "SHOW ALL TABLES",
        "SELECT current_database(), current_schema()",
        "SELECT * FROM nope",
        "SELECT nope FROM games",
    ):
        r = api(hostile, sql)
        text = r.body.decode()
        assert secret not in text and "snapshot-" not in text, (sql, text[:300])
    got = api(hostile, "SELECT current_database() AS db").json()["rows"]
    assert got == [["store"]]


# -- in process: the allow-list -------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from dashboard.console.sqlfuncs import register
    from ingest.storage import Store

    path = tmp_path_factory.mktemp("allow") / "store.duckdb"
    Store(path).close()
    e = sqlsafe.Engine(str(path), setup=register)
    yield e
    e.close()


ALLOWED = [
    "SELECT count(*) FROM games",
    "FROM games LIMIT 1",
    "TABLE games",
    "VALUES (1, 'a'), (2, 'b')",
    "SELECT * FROM (VALUES (1), (2)) t(x)",
    "WITH a AS (SELECT 1 AS x) SELECT * FROM a",
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 3) FROM r",
    "SELECT 1 UNION SELECT 2 EXCEPT SELECT 3",
    "SELECT * FROM range(3) r, LATERAL (SELECT r.range + 1)",
    "SELECT unnest([1, 2]), list_transform([1], x -> x + 1), [y * 2 for y in [1, 2]]",
    "SELECT row_number() OVER (ORDER BY range) FROM range(3) QUALIFY row_number() OVER () < 3",
    "SELECT * FROM generate_series(1, 3), unnest([4, 5])",
    "SELECT * FROM json_each('{\"a\": 1}')",
    "SELECT board, count(*) FROM games GROUP BY ALL ORDER BY ALL",
    "SELECT * FROM store.main.games LIMIT 1",
    "DESCRIBE games",
    "DESCRIBE SELECT 1 AS x",
    "SUMMARIZE SELECT * FROM range(10)",
    "SHOW TABLES",
    "SELECT * FROM duckdb_tables() WHERE database_name = current_database()",
    "SELECT raw_json(record, codec) FROM raw_records LIMIT 1",
    "SELECT * FROM range(4) PIVOT (count(*) FOR range IN (1, 2))",
    "SELECT format_type(1, 1), current_database(), version()",
]


@pytest.mark.parametrize("sql", ALLOWED)
def test_plain_queries_pass_the_allow_list(engine, sql):
    engine.run(sql, limit=10)


def test_the_consoles_own_queries_pass(engine):
    from dashboard.console.sql_routes import EXAMPLES
    from dashboard.schema_docs import SCHEMA_SQL

    for _, sql in EXAMPLES:
        try:
            engine.run(sql, limit=10)
        except sqlsafe.BadSQL as exc:  # a table this empty store lacks (agg_*): bound, not refused
            assert "does not exist" in exc.message
    assert engine.run(SCHEMA_SQL, limit=100_000).row_count > 10


REFUSED = {
    "FROM enable_logging()": "enable_logging()",
    "SELECT * FROM disable_logging()": "disable_logging()",
    "SELECT * FROM duckdb_logs()": "duckdb_logs()",
    "FROM duckdb_logs_parsed('x')": "duckdb_logs_parsed()",
    "SELECT * FROM duckdb_secrets()": "duckdb_secrets()",
    "SELECT * FROM duckdb_memory()": "duckdb_memory()",
    "SELECT * FROM checkpoint()": "checkpoint()",
    "SELECT * FROM force_checkpoint()": "force_checkpoint()",
    "SELECT * FROM query('SELECT 1')": "query()",
    "SELECT * FROM query_table('games')": "query_table()",
    "SELECT * FROM json_execute_serialized_sql('x')": "json_execute_serialized_sql()",
    "SELECT * FROM read_text('/etc/hostname')": "read_text()",
    "SELECT * FROM read_csv_auto('x.csv')": "read_csv_auto()",
    "SELECT * FROM glob('*')": "glob()",
    "SELECT * FROM pragma_database_size()": "pragma_database_size()",
    "SELECT * FROM pragma_table_info('games')": "pragma_table_info()",
    "SELECT getvariable('x')": "getvariable()",
    "SELECT json_serialize_plan('SELECT 1')": "json_serialize_plan()",
    "SELECT write_log('x')": "write_log()",
    "SELECT get_block_size('store')": "get_block_size()",  # a macro over pragma_database_size
    "SELECT (SELECT count(*) FROM enable_logging())": "enable_logging()",
    "WITH a AS (FROM duckdb_settings()) FROM a": "duckdb_settings()",
    "SELECT 1 WHERE EXISTS (SELECT current_setting('threads'))": "current_setting()",
    "SUMMARIZE FROM duckdb_databases()": "duckdb_databases()",
    "DESCRIBE SELECT current_setting('x')": "current_setting()",
    "SELECT * FROM range(3), LATERAL (SELECT current_setting('threads'))": "current_setting()",
    "SELECT list_transform([1], x -> current_setting('threads'))": "current_setting()",
    "SELECT * FROM system.main.duckdb_settings()": "duckdb_settings()",
    "FROM duckdb_settings": "duckdb_settings",
    "SELECT * FROM information_schema.tables": "information_schema.tables",
    "SELECT * FROM memory.main.x": "memory.main.x",
    "SELECT * FROM '/etc/passwd'": "/etc/passwd",
    "SHOW DATABASES": "SHOW TABLES",
    "SELECT 1 FROM (PIVOT games ON board)": "IN list",
    "PIVOT games ON board": "IN list",
    "EXPLAIN SELECT 1": "EXPLAIN",
    "CALL enable_logging()": "CALL",
}


@pytest.mark.parametrize("sql", list(REFUSED))
def test_everything_else_is_refused_by_name_before_running(engine, sql):
    with pytest.raises(sqlsafe.Refused) as err:
        engine.run(sql)
    assert REFUSED[sql] in err.value.message, err.value.message
    assert engine.run("SELECT 42 AS x").table.column(0)[0].as_py() == 42


def test_an_oversized_text_is_refused(engine):
    with pytest.raises(sqlsafe.Refused) as err:
        engine.run("SELECT '" + "x" * sqlsafe.MAX_SQL_CHARS + "'")
    assert "at most" in err.value.message


def test_raw_json_decodes_stored_records_and_refuses_bombs():
    from dashboard.console.sqlfuncs import RecordTooLarge, decode_bounded
    from ingest.storage import codec

    text = codec.canonical(SLOW6[0])
    cid, stored = codec.encode(text, "slow6")
    assert decode_bounded(cid, stored) == codec.decode(cid, stored) == text
    with pytest.raises(RecordTooLarge):
        decode_bounded(3, _deflate_bomb())


# -- in process: a pool of one worker follows the snapshots ------------------------------------


@pytest.mark.slow
def test_a_worker_reopens_a_refreshed_snapshot_and_old_files_go(tmp_path):
    from test_sql_engine import GAME

    from dashboard.snapshot import Snapshots
    from ingest.storage import Store

    store = Store(tmp_path / "store.duckdb")
    snaps = Snapshots(store, tmp_path / "snaps", workers=1, kill_margin=0.3)
    try:
        assert snaps.run("SELECT count(*) FROM raw_records").table.column(0)[0].as_py() == 0
        first = list((tmp_path / "snaps").glob("snapshot-*.duckdb"))
        pid = snaps.pool.pids()[0]
        game = GAME.format(gid="00000000-0000-4000-8000-000000000001", winner=0)
        store.submit(lambda con: con.execute(game)).result()
        snaps.refresh()
        assert snaps.run("SELECT count(*) FROM games").table.column(0)[0].as_py() == 1
        assert snaps.pool.pids() == [pid]  # reopened, not restarted
        assert not any(p.exists() for p in first)
        with pytest.raises(sqlsafe.TimedOut):  # cut off: the worker was killed mid-sleep
            snaps.run("SELECT sleep_ms(60000)", timeout=0.5)
        assert snaps.run("SELECT 7").table.column(0)[0].as_py() == 7
    finally:
        snaps.close()
        store.close()


# -- in process: the auth cookie and the Host/Origin rules ----------------------------------------

TOKEN = "s3cret-hostile-token"


@pytest.fixture
def app(tmp_path):
    from ingest.server.app import close_app, create_app

    a = create_app(
        {
            "BALANCE_DB": str(tmp_path / "a.duckdb"),
            "BALANCE_JOBS_INTERVAL": 0,
            "BALANCE_WORKERS": 0,
            "SQL_WORKERS": 0,
        }
    )
    yield a
    from dashboard import EXT_SNAPSHOTS

    snaps = a.extensions.get(EXT_SNAPSHOTS)
    if snaps is not None:
        snaps.close()
    close_app(a)


def test_the_auth_cookie_holds_no_token(app):
    app.config.update({"BALANCE_HOST": "0.0.0.0", "BALANCE_TOKEN": TOKEN})
    client = app.test_client()
    r = client.get(f"/sql?token={TOKEN}")
    assert r.status_code == 303
    cookie = r.headers["Set-Cookie"]
    assert TOKEN not in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    value = cookie.split(";")[0].split("=", 1)[1]
    assert len(value) == 64  # an HMAC-SHA256, hex
    client.set_cookie("balance_token", value)
    assert client.get("/sql/schema").status_code == 200
    raw = app.test_client()
    raw.set_cookie("balance_token", TOKEN)  # the old cookie, the raw token: no longer accepted
    assert raw.get("/sql/schema").status_code == 401
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert app.test_client().get("/sql/schema", headers=bearer).status_code == 200


def test_host_rules(app, monkeypatch):
    from dashboard.guard import host_allowed

    for host in ("localhost", "localhost:8000", "127.0.0.1:8000", "[::1]:8000", "127.0.0.2"):
        assert host_allowed(app, host), host
    for host in ("evil.example", "evil.example:8000", "10.0.0.5", "", "localhost.evil.example"):
        assert not host_allowed(app, host), host
    monkeypatch.setenv("BALANCE_ALLOWED_HOSTS", "balance.lan, dash.example.org:443")
    assert host_allowed(app, "balance.lan:8000") and host_allowed(app, "dash.example.org:443")
    assert not host_allowed(app, "dash.example.org:8443")
    app.config["BALANCE_HOST"] = "0.0.0.0"  # listening everywhere: any address, no other name
    assert host_allowed(app, "192.168.1.20:8000") and host_allowed(app, "[fe80::1]:8000")
    assert not host_allowed(app, "evil.example")


def test_cross_site_rules_in_process(app):
    client = app.test_client()
    body = {"sql": "SELECT 1 AS x"}
    ok = client.post("/sql/api", json=body)
    assert ok.status_code == 200 and ok.json["rows"] == [[1]]
    same = client.post("/sql/api", json=body, headers={"Origin": "http://localhost"})
    assert same.status_code == 200
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://localhost:9999"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Referer": "http://evil.example/x"},
    ):
        r = client.post("/sql/api", json=body, headers=headers)
        assert r.status_code == 403 and r.json["error"] == "cross_site", headers
    assert (
        client.get("/sql/download.csv?q=SELECT%201", headers={"Sec-Fetch-Site": "none"}).status_code
        == 200
    )
    r = client.get("/sql/download.csv?q=SELECT%201", headers={"Host": "evil.example"})
    assert r.status_code == 400


# -- figures ------------------------------------------------------------------------------------

_FIGURES: dict = {}


@pytest.fixture
def record():
    def put(name, **figures):
        _FIGURES[name] = figures
        out = os.environ.get("BALANCE_HOSTILE_FIGURES")
        if out:
            with open(out, "a") as f:
                f.write(json.dumps({"query": name, **figures}) + "\n")

    return put
