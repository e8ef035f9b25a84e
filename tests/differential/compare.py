"""Judge one record with the engine (the product's whole text-to-verdict path) and with the
referee, under the ruleset it names, and say how they differ."""

from __future__ import annotations

import traceback
from dataclasses import dataclass

import orjson

from replays.rulesets import Ruleset
from replays.verifier import check_text

try:  # as tests.differential: the benchmark, run from the checkout (python -m benchmarks.NAME)
    from ..referee.slow6 import judge as referee_judge
except ImportError:  # as differential: the tests, which have tests/ on their path
    from referee.slow6 import judge as referee_judge


@dataclass(frozen=True)
class Outcome:
    kind: str  # the mutation ("simulated" for a base game)
    engine: tuple  # (verdict, rule, turn); verdict "malformed" when the record is not well-formed
    referee: tuple | None  # None when not judged (malformed)
    message: str | None  # the engine's message
    record: dict

    @property
    def agrees(self) -> bool:
        return self.referee is None or self.engine == self.referee


def judge_both(kind: str, record: dict, rules: Ruleset | None = None) -> Outcome:
    """`rules`: the ruleset the record names (None: standard). The engine is given it through
    the verifier's lookup; the referee its parameters as a plain dict (RS3's names)."""
    lookup = None
    if rules is not None:
        key = (rules.game, rules.name)
        lookup = lambda game, name: rules if (game, name) == key else None  # noqa: E731
    _, v = check_text(orjson.dumps(record), lookup)
    engine = (v.verdict, v.rule, v.turn)
    if v.verdict == "malformed":
        return Outcome(kind, engine, None, v.message, record)
    try:
        ref = tuple(referee_judge(record, dict(rules.params) if rules is not None else None))
    except Exception:  # the referee must judge every well-formed record
        ref = ("crash", traceback.format_exc(limit=-3), None)
    return Outcome(kind, engine, ref, v.message, record)
