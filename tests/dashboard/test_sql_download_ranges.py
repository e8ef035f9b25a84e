"""Download URLs of the SQL console read by a notebook: a finished result answers byte ranges.

Against a real `balance serve` on a copy of the session's demo store: `Range` gets 206 with
`Content-Range` (416 past the end, `Accept-Ranges: bytes` throughout), every range comes from
the same finished file, and `polars.read_parquet(url)` / `polars.read_csv(url)` read the URL.
"""

from __future__ import annotations

from urllib.parse import quote

import polars as pl
import pytest
from support import Server, demo_copy, demo_env

pytestmark = pytest.mark.slow

SQL = "SELECT game_id::VARCHAR AS game_id, board, variant, turns FROM games ORDER BY game_id"


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_db):
    work = tmp_path_factory.mktemp("ranges")
    s = Server(work, env=demo_env(), db=demo_copy(demo_db, work)).start()
    yield s
    s.stop()


def test_a_finished_download_answers_byte_ranges(server):
    path = "/sql/download.parquet?q=" + quote(SQL)
    whole = server.get(path)
    assert whole.status == 200 and whole.headers["accept-ranges"] == "bytes"
    size = len(whole.body)
    assert size > 100 and whole.body[:4] == whole.body[-4:] == b"PAR1"
    first = server.get(path, headers={"Range": "bytes=0-99"})
    assert first.status == 206 and first.body == whole.body[:100]
    assert first.headers["content-range"] == f"bytes 0-99/{size}"
    footer = server.get(path, headers={"Range": "bytes=-8"})  # a Parquet reader's first ask
    assert footer.status == 206 and footer.body == whole.body[-8:]
    past = server.get(path, headers={"Range": f"bytes={size}-"})
    assert past.status == 416 and past.headers["content-range"] == f"bytes */{size}"
    head = server.request("HEAD", path)
    assert head.status == 200 and int(head.headers["content-length"]) == size


def test_polars_reads_download_urls(server):
    games = pl.read_parquet(server.url + "/sql/download.parquet?q=" + quote(SQL))
    n = server.post(
        "/sql/api", b'{"sql": "SELECT count(*) FROM games"}', "application/json"
    ).json()["rows"][0][0]
    assert games.height == n > 0 and games.columns == ["game_id", "board", "variant", "turns"]
    assert games["game_id"].is_sorted()
    table = pl.read_csv(server.url + "/sql/download.csv?q=" + quote(SQL))
    assert table.height == n and table["game_id"].to_list() == games["game_id"].to_list()
