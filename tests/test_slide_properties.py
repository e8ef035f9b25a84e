"""Property tests of the Slide verifier: simulated games verify, and any single corruption of one
is judged exactly as an independent, deliberately plain reading of the rules judges it.

The reference below shares no code with `replays.slide`: 2-D grids, explicit loops, a flood
fill. Where it and the verifier disagree, one of them misreads slide-rules.md.
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replays.slide.engine import Table
from replays.slide.simulate import simulate_games
from replays.slide.verify import replay, verify

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SIDES = ["left", "right", "top", "bottom"]


def reference(record: dict) -> tuple[str | None, int | None, int | None, dict]:
    """(rule, round, seat, replayed result) of the first fault per S4, rule None if legal."""
    p = record["players"]
    grid = [[[g[r * 4 + c] for c in range(4)] for r in range(4)] for g in record["grids"]]
    face_up = [[[False] * 4 for _ in range(4)] for _ in range(p)]
    for s in range(p):
        for r in range(4):
            for c in range(4):
                if not 1 <= grid[s][r][c] <= 10:
                    return "S1.3", None, s, {}
    for i, rnd in enumerate(record["rounds"]):
        gap = {}
        middle = []
        for s in range(p):
            r, c = rnd["reveals"][s]
            if face_up[s][r][c]:
                return "S2.2", i, s, {}
            face_up[s][r][c] = True  # it goes to the middle; the slide refills the gap face up
            middle.append(grid[s][r][c])
            gap[s] = (r, c)
        got = {}
        for k in range(p):
            seat = (record["first"] + i + k) % p
            v = rnd["takes"][k]
            if v not in middle:
                return "S2.3", i, seat, {}
            middle.remove(v)
            got[seat] = v
        for s in range(p):
            side = rnd["slides"][s]["side"]
            r, c = gap[s]
            g, f = grid[s], face_up[s]
            if side == "left":
                if c == 0:
                    return "S2.4", i, s, {}
                for cc in range(c, 0, -1):
                    g[r][cc], f[r][cc] = g[r][cc - 1], f[r][cc - 1]
                g[r][0], f[r][0] = got[s], True
            elif side == "right":
                if c == 3:
                    return "S2.4", i, s, {}
                for cc in range(c, 3):
                    g[r][cc], f[r][cc] = g[r][cc + 1], f[r][cc + 1]
                g[r][3], f[r][3] = got[s], True
            elif side == "top":
                if r == 0:
                    return "S2.4", i, s, {}
                for rr in range(r, 0, -1):
                    g[rr][c], f[rr][c] = g[rr - 1][c], f[rr - 1][c]
                g[0][c], f[0][c] = got[s], True
            else:
                if r == 3:
                    return "S2.4", i, s, {}
                for rr in range(r, 3):
                    g[rr][c], f[rr][c] = g[rr + 1][c], f[rr + 1][c]
                g[3][c], f[3][c] = got[s], True
    if len(record["rounds"]) < 16:
        return "S3.1", None, None, {}
    scores, left = [], []
    for s in range(p):
        seen = set()
        removed = set()
        for r in range(4):
            for c in range(4):
                if (r, c) in seen:
                    continue
                group, todo = [], [(r, c)]
                seen.add((r, c))
                while todo:
                    a, b = todo.pop()
                    group.append((a, b))
                    for da, db in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                        na, nb = a + da, b + db
                        if (
                            0 <= na < 4
                            and 0 <= nb < 4
                            and (na, nb) not in seen
                            and grid[s][na][nb] == grid[s][a][b]
                        ):
                            seen.add((na, nb))
                            todo.append((na, nb))
                if len(group) >= 2:
                    removed.update(group)
        kept = [grid[s][r][c] for r in range(4) for c in range(4) if (r, c) not in removed]
        scores.append(sum(kept))
        left.append(len(kept))
    best = min(zip(scores, left, strict=True))
    won = [s for s in range(p) if (scores[s], left[s]) == best]
    truth = {"scores": scores, "cards_left": left, "winners": won}
    claimed = record["result"]
    for key in ("scores", "cards_left"):
        for s in range(p):
            if claimed[key][s] != truth[key][s]:
                return "S3.3", None, s, truth
    if set(claimed["winners"]) != set(won):
        return "S3.3", None, None, truth
    return None, None, None, truth


def _game(seed: int, players: int, policy: str = "random") -> dict:
    return next(simulate_games(1, players, seed, policy=policy))


@SETTINGS
@given(
    seed=st.integers(0, 2**32),
    players=st.integers(2, 6),
    policy=st.sampled_from(["random", "random", "greedy"]),
)
def test_every_simulated_game_verifies(seed, players, policy):
    record = _game(seed, players, policy)
    assert verify(record).ok
    verdict, facts = replay(record)
    assert verdict.ok
    assert [f.score for f in facts.seats] == record["result"]["scores"]
    assert reference(record) == (None, None, None, record["result"])
    assert len(facts.takes) == 16 * players
    assert all(
        f.took in f.available and f.choice == (len(set(f.available)) > 1) for f in facts.takes
    )


@st.composite
def corruption(draw):
    """A simulated game with exactly one thing changed, as a client bug would."""
    players = draw(st.integers(2, 6))
    record = _game(draw(st.integers(0, 2**32)), players)
    bad = copy.deepcopy(record)
    kind = draw(st.sampled_from(["take", "slide", "reveal", "drop", "score", "left", "winners"]))
    i = draw(st.integers(0, 15))
    s = draw(st.integers(0, players - 1))
    rnd = bad["rounds"][i]
    if kind == "take":
        rnd["takes"][s] = draw(st.integers(1, 10))
    elif kind == "slide":
        rnd["slides"][s] = {"side": draw(st.sampled_from(SIDES))}
    elif kind == "reveal":
        rnd["reveals"][s] = [draw(st.integers(0, 3)), draw(st.integers(0, 3))]
    elif kind == "drop":
        del bad["rounds"][i]
    elif kind == "score":
        bad["result"]["scores"][s] += draw(st.integers(-5, 5))
    elif kind == "left":
        bad["result"]["cards_left"][s] += draw(st.integers(-2, 2))
    else:
        bad["result"]["winners"] = draw(
            st.lists(st.integers(0, players - 1), min_size=1, max_size=players)
        )
    return kind, record, bad


@SETTINGS
@given(corruption())
def test_a_single_corruption_is_judged_as_the_rules_say(case):
    kind, original, bad = case
    rule, turn, seat, truth = reference(bad)
    v = verify(bad)
    if rule is None:
        # The corrupted game is itself legal: then the claimed result is the true one.
        assert v.ok, v
        assert truth["scores"] == bad["result"]["scores"]
        assert truth["cards_left"] == bad["result"]["cards_left"]
        assert set(truth["winners"]) == set(bad["result"]["winners"])
    else:
        assert (v.verdict, v.rule, v.turn) == ("invalid", rule, turn), (kind, v)
        if seat is not None:
            assert v.seat == seat, (kind, v)
    if kind == "drop":
        assert not v.ok  # a game of 15 rounds is never complete (S3.1)
    if bad == original:
        assert v.ok


@SETTINGS
@given(seed=st.integers(0, 2**32), players=st.integers(2, 6), i=st.integers(0, 15))
def test_revealing_a_face_up_card_is_always_caught(seed, players, i):
    record = _game(seed, players)
    # Before round i >= 1 every grid has i face-up cards: the last seat reveals one of them.
    table = Table(record["grids"], record["first"])
    for rnd in record["rounds"][:i]:
        for s, (r, c) in enumerate(rnd["reveals"]):
            table.reveal(s, r * 4 + c)
        lead = (record["first"] + table.round) % players
        for k, v in enumerate(rnd["takes"]):
            table.take((lead + k) % players, v)
        for s, edge in enumerate(rnd["slides"]):
            table.slide(s, edge["side"])
        table.end_round()
    face_up = [cell for cell in range(16) if not table.down[players - 1][cell]]
    if not face_up:  # round 0: nothing is face up yet
        assert i == 0
        return
    bad = copy.deepcopy(record)
    bad["rounds"][i]["reveals"][players - 1] = list(divmod(face_up[0], 4))
    v = verify(bad)
    assert (v.rule, v.turn, v.seat) == ("S2.2", i, players - 1)
