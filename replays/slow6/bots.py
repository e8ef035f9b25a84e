"""Slow6 players: a uniformly random one (level 0) and four bots, 1 (careful) to 4 (hard).

They play through the same `Position` the verifier replays with, so everything they play is
legal by construction. A bot's turn is `(power, target, moves)` with squares as ints.

Levels differ in what they see:
  1  one ply, material and the safety of its own pieces (careful: it rarely hangs a piece),
     with a lot of noise in its judgement
  2  one ply, plus progress towards promotion and home, less noise
  3  two plies (its move, the best reply), safety at the leaves
  4  four plies (alpha-beta; captures only on the third and fourth, so a capture is seen
     with its recapture), almost no noise, and two plies deep when weighing a power
"""

from __future__ import annotations

import random
from typing import cast

from ..rulesets import Ruleset
from ..vocabulary import BOARDS, POWERS
from .position import Position, RuleBroken, Target

Move = tuple[int, int]  # (from, to) squares
Turn = tuple[str | None, Target, list[Move]]  # (power, its target, moves)


class Player:
    level = 0
    power_rate = 0.2  # chance per turn of trying a power when one is left

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick_powers(self, rules: Ruleset | None = None) -> list[str]:
        """The powers this player picks (R8.1): `picks` of those the ruleset offers."""
        if rules is None:
            return self.rng.sample(POWERS, 3)
        offered = cast("tuple[str, ...]", rules.params["powers"])
        return self.rng.sample(offered, cast(int, rules.params["picks"]))

    def choose_lineup(self, n: int) -> list[int]:
        lineup = list(range(1, n + 1))
        self.rng.shuffle(lineup)
        return lineup

    def turn(self, pos: Position) -> Turn:
        s = pos.to_move
        power: str | None = None
        target: Target = None
        if pos.picks and self.rng.random() < self.power_rate:
            options = power_options(pos, s, self.rng)
            if options:
                power, target = self.rng.choice(options)
        work = pos.copy()
        if power:
            work.use_power(power, target)
        moves: list[Move] = []
        first = self._pick(work, work.legal_moves(s))
        if first:
            moves.append(first)
            mover = work.move(*first)
            if power == "double" and not work.over:
                exclude = mover if work.rank[mover] == work.crown else -1
                second = self._pick(work, work.legal_moves(s, exclude))
                if second:
                    moves.append(second)
        return power, target, moves

    def _pick(self, pos: Position, moves: list[Move]) -> Move | None:
        return self.rng.choice(moves) if moves else None


