"""Every example of the spec through a real `balance serve`, as single records and as
batches. The ruleset examples (examples/rulesets/): without the five rulesets registered,
every record naming one is quarantined RS5.1 with no turn (RS7.2); once they are registered
(balance rules add --server), each gets its verdict with its rule and turn; and `balance
reverify` gives the records stored before registration the same verdicts. The examples of the
earlier issues keep their verdicts under `standard`, and the malformed ones are rejected
naming their field."""

from __future__ import annotations

import json
import uuid

import pytest
from support import JSON, Server, balance, example_lines, spec_dir

pytestmark = pytest.mark.slow

RULESETS = spec_dir() / "examples" / "rulesets"
TOKEN = "examples-op"
FIVE = ("freeze-1", "long-5", "reach-3", "few-powers", "slide-groups-3")


def records(name: str) -> list[dict]:
    return [json.loads(x) for x in example_lines(f"rulesets/{name}")]


VALID = records("rulesets-valid")
INVALID = records("rulesets-invalid")
EXPECTED = {e["game_id"]: e for e in records("rulesets-invalid.expected")}
MALFORMED = example_lines("rulesets/rulesets-malformed")
MALFORMED_EXPECTED = records("rulesets-malformed.expected")


def renamed(recs: list[dict], tag: str) -> tuple[list[dict], dict[str, str]]:
    """Copies with new game_ids (the originals are stored already); new id -> original."""
    out, origin = [], {}
    for rec in recs:
        copy = dict(rec)
        copy["game_id"] = str(uuid.uuid5(uuid.NAMESPACE_URL, tag + rec["game_id"]))
        origin[copy["game_id"]] = rec["game_id"]
        out.append(copy)
    return out, origin


def one_by_one(server: Server, recs: list[dict]) -> list[dict]:
    out = []
    for rec in recs:
        reply = server.post("/v1/games", json.dumps(rec), JSON)
        assert reply.status in (200, 422), reply.body
        out.extend(reply.json()["results"])
    return out


def as_batch(server: Server, recs: list[dict]) -> list[dict]:
    reply = server.upload(recs)
    assert reply.status == 200, reply.body
    return reply.json()["results"]


def check_registered(results: list[dict], recs: list[dict], origin: dict) -> None:
    """Each result is the verdict its example must get under the five rulesets."""
    for res, rec in zip(results, recs, strict=True):
        gid = origin.get(res["game_id"], res["game_id"])
        name = rec.get("ruleset", "standard")
        if gid in EXPECTED:
            want = EXPECTED[gid]
            rules = {want["rule"], *want["also_acceptable"]}
            assert res["verdict"] == "quarantined", (want, res)
            assert res["rule"] in rules and res["turn"] == want["turn"], (want, res)
            assert res["ruleset"] == name
        else:
            assert (res["verdict"], res["ruleset"]) == ("accepted", name), res


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(
        tmp_path_factory.mktemp("examples"),
        env={"BALANCE_TOKEN": TOKEN, "BALANCE_WORKERS": "1"},
    ).start()
    yield srv
    srv.stop()


