"""The balance lab's paired simulation: one game played under two rulesets with common random
numbers (CRN), so that the difference between the rulesets is measured with far less noise
than two independent runs of the same size would give.

Game `i` of a run with seed `seed` draws everything it needs from streams named by
`(seed, i, purpose)` (Python's `random.Random` seeded with a string is the same on every
machine and process, whatever PYTHONHASHSEED):

- the setting (`game` stream): both sides' bot levels (from the run's levels), their lineups,
  the first mover, and each side's *power preference order* (a shuffle of the ten ids of R8.2);
- each side's play (`side0`, `side1` streams): the bot's noise and its choices of power.

Under both rulesets the game has the same levels, lineups and first mover, and each side's
bot starts from the same random stream. A side picks the first `picks` powers of its
preference order that the ruleset offers (`powers`): where the two rulesets offer the same
powers and the same count, the picks are the same; where the candidate removes a power, a side
that preferred it picks its next preferred one instead (the only way the picks differ), and
where it changes `picks`, a side takes one more or one fewer of the same order. The games then
diverge only where the rules make them: from the first turn on which a bot sees different
options, its stream is consumed differently.

Pure: no storage, no process management (ingest/cli/lab_commands.py runs the pairs in worker
processes and keeps the finished ones).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from .rulesets import Ruleset
from .slow6.bots import make_player
from .slow6.position import Position
from .vocabulary import POWERS


def _engine_version() -> str:
    """A digest of the engine and bots' source: two runs with the same version, seed and
    settings play the same games."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in ("lab.py", "rulesets.py", "slow6/position.py", "slow6/bots.py", "slow6/board.py"):
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:12]


ENGINE_VERSION = _engine_version()


@dataclass(frozen=True)
class Setting:
    """What both games of a pair share."""

    index: int
    levels: tuple[int, int]
    lineups: tuple[list[int], list[int]]
    first: int
    preference: tuple[tuple[str, ...], tuple[str, ...]]


def stream(seed: int, index: int, purpose: str) -> random.Random:
    return random.Random(f"lab/{seed}/{index}/{purpose}")


def setting(seed: int, index: int, board: int, levels: Sequence[int]) -> Setting:
    rng = stream(seed, index, "game")
    lv = (rng.choice(levels), rng.choice(levels))
    lineups = []
    for _ in (0, 1):
        lineup = list(range(1, board + 1))
        rng.shuffle(lineup)
        lineups.append(lineup)
    first = rng.randrange(2)
    prefs = []
    for _ in (0, 1):
        order = list(POWERS)
        rng.shuffle(order)
        prefs.append(tuple(order))
    return Setting(index, lv, (lineups[0], lineups[1]), first, (prefs[0], prefs[1]))


def picks_for(preference: Sequence[str], rules: Ruleset) -> list[str]:
    """The first `picks` powers of a side's preference order that `rules` offers (R8.1)."""
    offered = set(cast("tuple[str, ...]", rules.params["powers"]))
    count = cast(int, rules.params["picks"])
    return [p for p in preference if p in offered][:count]


def play(st: Setting, rules: Ruleset, board: int, powers: bool, seed: int) -> dict[str, Any]:
    """One game of the pair under `rules`: a compact outcome (winner None for a draw)."""
    players = [make_player(st.levels[s], stream(seed, st.index, f"side{s}")) for s in (0, 1)]
    picks = None
    if powers:
        picks = (picks_for(st.preference[0], rules), picks_for(st.preference[1], rules))
    pos = Position.start_position(board, [st.lineups[0], st.lineups[1]], st.first, picks, rules)
    turns = 0
    used: tuple[set[str], set[str]] = (set(), set())
    while not pos.over:
        power, target, moves = players[pos.to_move].turn(pos)
        turns += 1
        if power:
            used[pos.to_move].add(power)
            pos.use_power(power, target)
        for i, mv in enumerate(moves):
            pos.move(*mv)
            if pos.over and i == 0:
                break
        pos.end_turn()
    return {
        "winner": pos.winner,
        "reason": pos.reason,
        "turns": turns,
        "picks": [sorted(picks[0]), sorted(picks[1])] if picks else None,
        "used": [sorted(used[0]), sorted(used[1])],
    }


def play_pair(
    seed: int,
    index: int,
    base: Ruleset,
    candidate: Ruleset,
    board: int,
    powers: bool,
    levels: Sequence[int],
) -> dict[str, Any]:
    """Game `index` under both rulesets, from the same setting and streams."""
    st = setting(seed, index, board, levels)
    return {
        "i": index,
        "levels": list(st.levels),
        "first": st.first,
        "lineups": [list(st.lineups[0]), list(st.lineups[1])],
        "base": play(st, base, board, powers, seed),
        "candidate": play(st, candidate, board, powers, seed),
    }


def play_independent(
    seed: int,
    index: int,
    rules: Ruleset,
    board: int,
    powers: bool,
    levels: Sequence[int],
) -> dict[str, Any]:
    """Game `index` under `rules` alone (the benchmark's independent-runs comparison)."""
    st = setting(seed, index, board, levels)
    return {"i": index, "levels": list(st.levels), "first": st.first,
            "lineups": [list(st.lineups[0]), list(st.lineups[1])],
            "game": play(st, rules, board, powers, seed)}  # fmt: skip
