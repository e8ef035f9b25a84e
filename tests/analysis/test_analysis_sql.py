"""Every agg_* table counts exactly what the same aggregate, written by hand in DuckDB SQL over
the store tables, counts; rates are those of analysis.stats on those counts."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from analysis import jobs
from analysis import stats as st
from analysis import synthetic as sy

pytestmark = pytest.mark.slow  # a 4,000-game synthetic store and every job

SIDES = """
WITH s AS (
    SELECT g.*, 0 AS side, lineup_0 AS lineup, lineup_1 AS opp_lineup, powers_0 AS picks,
           powers_1 AS opp_picks,
           CASE WHEN winner IS NULL THEN 0 WHEN winner = 0 THEN 1 ELSE -1 END AS res
    FROM games g
    UNION ALL
    SELECT g.*, 1, lineup_1, lineup_0, powers_1, powers_0,
           CASE WHEN winner IS NULL THEN 0 WHEN winner = 1 THEN 1 ELSE -1 END
    FROM games g
)
"""
OUT = """count(*) AS n, count(*) FILTER (res = 1) AS wins, count(*) FILTER (res = 0) AS draws,
         count(*) FILTER (res = -1) AS losses"""
SUMS = "sum(n)::BIGINT, sum(wins)::BIGINT, sum(draws)::BIGINT, sum(losses)::BIGINT"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("analysis") / "store.duckdb"
    con, _ = sy.make_store(path, sy.Plan(n=4000, seed=11), quarantined=300)
    summary = jobs.run(con, lambda fn: fn(con))
    assert not summary["skipped"]
    yield con
    con.close()


def rows(con, sql: str) -> list[tuple]:
    out = con.execute(sql).fetchall()
    return sorted(out, key=lambda r: tuple((x is None, x if x is not None else 0) for x in r))


def same(con, ours: str, theirs: str):
    a, b = rows(con, ours), rows(con, theirs)
    assert a, "no rows to compare"
    assert a == b


def test_lineup_counts_each_side_once(store):
    same(
        store,
        "SELECT board, variant, mode, client_version, lineup, n, wins, draws, losses "
        "FROM agg_lineup",
        SIDES + f"SELECT board, variant, mode, client_version, lineup, {OUT} FROM s GROUP BY ALL",
    )
    n_sides = store.execute("SELECT sum(n) FROM agg_lineup").fetchone()[0]
    assert n_sides == 2 * store.execute("SELECT count(*) FROM games").fetchone()[0]


def test_the_standalone_lineup_job_gives_the_same_table(store):
    import polars as pl

    from analysis import setups

    alone = setups.lineup_table(store).with_columns(pl.col(pl.Enum).cast(pl.String))
    stored = store.sql("FROM agg_lineup").pl()
    key = ["board", "variant", "mode", "client_version", "lineup"]
    assert alone.sort(key).equals(stored.select(alone.columns).cast(alone.schema).sort(key))


def test_first_move(store):
    same(
        store,
        f"SELECT board, variant, platform, {SUMS} FROM agg_first_move GROUP BY ALL",
        """SELECT board, variant, platform, count(*), count(*) FILTER (winner = "first"),
                  count(*) FILTER (winner IS NULL), count(*) FILTER (winner <> "first")
           FROM games GROUP BY ALL""",
    )


def test_setup_cells(store):
    same(
        store,
        f"SELECT board, variant, week, rank, file, {SUMS} FROM agg_setup_cell GROUP BY ALL",
        SIDES
        + f"""SELECT board, variant, date_trunc('week', ended_at)::DATE,
                          substr(lineup, f::INT + 1, 1)::UTINYINT AS rank, f::UTINYINT AS file,
                          {OUT}
                   FROM s, range(7) t(f) WHERE f < board GROUP BY ALL""",
    )


def test_lane_distance_and_pieces(store):
    lane = """
        WITH p AS (
            SELECT g.board, g.variant, p.*, g.winner, g."first",
                   abs(ascii(p.start) - 97 - (strpos(CASE WHEN p.side = 0 THEN g.lineup_1
                       ELSE g.lineup_0 END, p.rank::VARCHAR) - 1)) AS distance
            FROM game_pieces p JOIN games g USING (game_id)
        )
    """
    same(
        store,
        """SELECT board, variant, rank, distance, sum(pieces)::BIGINT, sum(promoted)::BIGINT,
                  sum(crowns_alive)::BIGINT, sum(home_wins)::BIGINT, sum(first_n)::BIGINT,
                  sum(first_wins)::BIGINT, sum(first_draws)::BIGINT, sum(first_losses)::BIGINT
           FROM agg_lane_distance GROUP BY ALL""",
        lane
        + """SELECT board, variant, rank, distance, count(*),
                  count(*) FILTER (promoted_turn IS NOT NULL),
                  count(*) FILTER (promoted_turn IS NOT NULL AND removed_turn IS NULL),
                  count(*) FILTER (home), count(*) FILTER (side = "first"),
                  count(*) FILTER (side = "first" AND winner = side),
                  count(*) FILTER (side = "first" AND winner IS NULL),
                  count(*) FILTER (side = "first" AND winner <> side)
           FROM p GROUP BY ALL""",
    )
    same(
        store,
        """SELECT board, mode, rank, sum(pieces)::BIGINT, sum(promoted)::BIGINT,
                  sum(never_moved)::BIGINT, sum(removed)::BIGINT, sum(stunned_sum)::BIGINT,
                  sum(moves_sum)::BIGINT, sum(promoted_turn_sum)::BIGINT
           FROM agg_pieces GROUP BY ALL""",
        """SELECT g.board, g.mode, p.rank, count(*), count(p.promoted_turn),
                  count(*) FILTER (p.moves = 0), count(*) FILTER (p.removed_turn IS NOT NULL),
                  sum(p.stunned), sum(p.moves), coalesce(sum(p.promoted_turn), 0)
           FROM game_pieces p JOIN games g USING (game_id) GROUP BY ALL""",
    )


def test_powers_picked_used_held(store):
    picks = """
        WITH k AS (
            SELECT g.board, w.power, w.used_turn,
                   CASE WHEN g.winner IS NULL THEN 0 WHEN g.winner = w.side THEN 1 ELSE -1 END
                   AS res
            FROM game_powers w JOIN games g USING (game_id)
        )
    """
    same(
        store,
        """SELECT board, power, sum(picked_n)::BIGINT, sum(picked_wins)::BIGINT,
                  sum(picked_draws)::BIGINT, sum(picked_losses)::BIGINT, sum(used_n)::BIGINT,
                  sum(used_wins)::BIGINT, sum(held_n)::BIGINT, sum(held_losses)::BIGINT,
                  sum(used_round_sum)::BIGINT
           FROM agg_power GROUP BY ALL""",
        picks
        + """SELECT board, power, count(*), count(*) FILTER (res = 1),
                  count(*) FILTER (res = 0), count(*) FILTER (res = -1), count(used_turn),
                  count(used_turn) FILTER (res = 1), count(*) FILTER (used_turn IS NULL),
                  count(*) FILTER (used_turn IS NULL AND res = -1),
                  coalesce(sum(used_turn // 2 + 1), 0)
           FROM k GROUP BY ALL""",
    )
    # not picked = every side of a game with powers that did not pick it
    same(
        store,
        "SELECT board, power, sum(not_n)::BIGINT, sum(not_wins)::BIGINT FROM agg_power "
        "GROUP BY ALL",
        SIDES
        + """SELECT s.board, p.power, count(*), count(*) FILTER (res = 1)
             FROM s, (SELECT unnest(['double', 'dash', 'leap', 'shield', 'freeze', 'swap',
                      'recall', 'trap', 'shove', 'surge']) AS power) p
             WHERE s.powers AND NOT list_contains(s.picks, p.power) GROUP BY ALL""",
    )
    same(
        store,
        "SELECT board, power, round, sum(uses)::BIGINT FROM agg_power_used_turn GROUP BY ALL",
        picks + "SELECT board, power, used_turn // 2 + 1, count(*) FROM k "
        "WHERE used_turn IS NOT NULL GROUP BY ALL",
    )


def test_power_pairs_and_power_against_power(store):
    same(
        store,
        f"""SELECT board, least(power_a, power_b), greatest(power_a, power_b), {SUMS}
            FROM agg_power_pair GROUP BY ALL""",
        SIDES
        + f"""SELECT board, picks[i + 1], picks[j + 1], {OUT}
              FROM (SELECT board, list_sort(picks) AS picks, res FROM s WHERE powers),
                   range(3) a(i), range(3) b(j)
              WHERE i < j GROUP BY ALL""",
    )
    same(
        store,
        f"SELECT board, power, opp_power, {SUMS} FROM agg_power_vs GROUP BY ALL",
        SIDES
        + f"""SELECT board, a, b, {OUT}
              FROM (SELECT board, unnest(picks) AS a, opp_picks, res FROM s WHERE powers),
                   (SELECT unnest(['double', 'dash', 'leap', 'shield', 'freeze', 'swap',
                            'recall', 'trap', 'shove', 'surge']) AS b)
              WHERE list_contains(opp_picks, b) GROUP BY ALL""",
    )


def test_overview_tables(store):
    same(
        store,
        "SELECT day, board, variant, sum(games)::BIGINT, sum(draws)::BIGINT FROM agg_games_daily "
        "GROUP BY ALL",
        "SELECT ended_at::DATE, board, variant, count(*), count(*) FILTER (winner IS NULL) "
        "FROM games GROUP BY ALL",
    )
    same(
        store,
        "SELECT board, variant, reason, sum(games)::BIGINT, sum(draws)::BIGINT, "
        "sum(first_wins)::BIGINT FROM agg_end_reasons GROUP BY ALL",
        """SELECT board, variant, reason, count(*), count(*) FILTER (winner IS NULL),
                  count(*) FILTER (winner = "first") FROM games GROUP BY ALL""",
    )
    same(
        store,
        "SELECT board, reason, turns, sum(games)::BIGINT FROM agg_game_length GROUP BY ALL",
        "SELECT board, reason, turns, count(*) FROM games GROUP BY ALL",
    )
    same(
        store,
        "SELECT game, status, rule, client_version, sum(records)::BIGINT FROM agg_ingest_status "
        "GROUP BY ALL",
        """SELECT 'slow6', 'verified', NULL, client_version, count(*) FROM games GROUP BY ALL
           UNION ALL
           SELECT 'slide', 'verified', NULL, client_version, count(*) FROM slide_games
           GROUP BY ALL
           UNION ALL
           SELECT game, 'quarantined', rule, client_version, count(*) FROM quarantine
           GROUP BY ALL""",
    )


def test_every_game_is_counted_once_at_the_finest_grain(store):
    # one row of agg_games_daily per day and combination of dimensions: with most of them
    # holding a single game, a count of groups instead of games is off by the collisions
    # (399 of 400 games once; fixed in ef8ee12, pl.len() rather than lit(True).sum())
    same(
        store,
        "SELECT day, board, variant, mode, ai_level, platform, client_version, games, draws "
        "FROM agg_games_daily",
        "SELECT ended_at::DATE, board, variant, mode, ai_level, platform, client_version, "
        "count(*), count(*) FILTER (winner IS NULL) FROM games GROUP BY ALL",
    )
    games = store.execute("SELECT count(*) FROM games").fetchone()[0]
    for table, col, where in (
        ("agg_games_daily", "games", "TRUE"),
        ("agg_first_move", "n", "TRUE"),
        ("agg_end_reasons", "games", "TRUE"),
        ("agg_game_length", "games", "TRUE"),
        ("agg_ingest_status", "records", "status = 'verified' AND game = 'slow6'"),
    ):
        got = store.execute(f"SELECT sum({col}) FROM {table} WHERE {where}").fetchone()[0]
        assert got == games, table


def test_power_counts_hold_together_in_every_row_and_under_the_default_cut(store):
    # picked + not picked = the sides of games with powers; used + held = picked
    broken = """SELECT count(*) FROM {t} WHERE picked_n > sides_n OR not_n < 0 OR held_n < 0
                OR used_n > picked_n OR picked_n + not_n <> sides_n OR used_n + held_n <> picked_n
             """
    for t in ("agg_power", "agg_power_rates"):
        assert store.execute(broken.format(t=t)).fetchone()[0] == 0, t
    latest = store.execute("SELECT latest_version FROM agg_runs").fetchone()[0]
    cut = f"mode IN ('online', 'friend') AND client_version = '{latest}'"
    ours = rows(
        store,
        f"SELECT board, power, sum(sides_n)::BIGINT, sum(picked_n)::BIGINT FROM agg_power "
        f"WHERE {cut} GROUP BY ALL",
    )
    assert ours == rows(store, "SELECT board, power, sides_n, picked_n FROM agg_power_rates")
    sides = dict(
        store.execute(
            f"SELECT board, 2 * count(*) FROM games WHERE powers AND {cut} GROUP BY ALL"
        ).fetchall()
    )
    assert ours and all(n == sides[board] and k <= n for board, _, n, k in ours)


def test_side_events(store):
    same(
        store,
        f"""SELECT board, made_stun, made_catch, {SUMS}, sum(stuns)::BIGINT,
                   sum(catches)::BIGINT FROM agg_side_events GROUP BY ALL""",
        SIDES
        + f"""SELECT board, coalesce(st, 0) > 0, coalesce(ca, 0) > 0, {OUT},
                     coalesce(sum(st), 0), coalesce(sum(ca), 0)
              FROM s LEFT JOIN (SELECT game_id, side, sum(stuns) st, sum(catches) ca
                                FROM game_turns GROUP BY ALL) t USING (game_id, side)
              GROUP BY ALL""",
    )


def test_hidden_reveals(store):
    same(
        store,
        "SELECT board, rank, reveal_round, sum(pieces)::BIGINT, sum(never_moved)::BIGINT "
        "FROM agg_hidden_reveal GROUP BY ALL",
        """SELECT g.board, p.rank, p.revealed_turn // 2 + 1, count(*),
                  count(*) FILTER (p.moves = 0)
           FROM game_pieces p JOIN games g USING (game_id) WHERE g.variant = 'hidden'
           GROUP BY ALL""",
    )


def test_computer_opponents_and_challenges(store):
    same(
        store,
        f"SELECT board, ai_level, human_first, {SUMS} FROM agg_vs_ai GROUP BY ALL",
        f"""SELECT board, ai_level, "first" <> ai_side,
                   {OUT.replace("res", "r")}
            FROM (SELECT *, CASE WHEN winner IS NULL THEN 0 WHEN winner <> ai_side THEN 1
                                 ELSE -1 END AS r
                  FROM games WHERE mode = 'computer') GROUP BY ALL""",
    )
    same(
        store,
        f"""SELECT board, challenge_id, {SUMS}, sum(solve_turns_sum)::BIGINT
            FROM agg_challenge GROUP BY ALL""",
        """SELECT board, challenge_id, count(*), count(*) FILTER (winner = "first"),
                  count(*) FILTER (winner IS NULL), count(*) FILTER (winner <> "first"),
                  coalesce(sum(turns) FILTER (winner = "first"), 0)
           FROM games WHERE mode = 'challenge' GROUP BY ALL""",
    )


def test_default_cut_rates_are_stats_on_the_sql_counts(store):
    latest = store.execute("SELECT latest_version FROM agg_runs").fetchone()[0]
    # the live release: 3.1.0-beta.2 is newer, but a pre-release is never the default
    assert latest == "3.0.0"
    ours = store.execute(
        """SELECT board, variant, lineup, n, wins, draws, losses, score_rate, wilson_lo,
                  wilson_hi, shrunk, flagged FROM agg_lineup_rates ORDER BY ALL"""
    ).fetchall()
    sql = store.execute(
        SIDES
        + f"""SELECT board, variant, lineup, {OUT} FROM s
              WHERE mode IN ('online', 'friend') AND client_version = '{latest}'
              GROUP BY ALL ORDER BY ALL"""
    ).fetchall()
    assert [r[:7] for r in ours] == sql
    n = np.array([r[3] for r in sql], dtype=float)
    k = np.array([r[4] + r[5] / 2 for r in sql])
    lo, hi = st.wilson(k, n)
    assert np.allclose([r[7] for r in ours], k / n)
    assert np.allclose([r[8] for r in ours], lo) and np.allclose([r[9] for r in ours], hi)
    fam = np.array([f"{r[0]}/{r[1]}" for r in sql])
    assert np.allclose([r[10] for r in ours], st.shrink_grouped(k, n, fam))
    _, flagged = st.bh_grouped(st.score_test(k, n, 0.5), fam)
    assert [r[11] for r in ours] == flagged.tolist()


def test_every_table_is_stamped_in_agg_runs(store):
    run = store.execute(
        "SELECT run_id, job_version, games_read, quarantined_read, table_rows FROM agg_runs"
    ).fetchone()
    assert run[1] == jobs.JOB_VERSION
    assert run[2] == store.execute("SELECT count(*) FROM games").fetchone()[0]
    assert run[3] == store.execute("SELECT count(*) FROM quarantine").fetchone()[0]
    import json

    counts = json.loads(run[4])
    for table, n in counts.items():
        assert store.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == n
        comment = store.execute(
            "SELECT comment FROM duckdb_tables() WHERE table_name = ?", [table]
        ).fetchone()[0]
        assert f"job {jobs.JOB_VERSION}, run {run[0]}" in comment


def test_quarantined_records_never_reach_the_analysis(tmp_path):
    con, _ = sy.make_store(tmp_path / "q.duckdb", sy.Plan(n=1500, seed=3))
    jobs.run(con, lambda fn: fn(con))
    tables = [
        t
        for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'agg_%' "
            "AND table_name NOT IN ('agg_runs', 'agg_ingest_status')"
        ).fetchall()
    ]
    before = {t: rows(con, f"SELECT * FROM {t}") for t in tables}
    sy.quarantine_rows(con, 400, seed=5, tag="late")
    summary = jobs.run(con, lambda fn: fn(con))
    assert not summary["skipped"] and summary["quarantined_read"] == 400
    for t in tables:
        assert rows(con, f"SELECT * FROM {t}") == before[t], t
    assert (
        con.execute(
            "SELECT sum(records) FROM agg_ingest_status WHERE status = 'quarantined'"
        ).fetchone()[0]
        == 400
    )


def test_a_failed_write_leaves_the_previous_tables(tmp_path):
    con, _ = sy.make_store(tmp_path / "w.duckdb", sy.Plan(n=800, seed=4))
    jobs.run(con, lambda fn: fn(con))
    before = rows(con, "SELECT * FROM agg_lineup")
    sy.insert(con, sy.generate(sy.Plan(n=300, seed=5)), tag="more")

    class Failing:
        """The writer's connection, failing halfway through the replacement."""

        def __init__(self, inner):
            self.inner = inner

        def execute(self, sql, *args):
            if sql.startswith("CREATE OR REPLACE TABLE agg_power_vs"):
                raise duckdb.IOException("disk full")
            return self.inner.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self.inner, name)

    with pytest.raises(duckdb.IOException):
        jobs.run(con, lambda fn: fn(Failing(con)))
    assert rows(con, "SELECT * FROM agg_lineup") == before
    assert con.execute("SELECT count(*) FROM agg_runs").fetchone()[0] == 1


def test_a_slow6_cube_of_a_selection_whose_dicts_were_not_read_says_so():
    from analysis.games_sql import Selection, games

    with pytest.raises(ValueError, match="read_dicts"):
        games(Selection())
