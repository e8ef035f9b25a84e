"""Per-turn board states of a Slow6 record, for the replay viewer.

A thin adapter over the engine's `replays.slow6.frames.frames(record)`, so that the viewer
depends on one shape only:

{"board": N, "lineups": [...], "frames": [frame...], "error": {"turn", "rule", "message"} | None,
 "ended": {"winner", "reason"} | None}
frame = {"turn": i | None (the start), "side", "moves", "power", "target", "to_move",
         "pieces": [{"square": "c3", "start", "side", "rank", "crown", "wounded", "stunned",
                     "immobile", "shield"}],
         "traps": ["c4", ...], "points": [p0, p1],
         "events": {"fights", "removed", "stuns", "catches", "promotions", "trapped"} (non-zero)}
"""

from __future__ import annotations


def frames(record: dict) -> dict:
    """Board states before the first turn and after each, up to the turn that broke a rule."""
    if record.get("game") != "slow6":
        raise ValueError("the replay viewer draws Slow6 games only")
    from replays.slow6.frames import frames as engine_frames

    out = engine_frames(record)
    for frame in out["frames"]:
        frame["traps"] = [t for t in frame.get("traps", []) if t]
        frame.setdefault("events", {})
        frame.setdefault("moves", [])
    return out
