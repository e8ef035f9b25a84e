"""Replay a well-formed Slow6 record and judge it: valid, or the first rule it breaks (R10)."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import compress, count, repeat
from operator import itemgetter
from typing import Any, NoReturn, cast

from ..rulesets import STANDARD, Ruleset
from ..verdict import Record, Verdict, invalid, valid
from ..vocabulary import BOARDS
from .board import TURN_LIMIT, back_row, parse_square, square_name
from .facts import PieceColumns, Slow6Facts, TurnColumns
from .position import Counters, Position, RuleBroken, Turn

REASON_RULE = {"home": "R6.1", "wipeout": "R6.2", "points": "R6.3"}
SQUARE_NAMES = {n: [square_name(q, n) for q in range(n * n)] for n in BOARDS}


class RecordFault(Exception):
    """A fault of the record as a whole (no turn)."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


_STANDARD = STANDARD["slow6"]


def verify(record: Record, ruleset: Ruleset = _STANDARD) -> Verdict:
    return replay(record, False, ruleset)[0]


def replay(
    record: Record, collect: bool = False, ruleset: Ruleset = _STANDARD
) -> tuple[Verdict, Slow6Facts | None]:
    """Replay every turn under `ruleset` (the caller, usually `replays.verifier`, resolved the
    record's ruleset name); with `collect`, also return the facts storage needs (valid games)."""
    gid = record.get("game_id")
    name = ruleset.name
    try:
        pos = setup(record, ruleset)
    except RecordFault as e:
        return invalid(gid, e.rule, None, f"{e.message} ({e.rule})", None, name), None
    turns = record["turns"]
    counters = None
    if collect:  # facts for storage, counted per turn; the plain verifier does not need them
        pos.counters = counters = Counters(len(turns), len(pos.side))
    try:
        pos.play_log(turns, play_turn)
    except RuleBroken as e:
        i = pos.ply  # the turn that broke
        return invalid(gid, e.rule, i, f"turn {i}: {e.message} ({e.rule})", None, name), None
    try:
        judge_result(pos, record["result"])
    except RecordFault as e:
        return invalid(gid, e.rule, None, f"{e.message} ({e.rule})", None, name), None
    facts = _facts(pos, record, counters) if counters is not None else None
    return valid(gid, name), facts


def setup(record: Record, ruleset: Ruleset = _STANDARD) -> Position:
    rules = record["rules"]
    n = rules["board"]
    picks = record["powers"]
    if rules["powers"]:
        if picks is None:
            raise RecordFault("R8.1", "a game with powers must give both sides' picks")
        sets = frozenset(picks[0]), frozenset(picks[1])  # (the position keeps these)
        if len(sets[0]) != len(picks[0]) or len(sets[1]) != len(picks[1]):
            s = 0 if len(sets[0]) != len(picks[0]) else 1
            raise RecordFault("R8.1", f"side {s} picked the same power twice: {picks[s]}")
        # R8.1 (RS7.3): standard's 3 of all ten, or the ruleset's picks of its powers
        if ruleset is not _STANDARD or len(picks[0]) != 3 or len(picks[1]) != 3:
            _check_picks(picks, ruleset.params)
        picks = sets
    elif picks is not None:
        raise RecordFault("R8.1", "powers picked in a game without powers")
    lineups = record["lineups"]
    challenge = record["challenge"]
    if challenge is not None:
        limit = cast(int, ruleset.params[f"turn_limit_{n}"])
        check_position(challenge["position"], n, record["first"], limit)
        return Position.from_challenge(n, lineups, challenge["position"], picks, ruleset)
    return Position.start_position(n, lineups, record["first"], picks, ruleset)


def _check_picks(picks: list[list[str]], params: Mapping[str, object]) -> None:
    """R8.1 under the ruleset (RS7.3): each side picks exactly `picks` ids of `powers`."""
    count = cast(int, params["picks"])
    offered = cast("tuple[str, ...]", params["powers"])
    for s, side_picks in enumerate(picks):
        if len(side_picks) != count:
            raise RecordFault(
                "R8.1", f"side {s} picked {len(side_picks)} powers; each side picks {count}"
            )
        for power in side_picks:
            if power not in offered:
                raise RecordFault(
                    "R8.1", f"side {s} picked {power}, which this ruleset does not offer"
                )


def check_position(position: Record, n: int, first: int, limit: int | None = None) -> None:
    """R9.2: a set position must be consistent, or the record breaks R9.1. `limit`: T of the
    record's ruleset (RS7.7; None: standard's)."""

    def fault(msg: str) -> NoReturn:
        raise RecordFault("R9.1", f"challenge position: {msg}")

    to_move = position["to_move"]
    if first != to_move:
        fault(f"first is {first} but side {to_move} is to move")
    squares: set[int] = set()
    starts: set[tuple[int, int]] = set()
    sides: set[int] = set()
    for pc in position["pieces"]:
        s, rank = pc["side"], pc["rank"]
        sides.add(s)
        sq, st = parse_square(pc["square"], n), parse_square(pc["start"], n)
        if sq < 0:
            fault(f"{pc['square']} is off the {n}x{n} board")
        if sq in squares:
            fault(f"two pieces on {pc['square']}")
        squares.add(sq)
        if st < 0 or st // n != back_row(s, n):
            fault(f"start {pc['start']} is not on side {s}'s back row")
        if (s, st) in starts:
            fault(f"two pieces of side {s} started on {pc['start']}")
        starts.add((s, st))
        if not 1 <= rank <= n + 1:
            fault(f"rank {rank} on {pc['square']} is not 1..{n + 1}")
        if rank != n + 1 and (pc["wounded"] or pc["stunned"]):
            fault(f"{pc['square']} is wounded or stunned but not a crown")
    if sides != {0, 1}:
        fault("each side must have pieces")
    if limit is None:
        limit = TURN_LIMIT[n]
    taken = position["turns_taken"]
    if max(taken) > limit or taken[0] == taken[1] == limit:
        fault(f"turns_taken {taken} is past the turn limit {limit}")
    mine, theirs = taken[to_move], taken[1 - to_move]
    if not (mine == theirs or mine == theirs - 1):
        fault(f"turns_taken {taken} does not fit side {to_move} to move")


