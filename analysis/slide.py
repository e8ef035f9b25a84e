"""Slide: seats relative to the first player, scores and cards left, groups, which
value is taken when there is a choice, and match results (S3.4, with the consistency checks
S4.4 leaves to analysis).

Cut dimensions of the Slide tables: players, mode, platform, client_version, ruleset, week.
"""

from __future__ import annotations

import polars as pl

from . import stats as st
from . import views
from .cuts import Cut
from .games_sql import SLIDE_DIMS as DIMS
from .games_sql import Selection, slide_games
from .tables import Cube

SLIDE_DIMS = ("players", "mode", "platform", "client_version", "ruleset", "week")
# seats carry `players` too: a join names the game's
SG_DIMS = ", ".join(f"sg.{d}" for d in SLIDE_DIMS)
MATCH_TARGET = 100  # S3.4: a match ends after the game in which a running total reaches 100
# a match's target is its ruleset's `match_target` (rulesets.md RS3; standard's is 100)
TARGETS = """(SELECT name AS ruleset, (params->>'match_target')::INTEGER AS target
     FROM rulesets WHERE game = 'slide')"""


def _seats(sel: Selection) -> str:
    # a shared victory is split between its winners, so credits add up to one per game;
    # counted in 60ths (1 to 6 winners divide 60), so that they add up exactly
    return f"""WITH {slide_games(sel)}
SELECT {SG_DIMS}, st.seat_from_first, count(*) AS seats, count(*) FILTER (st.won) AS wins,
       count(*) FILTER (st.won AND sg.shared) AS shared_wins,
       sum(CASE WHEN st.won THEN 60 // sg.n_winners ELSE 0 END) / 60 AS win_credit,
       sum(st.score)::BIGINT AS score_sum, sum(st.cards_left)::BIGINT AS cards_left_sum,
       sum(st.groups_removed)::BIGINT AS groups_sum,
       count(*) FILTER (st.groups_removed > 0) AS seats_with_groups
FROM {_seat_rows(sel)} GROUP BY ALL"""


def _seat_rows(sel: Selection) -> str:
    return (
        f"{sel.table('slide_seats')} st JOIN sg USING (game_id) "
        f"WHERE {sel.bound('slide_seats', 'st')}"
    )


def _scores(sel: Selection) -> str:
    return f"""WITH {slide_games(sel)},
x AS (SELECT {SG_DIMS}, st.score, st.cards_left, st.won FROM {_seat_rows(sel)})
SELECT {DIMS}, m.measure, CASE m.measure WHEN 'score' THEN score ELSE cards_left END::BIGINT
       AS value, count(*) AS seats, count(*) FILTER (won) AS wins
FROM x, (VALUES ('score'), ('cards_left')) AS m(measure) GROUP BY ALL"""


def _groups(sel: Selection) -> str:
    return f"""WITH {slide_games(sel)}
SELECT {DIMS}, grp.value, grp.size, count(*) AS groups
FROM (SELECT sg.*, unnest(st.groups) AS grp FROM {_seat_rows(sel)})
GROUP BY ALL"""


def _takes(sel: Selection) -> str:
    pick = """CASE WHEN r.took = list_min(r.available) THEN 'lowest'
                WHEN r.took = list_max(r.available) THEN 'highest' ELSE 'middle' END"""
    return f"""WITH {slide_games(sel)}
SELECT {SG_DIMS}, r.take_order, len(list_distinct(r.available)) AS choices, r.took, {pick} AS pick,
       count(*) AS takes
FROM {sel.table("slide_rounds")} r JOIN sg USING (game_id)
WHERE r.had_choice AND {sel.bound("slide_rounds", "r")} GROUP BY ALL"""


