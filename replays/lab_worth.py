"""What a power is worth to a bot: restricted play (Jaffe et al., AIIDE 2012) on the lab's
common random numbers (replays/lab.py).

Game `i` is played twice under one ruleset, from the same setting and bot streams, both sides
at one bot level: once free, once with one side (side `i % 2`, so each side is restricted in
half the games) barred from picking the power, so that it takes its next preferred power
instead. Only settings in which the restricted side would pick the power are played (in the
others the two games are the same): the worth is the score that side loses when it cannot
have the power it would have picked, at that bot level, whoever picks it.

Pure: no storage, no processes (ingest/cli/lab_worth.py runs and stores them).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from . import lab
from .rulesets import Ruleset


def settings(seed: int, rules: Ruleset, board: int, level: int, power: str) -> Iterator[int]:
    """The indices of the games in which the restricted side would pick `power`, in order."""
    i = 0
    while True:
        st = lab.setting(seed, i, board, [level])
        if power in lab.picks_for(st.preference[i % 2], rules):
            yield i
        i += 1


def restricted_pair(
    seed: int, index: int, rules: Ruleset, board: int, level: int, power: str
) -> dict[str, Any]:
    """Game `index` free and with side `index % 2` barred from `power`: that side's score in
    each ({"i", "side", "free", "restricted"}; win 1, draw 1/2)."""
    st = lab.setting(seed, index, board, [level])
    side = index % 2
    prefs = list(st.preference)
    prefs[side] = tuple(p for p in prefs[side] if p != power)
    barred = replace(st, preference=(prefs[0], prefs[1]))
    out: dict[str, Any] = {"i": index, "side": side}
    for name, setting in (("free", st), ("restricted", barred)):
        game = lab.play(setting, rules, board, True, seed)
        winner = game["winner"]
        out[name] = 0.5 if winner is None else float(winner == side)
    return out
