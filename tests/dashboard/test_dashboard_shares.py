"""Every share a page draws has the same records above and below its line: each is checked
against a count made here, in SQL over the stored records (games, slide_games, slide_seats,
quarantine), never against the agg_* tables the page itself reads.

The store: the session's demo store plus the spec's quarantined Slide examples, so that both
games have verified and quarantined records in the same client versions.
"""

from __future__ import annotations

import csv
import io
import json

import duckdb
import pytest
from support import AppClient, demo_copy, demo_env, example_records


@pytest.fixture(scope="module")
def app(tmp_path_factory, demo_db):
    from analysis import jobs
    from ingest.server.demo import load_records
    from ingest.storage import Store

    work = tmp_path_factory.mktemp("shares")
    db = demo_copy(demo_db, work)
    store = Store(db)
    try:
        load_records(store, example_records("slide-invalid"), echo=lambda _: None)
    finally:
        store.close()
    con = duckdb.connect(str(db))
    try:
        jobs.run(con, lambda fn: fn(con))
    finally:
        con.close()
    client = AppClient(work, env=demo_env(), db=db).start()
    yield client
    client.stop()


def count(app, sql: str) -> list[tuple]:
    """Rows of a query over the stored records, through the app's SQL API (the app holds
    the file)."""
    r = app.post("/sql/api", json.dumps({"sql": sql}), "application/json")
    assert r.status == 200, r.body[:500]
    return [tuple(row) for row in r.json()["rows"]]


def csv_rows(app, path: str) -> list[dict]:
    r = app.get(path)
    assert r.status == 200, (path, r.status, r.body[:300])
    return list(csv.DictReader(io.StringIO(r.body.decode())))


def close(a: float, b: float) -> bool:
    return abs(a - b) < 1e-9


def test_share_quarantined_counts_each_games_records_above_and_below(app):
    """The share of records quarantined per game and client version: that game's quarantined
    records over that game's stored records (verified + quarantined). It once divided the
    Slow6 and Slide quarantines by the Slow6 records alone."""
    truth = count(
        app,
        """SELECT game, client_version, count(*) FILTER (WHERE status = 'quarantined'),
                  count(*)
           FROM (SELECT game_id, 'slow6' AS game, 'verified' AS status, client_version
                 FROM games
                 UNION ALL SELECT game_id, 'slide', 'verified', client_version FROM slide_games
                 UNION ALL SELECT game_id, game, 'quarantined', client_version FROM quarantine)
           GROUP BY ALL""",
    )
    both = {v for g, v, q, _ in truth if g == "slide" and q} & {
        v for g, v, q, _ in truth if g == "slow6" and q
    }
    assert both, "the store must hold quarantines of both games in one version"
    rows = csv_rows(app, "/dashboard/chart/quarantine-share.csv?mode=&client_version=")
    got = {(r["game"], r["client_version"]): r for r in rows}
    assert len(got) == len(truth)
    for game, version, quarantined, records in truth:
        r = got[(game, version)]
        assert int(r["quarantined"]) == quarantined and int(r["n"]) == records, (game, version)
        assert close(float(r["rate"]), quarantined / records)
        assert float(r["lo"]) <= float(r["rate"]) <= float(r["hi"])
    # one version under its own filter: the same two shares
    version = sorted(both)[0]
    rows = csv_rows(app, f"/dashboard/chart/quarantine-share.csv?mode=&client_version={version}")
    assert {(r["game"], int(r["quarantined"]), int(r["n"])) for r in rows} == {
        (g, q, n) for g, v, q, n in truth if v == version
    }


def test_end_reason_shares_count_every_game_of_the_board_below_the_line(app):
    version = count(app, "SELECT client_version FROM games GROUP BY 1 ORDER BY count(*) DESC")[0][0]
    rows = csv_rows(app, f"/dashboard/chart/end-reasons.csv?mode=human&client_version={version}")
    truth = count(
        app,
        f"""SELECT board, r, n, (sum(n) OVER (PARTITION BY board))::BIGINT FROM (
                SELECT board, CASE WHEN winner IS NULL THEN 'draw' ELSE reason END AS r,
                       count(*) AS n
                FROM games WHERE mode IN ('online', 'friend') AND client_version = '{version}'
                GROUP BY ALL)""",
    )
    got = {(r["board"], r["reason"]): float(r["share"]) for r in rows}
    assert len(got) == len(truth)
    for board, reason, games, total in truth:
        assert close(got[(f"{board}×{board}", reason)], games / total), (board, reason)