def _matches(sel: Selection) -> str:
    """One row per match: its games, whether it is complete and consistent, and its winner.
    Not a sum over games: a run rebuilds the row of every match that got a game."""
    last = ", ".join(f"arg_max({c}, match_game) AS {c}" for c in SLIDE_DIMS)
    return f"""WITH {slide_games(sel)},
mg AS (SELECT * FROM sg WHERE match_id IS NOT NULL),
run AS (  -- running totals per seat, game by game (S3.4)
    SELECT mg.match_id, mg.match_game, st.seat,
           sum(st.score) OVER w AS total, sum(st.cards_left) OVER w AS "left"
    FROM {sel.table("slide_seats")} st JOIN mg USING (game_id)
    WINDOW w AS (PARTITION BY mg.match_id, st.seat ORDER BY mg.match_game
                 ROWS UNBOUNDED PRECEDING)),
target AS (  -- per match: its ruleset's target (every game of a match names one ruleset)
    SELECT match_id, coalesce(max(t.target), {MATCH_TARGET}) AS target
    FROM mg LEFT JOIN {TARGETS} AS t USING (ruleset) GROUP BY match_id),
reached AS (
    SELECT match_id, min(match_game) AS reached_at
    FROM (SELECT match_id, match_game, max(total) AS top FROM run GROUP BY ALL)
    JOIN target USING (match_id) WHERE top >= target GROUP BY ALL),
last AS (
    SELECT match_id, count(*) AS games, max(match_game) AS last_game,
           count(DISTINCT match_game) = count(*) AS distinct_numbers,
           min(match_game) AS first_game, count(DISTINCT players) AS player_counts,
           count(DISTINCT ruleset) AS ruleset_counts, {last}
    FROM mg GROUP BY match_id),
final AS (
    SELECT run.* FROM run JOIN last USING (match_id) WHERE run.match_game = last.last_game),
lowest AS (  -- S3.3 on the totals: lowest total, then fewest cards left, then shared
    SELECT * FROM (SELECT * FROM final QUALIFY total = min(total) OVER (PARTITION BY match_id))
    QUALIFY "left" = min("left") OVER (PARTITION BY match_id)),
best AS (
    SELECT match_id, list_sort(list(seat)) AS winners, min(total)::BIGINT AS winner_total
    FROM lowest GROUP BY match_id),
tops AS (SELECT match_id, max(total)::BIGINT AS max_total FROM final GROUP BY match_id),
out AS (
    SELECT *, CASE
        WHEN player_counts > 1 THEN 'player count changes'
        WHEN ruleset_counts > 1 THEN 'ruleset changes'
        WHEN NOT distinct_numbers OR first_game <> 1 OR last_game <> games
            THEN 'game numbers are not 1..n'
        WHEN reached_at IS NOT NULL AND reached_at < last_game
            THEN 'played on after a total reached ' || target END AS problem
    FROM last LEFT JOIN best USING (match_id) LEFT JOIN tops USING (match_id)
    LEFT JOIN reached USING (match_id) JOIN target USING (match_id))
SELECT match_id, {DIMS}, games, max_total >= target AS complete,
       problem IS NULL AS consistent, problem, winners, winner_total, max_total
FROM out"""


CUBES = [
    Cube("agg_slide_seats", "slide_games", _seats),
    Cube("agg_slide_scores", "slide_games", _scores),
    Cube("agg_slide_groups", "slide_games", _groups),
    Cube("agg_slide_takes", "slide_games", _takes),
    Cube("agg_slide_matches", "slide_games", _matches, key="match_id"),
]


def seat_rates(frame, by=("players", "seat_from_first")) -> pl.DataFrame:
    """Win rate of a seat (shared wins split) against the fair share 1/players; BH across the
    seats of one table size."""
    cols = ["seats", "wins", "shared_wins", "win_credit", "score_sum", "cards_left_sum"]
    df = views.summed(frame, list(by), cols).filter(pl.col("seats") > 0)
    k, n = df["win_credit"].to_numpy(), df["seats"].to_numpy()
    fair = 1.0 / df["players"].to_numpy().astype(float)
    lo, hi = st.wilson(k, n)
    p = st.score_test(k, n, fair)
    q, flagged = st.bh_grouped(p, df["players"].to_numpy())
    return df.with_columns(
        pl.Series("win_rate", st.rate(k, n)),
        pl.Series("wilson_lo", lo),
        pl.Series("wilson_hi", hi),
        pl.Series("fair_share", fair),
        pl.Series("p_value", p),
        pl.Series("q_value", q),
        pl.Series("flagged", flagged),
        (pl.col("score_sum") / pl.col("seats")).alias("mean_score"),
        (pl.col("cards_left_sum") / pl.col("seats")).alias("mean_cards_left"),
    )


def match_rates(m: pl.DataFrame, by=("players",)) -> pl.DataFrame:
    return (
        m.group_by(list(by))
        .agg(
            pl.len().cast(pl.Int64).alias("matches"),
            pl.col("complete").sum().cast(pl.Int64).alias("complete"),
            pl.col("consistent").sum().cast(pl.Int64).alias("consistent"),
            pl.col("games").mean().alias("mean_games"),
            pl.col("winner_total").filter(pl.col("complete")).mean().alias("mean_winner_total"),
        )
        .sort(list(by))
    )


def rate_tables(fetch, cut: Cut) -> dict[str, pl.DataFrame]:
    """`cut`: Slide's default cut (analysis.live_version.default_cut of Slide's games)."""
    return {
        "agg_slide_seat_rates": seat_rates(fetch("agg_slide_seats", cut)),
        "agg_slide_match_rates": match_rates(fetch("agg_slide_matches", cut)),
    }
