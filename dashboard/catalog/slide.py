"""The Slide page: seats from the first player, scores and cards left, groups, which
value is taken when there is a choice, match results.

Same conventions as the Slow6 pages: one SQL string over an agg_slide_* table (docs/agg-tables.md)
under the page's filters (players, mode, platform, client version, weeks), rates from the same
code the jobs use (`analysis.slide.seat_rates`, `analysis.views.add_proportion`), drawn by
`dashboard.charts`. Slide tables carry no board, variant or AI level: those filters are named
under each chart when they are in the URL.
"""

from __future__ import annotations

import polars as pl

from analysis.sql import sql_literal
from analysis.tables import ADDITIVE

from .. import charts
from ..filters import SLIDE_SELECTS
from ..render import Chart, Ctx
from . import summaries
from .base import Page, draw_rate, sums

SEAT_SUMS = ", ".join(f"sum({c}) AS {c}" for c in ADDITIVE["agg_slide_seats"][2])


def players_label(col: str = "players") -> pl.Expr:
    return pl.concat_str([pl.col(col).cast(pl.String), pl.lit(" players")]).alias("players_label")


def seat_label() -> pl.Expr:
    k = pl.col("seat_from_first")
    return (
        pl.when(k == 0)
        .then(pl.lit("first player"))
        .otherwise(pl.concat_str([pl.lit("first + "), k.cast(pl.String)]))
        .alias("label")
    )


def _proportion(df: pl.DataFrame, k: str, n: str) -> pl.DataFrame:
    from analysis import views

    out = views.add_proportion(df, k, n, "rate")
    return out.rename({"rate_lo": "lo", "rate_hi": "hi"})


# -- seats -----------------------------------------------------------------------------------


