"""A game turn by turn, for the replay viewer: the board before the first turn and after each."""

from __future__ import annotations

from typing import Any

from ..rulesets import STANDARD, Ruleset
from ..verdict import Record
from .board import square_name
from .position import Counters, Position, RuleBroken
from .verify import RecordFault, judge_result, play_turn, setup


def snapshot(pos: Position) -> dict[str, Any]:
    n = pos.n
    pieces = [
        {
            "side": pos.side[p],
            "rank": pos.rank[p],
            "crown": pos.rank[p] == pos.crown,
            "square": square_name(sq, n),
            "start": square_name(pos.start[p], n),
            "wounded": pos.wounded[p],
            "stunned": pos.stun[p] >= pos.ply,
            "immobile": pos.imm[p] >= pos.ply,
            "shield": pos.shield[p],
        }
        for p, sq in enumerate(pos.pos)
        if sq >= 0
    ]
    traps = [square_name(t, n) if t >= 0 else None for t in pos.trap]
    return {"pieces": pieces, "traps": traps, "points": list(pos.points()), "to_move": pos.to_move}


def frames(record: Record, ruleset: Ruleset | None = None) -> dict[str, Any]:
    """Every position of a game; replay stops at the first broken rule, which is reported with
    its turn so a viewer can open there. Works for valid and quarantined records alike.
    `ruleset`: the one the record is played under (None: standard; rulesets.md)."""
    out: dict[str, Any] = {"board": record["rules"]["board"], "lineups": record["lineups"],
                           "frames": [], "error": None, "ended": None}  # fmt: skip
    try:
        pos = setup(record, ruleset or STANDARD["slow6"])
    except RecordFault as e:
        out["error"] = {"rule": e.rule, "turn": None, "message": e.message}
        return out
    out["frames"].append({"turn": None, **snapshot(pos)})
    pos.counters = c = Counters(len(record["turns"]), len(pos.side))
    for i, turn in enumerate(record["turns"]):
        side = pos.to_move
        try:
            play_turn(pos, turn)
        except RuleBroken as e:
            out["error"] = {
                "rule": e.rule,
                "turn": i,
                "message": f"turn {i}: {e.message} ({e.rule})",
            }
            return out
        events = {k: getattr(c, k)[i] for k in Counters.TURN_EVENTS if getattr(c, k)[i]}
        out["frames"].append({
            "turn": i, "side": side, "power": turn.get("power"), "target": turn.get("target"),
            "moves": turn["moves"], "events": events, **snapshot(pos),
        })  # fmt: skip
    try:
        judge_result(pos, record["result"])
    except RecordFault as e:
        out["error"] = {"rule": e.rule, "turn": None, "message": e.message}
    out["ended"] = {"winner": pos.winner, "reason": pos.reason} if pos.over else None
    return out