def play_turn(pos: Position, turn: Turn) -> None:
    if pos.over:
        raise RuleBroken("R6.5", f"the game already ended ({pos.reason})")
    moves = turn["moves"]
    power = turn.get("power")
    s = pos.to_move
    if power is not None:
        pos.use_turn_power(turn)
    if not moves:
        if pos.has_legal_move(s):
            example = _example_move(pos, s)
            raise RuleBroken("R2.4", f"side {s} passes but has a legal move ({example})")
    elif len(moves) == 2 and power != "double":
        raise RuleBroken("R2.1", "two moves without double")
    else:
        mover = pos.play(moves[0])
        if power == "double":
            if pos.over:
                if len(moves) == 2:
                    raise RuleBroken(
                        "R6.5", f"{moves[1]}: the first move of the double ended the game"
                    )
            else:
                exclude = mover if pos.rank[mover] == pos.crown else -1
                if len(moves) == 2:
                    pos.play(moves[1], exclude)
                elif pos.has_legal_move(s, exclude):
                    example = _example_move(pos, s, exclude)
                    raise RuleBroken(
                        "R8.3", f"double with one move, but a second was possible ({example})"
                    )
    pos.end_turn()


def _example_move(pos: Position, s: int, exclude: int = -1) -> str:
    frm, to = pos.legal_moves(s, exclude)[0]
    return f"{square_name(frm, pos.n)}-{square_name(to, pos.n)}"


def judge_result(pos: Position, result: Record) -> None:
    """R10's whole-record faults: the claimed result must be what the log shows."""
    claimed, winner, points = result["reason"], result["winner"], result.get("points")
    if pos.over:
        real = pos.reason
        if claimed in ("timeout", "resign"):
            raise RecordFault(
                "R6.4", f"{claimed} claimed, but the log reached a natural end ({real})"
            )
        if claimed != real:
            raise RecordFault(
                REASON_RULE[claimed], f"{claimed} claimed, but the game ended by {real}"
            )
        if winner != pos.winner:  # (the reason claimed is the real one, here)
            raise RecordFault(
                REASON_RULE[claimed], f"winner {winner} claimed, but {_who(pos.winner)} ({real})"
            )
    else:
        if claimed in REASON_RULE:
            raise RecordFault(
                REASON_RULE[claimed],
                f"{claimed} claimed, but the log stops before the game ended "
                f"(side {pos.to_move} to move after {pos.ply} turns)",
            )
        if winner != 1 - pos.to_move:
            raise RecordFault(
                "R6.4",
                f"{claimed}: side {pos.to_move} was to move and loses, so the winner is "
                f"{1 - pos.to_move}, not {winner}",
            )
    if points is not None:
        true = pos.points()
        if tuple(points) != true:
            raise RecordFault(
                "R6.3", f"points {list(points)} claimed, but the totals are {list(true)}"
            )


def _who(winner: int | None) -> str:
    return "the game was a draw" if winner is None else f"side {winner} won"


def _facts(pos: Position, record: Record, c: Counters) -> Slow6Facts:
    """What storage keeps of a valid game, column by column: the replay's counters `c` and
    per-pid lists as they are, and C-level iteration (map, compress) for the rest; no object
    per turn or piece (storage builds its Arrow columns from these lists)."""
    result = record["result"]
    if pos.over and pos.reason is not None:  # (a game that is over has its reason)
        winner, reason = pos.winner, pos.reason
    else:
        winner, reason = result["winner"], result["reason"]
    turns = record["turns"]
    powers: list[str | None] = list(map(dict.get, turns, repeat("power")))
    first = record["first"]  # turns strictly alternate
    columns = TurnColumns(
        first, powers, list(map(itemgetter("moves"), turns)), c.fights, c.removed, c.stuns,
        c.catches, c.promotions, c.trapped,
    )  # fmt: skip
    used: dict[tuple[int, str], int] = {}
    for i in compress(count(), powers):  # the turns with a power (so powers[i] is a str)
        used[(first if i % 2 == 0 else 1 - first, cast(str, powers[i]))] = i
    return Slow6Facts(winner, reason, pos.points(), columns, _piece_columns(pos, c), used)


def _piece_columns(pos: Position, c: Counters) -> PieceColumns:
    removed = [at if sq < 0 else None for sq, at in zip(pos.pos, pos.removed_at, strict=True)]
    home = [False] * len(removed)
    if pos.home_pid is not None:
        home[pos.home_pid] = True
    return PieceColumns(
        pos.side[:], list(map(SQUARE_NAMES[pos.n].__getitem__, pos.start)), pos.orig,
        c.promoted_at, removed, c.revealed_at, c.moved, c.stunned_count, home,
    )  # fmt: skip


def frames(record: Record, ruleset: Ruleset | None = None) -> dict[str, Any]:
    """The game turn by turn for a viewer (see `replays.slow6.frames`), under `ruleset`."""
    from .frames import frames as _frames

    return _frames(record, ruleset)
