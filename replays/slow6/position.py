"""The Slow6 position: a compact state, legal-move generation, and applying powers and moves.

State lives in flat lists indexed by piece id (pid) and by square, python-chess style: no object
per square or per piece. A pid is fixed for the game; its side, start square and original rank
never change. Time is the global ply `g` (0-based index of the turn in the log): turns strictly
alternate, so "its owner's next K turns" are plies g+1, g+3, ... when they start on the other
side's turn, and g+2, ... (plus the rest of turn g) when they start on the owner's own turn.

Every mutating method validates first and raises `RuleBroken(rule, message)` naming the rule of
`slow6-rules.md` as R10 says; nothing is changed when it raises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias, cast

from ..rulesets import STANDARD, Ruleset
from ..verdict import Record
from ..vocabulary import BOARDS
from .board import (
    DIRECTIONS,
    MOVE_XY,
    SQUARE_INDEX,
    back_row,
    parse_square,
    square_name,
)

Lineups: TypeAlias = Sequence[list[int]]  # per side, the rank of each file's piece (R1.3)
Picks: TypeAlias = Sequence[Iterable[str]]  # per side, the powers it picked (R8.1)
Target: TypeAlias = int | tuple[int, int] | None  # a power's target: see `Position.use_power`
Turn: TypeAlias = dict[str, Any]  # one turn of a record: {"moves": [...], "power"?, "target"?}
# `Position.geom`, per move text: (from, to, distance, squares passed over, straight?, near?)
Geometry: TypeAlias = tuple[int, int, int, tuple[int, ...], bool, bool]

NEVER = -(10**6)  # a ply long past: "not immobile", "not stunned", "never removed"
# `play_log`'s per-piece counters when it counts nothing: read as lists, never written
_NOT_COUNTED: tuple[list[int], list[int | None]] = ([], [])
_OWN_PIECE_RULES = {"dash": "R8.4", "leap": "R8.11", "surge": "R8.10", "shield": "R8.12"}


class RuleBroken(Exception):
    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


class Counters:
    """What each turn and each piece of a game did, for storage and analysis (facts): one list
    per kind of event, indexed by the turn's ply or by pid, so a turn with nothing to count
    costs nothing and the facts are built in one pass at the end. A position counts only when
    it has counters (the plain verifier gives it none, and allocates none of this)."""

    TURN_EVENTS = ("fights", "removed", "stuns", "catches", "promotions", "trapped")
    __slots__ = (*TURN_EVENTS, "moved", "promoted_at", "revealed_at", "stunned_count")
    fights: list[int]
    removed: list[int]
    stuns: list[int]
    catches: list[int]
    promotions: list[int]
    trapped: list[int]
    moved: list[int]
    promoted_at: list[int | None]
    revealed_at: list[int | None]
    stunned_count: list[int]

    def __init__(self, turns: int, pieces: int) -> None:
        self.fights, self.removed, self.stuns = [0] * turns, [0] * turns, [0] * turns
        self.catches, self.promotions, self.trapped = [0] * turns, [0] * turns, [0] * turns
        self.moved = [0] * pieces  # moves made
        self.promoted_at = [None] * pieces  # the turn it became a crown (R5.1)
        self.revealed_at = [None] * pieces  # the first turn it moved or fought (R7.2)
        self.stunned_count = [0] * pieces  # times stunned (R4.2)


# Position.copy() (a bot's look-ahead): the lists a move changes are copied, `used` (two sets)
# deeply, `counters` stay the original's (a copy counts nothing); every other slot is set up
# once per game and shared. Every slot is in exactly one of these, so none can be missed.
_SHARED_SLOTS = (
    "n", "k", "crown", "limit", "geom", "plain", "outcome", "winner", "reason", "over", "ply",
    "to_move", "picks", "home_pid", "taken0", "first", "points_ply", "side", "start", "orig",
    "_lineups", "rules", "move_reach", "crown_reach", "dash_reach", "leap_reach", "freeze_for",
    "trap_for", "rest_for", "crown_points",
)  # fmt: skip
_COPIED_SLOTS = (
    "board", "rank", "pos", "goal", "wounded", "stun", "imm", "why", "dash", "leap", "surge",
    "shield", "removed_at", "trap", "reach", "alive",
)  # fmt: skip


def _copier(shared: tuple[str, ...], copied: tuple[str, ...]) -> Callable[[Position], Position]:
    """The body of Position.copy, written out from the slot lists (as dataclasses writes
    __init__): a loop of getattr/setattr made a copy 2x slower (3.0 -> 5.9 us), and bots copy
    positions thousands of times a game."""
    lines = ["def copy(self):", "    c = object.__new__(type(self))"]
    lines += [f"    c.{name} = self.{name}" for name in shared]
    lines += [f"    c.{name} = self.{name}[:]" for name in copied]
    lines += ["    c.used = (set(self.used[0]), set(self.used[1]))", "    c.counters = None"]
    lines += ["    return c"]
    namespace: dict[str, Any] = {}
    exec("\n".join(lines), namespace)  # noqa: S102 - our own slot names, nothing from outside
    copy: Callable[[Position], Position] = namespace["copy"]
    return copy


class Position:
    __slots__ = (*_SHARED_SLOTS, *_COPIED_SLOTS, "used", "counters")
    copy = _copier(_SHARED_SLOTS, _COPIED_SLOTS)

    # the slots' types (annotations only: a slot has no class-level value)
    n: int  # the board is n x n
    k: int
    crown: int  # a crown's rank, n + 1
    limit: int  # turns each (R2.5)
    geom: dict[str, Geometry]
    plain: dict[str, tuple[int, int, int, int]]  # see `_plain`
    outcome: list[list[int]]  # see `_outcomes`
    winner: int | None  # (None: a draw, or the game is not over)
    reason: str | None  # how the game ended; None while it goes on
    over: bool
    ply: int
    to_move: int
    picks: tuple[frozenset[str], frozenset[str]] | None  # None: a game without powers
    home_pid: int | None
    taken0: tuple[int, int]
    first: int
    points_ply: int
    side: list[int]
    start: list[int]
    orig: list[int]
    _lineups: Lineups
    # the ruleset's parameters (rulesets.md RS3), read once per game
    rules: Ruleset
    move_reach: int  # R2.2: a non-crown moves 1..move_reach squares
    crown_reach: int  # R2.2: a crown moves 1..crown_reach squares
    dash_reach: int  # R8.4
    leap_reach: int  # R8.11
    freeze_for: int  # R8.5: the owner's next K turns
    trap_for: int  # R8.8
    rest_for: int  # R8.10 (0: no rest)
    crown_points: int | None  # R6.3: what a crown counts (None: N+1)
    board: list[int]  # per square, the pid on it or -1
    rank: list[int]
    pos: list[int]  # per pid, its square or -1
    goal: list[int]
    wounded: list[bool]
    stun: list[int]
    imm: list[int]
    why: list[str]
    dash: list[bool]
    leap: list[bool]
    surge: list[bool]
    shield: list[bool]
    removed_at: list[int]
    trap: list[int]  # per side, the square of its trap or -1
    reach: list[int]
    alive: list[int]
    used: tuple[set[str], set[str]]
    counters: Counters | None

    # ------------------------------------------------------------------ construction

    def __init__(
        self, n: int, lineups: Lineups, picks: Picks | None = None, rules: Ruleset | None = None
    ) -> None:
        """An empty board; `start_position` and `from_challenge` set the pieces. `rules`: the
        ruleset played under (None: `standard`)."""
        self._begin(n, lineups, picks, rules)
        self.board = [-1] * (n * n)
        self.side = []
        self.rank = []
        self.pos = []
        self.start = []
        self.orig = []
        # per pid, the square where arriving ends something: for a crown its start square
        # (home, R6.1), for any other piece the far-row square where its rank promotes (R5.1)
        self.goal = []

    def _begin(self, n: int, lineups: Lineups, picks: Picks | None, rules: Ruleset | None) -> None:
        """Everything but the pieces."""
        self.n = n
        self.k = (n - 1) // 2
        self.crown = n + 1
        if rules is None or rules is _STANDARD:
            rules = _STANDARD
            (
                self.limit, self.move_reach, self.crown_reach, self.dash_reach, self.leap_reach,
                self.freeze_for, self.trap_for, self.rest_for, self.crown_points,
            ) = _STANDARD_VALUES[n]  # fmt: skip
        else:
            (
                self.limit, self.move_reach, self.crown_reach, self.dash_reach, self.leap_reach,
                self.freeze_for, self.trap_for, self.rest_for, self.crown_points,
            ) = _values(rules, n)  # fmt: skip
        self.rules = rules
        self.geom = GEOMETRY[n]
        self.plain = PLAIN[n]
        self.outcome = OUTCOMES[n]
        self.trap = [-1, -1]
        # (frozenset() hands back a frozenset as it is: the verifier passes its own)
        self.picks = (frozenset(picks[0]), frozenset(picks[1])) if picks else None
        self.used = (set(), set())
        self.taken0 = (0, 0)  # turns taken before ply 0 (a challenge's position, R9.1)
        self.first = 0  # the side to move at ply 0
        self.points_ply = 2 * self.limit  # the ply count at which R6.3 ends the game
        self.ply = 0
        self.to_move = 0
        self.winner = None
        self.reason = None
        self.over = False
        self.counters = None
        self._lineups = lineups

    @classmethod
    def start_position(
        cls,
        n: int,
        lineups: Lineups,
        first: int,
        picks: Picks | None = None,
        rules: Ruleset | None = None,
    ) -> Position:
        p = cls.__new__(cls)  # not __init__: its empty lists would be replaced at once
        p._begin(n, lineups, picks, rules)
        l0, l1 = lineups
        # pid = side * n + file; both sides start on their back rows (R1.3). Side, start and
        # the original ranks never change, so every game of a board shares the first two.
        p.side, p.start = START_SIDES[n], START_SQUARES[n]
        p.pos = START_SQUARES[n][:]
        p.board = START_BOARDS[n][:]
        p.orig = l0 + l1
        p.rank = p.orig[:]
        p.goal = [*map(_lanes(n, 0, l1).__getitem__, l0), *map(_lanes(n, 1, l0).__getitem__, l1)]
        # (no crown yet, n pieces a side)
        reach = p.move_reach
        p._finish_setup(first, (START_REACH[n] if reach == 2 else _START_REACH[(n, reach)])[:],
                        [n, n])  # fmt: skip
        return p

    @classmethod
    def from_challenge(
        cls,
        n: int,
        lineups: Lineups,
        position: Record,
        picks: Picks | None = None,
        rules: Ruleset | None = None,
    ) -> Position:
        """A set position (R9.1); the caller has checked consistency (R9.2)."""
        p = cls(n, lineups, picks, rules)
        to_move = position["to_move"]
        pieces = position["pieces"]
        for pc in pieces:
            square, start = parse_square(pc["square"], n), parse_square(pc["start"], n)
            p._add_piece(pc["side"], pc["rank"], square, start)
        p._finish_setup(to_move)
        stunned = []
        for pid, pc in enumerate(pieces):
            p.wounded[pid] = bool(pc["wounded"])
            if pc["stunned"]:
                stunned.append(pid)
        p._set_taken(*position["turns_taken"])
        for pid in stunned:  # R9.3: stunned by the previous turn
            if p.side[pid] == to_move:
                p._immobilise(pid, 0, "stunned")
                p.stun[pid] = 1
            else:
                p.stun[pid] = 0
        return p

    def _add_piece(self, s: int, rank: int, sq: int, start: int) -> int:
        pid = len(self.side)
        self.side.append(s)
        self.rank.append(rank)
        self.pos.append(sq)
        self.start.append(start)
        self.orig.append(self._lineups[s][start % self.n])
        self.goal.append(start if rank == self.crown else self._lane_square(s, rank))
        self.board[sq] = pid
        return pid

    def _lane_square(self, s: int, rank: int) -> int:
        return _lanes(self.n, s, self._lineups[1 - s])[rank]

    def _finish_setup(
        self, first: int, reach: list[int] | None = None, alive: list[int] | None = None
    ) -> None:
        """The rest of the state, from the pieces; `reach` and `alive` when the caller knows."""
        m = len(self.side)
        self.wounded = [False] * m
        self.stun = [NEVER] * m  # last ply through which the crown is catchable (R4.2)
        self.imm = [NEVER] * m  # last ply through which the piece is immobile (R2.3)
        self.why = [""] * m  # what made it immobile, for messages
        self.dash = [False] * m
        self.leap = [False] * m
        self.surge = [False] * m
        self.shield = [False] * m
        self.removed_at = [NEVER] * m
        # per pid, the reach of a move `play_log` may play on its plain path: the ruleset's
        # reach (2 under standard), a crown's crown_reach (1), 0 while it holds dash, leap or
        # surge (their moves go through `play`); and one more entry, -1, which an empty
        # square's pid (-1) reads: no move from there is plain
        if reach is None:
            rank, crown, plain, crowned = self.rank, self.crown, self.move_reach, self.crown_reach
            reach = (
                [crowned if r == crown else plain for r in rank] if crown in rank else [plain] * m
            )
            reach.append(-1)
        self.reach = reach
        self.home_pid = None
        self.to_move = self.first = first
        self.alive = alive or [self.side.count(0), self.side.count(1)]

    def _set_taken(self, t0: int, t1: int) -> None:
        """Turns taken before ply 0; then both reach the limit (R6.3) after `points_ply` plies:
        the side to move first takes the odd plies 1, 3, ... of the count, the other the even."""
        self.taken0 = (t0, t1)
        mine, theirs = (t0, t1) if self.first == 0 else (t1, t0)
        self.points_ply = max(2 * (self.limit - mine) - 1, 2 * (self.limit - theirs))

    @property
    def taken(self) -> tuple[int, int]:
        """Turns each side has taken (R2.5), counting a challenge's `turns_taken`: turns
        strictly alternate, so this follows from the ply."""
        t0, t1 = self.taken0
        later, sooner = self.ply // 2, (self.ply + 1) // 2
        return (t0 + sooner, t1 + later) if self.first == 0 else (t0 + later, t1 + sooner)

    # ------------------------------------------------------------------ queries

    def pieces(self, s: int) -> list[int]:
        side, pos = self.side, self.pos
        return [pid for pid in range(len(side)) if side[pid] == s and pos[pid] >= 0]

    def points(self) -> tuple[int, int]:
        """R6.3's totals: the ranks left, a crown counting N+1 or the ruleset's crown_points
        (RS7.8: only here; a crown's rank in fights stays N+1)."""
        tot = [0, 0]
        worth = self.crown_points
        if worth is None:  # (standard's: a crown counts its rank N+1)
            for pid, sq in enumerate(self.pos):
                if sq >= 0:
                    tot[self.side[pid]] += self.rank[pid]
            return tot[0], tot[1]
        crown = self.crown
        for pid, sq in enumerate(self.pos):
            if sq >= 0:
                rank = self.rank[pid]
                tot[self.side[pid]] += worth if rank == crown else rank
        return tot[0], tot[1]

    def is_crown(self, pid: int) -> bool:
        return self.rank[pid] == self.crown

    def immobile(self, pid: int) -> bool:
        return self.imm[pid] >= self.ply

    def catchable(self, pid: int) -> bool:
        return self.stun[pid] >= self.ply

    def sq(self, square: int) -> str:
        return square_name(square, self.n)

    def legal_moves(
        self, s: int, exclude: int = -1, captures: bool = False
    ) -> list[tuple[int, int]]:
        """Every legal (from, to) for side `s` now, by pid and then by square; `exclude` a pid
        that may not move; `captures`: only the moves onto an enemy piece."""
        out: list[tuple[int, int]] = []
        n, board, side, ply, imm = self.n, self.board, self.side, self.ply, self.imm
        rank, crown, rays_by_reach = self.rank, self.crown, RAYS[self.n]
        for pid, frm in enumerate(self.pos):
            if frm < 0 or side[pid] != s or pid == exclude or imm[pid] >= ply:
                continue
            if self.dash[pid]:
                reach = self.dash_reach
            else:
                reach = self.crown_reach if rank[pid] == crown else self.move_reach
            targets: list[int] = []
            for ray in rays_by_reach[reach][frm]:
                for to in ray:
                    occ = board[to]
                    if occ < 0:
                        if not captures:
                            targets.append(to)
                        continue
                    if side[occ] != s:
                        targets.append(to)
                    break
            if self.leap[pid] and not captures:  # (a leap only lands on an empty square)
                fx, fy, r = frm % n, frm // n, self.leap_reach
                for y in range(max(0, fy - r), min(n, fy + r + 1)):
                    for x in range(max(0, fx - r), min(n, fx + r + 1)):
                        if board[y * n + x] < 0:
                            targets.append(y * n + x)
                targets = list(set(targets))  # (a leap's squares and a line's may be the same)
            targets.sort()
            out.extend([(frm, to) for to in targets])
        return out

    def has_legal_move(self, s: int, exclude: int = -1) -> bool:
        n, board, side, ply = self.n, self.board, self.side, self.ply
        for pid, frm in enumerate(self.pos):
            if frm < 0 or side[pid] != s or pid == exclude or self.imm[pid] >= ply:
                continue
            fx, fy = frm % n, frm // n
            if self.leap[pid]:  # every empty square within leap_reach is reachable
                r = self.leap_reach
                for y in range(max(0, fy - r), min(n, fy + r + 1)):
                    for x in range(max(0, fx - r), min(n, fx + r + 1)):
                        if board[y * n + x] < 0:
                            return True
            for dx, dy in DIRECTIONS:
                x, y = fx + dx, fy + dy
                if 0 <= x < n and 0 <= y < n:
                    occ = board[y * n + x]
                    if occ < 0 or side[occ] != s:
                        return True
        return False

    # ------------------------------------------------------------------ powers (R8)

    def use_turn_power(self, turn: Turn) -> None:
        """Use the power of `turn` (a record's turn, which names one), before its move."""
        power = turn["power"]
        if power == "double":
            self.use_power(power, None)
            return
        target, index = turn["target"], SQUARE_INDEX[self.n]
        if power == "swap":
            self.use_power(power, (index[target[0]], index[target[1]]))
        else:
            self.use_power(power, index[target])

    def use_power(self, power: str, target: Target) -> None:
        """Use `power` for the side to move, before its move. `target` is a square int, a pair
        of square ints (swap), or None (double); -1 means off the board."""
        s, g = self.to_move, self.ply
        if self.picks is None:
            raise RuleBroken("R8.1", f"{power} used in a game without powers")
        if power not in self.picks[s]:
            raise RuleBroken("R8.1", f"side {s} did not pick {power}")
        if power in self.used[s]:
            raise RuleBroken("R8.1", f"{power} already used by side {s}")
        board, side = self.board, self.side
        # (the power decides which of the three the target is: a type cannot say so)
        square = cast(int, target)  # every power's but double's and swap's
        if power == "double":
            pass
        elif power == "swap":
            a, b = cast("tuple[int, int]", target)
            for t in (a, b):
                if t < 0:
                    raise RuleBroken("R8.6", "swap target is off the board")
                pid = board[t]
                if pid < 0 or side[pid] != s:
                    raise RuleBroken("R8.6", f"swap target {self.sq(t)} holds no own piece")
                if self.imm[pid] >= g:
                    raise RuleBroken("R8.6", f"swap with {self.sq(t)}, which is immobile")
            if a == b:
                raise RuleBroken("R8.6", f"swap needs two different pieces, got {self.sq(a)} twice")
            pa, pb = board[a], board[b]
            board[a], board[b] = pb, pa
            self.pos[pa], self.pos[pb] = b, a
        elif power == "recall":
            self._recall(square, s, g)
        elif power == "trap":
            if square < 0:
                raise RuleBroken("R8.8", "trap target is off the board")
            if board[square] >= 0:
                raise RuleBroken("R8.8", f"trap on {self.sq(square)}, which holds a piece")
            self.trap[s] = square
        elif power in ("freeze", "shove"):
            rule = "R8.5" if power == "freeze" else "R8.9"
            if square < 0:
                raise RuleBroken(rule, f"{power} target is off the board")
            pid = board[square]
            if pid < 0 or side[pid] == s:
                raise RuleBroken(rule, f"{power} target {self.sq(square)} holds no enemy piece")
            if power == "freeze":  # its owner's next K turns: plies g+1, g+3, .., g+2K-1
                self._immobilise(pid, g + 2 * self.freeze_for - 1, "frozen")
            else:
                self._shove(pid, square, s, g)
        else:  # dash, leap, surge, shield: one own piece
            rule = _OWN_PIECE_RULES[power]
            if square < 0:
                raise RuleBroken(rule, f"{power} target is off the board")
            pid = board[square]
            if pid < 0 or side[pid] != s:
                raise RuleBroken(rule, f"{power} target {self.sq(square)} holds no own piece")
            if power in ("leap", "surge") and self.rank[pid] == self.crown:
                raise RuleBroken(rule, f"{power} on {self.sq(square)}, which is a crown")
            if power != "shield" and self.imm[pid] >= g:
                raise RuleBroken("R2.3", f"{power} on {self.sq(square)}, which is immobile")
            getattr(self, power)[pid] = True
            if power != "shield":
                self.reach[pid] = 0
        self.used[s].add(power)

    def _recall(self, target: int, s: int, g: int) -> None:
        if target < 0:
            raise RuleBroken("R8.7", "recall target is off the board")
        name = self.sq(target)
        pid = self.start.index(target) if target in self.start else -1  # (a start is one pid's)
        if pid < 0 or self.side[pid] != s:
            raise RuleBroken("R8.7", f"recall: no piece of side {s} started on {name}")
        if self.pos[pid] >= 0:
            raise RuleBroken("R8.7", f"recall: the piece that started on {name} is on the board")
        if self.removed_at[pid] < g - 2:
            raise RuleBroken(
                "R8.7",
                f"recall: the piece that started on {name} was not removed during side {s}'s "
                "previous turn or the turn since",
            )
        if self.board[target] >= 0:
            raise RuleBroken("R8.7", f"recall: start square {name} is taken")
        rank = self.orig[pid]
        self.rank[pid] = rank
        self.reach[pid] = self.move_reach  # (rank: its original, never a crown)
        self.goal[pid] = self._lane_square(s, rank)
        self.wounded[pid] = False
        self.stun[pid] = NEVER
        self.dash[pid] = self.leap[pid] = self.surge[pid] = self.shield[pid] = False
        # R8.7: no power effects survive removal, immobility included (a frozen, trapped,
        # resting or stunned piece comes back free but for "it cannot move this turn")
        self.imm[pid] = g
        self.why[pid] = "recalled this turn"
        self.removed_at[pid] = NEVER
        self.pos[pid] = target
        self.board[target] = pid
        self.alive[s] += 1

    def _shove(self, pid: int, square: int, s: int, g: int) -> None:
        n, board, side = self.n, self.board, self.side
        x, y = square % n, square // n
        if not any(
            0 <= x + dx < n
            and 0 <= y + dy < n
            and board[(y + dy) * n + x + dx] >= 0
            and side[board[(y + dy) * n + x + dx]] == s
            for dx, dy in DIRECTIONS
        ):
            raise RuleBroken("R8.9", f"shove: {self.sq(square)} is next to none of your pieces")
        ny = y - 1 if side[pid] == 0 else y + 1  # towards its own back row
        if not 0 <= ny < n:
            raise RuleBroken("R8.9", f"shove: {self.sq(square)} would leave the board")
        dest = ny * n + x
        if board[dest] >= 0:
            raise RuleBroken(
                "R8.9", f"shove: {self.sq(square)} onto {self.sq(dest)}, which is taken"
            )
        board[square] = -1
        board[dest] = pid
        self.pos[pid] = dest
        if self.trap[s] == dest:  # the shover's trap springs; it is the other side's turn
            self.trap[s] = -1
            self._immobilise(pid, g + 2 * self.trap_for - 1, "trapped")
            if self.counters:
                self.counters.trapped[g] += 1

    # ------------------------------------------------------------------ moves (R2-R6)

    def try_quiet(self, frm: int, to: int) -> int:
        """A bot's look-ahead: make the legal move `frm`-`to` of the side to move in place when
        it is quiet (onto an empty square that is not the piece's goal, the piece holding no
        dash, leap or surge, no trap of the other side on the board), where `move` would change
        exactly the piece's square and nothing else; returns the pid, which `undo_quiet` takes
        to put it back. Anything else changes nothing and returns -1 (copy, then `move`). Not
        validated (the move must come from `legal_moves`) and not counted."""
        board = self.board
        pid = board[frm]
        if board[to] >= 0 or to == self.goal[pid] or self.trap[1 - self.to_move] >= 0:
            return -1
        if self.dash[pid] or self.leap[pid] or self.surge[pid]:
            return -1
        board[frm] = -1
        board[to] = pid
        self.pos[pid] = to
        return pid

    def undo_quiet(self, pid: int, frm: int, to: int) -> None:
        """Take back `try_quiet`'s move."""
        self.board[to] = -1
        self.board[frm] = pid
        self.pos[pid] = frm

    def move(self, frm: int, to: int, exclude: int = -1) -> int:
        """Make the move `frm`-`to` (square ints) for the side to move; see `play`."""
        if frm < 0 or to < 0:
            raise RuleBroken("R2.2", "the move leaves the board")
        n = self.n
        return self.play(MOVE_NAMES[n][frm * n * n + to], exclude)

    def play(self, text: str, exclude: int = -1) -> int:
        """Make the move `text` ("c1-c3") for the side to move; returns the pid that moved.
        Ends the game when a move wins (R5 first, then R6.1, then R6.2). `exclude`: a pid barred
        from moving (the crown of a double's first move, R8.3)."""
        frm, to, dist, passed, straight, near = self.geom[text]
        board = self.board
        if frm < 0:
            raise RuleBroken("R2.2", f"{text} leaves the {self.n}x{self.n} board")
        pid = board[frm]
        if pid < 0:
            raise RuleBroken("R2.2", f"{text}: no piece on {self.sq(frm)}")
        side, s = self.side, self.to_move
        if side[pid] != s:
            raise RuleBroken("R2.2", f"{text} moves an enemy piece")
        if pid == exclude:
            raise RuleBroken(
                "R8.3", f"{text}: a crown makes at most one of the two moves of a double"
            )
        g = self.ply
        if self.imm[pid] >= g:
            raise RuleBroken(
                "R2.3", f"{text}: {self.sq(frm)} is {self.why[pid]} and cannot move this turn"
            )
        if not dist:
            raise RuleBroken("R2.2", f"{text} does not move")
        crown = self.rank[pid] == self.crown
        occ = board[to]
        if occ >= 0 and side[occ] == s:
            raise RuleBroken("R2.2", f"{text} lands on an own piece")
        leap = self.leap[pid]
        dash = self.dash[pid]
        if leap:  # (the table's `near` is within 2: the ruleset's leap_reach decides)
            near = dist <= self.leap_reach
        if leap and occ < 0 and near:
            passed = ()  # R8.11: a leap passes over nothing
        else:
            reach = self.dash_reach if dash else (self.crown_reach if crown else self.move_reach)
            fault = None
            if not straight:
                fault = f"{text} is not a straight line"
            elif dist > reach:
                what = "a crown" if crown and not dash else "a piece"
                fault = f"{text} moves {dist} squares; {what} moves at most {reach}"
            else:
                for p in passed:
                    if board[p] >= 0:
                        fault = f"{text} passes over {self.sq(p)}, which holds a piece"
                        break
            if fault:
                if leap and near:
                    raise RuleBroken("R8.11", f"{text}: a leap cannot attack")
                raise RuleBroken("R2.2", fault)
        # Legal. From here on the move happens.
        c = self.counters
        surged = self.surge[pid]
        if leap or surged or dash:
            self.dash[pid] = self.leap[pid] = self.surge[pid] = False
            self.reach[pid] = self.crown_reach if crown else self.move_reach
        if c:  # facts for storage; the plain verifier does not need them
            c.moved[pid] += 1
            if c.revealed_at[pid] is None:
                c.revealed_at[pid] = g
        trap = self.trap[1 - s]
        end = to
        if trap >= 0 and (trap == to and occ < 0 or trap in passed):
            end = trap  # R8.8: stopped on the trap, no fight
            occ = -1
        if occ < 0:
            board[frm] = -1
            board[end] = pid
            self.pos[pid] = end
        else:
            end = self._fight(pid, occ, frm, to, surged, g)
        if end >= 0:
            if end == trap and self.trap[1 - s] == trap:
                self.trap[1 - s] = -1  # sprung on its owner's turn: the rest of it, then K more
                self._immobilise(pid, g + 2 * self.trap_for, "trapped")
                if c:
                    c.trapped[g] += 1
            if self._arrive(pid, end):
                return pid  # home: the game is over, before any wipeout check
        if occ >= 0:
            self._check_wipeout()
        return pid

    def play_log(self, turns: list[Turn], play_turn: Callable[[Position, Turn], None]) -> None:
        """Play `turns` in order; `play_turn(self, turn)` plays any turn but the common one.

        The common turn is one move, no power, the game not over. When its move is plain (an
        own mobile piece with no power on it, a straight move within its reach over empty
        squares, no trap of the other side on the board: most of a game), it is played here on
        locals, which is most of the replay's time; any other (and every fault, for its message)
        goes to `play`, so the two cannot disagree on what is legal. Raises `RuleBroken` at the
        first broken rule; the turn that broke is then `self.ply` (a turn is a ply, and it only
        ends once played).

        The ply and the side to move live in locals `g` and `s` here: they are written back to
        the position before every call that reads them (and at the end), and read again after
        one that may change them (`play_turn`). Only calls can end the game, so `over` too."""
        plain, board, side, pos = self.plain, self.board, self.side, self.pos
        imm, trap, goal = self.imm, self.trap, self.goal
        reach, points_ply, counters = self.reach, self.points_ply, self.counters
        moved, revealed = (counters.moved, counters.revealed_at) if counters else _NOT_COUNTED
        s, g, over = self.to_move, self.ply, self.over
        for turn in turns:
            if over or "power" in turn:  # a turn past the end, or one with a power, which then
                # goes on as a turn without one unless it is a double or not one move
                self.ply, self.to_move = g, s
                if over or turn["power"] == "double" or len(turn["moves"]) != 1:
                    play_turn(self, turn)
                    s, g, over = self.to_move, self.ply, self.over
                    continue
                self.use_turn_power(turn)
            try:
                (move,) = turn["moves"]
            except ValueError:  # a pass, or two moves without a double: rare, and no check
                move = None
            if move is None:
                self.ply, self.to_move = g, s
                play_turn(self, turn)
                s, g, over = self.to_move, self.ply, self.over
                continue
            frm, to, need, mid = plain[move]
            # (frm is -1 only when need is _OFF_PLAIN, and an empty square's pid is -1: both
            # read the last entry of `reach`, which is -1 and sends the move to `play`)
            pid = board[frm]
            if (
                need <= reach[pid]
                and side[pid] == s
                and imm[pid] < g
                and (mid < 0 or board[mid] < 0)
                and trap[1 - s] < 0
            ):
                occ = board[to]
                if occ < 0:  # onto an empty square: the most common move of all
                    if counters:  # facts: one more move, which reveals the piece (R7.2)
                        moved[pid] += 1
                        if revealed[pid] is None:
                            revealed[pid] = g
                    board[frm] = -1
                    board[to] = pid
                    pos[pid] = to
                    if to == goal[pid]:
                        self.ply, self.to_move = g, s
                        over = self._arrive(pid, to)  # R5.1 or R6.1
                else:
                    self.ply, self.to_move = g, s
                    if side[occ] != s:
                        self._plain_fight(pid, frm, to, occ)
                    else:
                        self.play(move)  # onto an own piece: `play` says why not
                    over = self.over
            else:
                self.ply, self.to_move = g, s
                self.play(move)
                over = self.over
            g += 1  # end_turn, inline
            s = 1 - s
            if g == points_ply and not over:
                self.ply, self.to_move = g, s
                self._end_by_points()
                over = True
        self.ply, self.to_move = g, s

    def _plain_fight(self, pid: int, frm: int, to: int, occ: int) -> None:
        """`play`'s effects for a plain move (see `play_log`) onto an enemy: the fight (R3, R4),
        R5.1 / R6.1 for an attacker that ends on a square, then R6.2 unless it came home."""
        c = self.counters
        if c:
            self._count_move(c, pid)
        end = self._fight(pid, occ, frm, to, False, self.ply)
        if end >= 0 and self._arrive(pid, end):
            return  # home: the game is over, as `play` returns before the wipeout check
        self._check_wipeout()

    def _count_move(self, c: Counters, pid: int) -> None:
        """Facts: one more move of `pid`, which reveals it (R7.2)."""
        c.moved[pid] += 1
        if c.revealed_at[pid] is None:
            c.revealed_at[pid] = self.ply

    def _arrive(self, pid: int, end: int) -> bool:
        """R5.1 and R6.1 for a piece that ended its move on `end`: promote it, or end the game
        when a crown came home (then True)."""
        if end != self.goal[pid]:
            return False
        rank = self.rank
        if rank[pid] == self.crown:
            self._end(self.to_move, "home")  # R6.1
            self.home_pid = pid
            return True
        rank[pid] = self.crown  # R5.1: a fresh crown at once
        self.reach[pid] = self.crown_reach
        self.wounded[pid] = False
        self.goal[pid] = self.start[pid]
        c = self.counters
        if c:
            c.promotions[self.ply] += 1
            c.promoted_at[pid] = self.ply
        return False

    def _immobilise(self, pid: int, through: int, why: str) -> None:
        if through >= self.imm[pid]:
            self.imm[pid] = through
            self.why[pid] = why

    def _fight(self, a: int, d: int, frm: int, to: int, surged: bool, g: int) -> int:
        """Attacker `a` from `frm` onto defender `d` on `to` (R3, R4, R8.10, R8.12).
        Returns where the attacker ends, or -1 when it is removed."""
        rank = self.rank
        win = self.outcome[rank[a]][rank[d]]  # (R3, R4.1; `_outcomes` says what more means)
        c = self.counters
        if c:
            c.fights[g] += 1
            if c.revealed_at[d] is None:
                c.revealed_at[d] = g
        if win > 1:
            if win == _SURGE_WINS:
                if surged:
                    win = 1
                    if self.rest_for:  # won by the surge: the rest of this turn, then K more
                        self._immobilise(a, g + 2 * self.rest_for, "resting after a surge")
                else:
                    win = -1
            elif self.stun[d] >= g:
                win = 1  # R4.3: a stunned crown is caught
                if c:
                    c.catches[g] += 1
            elif rank[a] != self.crown:
                win = -1  # R4.2: the attacker loses, the crown is stunned and wounded
                self.wounded[d] = True
                self.stun[d] = g + 2
                self._immobilise(d, g + 1, "stunned")
                if c:
                    c.stuns[g] += 1
                    c.stunned_count[d] += 1
            else:  # crown vs crown, R4.4
                wa, wd = self.wounded[a], self.wounded[d]
                win = 0 if wa == wd else (1 if wd else -1)
        shield = self.shield  # (looked up here: most fights involve no shield)
        a_survives = win == 1 or shield[a] and self._shielded(a)
        d_survives = win == -1 or shield[d] and self._shielded(d)
        if not d_survives:
            self._remove(d, g)
        if not a_survives:
            self._remove(a, g)
            return -1
        if not d_survives:  # the square is free: a surviving attacker takes it (also in a
            # shielded equal trade, as the reference records do)
            self.board[frm] = -1
            self.board[to] = a
            self.pos[a] = to
            return to
        return frm  # R8.12/R8.15: sent back to its own square

    def _shielded(self, pid: int) -> bool:
        if self.shield[pid]:
            self.shield[pid] = False
            return True
        return False

    def _remove(self, pid: int, g: int) -> None:
        self.alive[self.side[pid]] -= 1
        self.board[self.pos[pid]] = -1
        self.pos[pid] = -1
        self.removed_at[pid] = g
        if not self.reach[pid]:  # it holds dash, leap or surge: lost with it (R8.13)
            self.dash[pid] = self.leap[pid] = self.surge[pid] = False
        self.shield[pid] = False  # (R8.13)
        if self.counters:
            self.counters.removed[g] += 1

    def _check_wipeout(self) -> None:
        a0, a1 = self.alive
        if a0 and a1:
            return
        self._end(None if not (a0 or a1) else (0 if a0 else 1), "wipeout")

    def _end(self, winner: int | None, reason: str) -> None:
        self.over = True
        self.winner = winner
        self.reason = reason

    def end_turn(self) -> None:
        """Close the turn of the side to move: count it, check points (R6.3), pass the turn."""
        self.ply += 1
        self.to_move = 1 - self.to_move
        if self.ply == self.points_ply and not self.over:
            self._end_by_points()

    def _end_by_points(self) -> None:
        p0, p1 = self.points()
        self._end(None if p0 == p1 else (0 if p0 > p1 else 1), "points")


_LANES: dict[tuple[int, ...], tuple[int, ...]] = {}


def _lanes(n: int, s: int, far: list[int]) -> tuple[int, ...]:
    """For side `s`, by rank: the square where that rank promotes, on the far row, whose
    lineup is `far` (R5.1: where the other side's piece of the same rank started). Cached:
    there are n! lineups."""
    key = (n, s, *far)
    lanes = _LANES.get(key)
    if lanes is None:
        row = back_row(1 - s, n) * n
        by_rank = [-1] * (n + 2)  # (a crown, rank n + 1, has no lane)
        for file, rank in enumerate(far):
            by_rank[rank] = row + file
        lanes = _LANES[key] = tuple(by_rank)
    return lanes


def _geometry(n: int) -> dict[str, Geometry]:
    """Per move text: (from, to, distance, squares passed over, straight?, within 2x2?)."""
    table: dict[str, Geometry] = {}
    for text, (fx, fy, tx, ty) in MOVE_XY.items():
        on = fx < n and fy < n and tx < n and ty < n
        frm, to = (fy * n + fx, ty * n + tx) if on else (-1, -1)
        dx, dy = tx - fx, ty - fy
        adx, ady = abs(dx), abs(dy)
        straight = dx == 0 or dy == 0 or adx == ady
        dist = max(adx, ady)
        passed: tuple[int, ...] = ()
        if straight and on and dist > 1:
            sx, sy = (dx > 0) - (dx < 0), (dy > 0) - (dy < 0)
            passed = tuple((fy + sy * i) * n + fx + sx * i for i in range(1, dist))
        table[text] = (frm, to, dist, passed, straight, adx <= 2 and ady <= 2)
    return table


_CROWN_DEFENDS = 2  # the fight depends on the crown's stun and wounds (R4.2-R4.4)
_SURGE_WINS = 3  # the attacker loses (R3.3) unless surged (R8.10)


def _outcomes(n: int) -> list[list[int]]:
    """By attacker's rank, then defender's (crown n + 1): 1 the attacker wins, -1 it loses,
    0 both are removed (R3, R4.1), or one of the two cases above."""
    crown, k = n + 1, (n - 1) // 2
    table = [[0] * (crown + 1) for _ in range(crown + 1)]
    for ra in range(1, crown + 1):
        for rd in range(1, crown + 1):
            if rd == crown:
                win = _CROWN_DEFENDS
            elif ra == crown:
                win = 1  # R4.1
            else:
                diff = (ra - rd) % n
                win = 0 if diff == 0 else 1 if diff <= k else _SURGE_WINS if diff == k + 1 else -1
            table[ra][rd] = win
    return table


_OFF_PLAIN = 99  # more than any reach of any ruleset (RS3: at most 3; 0 under dash, leap, surge)


def _plain(geometry: dict[str, Geometry]) -> dict[str, tuple[int, int, int, int]]:
    """Per move text: (from, to, reach needed, square passed over or -1) for the moves `play_log`
    may take inline: straight, on the board, one or two squares; for any other, a reach needed
    that no piece has (`_OFF_PLAIN`), so that one comparison sends it to `play`."""
    table = {}
    for text, (frm, to, dist, passed, straight, _near) in geometry.items():
        fast = frm >= 0 and straight and 1 <= dist <= 2
        table[text] = (frm, to, dist if fast else _OFF_PLAIN, passed[0] if fast and passed else -1)
    return table


GEOMETRY = {n: _geometry(n) for n in BOARDS}
PLAIN = {n: _plain(GEOMETRY[n]) for n in BOARDS}
OUTCOMES = {n: _outcomes(n) for n in BOARDS}
START_SIDES = {n: [0] * n + [1] * n for n in BOARDS}
START_SQUARES = {n: list(range(n)) + list(range((n - 1) * n, n * n)) for n in BOARDS}
# the `reach` list of a start position (see `_finish_setup`), by board and the ruleset's reach
_START_REACH = {(n, r): [r] * (2 * n) + [-1] for n in BOARDS for r in (1, 2, 3)}
START_REACH = {n: _START_REACH[(n, 2)] for n in BOARDS}  # (standard's, one lookup)


_STANDARD = STANDARD["slow6"]


def _values(rules: Ruleset, n: int) -> tuple[Any, ...]:
    """The parameters a Position reads, in the order `_begin` unpacks them."""
    p = rules.params
    return (
        p[f"turn_limit_{n}"], p["reach"], p["crown_reach"], p["dash_reach"], p["leap_reach"],
        p["freeze_turns"], p["trap_turns"], p["surge_rest"], p["crown_points"],
    )  # fmt: skip


_STANDARD_VALUES = {n: _values(_STANDARD, n) for n in BOARDS}
START_BOARDS = {
    n: [START_SQUARES[n].index(q) if q in START_SQUARES[n] else -1 for q in range(n * n)]
    for n in BOARDS
}


def _rays(n: int, reach: int) -> list[tuple[tuple[int, ...], ...]]:
    """Per square, per direction (of those that leave it), the squares 1..reach away on the
    board, nearest first: where a piece of that reach may move, up to the first piece."""
    out = []
    for sq in range(n * n):
        x, y = sq % n, sq // n
        rays = []
        for dx, dy in DIRECTIONS:
            ray = tuple(
                (y + dy * k) * n + x + dx * k
                for k in range(1, reach + 1)
                if 0 <= x + dx * k < n and 0 <= y + dy * k < n
            )
            if ray:
                rays.append(ray)
        out.append(tuple(rays))
    return out


# by board, then by reach (0..7: past every ruleset's, RS3), then square
RAYS = {n: [_rays(n, reach) for reach in range(8)] for n in BOARDS}
MOVE_NAMES = {
    n: [f"{square_name(a, n)}-{square_name(b, n)}" for a in range(n * n) for b in range(n * n)]
    for n in BOARDS
}