class Bot(Player):
    def __init__(self, rng: random.Random, level: int) -> None:
        super().__init__(rng)
        self.level = level
        self.depth = {1: 1, 2: 1, 3: 2, 4: 4}[level]
        self.quiet = 2 if level == 4 else 0  # the last plies look at captures only
        self.progress = level >= 2
        self.safety = True
        self.power_rate = (0.0, 0.25, 0.35, 0.45, 0.6)[level]
        self.noise = (0.0, 2.0, 1.0, 0.5, 0.05)[level]
        self.power_depth = 2 if level == 4 else 1  # a power is weighed less deeply

    def turn(self, pos: Position) -> Turn:
        s = pos.to_move
        # (score, moves), or (score, power, target, moves) once a power is worth its use
        best_turn: tuple[float, list[Move]] | tuple[float, str, Target, list[Move]]
        best_turn = self._best_plain(pos, s)
        if pos.picks and self.rng.random() < self.power_rate:
            options = power_options(pos, s, self.rng, limit=6)
            best_score = best_turn[0]
            for power, target in options:
                work = pos.copy()
                try:
                    work.use_power(power, target)
                except RuleBroken:
                    continue
                score, moves = self._best_moves(work, s, power == "double", self.power_depth)
                # A power spent must buy something: prefer holding it otherwise.
                if score > best_score + 0.6:
                    best_score, best_turn = score, (score, power, target, moves)
            if len(best_turn) == 4:
                return best_turn[1], best_turn[2], best_turn[3]
        return None, None, best_turn[1]

    def _best_plain(self, pos: Position, s: int) -> tuple[float, list[Move]]:
        score, moves = self._best_moves(pos, s, False, self.depth)
        return score, moves

    def _best_moves(
        self, pos: Position, s: int, double: bool, depth: int
    ) -> tuple[float, list[Move]]:
        moves = pos.legal_moves(s)
        if not moves:
            return self.evaluate(pos, s), []
        best_line: list[Move]
        best, best_line = -1e9, []
        for mv in moves:
            line = [mv]
            # Most moves are quiet: made and taken back in place, without a copy.
            quiet = -1 if double else pos.try_quiet(*mv)
            if quiet >= 0:
                work = pos
            else:
                work = pos.copy()
                mover = work.move(*mv)
                if double and not work.over:
                    exclude = mover if work.rank[mover] == work.crown else -1
                    seconds = work.legal_moves(s, exclude)
                    if seconds:
                        sub_best, sub_mv = -1e9, seconds[0]  # (every value beats -1e9)
                        for mv2 in seconds:
                            pid = work.try_quiet(*mv2)
                            if pid >= 0:
                                v = self.evaluate(work, s)
                                work.undo_quiet(pid, *mv2)
                            else:
                                w2 = work.copy()
                                w2.move(*mv2)
                                v = self.evaluate(w2, s)
                            if v > sub_best:
                                sub_best, sub_mv = v, mv2
                        work.move(*sub_mv)
                        line.append(sub_mv)
            # Moves that cannot beat the best even with full noise may be cut short.
            value = self._value(work, s, depth - 1, best - self.noise, 1e9)
            if quiet >= 0:
                pos.undo_quiet(quiet, *mv)
            value += self.rng.random() * self.noise
            if value > best:
                best, best_line = value, line
        return best, best_line

    def _value(self, pos: Position, s: int, plies: int, alpha: float, beta: float) -> float:
        """Minimax value for `s` of `pos` (just after a move), looking `plies` more moves
        ahead with alpha-beta pruning; captures are searched first."""
        if pos.over or plies == 0:
            return self.evaluate(pos, s)
        pos = pos.copy()
        pos.end_turn()
        if pos.over:
            return self.evaluate(pos, s)
        mover = pos.to_move
        maximize = mover == s
        if plies <= self.quiet:
            # The last plies look at captures only (a quiescence search, so that the horizon
            # does not fall between a capture and its recapture); not capturing ("standing
            # pat") is allowed.
            moves = pos.legal_moves(mover, captures=True)
            best = self.evaluate(pos, s)
        else:
            board = pos.board
            moves = sorted(pos.legal_moves(mover), key=lambda mv: board[mv[1]] < 0)
            if not moves:
                return self.evaluate(pos, s)
            best = -1e9 if maximize else 1e9
        for mv in moves:
            pid = pos.try_quiet(*mv)  # (`pos` is this call's own copy)
            if pid >= 0:
                v = self._value(pos, s, plies - 1, alpha, beta)
                pos.undo_quiet(pid, *mv)
            else:
                work = pos.copy()
                work.move(*mv)
                v = self._value(work, s, plies - 1, alpha, beta)
            if maximize:
                if v > best:
                    best = v
                if v > alpha:
                    alpha = v
            else:
                if v < best:
                    best = v
                if v < beta:
                    beta = v
            if alpha >= beta:
                break
        return best

    def evaluate(self, pos: Position, s: int) -> float:
        if pos.over:
            if pos.winner is None:
                return 0.0
            return 1000.0 if pos.winner == s else -1000.0
        crown, rank, side = pos.crown, pos.rank, pos.side
        score = 0.0
        # (the terms are added in pid order, as floats: the same sum to the last bit as
        # `_piece_value` term by term, so the same games)
        if self.progress:
            plain_row, crown_row = PROGRESS[pos.n]
            goal = pos.goal
            for pid, sq in enumerate(pos.pos):
                if sq < 0:
                    continue
                r = rank[pid]
                v = crown_row[sq][goal[pid]] if r == crown else r + plain_row[sq][goal[pid]]
                score += v if side[pid] == s else -v
        else:
            for pid, sq in enumerate(pos.pos):
                if sq < 0:
                    continue
                r = rank[pid]
                v = r + 3.0 if r == crown else r + 0.0
                score += v if side[pid] == s else -v
        if self.safety:
            mine, theirs = hanging(pos) if s == 0 else hanging(pos)[::-1]
            score += 0.3 * theirs - 0.8 * mine
        return score


def _piece_value(rank: int, crown: int, sq: int, goal: int, n: int, progress: bool) -> float:
    """One piece's worth in `Bot.evaluate` (the tables below are made from this)."""
    v = rank + (3.0 if rank == crown else 0.0)
    if progress:
        away = _dist(sq, goal, n)  # from home, or from where it promotes
        v += 2.0 - 0.5 * away if rank == crown else 1.5 - 0.3 * away
    return v


