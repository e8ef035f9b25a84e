"""The Slide simulator and bots: deterministic, realistic spread, complete matches, every record
legal, and the greedy bot clearly better than the random one."""

from __future__ import annotations

import copy
import random
import re
from collections import Counter
from datetime import datetime, timedelta

import orjson
import pytest

from replays.slide.bots import GreedyBot, RandomBot
from replays.slide.engine import Table, legal_sides
from replays.slide.simulate import deal, play, simulate_games
from replays.slide.verify import verify
from replays.verifier import check_text

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


@pytest.fixture(scope="module")
def games() -> list[dict]:
    return list(simulate_games(240, 3, seed=7, policy="random"))


def test_same_seed_same_games_other_seed_other_games():
    a = list(simulate_games(12, 4, seed=11))
    assert a == list(simulate_games(12, 4, seed=11))
    b = list(simulate_games(12, 4, seed=12))
    assert {g["game_id"] for g in a}.isdisjoint(g["game_id"] for g in b)


def test_exactly_n_valid_records_with_unique_uuid4_ids(games):
    assert len(games) == 240
    assert len({g["game_id"] for g in games}) == 240
    for g in games:
        assert UUID4.match(g["game_id"])
        assert (g["schema"], g["game"], g["players"], len(g["rounds"])) == (1, "slide", 3, 16)
        assert verify(g).ok, verify(g)
        _, whole_path = check_text(orjson.dumps(g))  # format check too, as the server runs it
        assert whole_path.ok, whole_path


def test_spread_over_modes_platforms_versions(games):
    assert set(Counter(g["mode"] for g in games)) == {"online", "friend", "computer"}
    assert set(Counter(g["client"]["platform"] for g in games)) == {
        "ios",
        "android",
        "web",
        "desktop",
        "bot",
    }
    versions = Counter(g["client"]["version"] for g in games)
    assert {"2.4.0", "2.5.0", "2.5.3", "3.0.0", "3.1.0-beta.2"} == set(versions)
    assert len({g["first"] for g in games}) == 3


def test_dates_span_about_90_days_before_a_seeded_epoch(games):
    times = sorted(datetime.fromisoformat(g["ended_at"].replace("Z", "+00:00")) for g in games)
    assert all(g["ended_at"].endswith("Z") for g in games)
    span = times[-1] - times[0]
    assert timedelta(days=60) < span <= timedelta(days=91)
    other = [g["ended_at"] for g in simulate_games(5, 3, seed=8)]
    assert other != [g["ended_at"] for g in games[:5]]


def test_matches_are_complete_and_end_at_100(games):
    matches: dict[str, list[dict]] = {}
    for g in games:
        if g["match"] is not None:
            matches.setdefault(g["match"]["id"], []).append(g)
    assert matches, "some games are chained in matches"
    assert sum(g["match"] is None for g in games) > len(games) / 2
    for chain in matches.values():
        assert [g["match"]["game"] for g in chain] == list(range(1, len(chain) + 1))
        totals = [0, 0, 0]
        for n, g in enumerate(chain, start=1):
            totals = [t + s for t, s in zip(totals, g["result"]["scores"], strict=True)]
            if n < len(chain):
                assert max(totals) < 100  # the match went on
        assert max(totals) >= 100  # and ended after the game that reached 100
        # the first player changes each game, one seat to the left
        firsts = [g["first"] for g in chain]
        assert all((b - a) % 3 == 1 for a, b in zip(firsts, firsts[1:], strict=False))
        assert len({(g["mode"], g["client"]["platform"]) for g in chain}) == 1


def test_deal_uses_values_1_to_10_with_duplicates():
    grids = deal(random.Random(3), 6)
    cards = [v for g in grids for v in g]
    assert len(grids) == 6 and all(len(g) == 16 for g in grids)
    assert set(cards) == set(range(1, 11))
    assert max(Counter(cards).values()) <= 10


