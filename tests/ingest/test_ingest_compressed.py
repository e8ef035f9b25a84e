"""Compressed uploads (Content-Encoding gzip or deflate) against a real `balance serve`: the same
verdicts as plain ones, the same limits on the inflated body (a bomb is 413 and the server
answers on), a corrupt stream 400 naming its encoding, any other encoding 415 listing what is
accepted (docs/ingest.md, "Compressed bodies"). Before, every Content-Encoding was 415."""

from __future__ import annotations

import gzip
import zlib

import pytest
from support import JSON, NDJSON, Server, dumps, fresh_slow6, verdicts


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("compressed")).start()
    yield s
    s.stop()


def post(server, body: bytes, ctype: str, encoding: str, timeout: float = 60):
    return server.post("/v1/games", body, ctype, {"Content-Encoding": encoding}, timeout=timeout)


def raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


@pytest.mark.slow
@pytest.mark.parametrize(
    "encoding, compress",
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),  # zlib format, as RFC 9110 says
        ("deflate", raw_deflate),  # raw deflate, as some clients send it
    ],
    ids=["gzip", "x-gzip", "deflate-zlib", "deflate-raw"],
)
def test_a_compressed_record_and_batch_are_judged_as_plain_ones(server, encoding, compress):
    record = fresh_slow6(0)
    r = post(server, compress(dumps(record)), JSON, encoding)
    assert r.status == 200 and verdicts(r) == ["accepted"], r.body
    batch = [fresh_slow6(i) for i in range(1, 6)] + [record]
    body = b"\n".join(dumps(x) for x in batch) + b"\n"
    r = post(server, compress(body), NDJSON, encoding)
    assert r.status == 200 and verdicts(r) == ["accepted"] * 5 + ["duplicate"], r.body


@pytest.mark.slow
def test_concatenated_gzip_members_are_one_body(server):
    a, b = fresh_slow6(0), fresh_slow6(1)
    body = gzip.compress(dumps(a) + b"\n") + gzip.compress(dumps(b) + b"\n")
    r = post(server, body, NDJSON, "gzip")
    assert verdicts(r) == ["accepted", "accepted"]


def bomb(size: int) -> bytes:
    """`size` bytes of zeros, gzip-compressed (about a thousandth of it)."""
    c = zlib.compressobj(1, wbits=16 + zlib.MAX_WBITS)
    piece = bytes(1024 * 1024)
    out = [c.compress(piece) for _ in range(size // len(piece))]
    return b"".join(out) + c.flush()


@pytest.mark.slow
def test_a_gzip_bomb_is_413_after_the_limit_and_the_server_answers_on(server):
    body = bomb(1024**3)  # 1 GiB of zeros in about 1 MB: within the 8 MiB batch limit
    assert len(body) < 8 * 1024 * 1024
    r = post(server, body, NDJSON, "gzip")
    assert r.status == 413 and "8388608" in r.json()["message"], r.body
    # and as one record (64 KiB at most): its declared length is over the limit, so 413
    # before a byte is read; a small bomb is inflated up to the record's limit only
    r = post(server, bomb(64 * 1024 * 1024)[:60_000], JSON, "gzip")
    assert r.status in (400, 413), r.body
    assert server.get("/healthz").status == 200
    r = post(server, gzip.compress(dumps(fresh_slow6())), JSON, "gzip")
    assert verdicts(r) == ["accepted"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "body",
    [
        gzip.compress(b'{"schema": 1}')[:-6],  # cut short
        b"\x1f\x8b\x08\x00" + bytes(range(200)),  # a gzip header, then garbage
        b"this is not gzip at all",
    ],
    ids=["truncated", "garbage", "plain-text"],
)
def test_a_corrupt_gzip_body_is_400_naming_the_encoding(server, body):
    r = post(server, body, JSON, "gzip")
    assert r.status == 400, r.body
    assert r.json()["encoding"] == "gzip" and "gzip" in r.json()["message"]
    assert "nothing was stored" in r.json()["message"]


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ["br", "zstd", "gzip, gzip", "compress"])
def test_other_encodings_are_415_listing_the_accepted_ones(server, encoding):
    r = post(server, dumps(fresh_slow6()), JSON, encoding)
    assert r.status == 415, r.body
    assert r.json()["accepted"] == ["identity", "gzip", "deflate"]
    assert "gzip" in r.json()["message"] and "deflate" in r.json()["message"]


def test_the_openapi_document_says_gzip_and_deflate_are_accepted(tmp_path):
    from ingest.server.config import load
    from ingest.server.openapi import document

    post = document(load({}))["paths"]["/v1/games"]["post"]
    names = {p["name"]: p for p in post["parameters"]}
    assert names["Content-Encoding"]["schema"]["enum"] == ["identity", "gzip", "deflate"]
    assert "inflated" in post["description"]