def _dist(a: int, b: int, n: int) -> int:
    return max(abs(a % n - b % n), abs(a // n - b // n))


def _progress(n: int) -> tuple[list[list[float]], list[list[float]]]:
    """Per square, per goal square, what progress adds to a non-crown's rank (a float that
    the rank is added to, as `_piece_value` adds it), and a crown's whole worth. Each row has
    one more entry, read by a goal of -1, so that the table answers as the formula would."""
    crown, squares = n + 1, [*range(n * n), -1]
    plain = [[_piece_value(0, crown, sq, g, n, True) for g in squares] for sq in range(n * n)]
    crowned = [[_piece_value(crown, crown, sq, g, n, True) for g in squares] for sq in range(n * n)]
    return plain, crowned


PROGRESS = {n: _progress(n) for n in BOARDS}


def _lines(n: int) -> list[list[int]]:
    """Per square a, per square b: whether a piece on a could reach b next move, as `hanging`
    counts it: -1 next to it, the square between them when b is two steps away in a straight
    line (so that it must be empty), -2 neither."""
    out = []
    for a in range(n * n):
        ax, ay = a % n, a // n
        row = []
        for b in range(n * n):
            dx, dy = b % n - ax, b // n - ay
            if a != b and max(abs(dx), abs(dy)) == 1:
                row.append(-1)
            elif a != b and dx in (-2, 0, 2) and dy in (-2, 0, 2):
                row.append((ay + dy // 2) * n + ax + dx // 2)
            else:
                row.append(-2)
        out.append(row)
    return out


LINES = {n: _lines(n) for n in BOARDS}
# per board, per square: the squares `LINES` says a piece there could reach, as a bit mask
IN_REACH = {n: [sum(1 << b for b, x in enumerate(row) if x != -2) for row in LINES[n]]
            for n in BOARDS}  # fmt: skip


def hanging(pos: Position) -> tuple[float, float]:
    """Per side, the ranks of its pieces that an enemy piece could take next move (roughly:
    the first piece along each line within the attacker's reach, a crown's 1, another's 2)."""
    board, side, rank, crown = pos.board, pos.side, pos.rank, pos.crown
    stun, ply, outcome, lines = pos.stun, pos.ply, pos.outcome, LINES[pos.n]
    theirs = 0  # side 1's squares, a bit each
    for pid, sq in enumerate(pos.pos):
        if sq >= 0 and side[pid]:
            theirs |= 1 << sq
    in_reach = IN_REACH[pos.n]
    lost0 = lost1 = 0  # (ints: the sum does not depend on the order)
    # Each pair of enemies in reach of each other once, both ways: a crown reaches one step,
    # another piece two, over an empty square; a crown is taken only while stunned (R4.3), any
    # other piece as the engine's table says (whose entry for a crown defending is never 1).
    for a, sq in enumerate(pos.pos):
        if sq < 0 or side[a]:
            continue
        near = theirs & in_reach[sq]
        if not near:
            continue
        line, ra = lines[sq], rank[a]
        wins_a, a_crown = outcome[ra], ra == crown
        while near:
            bit = near & -near
            near ^= bit
            sqd = bit.bit_length() - 1
            d, between = board[sqd], line[sqd]
            rd = rank[d]
            d_crown = rd == crown
            if between >= 0:  # two steps: no crown reaches, and nothing may stand between
                if board[between] >= 0:
                    continue
                if not a_crown and (wins_a[rd] == 1 or d_crown and stun[d] >= ply):
                    lost1 += rd
                if not d_crown and (outcome[rd][ra] == 1 or a_crown and stun[a] >= ply):
                    lost0 += ra
                continue
            if wins_a[rd] == 1 or d_crown and stun[d] >= ply:
                lost1 += rd
            if outcome[rd][ra] == 1 or a_crown and stun[a] >= ply:
                lost0 += ra
    return float(lost0), float(lost1)


def power_options(
    pos: Position, s: int, rng: random.Random, limit: int = 4
) -> list[tuple[str, Target]]:
    """Some legal (power, target) uses for side `s` now, at most `limit` per power."""
    if pos.picks is None:  # a game without powers
        return []
    picks = pos.picks[s] - pos.used[s]
    n = pos.n
    own = [p for p in pos.pieces(s)]
    enemy = [p for p in pos.pieces(1 - s)]
    empty: list[Target] = [sq for sq in range(n * n) if pos.board[sq] < 0]
    out: list[tuple[str, Target]] = []
    for power in sorted(picks):
        cands: list[Target]
        if power == "double":
            cands = [None]
        elif power == "swap":
            cands = [(pos.pos[a], pos.pos[b]) for a in own for b in own if a < b]
        elif power == "recall":
            cands = [pos.start[p] for p in range(len(pos.side))
                     if pos.side[p] == s and pos.pos[p] < 0]  # fmt: skip
        elif power == "trap":
            cands = empty
        elif power in ("freeze", "shove"):
            cands = [pos.pos[p] for p in enemy]
        else:
            cands = [pos.pos[p] for p in own]
        rng.shuffle(cands)
        found = 0
        for t in cands:
            work = pos.copy()
            try:
                work.use_power(power, t)
            except RuleBroken:
                continue
            out.append((power, t))
            found += 1
            if found >= limit:
                break
    return out


def make_player(level: int, rng: random.Random) -> Player:
    return Player(rng) if level == 0 else Bot(rng, level)
