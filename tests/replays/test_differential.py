"""The engine against the spec-literal referee (tests/referee/): a fixed sample of the
differential run (benchmarks/differential.py runs a million records the same way).

Legal half: simulated games of every bot level and the random player, on both boards, in every
variant and mode, must be valid by both. Illegal half: single-fault mutations of them must get
the same verdict, rule and turn from both.
"""

from __future__ import annotations

import random

import pytest
from differential.compare import judge_both
from differential.corpus import corpus
from referee.slow6 import judge as referee_judge

from replays.slow6.simulate import simulate_game

VARIANTS = {"plain": (False, False), "powers": (True, False), "hidden": (False, True)}


def _report(outcomes) -> str:
    lines = []
    for o in outcomes[:10]:
        lines.append(f"{o.kind}: engine {o.engine} ({o.message}) referee {o.referee}")
        lines.append(f"  {o.record}")
    return "\n".join(lines)


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("board", [5, 7])
def test_simulated_games_of_every_level_verify(level, board):
    rng = random.Random(f"level-{level}-{board}")
    # level 4 on 7x7 takes seconds a game: fewer games the stronger the bots
    games = {0: 12, 1: 6, 2: 6, 3: 3, 4: 1}[level] * (2 if board == 5 else 1)
    refused = []
    for i in range(games):
        powers, hidden = list(VARIANTS.values())[i % 3]
        mode = ("online", "computer", "challenge")[i % 3] if level else "online"
        ai = {"side": i % 2, "level": max(level, 1)} if mode == "computer" else None
        levels = (level, max(0, level - i % 2))
        rec = simulate_game(
            rng, board=board, powers=powers, hidden=hidden, mode=mode, levels=levels, ai=ai,
            quit_rate=0.1,
        )  # fmt: skip
        o = judge_both("simulated", rec)
        if o.engine[0] != "valid" or o.referee != ("valid", None, None):
            refused.append(o)
    assert not refused, _report(refused)


def test_engine_and_referee_agree_on_a_fixed_sample():
    sample = corpus(seed=20261202, bases=1000, mutants_per_base=15, rulesets=False)
    outcomes = [judge_both(kind, rec) for kind, rec, _ in sample]
    judged = [o for o in outcomes if o.referee is not None]
    assert len(judged) > 0.95 * len(outcomes)  # mutations keep records well-formed
    invalid = sum(o.engine[0] == "invalid" for o in judged)
    assert invalid > len(judged) / 2  # the sample holds both halves
    assert len(judged) - invalid > 1000
    disagreements = [o for o in judged if not o.agrees]
    assert not disagreements, _report(disagreements)


def test_engine_and_referee_agree_under_random_rulesets():
    """The same under random valid rulesets (rulesets.md RS3): both read the parameters."""
    sample = corpus(seed=20261205, bases=150, mutants_per_base=12, rulesets=True)
    outcomes = [judge_both(kind, rec, rules) for kind, rec, rules in sample]
    judged = [o for o in outcomes if o.referee is not None]
    named = sum("ruleset" in o.record for o in judged)
    assert named > len(judged) / 2  # most under a ruleset other than standard
    invalid = sum(o.engine[0] == "invalid" for o in judged)
    assert 100 < invalid < len(judged) - 100
    disagreements = [o for o in judged if not o.agrees]
    assert not disagreements, _report(disagreements)


def test_the_referee_finds_the_faults_the_engine_finds():
    """The harness can fail: a record the engine refuses is refused by the referee too, at the
    same turn (here an obvious fault: a piece moved three squares without a dash)."""
    rec = simulate_game(random.Random(3), board=5, powers=False, levels=(1, 1))
    rec["turns"][0]["moves"] = ["a1-a4" if rec["first"] == 0 else "a5-a2"]
    assert referee_judge(rec) == ("invalid", "R2.2", 0)
    o = judge_both("move_to", rec)
    assert o.engine == ("invalid", "R2.2", 0) and o.agrees
