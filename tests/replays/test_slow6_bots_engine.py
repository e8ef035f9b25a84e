"""The bots' fast paths against what they stand for: the quiet look-ahead move against `move`
on a copy, `hanging` and `evaluate` against their rules written out plainly, and the bots'
games under a candidate ruleset against the verifier (the lab never replays its own games)."""

from __future__ import annotations

import random

import pytest

from replays import lab
from replays.rulesets import STANDARD, parse_toml
from replays.slow6 import bots
from replays.slow6.board import DIRECTIONS
from replays.slow6.position import _COPIED_SLOTS, _SHARED_SLOTS, Position
from replays.slow6.simulate import simulate_game
from replays.slow6.verify import replay

WIDE = parse_toml(
    'name = "wide"\ngame = "slow6"\n[params]\nreach = 3\ncrown_reach = 2\ndash_reach = 5\n'
    "leap_reach = 3\ntrap_turns = 4\n"
)


def _state(pos: Position) -> dict:
    return {name: getattr(pos, name) for name in (*_SHARED_SLOTS, *_COPIED_SLOTS, "used")}


def _positions(board: int, rules, games: int, levels=(1, 2)):
    """Every position (before each turn) of a few lab games with powers."""
    for i in range(games):
        st = lab.setting(4, i, board, levels)
        picks = (lab.picks_for(st.preference[0], rules), lab.picks_for(st.preference[1], rules))
        pos = Position.start_position(board, [st.lineups[0], st.lineups[1]], st.first, picks, rules)
        players = [bots.make_player(st.levels[s], random.Random(f"{i}/{s}")) for s in (0, 1)]
        while not pos.over:
            yield pos
            power, target, moves = players[pos.to_move].turn(pos)
            if power:
                pos.use_power(power, target)
            for k, mv in enumerate(moves):
                pos.move(*mv)
                if pos.over and k == 0:
                    break
            pos.end_turn()


@pytest.mark.parametrize(("board", "rules"), [(5, STANDARD["slow6"]), (7, WIDE)])
def test_a_quiet_trial_move_changes_what_move_changes_and_is_taken_back(board, rules):
    quiet = loud = 0
    for pos in _positions(board, rules, games=3):
        before = _state(pos.copy())
        for mv in pos.legal_moves(pos.to_move):
            moved = pos.copy()
            moved.move(*mv)
            pid = pos.try_quiet(*mv)
            if pid < 0:
                loud += 1
                assert _state(pos) == before, mv  # nothing changed
                continue
            quiet += 1
            assert _state(pos) == _state(moved), mv
            pos.undo_quiet(pid, *mv)
            assert _state(pos) == before, mv
    assert quiet > 1000 and loud > 100, (quiet, loud)


def _hanging(pos: Position) -> tuple[float, float]:
    """R4's captures one move ahead, walked square by square: the first piece along each
    line within 1 (a crown) or 2 squares, if an enemy it would take."""
    n, lost = pos.n, [0, 0]
    for a, sq in enumerate(pos.pos):
        if sq < 0:
            continue
        reach = 1 if pos.rank[a] == pos.crown else 2
        for dx, dy in DIRECTIONS:
            x, y = sq % n, sq // n
            for _ in range(reach):
                x, y = x + dx, y + dy
                if not (0 <= x < n and 0 <= y < n):
                    break
                d = pos.board[y * n + x]
                if d < 0:
                    continue
                if pos.side[d] != pos.side[a]:
                    rd = pos.rank[d]
                    if rd == pos.crown:
                        taken = pos.stun[d] >= pos.ply
                    else:
                        taken = pos.outcome[pos.rank[a]][rd] == 1
                    lost[pos.side[d]] += rd if taken else 0
                break
    return float(lost[0]), float(lost[1])


def _evaluate(bot: bots.Bot, pos: Position, s: int) -> float:
    if pos.over:
        return 0.0 if pos.winner is None else (1000.0 if pos.winner == s else -1000.0)
    n, score = pos.n, 0.0
    for pid, sq in enumerate(pos.pos):
        if sq < 0:
            continue
        r = pos.rank[pid]
        v = r + (3.0 if r == pos.crown else 0.0)
        if bot.progress:
            g = pos.goal[pid]
            away = max(abs(sq % n - g % n), abs(sq // n - g // n))
            v += 2.0 - 0.5 * away if r == pos.crown else 1.5 - 0.3 * away
        score += v if pos.side[pid] == s else -v
    lost = _hanging(pos)
    score += 0.3 * lost[1 - s] - 0.8 * lost[s]
    return score


@pytest.mark.parametrize(("board", "rules"), [(5, STANDARD["slow6"]), (7, WIDE)])
def test_hanging_and_evaluate_are_their_rules_to_the_last_bit(board, rules):
    plain, progress = bots.Bot(random.Random(0), 1), bots.Bot(random.Random(0), 2)
    seen = hung = stunned = 0
    for pos in _positions(board, rules, games=4):
        for mv in pos.legal_moves(pos.to_move):
            after = pos.copy()
            after.move(*mv)
            assert bots.hanging(after) == _hanging(after)
            for s in (0, 1):
                # (==, not approx: the bots compare these sums, so a last bit decides games)
                assert plain.evaluate(after, s) == _evaluate(plain, after, s)
                assert progress.evaluate(after, s) == _evaluate(progress, after, s)
            seen += 1
            hung += any(_hanging(after))
            stunned += any(after.stun[p] >= after.ply for p in range(len(after.side)))
    assert seen > 1000 and hung > seen // 4 and stunned > 10, (seen, hung, stunned)


def test_the_bots_games_under_a_candidate_ruleset_are_valid_to_the_verifier():
    """The lab plays without replaying; the verifier agrees with the engine on its games."""
    rng = random.Random(3)
    for i, levels in enumerate([(1, 2), (2, 1), (3, 2), (2, 3)] * 2):
        board = 5 if i % 2 else 7
        rec = simulate_game(rng, board=board, powers=True, levels=levels, rules=WIDE)
        verdict, _ = replay(rec, ruleset=WIDE)
        assert verdict.ok, verdict.message
