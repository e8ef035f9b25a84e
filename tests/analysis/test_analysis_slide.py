"""Slide tables against hand-written SQL over slide_games / slide_seats /
slide_rounds, from simulated games stored through ingest; match checks (S3.4, S4.4)."""

from __future__ import annotations

import copy

import pytest

from ingest.server import demo
from ingest.server import jobs as ingest_jobs
from ingest.storage import Store
from replays.slide.simulate import simulate_games

pytestmark = pytest.mark.slow  # simulated games through the ingest path and the jobs

DIMS = "g.players, g.mode, g.platform, g.client_version, date_trunc('week', g.ended_at)::DATE"


def _records(per_table: int = 120) -> list[dict]:
    return [r for p in (2, 3, 4, 6) for r in simulate_games(per_table, p, seed=40 + p)]


def _broken_matches(records: list[dict]) -> list[dict]:
    """Two matches made inconsistent at the record level (each record stays valid, S4.4):
    one with a gap in its game numbers, one played on after a total reached 100."""
    by_match: dict[str, list[dict]] = {}
    for r in records:
        if r["match"]:
            by_match.setdefault(r["match"]["id"], []).append(r)
    long = [m for m in by_match.values() if len(m) >= 2]
    gap, extra = long[0], long[1]
    for r in gap:
        if r["match"]["game"] >= 2:
            r["match"]["game"] += 1  # 1, 3, 4, ...
    single = next(r for r in records if not r["match"] and r["players"] == extra[0]["players"])
    more = copy.deepcopy(single)
    more["game_id"] = "00000000-0000-4000-8000-00000000abcd"
    more["match"] = {"id": extra[0]["match"]["id"], "game": len(extra) + 1}
    return [more], gap[0]["match"]["id"], extra[0]["match"]["id"]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    records = _records()
    added, gap_id, extra_id = _broken_matches(records)
    store = Store(tmp_path_factory.mktemp("slide") / "slide.duckdb")
    counts = demo.load_records(store, records + added, echo=lambda *_: None)
    assert set(counts) == {"accepted"}
    summary = ingest_jobs.run_once(store)
    assert "agg_slide_seats" in summary["tables"]
    con = store.reader()
    yield con, {"gap": gap_id, "extra": extra_id}
    con.close()
    store.close()


@pytest.fixture
def reader(stored):
    return stored[0]


@pytest.fixture
def broken(stored):
    return stored[1]


def rows(con, sql):
    out = con.execute(sql).fetchall()
    return sorted(out, key=lambda r: tuple((x is None, x if x is not None else 0) for x in r))


def same(con, ours, theirs):
    a, b = rows(con, ours), rows(con, theirs)
    assert a and a == b


def test_seats_relative_to_the_first_player(reader):
    same(
        reader,
        """SELECT players, mode, platform, client_version, week, seat_from_first, seats, wins,
                  shared_wins, round(win_credit, 9), score_sum, cards_left_sum, groups_sum,
                  seats_with_groups FROM agg_slide_seats""",
        f"""SELECT {DIMS}, s.seat_from_first, count(*), count(*) FILTER (s.won),
                   count(*) FILTER (s.won AND g.shared),
                   round(sum(CASE WHEN s.won THEN 1.0 / len(g.winners) ELSE 0 END), 9),
                   sum(s.score), sum(s.cards_left), sum(s.groups_removed),
                   count(*) FILTER (s.groups_removed > 0)
            FROM slide_seats s JOIN slide_games g USING (game_id) GROUP BY ALL""",
    )
    # shared victories are split: one win credit per game
    credit, games = reader.execute(
        "SELECT sum(win_credit), (SELECT count(*) FROM slide_games) FROM agg_slide_seats"
    ).fetchone()
    assert credit == pytest.approx(games)


def test_score_and_cards_left_distributions(reader):
    for measure in ("score", "cards_left"):
        same(
            reader,
            f"""SELECT players, mode, platform, client_version, week, value, seats, wins
                FROM agg_slide_scores WHERE measure = '{measure}'""",
            f"""SELECT {DIMS}, s.{measure}, count(*), count(*) FILTER (s.won)
                FROM slide_seats s JOIN slide_games g USING (game_id) GROUP BY ALL""",
        )


def test_groups_by_value_and_size(reader):
    same(
        reader,
        "SELECT players, mode, platform, client_version, week, value, size, groups "
        "FROM agg_slide_groups",
        f"""SELECT {DIMS}, grp.value, grp.size, count(*)
            FROM (SELECT *, unnest(groups) AS grp FROM slide_seats) s
            JOIN slide_games g USING (game_id) GROUP BY ALL""",
    )


def test_which_value_is_taken_when_there_is_a_choice(reader):
    same(
        reader,
        "SELECT players, mode, platform, client_version, week, take_order, choices, took, pick, "
        "takes FROM agg_slide_takes",
        f"""SELECT {DIMS}, r.take_order, len(list_distinct(r.available)), r.took,
                   CASE WHEN r.took = list_min(r.available) THEN 'lowest'
                        WHEN r.took = list_max(r.available) THEN 'highest' ELSE 'middle' END,
                   count(*)
            FROM slide_rounds r JOIN slide_games g USING (game_id)
            WHERE r.had_choice GROUP BY ALL""",
    )
    # a choice means at least two distinct values in the middle
    assert reader.execute("SELECT min(choices) FROM agg_slide_takes").fetchone()[0] >= 2


def test_match_results(reader, broken):
    same(
        reader,
        "SELECT match_id, games FROM agg_slide_matches",
        "SELECT match_id, count(*) FROM slide_games WHERE match_id IS NOT NULL GROUP BY ALL",
    )
    # the winner's total of each consistent match: the lowest sum of scores over its games
    same(
        reader,
        "SELECT match_id, winner_total, max_total FROM agg_slide_matches WHERE consistent",
        """SELECT match_id, min(total), max(total) FROM (
               SELECT g.match_id, s.seat, sum(s.score) AS total
               FROM slide_seats s JOIN slide_games g USING (game_id)
               WHERE g.match_id IS NOT NULL GROUP BY ALL)
           WHERE match_id NOT IN (SELECT match_id FROM agg_slide_matches WHERE NOT consistent)
           GROUP BY ALL""",
    )
    bad = dict(
        reader.execute(
            "SELECT match_id, problem FROM agg_slide_matches WHERE NOT consistent"
        ).fetchall()
    )
    assert bad == {
        broken["gap"]: "game numbers are not 1..n",
        broken["extra"]: "played on after a total reached 100",
    }
    # the simulator plays every match to its end (a total of 100 or more)
    assert reader.execute(
        "SELECT bool_and(complete) FROM agg_slide_matches WHERE consistent"
    ).fetchone()[0]


def test_seat_rates_on_the_default_cut(reader):
    got = reader.execute(
        "SELECT players, sum(seats), sum(win_credit), min(fair_share), max(fair_share) "
        "FROM agg_slide_seat_rates GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    for players, seats, credit, lo, hi in got:
        assert lo == hi == pytest.approx(1 / players)
        assert credit == pytest.approx(seats / players)  # one credit per game of p seats


def test_the_run_records_how_many_slide_games_it_read(reader):
    # agg_runs.slide_games_read: what the Slide page's freshness line reports
    read, games = reader.execute(
        "SELECT slide_games_read, (SELECT count(*) FROM slide_games) FROM agg_runs "
        "ORDER BY run_id DESC LIMIT 1"
    ).fetchone()
    assert read == games > 0
