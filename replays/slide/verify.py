"""Slide replay verifier: replays a well-formed record by the rules and names the first broken
rule per S4 (slide-rules.md).

Two paths, one set of rules. The fast path replays on locals and only answers "valid" (with the
facts); at the first sign of a broken rule it gives up, and the record is played again on the
rules engine's `Table` (`verify_plainly`), which names the rule, round, seat and message. So a
fault's verdict always comes from the engine, and the fast path cannot accept a record the
engine would refuse without the property tests comparing the two seeing it.

Well-formedness is `replays.wellformed`'s job. This module also checks the shape a schema cannot
express (counts tied to `players`, `first` and `winners` as seats) and reports it as malformed,
before any rule. The types, enums and ranges of single entries (a position is two ints 0..3, a
side one of four words) are the schema's: the fast path trusts them, and whenever a record
fails (a rule, or an exception on input that is not well-formed) the whole shape is checked
entry by entry first, so a malformed record is always reported as malformed, naming its field.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import neg
from typing import Any, TypeGuard, cast

from replays.rulesets import STANDARD, Ruleset
from replays.slide.engine import (
    CELLS,
    MAX_VALUE,
    MIN_VALUE,
    PUSH_PLANS,
    ROUNDS,
    SIDES,
    SIZE,
    RuleBroken,
    Table,
    groups,
    score_grid,
    taking_order,
    winners,
)
from replays.slide.facts import SlideFacts, SlideSeatFacts, SlideTakeFacts
from replays.verdict import Record, Verdict, invalid, malformed, valid

_SIDES = frozenset(SIDES)
# players -> first -> taking orders: round i's is at index i % players (S2.1, S2.3)
_STANDARD = STANDARD["slide"]
_TAKING_ORDERS = {
    p: [[tuple(taking_order(first, i, p)) for i in range(p)] for first in range(p)]
    for p in range(2, 7)
}


def verify(record: Record, ruleset: Ruleset = _STANDARD) -> Verdict:
    """The verdict for one well-formed Slide record under `ruleset` (the caller, usually
    `replays.verifier`, resolved the record's ruleset name): valid, invalid with rule/turn/seat,
    or malformed for a shape the schema cannot check. `match_target` (S3.4) is not checked on a
    single record (RS7.9)."""
    return _replay(record, False, ruleset)[0]


def replay(
    record: Record, collect: bool = True, ruleset: Ruleset = _STANDARD
) -> tuple[Verdict, SlideFacts | None]:
    """Like `verify`, plus the facts of the game when it is valid (None otherwise, and without
    `collect`)."""
    return _replay(record, collect, ruleset)


def verify_plainly(record: Record, ruleset: Ruleset = _STANDARD) -> Verdict:
    """The verdict of the rules engine alone, the record played step by step on a `Table`:
    what `verify` gives for every record its fast path does not accept, and the same verdict as
    `verify` on every record `wellformed.check` accepted. Slower."""
    bad = _shape(record, deep=False)
    return bad if bad is not None else _play_on_table(record, ruleset)


def _is_int(x: object) -> TypeGuard[int]:
    return type(x) is int  # JSON integers only; bool is not an int here


def _int_list(x: object, n: int) -> bool:
    return type(x) is list and len(x) == n and all(type(v) is int for v in x)


def _shape(record: Record, deep: bool) -> Verdict | None:
    """Shape the format needs but a schema cannot say: P entries everywhere, seats in range;
    `deep` also checks every round entry's type and range (see the module doc)."""
    gid = record.get("game_id")
    players = record.get("players")
    if not _is_int(players) or not 2 <= players <= 6:
        return malformed(gid, "players", f"players must be an integer 2..6, got {players!r}")
    p = players
    first = record.get("first")
    if not _is_int(first) or not 0 <= first < p:
        return malformed(gid, "first", f"first must be a seat 0..{p - 1}, got {first!r}")
    match = record.get("match")
    if match is not None and not (
        type(match) is dict
        and type(match.get("id")) is str
        and _is_int(match.get("game"))
        and match["game"] >= 1
    ):
        return malformed(gid, "match", "match must be null or {id: string, game: integer >= 1}")
    grids = record.get("grids")
    if type(grids) is not list or len(grids) != p:
        n = len(grids) if type(grids) is list else "no"
        return malformed(gid, "grids", f"grids has {n} grids, players is {p}")
    for s, grid in enumerate(grids):
        if not _int_list(grid, CELLS):
            n = len(grid) if type(grid) is list else "no"
            return malformed(gid, f"grids[{s}]", f"grids[{s}] must be 16 integers, has {n} cards")
    rounds = record.get("rounds")
    if type(rounds) is not list:
        return malformed(gid, "rounds", "rounds must be a list of round objects")
    if deep or not _counts_ok(rounds, p):
        bad = _rounds_shape(gid, rounds, p)
        if bad is not None:
            return bad
    result = record.get("result")
    if type(result) is not dict:
        return malformed(gid, "result", "result must be an object")
    for key in ("scores", "cards_left"):
        if not _int_list(result.get(key), p):
            return malformed(gid, f"result.{key}", _count(result.get(key), p, "integers"))
    wins = result.get("winners")
    if type(wins) is not list:
        return malformed(gid, "result.winners", "winners must be a list of seats")
    for k, seat in enumerate(wins):
        if not _is_int(seat) or not 0 <= seat < p:
            return malformed(gid, f"result.winners[{k}]", f"{seat!r} is not a seat 0..{p - 1}")
    return None


def _counts_ok(rounds: list[Any], p: int) -> bool:
    """Fast path: every round has P reveals, takes and slides."""
    try:
        for rnd in rounds:
            if len(rnd["reveals"]) != p or len(rnd["takes"]) != p or len(rnd["slides"]) != p:
                return False
    except (TypeError, KeyError):
        return False
    return True


def _rounds_shape(gid: str | None, rounds: list[Any], p: int) -> Verdict | None:
    """The first round entry that breaks the shape, named precisely; None if there is none."""
    for i, rnd in enumerate(rounds):
        where = f"rounds[{i}]"
        if type(rnd) is not dict:
            return malformed(gid, where, f"{where} must be an object")
        reveals = rnd.get("reveals")
        if type(reveals) is not list or len(reveals) != p:
            return malformed(gid, f"{where}.reveals", _count(reveals, p, "positions"))
        for s, pos in enumerate(reveals):
            if not (type(pos) is list and len(pos) == 2 and _cell(pos[0]) and _cell(pos[1])):
                return malformed(
                    gid, f"{where}.reveals[{s}]", f"a position is [row, col] with 0..3, got {pos!r}"
                )
        takes = rnd.get("takes")
        if not _int_list(takes, p):
            return malformed(gid, f"{where}.takes", _count(takes, p, "integer values"))
        slides = rnd.get("slides")
        if type(slides) is not list or len(slides) != p:
            return malformed(gid, f"{where}.slides", _count(slides, p, "edges"))
        for s, edge in enumerate(slides):
            if type(edge) is not dict or edge.get("side") not in _SIDES:
                return malformed(
                    gid,
                    f"{where}.slides[{s}]",
                    f'an edge is {{"side": "left"|"right"|"top"|"bottom"}}, got {edge!r}',
                )
    return None


def _cell(x: object) -> bool:
    return type(x) is int and 0 <= x < SIZE


def _count(x: object, p: int, what: str) -> str:
    n = len(x) if type(x) is list else "no"
    return f"must have one entry per player ({p} {what}), has {n}"


def _round_facts(
    i: int, rnd: dict[str, Any], order: Sequence[int], middle: list[int], gaps: list[int]
) -> list[SlideTakeFacts]:
    """The facts of a round already replayed, by seat (`SlideTakeFacts`)."""
    now: list[Any] = [None] * len(order)  # (each seat's SlideTakeFacts, set below)
    pool = sorted(middle)  # stays sorted as takes are removed
    for k, (seat, v) in enumerate(zip(order, rnd["takes"], strict=True)):
        available = tuple(pool)
        pool.remove(v)
        r, c = divmod(gaps[seat], SIZE)
        now[seat] = SlideTakeFacts(
            i, seat, k, middle[seat], (r, c), v, available, available[0] != available[-1], ""
        )
    for f, edge in zip(now, rnd["slides"], strict=True):
        f.side = edge["side"]
    return now


def _replay(record: Record, collect: bool, ruleset: Ruleset) -> tuple[Verdict, SlideFacts | None]:
    bad = _shape(record, deep=False)
    if bad is not None:
        return bad, None
    try:
        done = _fast_replay(record, collect, ruleset)
    except (TypeError, KeyError, IndexError, ValueError, AttributeError):
        done = None  # not well-formed after all: `_play_on_table` checks the shape first
    if done is not None:
        return done
    return _play_on_table(record, ruleset), None


def _play_on_table(record: Record, ruleset: Ruleset) -> Verdict:
    """The shape entry by entry, then the record played on a `Table`."""
    bad = _shape(record, deep=True)
    if bad is not None:
        return bad
    gid = record.get("game_id")
    name = ruleset.name
    try:
        table = Table(record["grids"], record["first"], cast(int, ruleset.params["min_group"]))
        for rnd in record["rounds"]:
            cells = [r * SIZE + c for r, c in rnd["reveals"]]
            table.play_round(cells, rnd["takes"], [edge["side"] for edge in rnd["slides"]])
        table.check_result(record["result"])
    except RuleBroken as e:
        return invalid(gid, e.rule, e.round, f"{e.message} ({e.rule})", e.seat, name)
    except (TypeError, KeyError, IndexError, ValueError, AttributeError):
        return malformed(gid, "rounds", "the record does not follow the upload format")
    return valid(gid, name)


def _fast_replay(
    record: Record, collect: bool, ruleset: Ruleset
) -> tuple[Verdict, SlideFacts | None] | None:
    """The replay of a record whose shape `_shape` accepted, on locals: (valid, the facts when
    `collect`), or None as soon as a rule looks broken (`_play_on_table` then names it).

    The checks are `Table`'s, on a leaner state: one list per seat, a face-down card stored as
    its negated value, so a reveal is one read and a push one slice copy. The gap keeps its
    stale entry: every push overwrites it."""
    p = record["players"]
    grids = record["grids"]
    for grid in grids:
        if not (MIN_VALUE <= min(grid) and max(grid) <= MAX_VALUE):
            return None  # S1.3
    values = [list(map(neg, g)) for g in grids]
    orders = _TAKING_ORDERS[p][record["first"]]
    plans = PUSH_PLANS
    takes_facts: list[SlideTakeFacts] = []
    rounds = record["rounds"]
    for i, rnd in enumerate(rounds):
        gaps: list[int] = []
        middle: list[int] = []
        for (r, c), vals in zip(rnd["reveals"], values, strict=False):  # lengths: _shape
            g = r * SIZE + c
            v = vals[g]
            if v > 0:
                return None  # S2.2
            middle.append(-v)
            gaps.append(g)
        took = [0] * p
        pool = middle.copy()
        order = orders[i % p]
        for seat, v in zip(order, rnd["takes"], strict=False):
            try:
                pool.remove(v)
            except ValueError:
                return None  # S2.3
            took[seat] = v
        for edge, g, v, vals in zip(rnd["slides"], gaps, took, values, strict=False):
            plan = plans[edge["side"]][g]
            if plan is None:
                return None  # S2.4
            into, out_of, cell = plan
            vals[into] = vals[out_of]
            vals[cell] = v
        if collect:
            takes_facts.extend(_round_facts(i, rnd, order, middle, gaps))
    if len(rounds) < ROUNDS:
        return None  # S3.1

    result = record["result"]
    min_group = cast(int, ruleset.params["min_group"])
    scored = [score_grid(v, min_group) for v in values]
    scores = [sc for sc, _ in scored]
    left = [n for _, n in scored]
    won = winners(scores, left)
    if result["scores"] != scores or result["cards_left"] != left:
        return None  # S3.3
    if set(result["winners"]) != set(won):
        return None  # S3.3
    gid = record.get("game_id")
    if not collect:
        return valid(gid, ruleset.name), None
    facts = SlideFacts(
        players=p,
        first=record["first"],
        winners=tuple(won),
        seats=[
            SlideSeatFacts(s, scores[s], left[s], groups(values[s], min_group)) for s in range(p)
        ],
        takes=takes_facts,
    )
    return valid(gid, ruleset.name), facts