def _seats(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    from analysis import slide

    out = slide.seat_rates(df)
    out = out.rename({"win_rate": "rate", "wilson_lo": "lo", "wilson_hi": "hi"})
    out = out.with_columns(seat_label(), n=pl.col("seats"))
    out = out.with_columns(players_label())
    return out.select("players_label", "label", *[
        c for c in out.columns if c not in ("players_label", "label")
    ]).sort("players", "seat_from_first")  # fmt: skip


seats = Chart(
    "slide-seats",
    "Win rate by seat, counted from the first player, for each table size",
    "agg_slide_seats",
    lambda ctx: sums(ctx, "agg_slide_seats", ["players", "seat_from_first"], SEAT_SUMS),
    post=_seats,
    draw=draw_rate(
        facet="players_label",
        reference=None,
        reference_field="fair_share",
        domain=(0, 1),
        x_title="win rate (shared wins split), 95% interval; dashed: fair share 1/players",
        width=300,
        columns=3,
    ),
    note="A seat's win rate: a shared victory is split between its k winners (1/k each), so the "
    "seats of a table add up to one win per game. 'first + 1' sits next after the player who led "
    "round 1. Tested against the fair share 1/players; flagged (red diamond) = the seat survives "
    "Benjamini-Hochberg at 5% across the seats of its table size; grey = fewer than 30 seats.",
)

# -- scores and cards left ---------------------------------------------------------------------


def _distribution(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    return (
        df.with_columns(
            share=pl.col("seats") / pl.col("seats").sum().over("players"),
            win_share=pl.col("wins") / pl.col("seats"),
            n=pl.col("seats").sum().over("players"),
        )
        .with_columns(players_label())
        .sort("players", "value")
    )


def _measure_chart(measure: str, title: str, x_title: str, x_type: str) -> Chart:
    return Chart(
        f"slide-{measure.replace('_', '-')}",
        title,
        "agg_slide_scores",
        lambda ctx: sums(
            ctx,
            "agg_slide_scores",
            ["players", "value"],
            "sum(seats) AS seats, sum(wins) AS wins",
            extra=[f"measure = {sql_literal(measure)}"],
        ),
        post=_distribution,
        draw=lambda rows, ctx: charts.bars(
            rows,
            "value",
            "share",
            x_type=x_type,
            facet="players_label",
            width=260,
            height=160,
            columns=3,
            x_title=x_title,
            y_title="share of seats",
        ),
        note="share = seats with that value / seats at that table size; win_share (tooltip) = "
        "the share of those seats that won.",
    )


scores = _measure_chart("score", "Final score of a seat (S3.3)", "score", "Q")
cards_left = _measure_chart("cards_left", "Cards left at the end", "cards left", "O")

# -- groups ------------------------------------------------------------------------------------


def _group_rate(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    out = _proportion(df, "seats_with_groups", "seats").with_columns(
        n=pl.col("seats"),
        groups_per_seat=pl.col("groups_sum") / pl.col("seats"),
        label=pl.concat_str([pl.col("players").cast(pl.String), pl.lit(" players")]),
    )
    return out.select("label", *[c for c in out.columns if c != "label"]).sort("players")


group_rate = Chart(
    "slide-group-rate",
    "How often groups form: share of seats that cancelled at least one group",
    "agg_slide_seats",
    lambda ctx: sums(
        ctx,
        "agg_slide_seats",
        ["players"],
        "sum(seats) AS seats, sum(seats_with_groups) AS seats_with_groups, "
        "sum(groups_sum) AS groups_sum",
    ),
    post=_group_rate,
    draw=draw_rate(reference=None, x_title="seats with a group, Wilson 95% interval"),
    note="groups_per_seat (tooltip) = groups cancelled / seats.",
)


def _group_sizes(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    return (
        df.with_columns(
            share=pl.col("groups") / pl.col("groups").sum().over("players"),
            n=pl.col("groups").sum().over("players"),
        )
        .with_columns(players_label())
        .sort("players", "size", "value")
    )


group_sizes = Chart(
    "slide-group-sizes",
    "Groups cancelled: size, and the card value they were made of",
    "agg_slide_groups",
    lambda ctx: sums(
        ctx, "agg_slide_groups", ["players", "size", "value"], "sum(groups) AS groups"
    ),
    post=_group_sizes,
    draw=lambda rows, ctx: charts.bars(
        rows,
        "size",
        "share",
        color="value",
        color_type="O",
        x_type="O",
        facet="players_label",
        width=200,
        height=160,
        columns=3,
        x_title="group size (cards)",
        y_title="share of groups",
    ),
    note="share = groups of that size and value / all groups at that table size.",
)

# -- takes when there is a choice -----------------------------------------------------------------

ORDINAL = {1: "2nd", 2: "3rd", 3: "4th", 4: "5th", 5: "6th"}  # take_order 0 is the leader


def _take_pick(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    out = df.with_columns(pl.col("lowest", "highest", "middle").fill_null(0))
    out = (
        _proportion(out, "lowest", "takes")
        .with_columns(
            n=pl.col("takes"),
            highest_share=pl.col("highest") / pl.col("takes"),
            middle_share=pl.col("middle") / pl.col("takes"),
            label=pl.when(pl.col("take_order") == 0)
            .then(pl.lit("leader (takes first)"))
            .otherwise(
                pl.concat_str(
                    [pl.lit("takes "), pl.col("take_order").replace_strict(ORDINAL, default="")]
                )
            ),
        )
        .with_columns(players_label())
    )
    return out.select("players_label", "label", *[
        c for c in out.columns if c not in ("players_label", "label")
    ]).sort("players", "take_order")  # fmt: skip


take_pick = Chart(
    "slide-take-lowest",
    "With a choice in the middle, how often the lowest value is taken (by order of taking)",
    "agg_slide_takes",
    lambda ctx: sums(
        ctx,
        "agg_slide_takes",
        ["players", "take_order"],
        "sum(takes) AS takes, sum(takes) FILTER (WHERE pick = 'lowest') AS lowest, "
        "sum(takes) FILTER (WHERE pick = 'highest') AS highest, "
        "sum(takes) FILTER (WHERE pick = 'middle') AS middle",
    ),
    post=_take_pick,
    draw=draw_rate(
        facet="players_label",
        reference=None,
        x_title="took the lowest value available, Wilson 95% interval",
        width=300,
        columns=3,
    ),
    note="Only takes with more than one distinct value in the middle. The tooltip has the "
    "shares that took the highest and a middle value.",
)


def _take_values(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    return (
        df.with_columns(
            share=pl.col("takes") / pl.col("takes").sum().over("players"),
            n=pl.col("takes").sum().over("players"),
        )
        .with_columns(players_label())
        .sort("players", "took")
    )


take_values = Chart(
    "slide-take-values",
    "Which card value is taken when there is a choice",
    "agg_slide_takes",
    lambda ctx: sums(ctx, "agg_slide_takes", ["players", "took"], "sum(takes) AS takes"),
    post=_take_values,
    draw=lambda rows, ctx: charts.heatmap(
        rows,
        "took",
        "players_label",
        value="share",
        domain=None,
        scheme="blues",
        text="takes",
        x_title="value taken",
        y_title="table size",
        cell=36,
    ),
    note="share = takes of that value / takes with a choice at that table size (a row fades with "
    "fewer than 30 takes).",
)

# -- matches -------------------------------------------------------------------------------------


def _matches_by(
    chart_id: str,
    title: str,
    key: str,
    x_type: str,
    x_title: str,
    counts: str,
    *,
    extra: list[str] | None = None,
    note: str = "",
) -> Chart:
    """Matches counted by `key` for each table size, as bars coloured by the table size."""
    return Chart(
        chart_id,
        title,
        "agg_slide_matches",
        lambda ctx: sums(ctx, "agg_slide_matches", ["players", key], counts, extra=extra),
        post=lambda df, ctx: df.with_columns(players_label()).sort("players", key),
        draw=lambda rows, ctx: charts.bars(
            rows, key, "matches", color="players_label", x_type=x_type, width=420, x_title=x_title
        ),
        note=note,
    )


match_games = _matches_by(
    "slide-match-games",
    "Games per match",
    "games",
    "O",
    "games in the match",
    "count(*) AS matches, count(*) FILTER (WHERE complete) AS complete",
    note="Every match (S3.4), complete or still being played; 'complete' (tooltip): a running "
    "total reached 100.",
)

winner_total = _matches_by(
    "slide-winner-total",
    "The winner's total in complete matches",
    "winner_total",
    "Q",
    "winner's running total (lowest total wins)",
    "count(*) AS matches",
    extra=["complete"],
)

match_summary = Chart(
    "slide-matches",
    "Matches by table size: complete, consistent (S4.4), mean games and winner's total",
    "agg_slide_matches",
    lambda ctx: sums(
        ctx,
        "agg_slide_matches",
        ["players"],
        "count(*) AS matches, count(*) FILTER (WHERE complete) AS complete, "
        "count(*) FILTER (WHERE consistent) AS consistent, avg(games) AS mean_games, "
        "avg(winner_total) FILTER (WHERE complete) AS mean_winner_total, "
        "string_agg(DISTINCT problem, '; ' ORDER BY problem) AS problems",
    ),
    table_rows=10,
    note="An inconsistent match (player count changes, game numbers not 1..n, played on after a "
    "total reached 100) is counted, never repaired.",
)

CHARTS = [
    seats,
    summaries.slide_mean_score,
    scores,
    cards_left,
    group_rate,
    group_sizes,
    take_pick,
    take_values,
    match_games,
    winner_total,
    match_summary,
]

PAGE = Page(
    "Slide",
    CHARTS,
    "Verified Slide games only. A seat is counted from the player who led round 1 "
    "(seat_from_first = (seat − first) mod players).",
    coverage_table="agg_slide_seats",
    coverage_sum="sum(seats)",
    coverage_extra=("seat_from_first = 0",),  # one leading seat per game
    selects=SLIDE_SELECTS,
    versions_table="agg_slide_seats",
    versions_games="sum(seats) FILTER (WHERE seat_from_first = 0)",
    game_label="Slide",
    games_read="slide_games_read",
)