def test_examples_without_then_with_the_rulesets(server):
    # unknown: every record naming one of the five is RS5.1, no turn, whatever else it breaks
    first = as_batch(server, VALID) + one_by_one(server, INVALID)
    for res, rec in zip(first, VALID + INVALID, strict=True):
        name = rec.get("ruleset", "standard")
        if name == "standard":
            continue
        assert (res["verdict"], res["rule"], res["turn"], res["ruleset"]) == (
            "quarantined",
            "RS5.1",
            None,
            name,
        ), res
    assert sum(r.get("ruleset", "standard") == "standard" for r in VALID) == 4
    # malformed lines are rejected before anything, naming the field, registered or not
    for got, want in zip(as_batch(server, MALFORMED), MALFORMED_EXPECTED, strict=True):
        assert (got["verdict"], got["field"]) == ("rejected", want["field"]), (got, want)

    files = [str(RULESETS / f"{n}.toml") for n in FIVE]
    ran = balance("rules", "add", *files, "--server", server.url, env={"BALANCE_TOKEN": TOKEN})
    assert ran.returncode == 0, ran.stderr

    valid_b, origin_vb = renamed(VALID, "batch")
    valid_s, origin_vs = renamed(VALID, "single")
    invalid_b, origin_ib = renamed(INVALID, "batch")
    invalid_s, origin_is = renamed(INVALID, "single")
    check_registered(as_batch(server, valid_b), VALID, origin_vb)
    check_registered(one_by_one(server, valid_s), VALID, origin_vs)
    check_registered(as_batch(server, invalid_b), INVALID, origin_ib)
    check_registered(one_by_one(server, invalid_s), INVALID, origin_is)
    unknown = [e for e in EXPECTED.values() if e["rule"] == "RS5.1"]
    assert len(unknown) == 3 and all(e["turn"] is None for e in unknown)

    # the records stored before registration: reverify judges them by their rulesets now
    ran = balance("reverify", "--server", server.url, env={"BALANCE_TOKEN": TOKEN})
    assert ran.returncode == 0, ran.stderr
    after = {}
    for line in ran.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[1] == "quarantined":
            after[parts[0]] = parts
    for rec in VALID:
        if rec.get("ruleset", "standard") != "standard":
            assert after[rec["game_id"]][3] == "verified", rec["game_id"]
    for rec in INVALID:
        want = EXPECTED[rec["game_id"]]
        if want["rule"] == "RS5.1" or rec.get("ruleset", "standard") == "standard":
            assert rec["game_id"] not in after  # unchanged
            continue
        parts = after[rec["game_id"]]
        assert parts[3] == "quarantined" and parts[4] in {want["rule"], *want["also_acceptable"]}
        turn = None if parts[6].rstrip(":") == "None" else int(parts[6].rstrip(":"))
        assert turn == want["turn"], (parts, want)


def _expected(name: str) -> dict:
    return {e["game_id"]: e for e in records_of(f"{name}.expected")}


def records_of(name: str) -> list[dict]:
    return [json.loads(x) for x in example_lines(name)]


@pytest.mark.parametrize("name", ["slow6-valid", "slide-valid", "slow6-invalid", "slide-invalid"])
def test_the_standard_examples_keep_their_verdicts(server, name):
    """The examples of the earlier issues, which name no ruleset: judged under `standard`
    with their rule and turn, whatever is registered, as a batch and one by one."""
    recs = records_of(name)
    expected = _expected(name) if name.endswith("invalid") else {}
    batch = as_batch(server, recs)
    copies, origin = renamed(recs, f"std-{name}")
    singles = one_by_one(server, copies)
    for results in (batch, singles):
        for res in results:
            gid = origin.get(res["game_id"], res["game_id"])
            assert res["ruleset"] == "standard", res
            if gid in expected:
                want = expected[gid]
                assert res["verdict"] == "quarantined", (want, res)
                assert res["rule"] in {want["rule"], *want["also_acceptable"]}, (want, res)
                assert res["turn"] == want["turn"], (want, res)
            else:
                assert res["verdict"] == "accepted", res


def test_the_malformed_examples_are_rejected_naming_the_field(server):
    lines = example_lines("malformed")
    expected = records_of("malformed.expected")
    batch = server.post("/v1/games", "\n".join(lines) + "\n", "application/x-ndjson")
    assert batch.status in (200, 400), batch.body
    for got, want in zip(batch.json()["results"], expected, strict=True):
        assert (got["verdict"], got["field"]) == ("rejected", want["field"]), (got, want)
    for text, want in zip(lines, expected, strict=True):
        reply = server.post("/v1/games", text, JSON)
        assert reply.status in (400, 422), reply.body
        (got,) = reply.json()["results"]
        assert (got["verdict"], got["field"], got["ruleset"]) == ("rejected", want["field"], None)
