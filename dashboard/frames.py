"""Per-turn board states of a Slow6 record, for the replay viewer.

An adapter over the engine in replays/slow6: if the engine offers `replays.slow6.verify.frames`
it is used; until then (and as the fallback) the record is replayed here with the engine's own
`setup`/`play_turn`, reading the position after each turn. The viewer only depends on the shape
returned here:

{"board": N, "frames": [frame...], "broken": {"turn", "rule", "message"} | None, "result": {...}}
frame = {"turn": i | None (the start), "side", "moves", "power", "target",
         "pieces": [{"sq": "c3", "side", "rank", "crown", "wounded", "stunned", "immobile"}],
         "traps": ["c4" ...], "points": [p0, p1],
         "events": {"fights", "removed", "stuns", "catches", "promotions", "trapped"}}
"""

from __future__ import annotations

EVENT_KEYS = ("fights", "removed", "stuns", "catches", "promotions", "trapped")


def _snapshot(pos) -> dict:
    n = pos.n
    pieces = []
    for pid, sq in enumerate(pos.pos):
        if sq < 0:
            continue
        crown = pos.rank[pid] == pos.crown
        pieces.append(
            {
                "sq": pos.sq(sq),
                "side": pos.side[pid],
                "rank": pos.rank[pid],
                "crown": crown,
                "wounded": bool(pos.wounded[pid]),
                "stunned": bool(crown and pos.stun[pid] >= pos.ply),
                "immobile": bool(pos.imm[pid] >= pos.ply),
                "start": pos.sq(pos.start[pid]),
            }
        )
    traps = [pos.sq(t) for t in pos.trap if t is not None and 0 <= t < n * n]
    return {"pieces": pieces, "traps": traps, "points": list(pos.points())}


def _own_frames(record: dict) -> dict:
    from replays.slow6.position import Counters, RuleBroken
    from replays.slow6.verify import RecordFault, play_turn, setup

    out = {"board": record["rules"]["board"], "frames": [], "broken": None}
    try:
        pos = setup(record)
    except RecordFault as exc:
        out["broken"] = {"turn": None, "rule": exc.rule, "message": exc.message}
        return out
    start = _snapshot(pos)
    start.update(turn=None, side=None, moves=[], power=None, target=None, events={})
    out["frames"].append(start)
    for i, turn in enumerate(record["turns"]):
        side = pos.to_move
        pos.counters = Counters()
        try:
            play_turn(pos, turn)
        except RuleBroken as exc:
            out["broken"] = {"turn": i, "rule": exc.rule, "message": exc.message}
            break
        frame = _snapshot(pos)
        frame.update(
            turn=i,
            side=side,
            moves=list(turn.get("moves", [])),
            power=turn.get("power"),
            target=turn.get("target"),
            events={k: getattr(pos.counters, k) for k in EVENT_KEYS},
        )
        out["frames"].append(frame)
    return out


def frames(record: dict) -> dict:
    """Board states before the first turn and after each turn, up to the turn that broke a rule."""
    if record.get("game") != "slow6":
        raise ValueError("the replay viewer draws Slow6 games only")
    try:
        from replays.slow6 import verify
    except ImportError:
        raise ValueError("the Slow6 engine is not installed") from None
    engine_frames = getattr(verify, "frames", None)
    if engine_frames is not None:
        try:
            return _from_engine(engine_frames(record), record)
        except (TypeError, KeyError, AttributeError):
            pass  # a shape this adapter does not know yet: replay it ourselves
    return _own_frames(record)


def _from_engine(result, record: dict) -> dict:
    """Map the engine's frames onto the viewer's shape (kept tolerant until its shape settles)."""
    if isinstance(result, dict) and "frames" in result and "board" in result:
        return result
    raise TypeError("unknown frames shape")
