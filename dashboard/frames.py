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

from typing import Any


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


def slide_rounds(record: dict) -> dict:
    """A Slide record round by round, for its viewer: every seat's grid as dealt and after each
    round, each round's reveals, takes (in taking order) and slides, up to the round that broke
    a rule (`error`), and the replayed result when the log is played out.

    {"players", "first", "deal": [grid...], "rounds": [round...], "error": {...} | None,
     "result": {"scores", "cards_left", "winners"} | None}
    round = {"round", "leader", "order", "reveals": [[r, c, value]...], "takes": [...],
             "slides": [side...], "grids": [grid...]}; grid = 16 cells, row by row, each
    {"value", "down"} (value 0: the gap)."""
    from replays.slide.engine import SIZE, RuleBroken, Table

    def grids(table) -> list[list[dict]]:
        return [
            [{"value": v, "down": d} for v, d in zip(vals, down, strict=True)]
            for vals, down in zip(table.values, table.down, strict=True)
        ]

    out: dict[str, Any] = {"players": record.get("players"), "first": record.get("first"),
                           "deal": [], "rounds": [], "error": None, "result": None}  # fmt: skip
    try:
        table = Table(record["grids"], record["first"])
    except (RuleBroken, ValueError, KeyError, TypeError) as exc:
        out["error"] = {"rule": getattr(exc, "rule", None), "turn": None, "message": str(exc)}
        return out
    out["deal"] = grids(table)
    for i, rnd in enumerate(record.get("rounds") or []):
        order = table.order()
        reveals = []
        try:
            cells = [r * SIZE + c for r, c in rnd["reveals"]]
            for seat, cell in enumerate(cells):
                reveals.append([cell // SIZE, cell % SIZE, table.reveal(seat, cell)])
            for seat, value in zip(order, rnd["takes"], strict=True):
                table.take(seat, value)
            for seat, edge in enumerate(rnd["slides"]):
                table.slide(seat, edge["side"])
            table.end_round()
        except (RuleBroken, ValueError, KeyError, TypeError) as exc:
            out["error"] = {
                "rule": getattr(exc, "rule", None),
                "turn": i,
                "seat": getattr(exc, "seat", None),
                "message": str(exc),
            }
            out["broken"] = {"round": i, "leader": order[0], "order": order, "reveals": reveals,
                             "takes": rnd.get("takes"), "slides": [
                                 e.get("side") for e in rnd.get("slides") or []]}  # fmt: skip
            return out
        out["rounds"].append({
            "round": i, "leader": order[0], "order": order, "reveals": reveals,
            "takes": list(rnd["takes"]), "slides": [e["side"] for e in rnd["slides"]],
            "grids": grids(table),
        })  # fmt: skip
    if table.finished():
        out["result"] = table.result()
    return out
