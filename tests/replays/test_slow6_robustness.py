"""Whatever a well-formed record holds, the Slow6 verifier answers with a verdict: it never
raises (an exception would quarantine the game as an engine fault, not a rule fault)."""

from __future__ import annotations

import copy
import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import examples_dir

from replays import wellformed
from replays.verifier import verify_record
from replays.vocabulary import POWERS

EXAMPLES = examples_dir()
RECORDS = [
    json.loads(line)
    for name in ("slow6-valid.ndjson", "slow6-invalid.ndjson")
    for line in open(EXAMPLES / name)
]


def _square(rng: random.Random) -> str:
    return rng.choice("abcdefg") + rng.choice("1234567")


def mutate(record: dict, rng: random.Random) -> dict:
    rec = copy.deepcopy(record)
    turns = rec["turns"]
    if rec["challenge"] and rng.random() < 0.5:
        position = rec["challenge"]["position"]
        piece = rng.choice(position["pieces"])
        key = rng.choice(["rank", "square", "start", "wounded", "stunned", "side", "taken"])
        if key == "rank":
            piece["rank"] = rng.randrange(1, 9)
        elif key in ("square", "start"):
            piece[key] = _square(rng)
        elif key == "side":
            piece["side"] = 1 - piece["side"]
        elif key == "taken":
            position["turns_taken"] = [rng.randrange(25), rng.randrange(25)]
        else:
            piece[key] = not piece[key]
    for _ in range(rng.randrange(1, 4)):
        if not turns:
            break
        t = rng.choice(turns)
        what = rng.randrange(6)
        if what == 0:
            t["moves"] = [f"{_square(rng)}-{_square(rng)}" for _ in range(rng.randrange(3))]
        elif what == 1:
            power = rng.choice(POWERS)
            t["power"] = power
            if power == "swap":
                t["target"] = [_square(rng), _square(rng)]
            elif power == "double":
                t.pop("target", None)
            else:
                t["target"] = _square(rng)
        elif what == 2:
            t.pop("power", None)
            t.pop("target", None)
        elif what == 3:
            turns.insert(rng.randrange(len(turns) + 1), copy.deepcopy(t))
        elif what == 4:
            turns.remove(t)
        else:
            rec["first"] = 1 - rec["first"]
    return rec


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(RECORDS) - 1), seed=st.integers(0, 2**32))
def test_any_well_formed_mutation_gets_a_verdict(index, seed):
    rec = mutate(RECORDS[index], random.Random(seed))
    try:
        wellformed.check(rec)
    except wellformed.Malformed:
        return  # not the verifier's business
    verdict = verify_record(rec)
    assert verdict.verdict in ("valid", "invalid")
    if verdict.verdict == "invalid":
        assert verdict.rule and verdict.message
