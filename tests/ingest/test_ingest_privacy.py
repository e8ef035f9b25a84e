"""Privacy: no header value a client sends ends up in the store or in the server's output."""

from __future__ import annotations

import duckdb
import pytest
from support import JSON, SLIDE, dumps, fresh, fresh_slow6, query

pytestmark = pytest.mark.slow  # a real server: headers on the wire, the process's output, kill -9

SENTINELS = {
    "User-Agent": "UA-SENTINEL-5d1f",
    "X-Forwarded-For": "198.51.100.73",
    "X-Real-IP": "203.0.113.219",
    "Cookie": "session=COOKIE-SENTINEL-77aa",
    "Referer": "https://referer-sentinel.example/page",
    "Authorization": "Bearer AUTH-SENTINEL-9c",
    "X-Device-Id": "DEVICE-SENTINEL-31",
}


def all_strings(db) -> str:
    """Every string value in every table (string columns and decoded raw records)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        parts = []
        cols = con.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE data_type IN ('VARCHAR', 'VARCHAR[]', 'UUID')"
        ).fetchall()
        for table, column in cols:
            parts += [
                str(v) for (v,) in con.execute(f'SELECT "{column}" FROM "{table}"').fetchall()
            ]
        return "\n".join(parts)
    finally:
        con.close()


def test_headers_never_reach_storage_or_logs(server_factory):
    server = server_factory(env={"BALANCE_RATE_LIMIT": "50", "BALANCE_RATE_BURST": "5"})
    headers = dict(SENTINELS)
    recs = [fresh_slow6(i) for i in range(3)] + [fresh(SLIDE[1])]
    assert server.upload(recs, headers=headers).status == 200
    server.post("/v1/games", dumps(fresh_slow6(4)), JSON, headers)
    server.post("/v1/games", b"{bad", JSON, headers)  # 400
    server.post("/v1/games", b"x", "text/plain", headers)  # 415
    server.request("GET", "/nowhere", headers=headers)  # 404
    server.request("DELETE", "/v1/games", headers=headers)  # 405
    for _ in range(8):  # some of these are 429
        server.post("/v1/games", dumps(fresh_slow6(5)), JSON, headers)
    server.get("/metrics", headers=headers)
    server.get("/healthz", headers=headers)
    server.post("/v1/admin/reverify", b"", headers=headers)  # 403: no token configured

    server.kill()  # the WAL and the journal hold the freshest writes: check them as they are
    near = sorted(server.db.parent.glob(server.db.name + "*"))  # file, .wal, .journal.N
    assert server.db in near
    blobs = [path.read_bytes() for path in near]
    server.start()
    server.stop()  # now checkpointed into the main file
    blobs.append(server.db.read_bytes())
    output = server.output()
    strings = all_strings(server.db)
    assert "/v1/games" in output  # the access log is on, and it printed lines
    for value in SENTINELS.values():
        token = value.split("=")[-1]
        for blob in blobs:
            assert token.encode() not in blob
        assert token not in output
        assert token not in strings
    assert query(server.db, "SELECT count(*) FROM raw_records")[0][0] >= 5