def test_pick_rate_counts_the_sides_of_games_with_powers(app):
    rows = csv_rows(app, "/dashboard/chart/power-pick-rate.csv?mode=&client_version=")
    truth = count(
        app,
        """WITH sides AS (
             SELECT board, powers_0 AS picks FROM games WHERE len(powers_0) > 0
             UNION ALL SELECT board, powers_1 FROM games WHERE len(powers_1) > 0)
           SELECT board, p, count(*) FILTER (WHERE list_contains(picks, p)), count(*)
           FROM sides, (SELECT unnest(list_distinct(flatten(list(picks)))) AS p FROM sides)
           GROUP BY ALL""",
    )
    got = {(r["board"], r["power"]): r for r in rows}
    assert truth
    for board, power, picked, sides in truth:
        r = got[(str(board), power)]
        assert int(r["n"]) == sides, (board, power)
        assert close(float(r["rate"]), picked / sides), (board, power)


def test_slide_group_share_counts_every_seat_below_the_line(app):
    rows = csv_rows(app, "/dashboard/chart/slide-group-rate.csv?mode=&client_version=")
    truth = count(
        app,
        "SELECT players, count(*) FILTER (WHERE groups_removed > 0), count(*) "
        "FROM slide_seats GROUP BY 1",
    )
    got = {int(r["players"]): (int(r["seats_with_groups"]), int(r["n"])) for r in rows}
    assert got == {p: (k, n) for p, k, n in truth}
    for r in rows:
        assert close(float(r["rate"]), int(r["seats_with_groups"]) / int(r["n"]))


def test_the_explorer_lists_slide_games_and_their_quarantines(app):
    """`rule=S3.3` once found no game: the explorer listed Slow6 games only."""
    import re

    quarantined = count(app, "SELECT game_id FROM quarantine WHERE rule = 'S3.3'")
    assert quarantined
    r = app.get("/dashboard/games?rule=S3.3")
    page = r.body.decode()
    listed = re.findall(r'href="/dashboard/games/([0-9a-f-]{36})[^"]*" class="game-link"', page)
    assert sorted(listed) == sorted(str(g) for (g,) in quarantined)
    assert "Slide, " in page and " players" in page
    # verified Slide games, by table size, with Slow6 games left out
    (n,) = count(app, "SELECT count(*) FROM slide_games WHERE players = 4")[0]
    page = app.get("/dashboard/games?game=slide&players=4&status=verified").body.decode()
    assert re.search(r'id="totals"><b>([\d,]+)</b>', page).group(1).replace(",", "") == str(n)
    # every game: Slow6 and Slide, verified and quarantined, W/D/L from Slow6 games alone
    page = app.get("/dashboard/games").body.decode()
    (total,) = count(app, "SELECT count(*) FROM raw_records")[0]
    assert re.search(r'id="totals"><b>([\d,]+)</b>', page).group(1).replace(",", "") == str(total)
    assert "Verified Slow6, side 0 against side 1" in page
    # the viewer of a listed Slide game, its way back keeping the explorer's filters
    page = app.get("/dashboard/games?rule=S3.3&platform=all").body.decode()
    game = re.search(r'href="([^"]+)" class="game-link"', page).group(1)
    viewer = app.get(game.replace("&amp;", "&")).body.decode()
    assert "Slide game" in viewer
    assert '<a href="/dashboard/games?rule=S3.3&amp;platform=all" id="back">' in viewer


ALL = "?mode=&client_version="
# the first mover's score (win 1, draw ½), as a number the SQL API answers with
SCORE = (
    '(count(*) FILTER (WHERE winner = "first") + 0.5 * count(*) FILTER (WHERE winner IS NULL))'
    "::DOUBLE"
)