def _scrambled(table: Table, rng: random.Random) -> Table:
    """The same table with every face-down value replaced: what no player can see."""
    other = copy.deepcopy(table)
    for vals, down in zip(other.values, other.down, strict=True):
        for i in range(16):
            if down[i]:
                vals[i] = rng.randint(1, 10)
    return other


def test_greedy_bot_never_reads_face_down_values():
    rng = random.Random(5)
    table = Table(deal(rng, 3), 0)
    mover = RandomBot(rng)
    decisions = 0
    while not table.finished():
        # At each decision point, the greedy bot decides the same on a table that differs only
        # in face-down values (same bot seed): it cannot have looked at them.
        for s in range(3):
            hidden = _scrambled(table, rng)
            assert GreedyBot(random.Random(s)).reveal(table, s) == GreedyBot(
                random.Random(s)
            ).reveal(hidden, s)
            table.reveal(s, mover.reveal(table, s))
        for s in table.order():
            hidden = _scrambled(table, rng)
            assert GreedyBot(random.Random(s)).take(table, s) == GreedyBot(random.Random(s)).take(
                hidden, s
            )
            table.take(s, mover.take(table, s))
        for s in range(3):
            hidden = _scrambled(table, rng)
            assert GreedyBot(random.Random(s)).slide(table, s) == GreedyBot(random.Random(s)).slide(
                hidden, s
            )
            table.slide(s, mover.slide(table, s))
            decisions += 3
        table.end_round()
    assert decisions == 16 * 9


def _head_to_head(games: int, seed: int) -> tuple[int, int, float, float]:
    """Greedy vs random, two players, alternating seats: (greedy wins, random wins, means)."""
    rng = random.Random(seed)
    wins = Counter()
    scores = {"greedy": [], "random": []}
    for n in range(games):
        bots = [GreedyBot(rng), RandomBot(rng)] if n % 2 == 0 else [RandomBot(rng), GreedyBot(rng)]
        rounds, result = play(deal(rng, 2), n % 2, bots)
        for seat, bot in enumerate(bots):
            scores[bot.name].append(result["scores"][seat])
        if len(result["winners"]) == 1:
            wins[bots[result["winners"][0]].name] += 1
    mean = {k: sum(v) / len(v) for k, v in scores.items()}
    return wins["greedy"], wins["random"], mean["greedy"], mean["random"]


def test_greedy_beats_random_clearly():
    g, r, mg, mr = _head_to_head(40, seed=1)
    print(f"\ngreedy vs random, 40 games: wins {g}-{r}, mean score {mg:.1f} vs {mr:.1f}")
    assert g >= 32 and mg < mr - 15


def test_legal_actions_are_exactly_the_moves_the_table_accepts():
    rng = random.Random(2)
    table = Table(deal(rng, 3), 1)
    for _ in range(16):
        for s in range(3):
            legal = table.legal_reveals(s)
            assert legal == [i for i in range(16) if table.down[s][i]]
            assert len(legal) == 16 - table.round
            for cell in set(range(16)) - set(legal):
                with pytest.raises(ValueError):
                    table.reveal(s, cell)
            table.reveal(s, rng.choice(legal))
        for s in table.order():
            values = table.legal_takes()
            assert values == sorted(set(table.middle))
            for v in set(range(1, 11)) - set(values):
                with pytest.raises(ValueError):
                    table.take(s, v)
            table.take(s, rng.choice(values))
        for s in range(3):
            gap = table.gaps[s]
            for side in ("left", "right", "top", "bottom"):
                if side not in legal_sides(gap):
                    with pytest.raises(ValueError):
                        table.slide(s, side)
            table.slide(s, rng.choice(legal_sides(gap)))
        table.end_round()
    assert table.finished() and not any(any(d) for d in table.down)
    with pytest.raises(ValueError):
        table.reveal(0, 0)  # a seventeenth round: nothing is face down