def test_summaries_of_length_end_reasons_first_move_and_hidden_against_the_games(app):
    rows = csv_rows(app, "/dashboard/chart/summary-length.csv" + ALL)
    truth = count(
        app,
        """SELECT board, variant, count(*), avg(turns),
                  quantile_disc(turns, 0.5),
                  count(*) FILTER (WHERE turns >= 2 * CASE board WHEN 5 THEN 15 ELSE 21 END)
           FROM games GROUP BY ALL""",
    )
    got = {(int(r["board"]), r["variant"]): r for r in rows}
    assert len(got) == len(truth)
    for board, variant, n, mean, median, at_limit in truth:
        r = got[(board, variant)]
        assert int(r["n"]) == n and int(r["at_limit"]) == at_limit, (board, variant)
        assert close(float(r["mean_turns"]), mean) and float(r["median_turns"]) == median
        assert float(r["mean_lo"]) <= mean <= float(r["mean_hi"])
        assert float(r["median_lo"]) <= median <= float(r["median_hi"])
        assert close(float(r["rate"]), at_limit / n)
    reasons = csv_rows(app, "/dashboard/chart/summary-end-reasons.csv" + ALL)
    truth = count(
        app,
        """SELECT board, r, n, (sum(n) OVER (PARTITION BY board))::BIGINT FROM (
             SELECT board, CASE WHEN winner IS NULL THEN 'draw' ELSE reason END AS r,
                    count(*) AS n FROM games GROUP BY ALL)""",
    )
    got = {(int(r["board"]), r["reason"]): r for r in reasons}
    assert len(got) == len(truth)
    for board, reason, k, n in truth:
        r = got[(board, reason)]
        assert int(r["games"]) == k and int(r["n"]) == n
        assert float(r["lo"]) <= k / n <= float(r["hi"]) and close(float(r["rate"]), k / n)
    pooled = csv_rows(app, "/dashboard/chart/summary-first-move.csv" + ALL)
    truth = count(
        app,
        f"SELECT board, count(*), {SCORE} FROM games GROUP BY 1",
    )
    assert {int(r["board"]): (int(r["n"]), round(float(r["rate"]), 6)) for r in pooled} == {
        b: (n, round(k / n, 6)) for b, n, k in truth
    }
    hidden = csv_rows(app, "/dashboard/chart/summary-hidden-open.csv" + ALL)
    truth = count(
        app,
        f"SELECT board, variant, count(*), {SCORE} FROM games "
        "WHERE variant IN ('hidden', 'classic') GROUP BY ALL",
    )
    by = {(b, v): (n, k) for b, v, n, k in truth}
    assert hidden
    for r in hidden:
        b = int(r["board"])
        (nh, kh), (no, ko) = by[(b, "hidden")], by[(b, "classic")]
        assert int(r["hidden_n"]) == nh and int(r["open_n"]) == no
        assert close(float(r["rate"]), kh / nh - ko / no)
        assert float(r["lo"]) <= float(r["rate"]) <= float(r["hi"])


def test_slide_mean_score_per_table_size_against_the_seats(app):
    rows = csv_rows(app, "/dashboard/chart/slide-mean-score.csv" + ALL)
    truth = count(app, "SELECT players, count(*), avg(score) FROM slide_seats GROUP BY 1")
    got = {int(r["players"]): r for r in rows}
    assert len(got) == len(truth)
    for players, n, mean in truth:
        r = got[players]
        assert int(r["n"]) == n and close(float(r["mean_score"]), mean)
        assert float(r["lo"]) < mean < float(r["hi"])


def test_boards_and_findings_link_each_other(app):
    boards = app.get("/dashboard/p/boards").body.decode()
    findings = app.get("/dashboard/p/findings").body.decode()
    assert 'href="/dashboard/p/findings"' in boards.split('id="see-board-first-move"')[1][:400]
    assert 'href="/dashboard/p/boards"' in findings.split('id="see-findings"')[1][:400]
    # the Findings page's tables are the default cut's: no date input that would do nothing
    assert 'name="date_from"' not in findings


def test_promotion_and_take_lowest_shares_against_the_pieces_and_rounds(app):
    rows = csv_rows(app, "/dashboard/chart/board-promotion.csv" + ALL)
    truth = count(
        app,
        "SELECT g.board, p.rank, count(*), count(p.promoted_turn) "
        "FROM game_pieces p JOIN games g USING (game_id) GROUP BY ALL",
    )
    got = {(int(r["board"]), int(r["rank"])): r for r in rows}
    assert len(got) == len(truth)
    for board, rank, pieces, promoted in truth:
        r = got[(board, rank)]
        assert int(r["n"]) == pieces and close(float(r["rate"]), promoted / pieces)
    rows = csv_rows(app, "/dashboard/chart/slide-take-lowest.csv" + ALL)
    truth = count(
        app,
        "SELECT g.players, r.take_order, count(*), "
        "count(*) FILTER (WHERE r.took = list_min(r.available)) "
        "FROM slide_rounds r JOIN slide_games g USING (game_id) WHERE r.had_choice GROUP BY ALL",
    )
    got = {(int(r["players"]), int(r["take_order"])): r for r in rows}
    assert len(got) == len(truth)
    for players, order, takes, lowest in truth:
        r = got[(players, order)]
        assert int(r["takes"]) == takes and close(float(r["rate"]), lowest / takes)
