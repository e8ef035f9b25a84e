"""Every dashboard page and chart: the SQL over agg_* tables, the rate step, the drawing.

The SQL of a chart sums an additive agg_* table (docs/agg-tables.md) within the chart's keys
under the page's filters; `analysis.views` then adds rates, Wilson intervals, empirical-Bayes
shrinkage and Benjamini-Hochberg flags exactly as the jobs do for the default cut, so a number
means the same on every page. Columns are renamed for drawing: rate / lo / hi.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from analysis.tables import PIECE_COUNTS

from . import charts
from .filters import SLIDE_SELECTS, SLOW6_SELECTS
from .render import Chart, Ctx

OUT = "sum(n) AS n, sum(wins) AS wins, sum(draws) AS draws, sum(losses) AS losses"
SMALL_N = charts.SMALL_N


@dataclass
class Page:
    title: str
    charts: list[Chart]
    intro: str = ""
    coverage_table: str = "agg_first_move"  # one n per game: sum(n) = games
    coverage_override: dict = field(default_factory=dict)
    coverage_sum: str = "sum(n)"  # the games under the filters, from coverage_table
    coverage_extra: tuple[str, ...] = ()
    selects: tuple[str, ...] = SLOW6_SELECTS  # the filter form's select fields
    versions_table: str = "agg_games_daily"  # client versions (the default: the latest)
    game_label: str = ""  # named in the default-cut line when it is not Slow6
    games_read: str = "games_read"  # the agg_runs column the freshness line counts


# -- helpers -------------------------------------------------------------------------------------


def _views():
    from analysis import views

    return views


def board_label(frame: pl.DataFrame) -> pl.Expr:
    b = pl.col("board").cast(pl.String)
    return pl.concat_str([b, pl.lit("×"), b])


def label_expr(frame: pl.DataFrame, parts: list[str]) -> pl.Expr:
    exprs = []
    for p in parts:
        if p == "board":
            exprs.append(board_label(frame))
        elif p in frame.columns:
            exprs.append(pl.col(p).cast(pl.String).fill_null("—"))
    return pl.concat_str(exprs, separator=" ")


def scored(
    frame: pl.DataFrame,
    by: list[str],
    family: list[str],
    *,
    label: list[str] | None = None,
    p0=0.5,
    sort: str = "lo",
) -> pl.DataFrame:
    """views.rates on summed counts, renamed for drawing, sorted by the lower bound."""
    df = _views().rates(frame, by, family=family, p0=p0)
    df = df.rename({"score_rate": "rate", "wilson_lo": "lo", "wilson_hi": "hi"})
    if label:
        df = df.with_columns(label_expr(df, label).alias("label"))
        df = df.select("label", *[c for c in df.columns if c != "label"])
    return df.sort(sort, descending=True, nulls_last=True)


def proportion(frame: pl.DataFrame, k: str, n: str, name: str = "rate") -> pl.DataFrame:
    df = _views().add_proportion(frame, k, n, name)
    return df.rename({f"{name}_lo": "lo", f"{name}_hi": "hi"}) if name == "rate" else df


def sums(
    ctx: Ctx,
    table: str,
    keys: list[str],
    aggs: str,
    *,
    date="week",
    override=None,
    extra=None,
    order: str = "ALL",
) -> str:
    where = ctx.where(table, date, extra, override)
    key_sql = ", ".join(keys)
    return (
        f"SELECT {key_sql + ', ' if keys else ''}{aggs}\nFROM {table}\n"
        f"{where + chr(10) if where else ''}"
        f"{'GROUP BY ALL' + chr(10) if keys else ''}ORDER BY {order if keys else '1'}"
    )


def _draw_rate(label="label", **kw):
    return lambda rows, ctx: charts.rate_chart(rows, label, **kw)


# -- Overview ------------------------------------------------------------------------------------

games_daily = Chart(
    "games-daily",
    "Verified games per day, by board and variant",
    "agg_games_daily",
    lambda ctx: sums(
        ctx, "agg_games_daily", ["day", "board", "variant"], "sum(games) AS games", date="day"
    ),
    draw=lambda rows, ctx: charts.bars(
        [dict(r, board_variant=f"{r['board']}×{r['board']} {r['variant']}") for r in rows],
        "day",
        "games",
        color="board_variant",
        x_type="T",
        width=640,
    ),
)

records_status = Chart(
    "records-status",
    "Records per day: verified and quarantined",
    "agg_ingest_status",
    lambda ctx: sums(
        ctx, "agg_ingest_status", ["day", "game", "status"], "sum(records) AS records", date="day"
    ),
    draw=lambda rows, ctx: charts.bars(
        [dict(r, kind=f"{r['game']} {r['status']}") for r in rows],
        "day",
        "records",
        color="kind",
        x_type="T",
        width=640,
    ),
)

end_reasons = Chart(
    "end-reasons",
    "How games end (draws apart)",
    "agg_end_reasons",
    lambda ctx: sums(
        ctx, "agg_end_reasons", ["board", "reason"], "sum(games) AS games, sum(draws) AS draws"
    ),
    post=lambda df, ctx: (
        pl.concat(
            [
                df.select(
                    "board",
                    pl.col("reason").cast(pl.String),
                    (pl.col("games") - pl.col("draws")).alias("games"),
                ),
                df.group_by("board").agg(
                    pl.lit("draw").alias("reason"), pl.col("draws").sum().alias("games")
                ),
            ],
            how="vertical_relaxed",
        )
        .filter(pl.col("games") > 0)
        .with_columns(share=pl.col("games") / pl.col("games").sum().over("board"))
        .with_columns(board=board_label(df))
        .sort("board", "reason")
    ),
    draw=lambda rows, ctx: charts.bars(
        rows, "reason", "share", color="reason", facet="board", width=260, y_title="share of games"
    ),
)

game_length = Chart(
    "game-length",
    "Game length in turns",
    "agg_game_length",
    lambda ctx: sums(ctx, "agg_game_length", ["board", "turns"], "sum(games) AS games"),
    post=lambda df, ctx: df.with_columns(board=board_label(df)),
    draw=lambda rows, ctx: charts.bars(
        rows, "turns", "games", x_type="O", facet="board", width=300
    ),
)


def _first_move(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    out = _views().first_move_rates(df, by=("board", "variant"))
    out = out.rename({"score_rate": "rate", "wilson_lo": "lo", "wilson_hi": "hi"})
    out = out.with_columns(label_expr(out, ["board", "variant"]).alias("label"))
    return out.select("label", *[c for c in out.columns if c != "label"]).sort(
        "lo", descending=True
    )


first_move = Chart(
    "first-move",
    "First-move advantage: score rate of the side that moved first",
    "agg_first_move",
    lambda ctx: sums(ctx, "agg_first_move", ["board", "variant"], OUT),
    post=_first_move,
    draw=_draw_rate(),
    note="Tested against ½ (Benjamini-Hochberg over the rows shown).",
)

# -- Setups --------------------------------------------------------------------------------------

HIDDEN_NOTE = (
    "Hidden-variant lineups are chosen by the players, not dealt: their rates describe choices, "
    "not causes (lineup_source = chosen)."
)

lineups = Chart(
    "lineups",
    "Lineups: score rate of the side that played each lineup (top 40 by lower bound)",
    "agg_lineup",
    lambda ctx: sums(ctx, "agg_lineup", ["board", "variant", "lineup_source", "lineup"], OUT),
    post=lambda df, ctx: scored(
        df,
        ["board", "variant", "lineup_source", "lineup"],
        ["board", "variant"],
        label=["board", "variant", "lineup"],
    ),
    draw=lambda rows, ctx: charts.rate_chart(rows, "label"),
    draw_limit=40,
    table_rows=60,
    note="Each game counts once for each side. Sorted by the Wilson lower bound; 'shrunk' is the "
    "empirical-Bayes estimate (a lineup seen 9 times cannot top it). " + HIDDEN_NOTE,
)

setup_cells = Chart(
    "setup-cells",
    "Rank × file: score rate of a side with rank r on file f",
    "agg_setup_cell",
    lambda ctx: sums(ctx, "agg_setup_cell", ["board", "variant", "rank", "file"], OUT),
    post=lambda df, ctx: scored(
        df, ["board", "variant", "rank", "file"], ["board", "variant"], label=["board", "variant"]
    ).with_columns(file=pl.col("file").map_elements(lambda f: "abcdefg"[f], pl.String)),
    draw=lambda rows, ctx: charts.heatmap(rows, "file", "rank", facet="label", domain=(0.4, 0.6)),
    note="Faded cells: fewer than 30 games; red ring: flagged by BH at 5%. " + HIDDEN_NOTE,
)


def _lane(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    df = proportion(df, "promoted", "pieces")
    df = df.rename({"pieces": "n"}).with_columns(label_expr(df, ["board"]).alias("board_label"))
    return df.with_columns(
        label=pl.concat_str(
            [
                pl.col("board_label"),
                pl.lit(" rank "),
                pl.col("rank").cast(pl.String),
                pl.lit(" distance "),
                pl.col("distance").cast(pl.String),
            ]
        )
    ).sort("board", "rank", "distance")


lane_distance = Chart(
    "lane-distance",
    "Promotion rate by lane distance (files between a piece and its promotion lane)",
    "agg_lane_distance",
    lambda ctx: sums(
        ctx,
        "agg_lane_distance",
        ["board", "rank", "distance"],
        "sum(pieces) AS pieces, sum(promoted) AS promoted, sum(home_wins) AS home_wins",
    ),
    post=_lane,
    draw=lambda rows, ctx: charts.heatmap(
        rows, "distance", "rank", value="rate", facet="board_label", domain=None, scheme="blues"
    ),
    note="rate = pieces promoted / pieces (Wilson interval in the tooltip).",
)

lineup_vs = Chart(
    "lineup-vs",
    "Lineup against lineup (default cut only, pairs with at least 30 games)",
    "agg_lineup_vs",
    lambda ctx: "SELECT * FROM agg_lineup_vs\nORDER BY wilson_lo DESC\nLIMIT 500",
    table_rows=30,
    note="Computed by the jobs for the default balance cut; the page's filters do not apply.",
)

# -- Powers --------------------------------------------------------------------------------------

POWER_SUMS = (
    "sum(sides_n) AS sides_n, "
    + ", ".join(
        f"sum({p}_{k}) AS {p}_{k}"
        for p in ("picked", "not", "used", "held")
        for k in ("n", "wins", "draws", "losses")
    )
    + ", sum(used_round_sum) AS used_round_sum"
)


def _power(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    out = _views().power_rates(df.with_columns(pl.col("power").cast(pl.String)))
    return out.with_columns(label_expr(out, ["board", "power"]).alias("label"))


def power_sql(ctx: Ctx) -> str:
    return sums(ctx, "agg_power", ["board", "power"], POWER_SUMS)


pick_rate = Chart(
    "power-pick-rate",
    "Pick rate: share of sides (in games with powers) that picked each power",
    "agg_power",
    power_sql,
    post=lambda df, ctx: (
        _power(df, ctx)
        .rename({"pick_rate": "rate", "pick_rate_lo": "lo", "pick_rate_hi": "hi"})
        .with_columns(n=pl.col("sides_n"))
        .drop("flagged")
        .sort("lo", descending=True)
    ),
    draw=_draw_rate(reference=0.3, x_title="pick rate, 95% interval (3 of 10 = 0.3)"),
)

pick_effect = Chart(
    "power-pick-effect",
    "Score when picked minus score when not picked",
    "agg_power",
    power_sql,
    post=lambda df, ctx: (
        _power(df, ctx)
        .rename({"pick_effect": "rate", "pick_effect_lo": "lo", "pick_effect_hi": "hi"})
        .with_columns(n=pl.col("picked_n"))
        .sort("lo", descending=True)
    ),
    draw=_draw_rate(
        reference=0.0,
        domain=None,
        x_title="score picked − not picked, Newcombe 95% interval",
    ),
    note="Flagged: the difference survives Benjamini-Hochberg at 5% within each board. Raw "
    "difference: a power picked mostly by the side moving first looks stronger (see the "
    "adjusted view in docs/agg-tables.md).",
)

use_rate = Chart(
    "power-use",
    "Used rate (of the sides that picked it) and mean round of use",
    "agg_power",
    power_sql,
    post=lambda df, ctx: (
        _power(df, ctx)
        .rename({"used_rate": "rate", "used_rate_lo": "lo", "used_rate_hi": "hi"})
        .with_columns(n=pl.col("picked_n"))
        .drop("flagged")
        .sort("lo", descending=True)
    ),
    draw=_draw_rate(reference=None, x_title="used before the end, 95% interval"),
)

use_effect = Chart(
    "power-use-effect",
    "Score when used minus score when held to the end",
    "agg_power",
    power_sql,
    post=lambda df, ctx: (
        _power(df, ctx)
        .rename({"use_effect": "rate", "use_effect_lo": "lo", "use_effect_hi": "hi"})
        .with_columns(n=pl.col("used_n"), flagged=pl.col("use_effect_q") < 0.05)
        .sort("lo", descending=True)
    ),
    draw=_draw_rate(reference=0.0, domain=None, x_title="score used − held, Newcombe 95% interval"),
)

used_round = Chart(
    "power-used-round",
    "When powers are used: uses per round",
    "agg_power_used_turn",
    lambda ctx: sums(ctx, "agg_power_used_turn", ["board", "power", "round"], "sum(uses) AS uses"),
    post=lambda df, ctx: df.with_columns(
        pl.col("power").cast(pl.String),
        share=pl.col("uses") / pl.col("uses").sum().over("board", "power"),
        n=pl.col("uses").sum().over("board", "power"),
        board_label=board_label(df),
    ),
    draw=lambda rows, ctx: charts.heatmap(
        rows,
        "round",
        "power",
        value="share",
        facet="board_label",
        domain=None,
        scheme="blues",
        text=None,
        cell=24,
    ),
    note="share = uses of that power in that round / all its uses (round = a turn of each side).",
)


def _pairs(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    powers = ctx.params.get("_power_frame")
    out = _views().pair_rates(df.with_columns(pl.col("power_a", "power_b").cast(pl.String)), powers)
    return out.with_columns(board_label=board_label(out)).sort("synergy_lo", descending=True)


def pair_sql(ctx: Ctx) -> str:
    # the singles the synergy is measured against come from agg_power under the same filters
    from .render import frame_of

    result = ctx.run(power_sql(ctx))
    ctx.params["_power_frame"] = frame_of(result.table).with_columns(
        pl.col("power").cast(pl.String)
    )
    return sums(ctx, "agg_power_pair", ["board", "power_a", "power_b"], OUT)


pair_synergy = Chart(
    "power-pairs",
    "Pair synergy: observed score of two powers picked together minus expected from the singles",
    "agg_power_pair",
    pair_sql,
    post=_pairs,
    draw=lambda rows, ctx: charts.heatmap(
        rows,
        "power_b",
        "power_a",
        value="synergy",
        facet="board_label",
        domain=(-0.1, 0.1),
        scheme="redblue",
        cell=30,
    ),
    note="Expected = expit(logit sA + logit sB − logit s̄). Red ring: flagged by BH at 5%.",
)


def _vs(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    out = scored(
        df.with_columns(pl.col("power", "opp_power").cast(pl.String)),
        ["board", "power", "opp_power"],
        ["board"],
    )
    return out.with_columns(board_label=board_label(out))


power_vs = Chart(
    "power-vs",
    "Power against power: score of a side that picked the row's power against one that picked "
    "the column's",
    "agg_power_vs",
    lambda ctx: sums(ctx, "agg_power_vs", ["board", "power", "opp_power"], OUT),
    post=_vs,
    draw=lambda rows, ctx: charts.heatmap(
        rows, "opp_power", "power", facet="board_label", domain=(0.4, 0.6), cell=30
    ),
)

# -- Boards (5x5 and 7x7 side by side) ----------------------------------------------------------


def _pieces(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    out = _views().piece_rates(df, by=("board", "rank"))
    out = out.rename(
        {
            "promotion_rate": "rate",
            "promotion_rate_lo": "lo",
            "promotion_rate_hi": "hi",
            "pieces": "n",
        }
    )
    return out.with_columns(
        board_label=board_label(out),
        label=pl.concat_str([pl.lit("rank "), pl.col("rank").cast(pl.String)]),
    )


PIECE_SUMS = ", ".join(f"sum({c}) AS {c}" for c in PIECE_COUNTS)

promotion = Chart(
    "board-promotion",
    "Promotion rate per rank",
    "agg_pieces",
    lambda ctx: sums(ctx, "agg_pieces", ["board", "rank"], PIECE_SUMS),
    post=_pieces,
    draw=lambda rows, ctx: charts.rate_chart(
        rows,
        "label",
        facet="board_label",
        reference=None,
        x_title="promoted, 95% interval",
        width=300,
    ),
)


def _first_move_by_board(df, ctx):
    out = _first_move(df, ctx)
    return out.with_columns(board_label=board_label(out), label=pl.col("variant"))


first_move_boards = Chart(
    "board-first-move",
    "First-move score rate by variant",
    "agg_first_move",
    lambda ctx: sums(ctx, "agg_first_move", ["board", "variant"], OUT),
    post=_first_move_by_board,
    draw=lambda rows, ctx: charts.rate_chart(rows, "label", facet="board_label", width=300),
)

length_boards = Chart(
    "board-length",
    "Game length in turns",
    "agg_game_length",
    lambda ctx: sums(ctx, "agg_game_length", ["board", "reason", "turns"], "sum(games) AS games"),
    post=lambda df, ctx: df.with_columns(pl.col("reason").cast(pl.String), board=board_label(df)),
    draw=lambda rows, ctx: charts.bars(
        rows, "turns", "games", color="reason", x_type="O", facet="board", width=330
    ),
)


def _events(df, ctx):
    out = scored(df, ["board", "made_stun", "made_catch"], ["board"], p0="family")
    return out.with_columns(
        board_label=board_label(out),
        label=pl.concat_str(
            [
                pl.when(pl.col("made_stun"))
                .then(pl.lit("stunned a crown"))
                .otherwise(pl.lit("no stun")),
                pl.when(pl.col("made_catch")).then(pl.lit(", caught one")).otherwise(pl.lit("")),
            ]
        ),
    )


stuns = Chart(
    "board-stuns",
    "Score of sides that stunned / caught a crown",
    "agg_side_events",
    lambda ctx: sums(
        ctx,
        "agg_side_events",
        ["board", "made_stun", "made_catch"],
        OUT + ", sum(stuns) AS stuns, sum(catches) AS catches",
    ),
    post=_events,
    draw=lambda rows, ctx: charts.rate_chart(rows, "label", facet="board_label", width=300),
    note="Tested against the board's pooled rate.",
)

# -- Computer opponents, challenges ------------------------------------------------------------

COMPUTER = {"mode": "computer"}
CHALLENGE = {"mode": "challenge"}

vs_ai = Chart(
    "vs-ai",
    "Human score rate against each computer level",
    "agg_vs_ai",
    lambda ctx: sums(ctx, "agg_vs_ai", ["board", "ai_level"], OUT, override=COMPUTER),
    post=lambda df, ctx: (
        scored(df, ["board", "ai_level"], ["board"], sort="board")
        .with_columns(
            label=pl.concat_str([pl.lit("level "), pl.col("ai_level").cast(pl.String)]),
            board_label=board_label(df),
        )
        .sort("board", "ai_level")
    ),
    draw=lambda rows, ctx: charts.rate_chart(rows, "label", facet="board_label", width=300),
    note="Computer games only, whatever the mode filter says. Level 1 careful .. 4 hard.",
)

vs_ai_first = Chart(
    "vs-ai-first",
    "Human score rate by level and who moved first",
    "agg_vs_ai",
    lambda ctx: sums(
        ctx, "agg_vs_ai", ["board", "ai_level", "human_first"], OUT, override=COMPUTER
    ),
    post=lambda df, ctx: (
        scored(df, ["board", "ai_level", "human_first"], ["board"])
        .with_columns(
            label=pl.concat_str(
                [
                    pl.lit("level "),
                    pl.col("ai_level").cast(pl.String),
                    pl.when(pl.col("human_first"))
                    .then(pl.lit(", human first"))
                    .otherwise(pl.lit(", computer first")),
                ]
            ),
            board_label=board_label(df),
        )
        .sort("board", "ai_level", "human_first")
    ),
    draw=lambda rows, ctx: charts.rate_chart(rows, "label", facet="board_label", width=300),
)


def _challenges(df, ctx):
    out = _views().rates(df, ["board", "challenge_id"], family=["board"], p0=None)
    out = proportion(out.rename({"wins": "solves"}), "solves", "n")
    return out.with_columns(label_expr(out, ["board", "challenge_id"]).alias("label")).sort(
        "lo", descending=True
    )


challenges = Chart(
    "challenges",
    "Solve rate per challenge (a solve = the side to move in the set position won)",
    "agg_challenge",
    lambda ctx: sums(ctx, "agg_challenge", ["board", "challenge_id"], OUT, override=CHALLENGE),
    post=_challenges,
    draw=_draw_rate(reference=None, x_title="solve rate, Wilson 95% interval"),
    table_rows=50,
    note="Challenge games only. Sorted by the lower bound: the most reliably solved first.",
)

# -- Data quality ---------------------------------------------------------------------------------

q_by_rule = Chart(
    "quarantine-rules",
    "Quarantined records by rule and client version",
    "agg_ingest_status",
    lambda ctx: sums(
        ctx,
        "agg_ingest_status",
        ["game", "rule", "client_version"],
        "sum(records) AS records",
        date="day",
        extra=["status = 'quarantined'"],
        order="records DESC",
    ),
    draw=lambda rows, ctx: charts.bars(rows, "rule", "records", color="client_version", width=560),
)


def _q_share(df, ctx):
    out = proportion(df, "quarantined", "records")
    return (
        out.rename({"records": "n"})
        .with_columns(label=pl.col("client_version"))
        .sort("lo", descending=True)
    )


q_share = Chart(
    "quarantine-share",
    "Share of records quarantined, per client version",
    "agg_ingest_status",
    lambda ctx: sums(
        ctx,
        "agg_ingest_status",
        ["client_version"],
        "sum(records) AS records, "
        "sum(records) FILTER (WHERE status = 'quarantined') AS quarantined",
        date="day",
    ),
    post=lambda df, ctx: _q_share(df.with_columns(pl.col("quarantined").fill_null(0)), ctx),
    draw=_draw_rate(reference=None, domain=None, x_title="quarantined share, 95% interval"),
)

q_platform = Chart(
    "quarantine-platform",
    "Quarantined records by rule and platform",
    "agg_ingest_status",
    lambda ctx: sums(
        ctx,
        "agg_ingest_status",
        ["rule", "platform"],
        "sum(records) AS records",
        date="day",
        extra=["status = 'quarantined'"],
    ),
    draw=lambda rows, ctx: charts.heatmap(
        rows,
        "platform",
        "rule",
        value="records",
        domain=None,
        scheme="oranges",
        text="records",
        n_field="records",
        min_n=0,
    ),
)


def examples_sql(ctx: Ctx) -> str:
    where = ctx.where("quarantine", "ended_at")
    return (
        "SELECT rule, game_id, game, client_version, platform, turn, message, ended_at\n"
        f"FROM quarantine\n{where + chr(10) if where else ''}"
        "QUALIFY row_number() OVER (PARTITION BY rule ORDER BY received_at DESC) <= 3\n"
        "ORDER BY rule, received_at DESC"
    )


q_examples = Chart(
    "quarantine-examples",
    "Examples: the latest three quarantined records of each rule",
    "quarantine",
    examples_sql,
    table_rows=60,
    note="Open a game in the explorer to step to the turn that broke the rule.",
)

# -- Trends --------------------------------------------------------------------------------------


def _trend(df, ctx, key):
    out = _views().first_move_rates(df, by=("board", "variant", key))
    out = out.rename({"score_rate": "rate", "wilson_lo": "lo", "wilson_hi": "hi"})
    return out.with_columns(series=label_expr(out, ["board", "variant"])).sort(key)


trend_week = Chart(
    "trend-first-week",
    "First-move score rate by week",
    "agg_first_move",
    lambda ctx: sums(ctx, "agg_first_move", ["board", "variant", "week"], OUT),
    post=lambda df, ctx: _trend(df, ctx, "week"),
    draw=lambda rows, ctx: charts.trend(rows, "week", color="series"),
)

trend_version = Chart(
    "trend-first-version",
    "First-move score rate by client version",
    "agg_first_move",
    lambda ctx: sums(ctx, "agg_first_move", ["board", "variant", "client_version"], OUT),
    post=lambda df, ctx: _trend(df, ctx, "client_version").sort(
        pl.col("client_version").map_elements(_version_rank, pl.Int64)
    ),
    draw=lambda rows, ctx: charts.trend(rows, "client_version", color="series", x_type="O"),
)


def _power_trend(df, ctx):
    out = _views().power_rates(
        df.with_columns(pl.col("power").cast(pl.String)),
        by=("board", "power", "week"),
        family=("board", "week"),
    )
    out = out.rename(
        {"picked_score_rate": "rate", "picked_wilson_lo": "lo", "picked_wilson_hi": "hi"}
    ).with_columns(n=pl.col("picked_n"))
    return out.with_columns(board_label=board_label(out)).sort("week")


trend_power = Chart(
    "trend-power-week",
    "Score rate of sides that picked each power, by week",
    "agg_power",
    lambda ctx: sums(ctx, "agg_power", ["board", "power", "week"], POWER_SUMS),
    post=_power_trend,
    draw=lambda rows, ctx: charts.trend(
        rows, "week", color="power", facet="board_label", width=420
    ),
)

trend_ai = Chart(
    "trend-ai-version",
    "Human score rate against the computer, by client version and level",
    "agg_vs_ai",
    lambda ctx: sums(
        ctx, "agg_vs_ai", ["board", "ai_level", "client_version"], OUT, override=COMPUTER
    ),
    post=lambda df, ctx: (
        scored(df, ["board", "ai_level", "client_version"], ["board"])
        .with_columns(
            series=pl.concat_str(
                [board_label(df), pl.lit(" level "), pl.col("ai_level").cast(pl.String)]
            )
        )
        .sort(pl.col("client_version").map_elements(_version_rank, pl.Int64))
    ),
    draw=lambda rows, ctx: charts.trend(rows, "client_version", color="series", x_type="O"),
)

_VERSION_ORDER: dict[str, int] = {}


def _version_rank(v: str) -> int:
    if v not in _VERSION_ORDER:
        from analysis.cuts import version_key

        ordered = sorted({*_VERSION_ORDER, v}, key=version_key)
        _VERSION_ORDER.clear()
        _VERSION_ORDER.update({x: i for i, x in enumerate(ordered)})
    return _VERSION_ORDER[v]


# -- Slide (issue 6): dashboard/slide_charts.py -----------------------------------------------

from . import slide_charts  # noqa: E402  (it imports `sums` from here at call time)

# -- the pages -----------------------------------------------------------------------------------

PAGES: dict[str, Page] = {
    "overview": Page(
        "Overview",
        [games_daily, records_status, end_reasons, game_length, first_move],
        "Verified Slow6 games only (quarantined records are counted apart and never enter a rate).",
    ),
    "setups": Page("Setups", [lineups, setup_cells, lane_distance, lineup_vs]),
    "powers": Page(
        "Powers",
        [pick_rate, pick_effect, use_rate, use_effect, used_round, pair_synergy, power_vs],
        "Games with powers only.",
    ),
    "boards": Page("Boards: 5×5 and 7×7", [first_move_boards, length_boards, promotion, stuns]),
    "computer": Page("Computer opponents", [vs_ai, vs_ai_first], coverage_override=COMPUTER),
    "challenges": Page("Challenges", [challenges], coverage_override=CHALLENGE),
    "quality": Page(
        "Data quality", [q_by_rule, q_share, q_platform, q_examples], coverage_table=""
    ),
    "trends": Page("Trends", [trend_week, trend_version, trend_power, trend_ai]),
    "slide": Page(
        "Slide",
        slide_charts.CHARTS,
        "Verified Slide games only. A seat is counted from the player who led round 1 "
        "(seat_from_first = (seat − first) mod players).",
        coverage_table="agg_slide_seats",
        coverage_sum="sum(seats)",
        coverage_extra=("seat_from_first = 0",),  # one leading seat per game
        selects=SLIDE_SELECTS,
        versions_table="agg_slide_seats",
        game_label="Slide",
        games_read="slide_games_read",
    ),
}

CHARTS: dict[str, Chart] = {c.id: c for p in PAGES.values() for c in p.charts}


def page_of(chart_id: str) -> Page | None:
    """The page a chart is on (its filters' defaults are that page's)."""
    return next((p for p in PAGES.values() if any(c.id == chart_id for c in p.charts)), None)


def chart(ctx: Ctx, chart_id: str) -> Chart | None:
    return CHARTS.get(chart_id)


# -- page furniture ------------------------------------------------------------------------------


def _one(ctx: Ctx, sql: str):
    from .sqlsafe import QueryError

    try:
        result = ctx.snapshots.run(sql, limit=1000, timeout=5)
    except QueryError:
        return None
    return result


def freshness(ctx: Ctx, page: Page | None = None) -> dict:
    out = {"snapshot_at": ctx.snapshots.snapshot_at, "finished": None}
    games_key = page.games_read if page is not None else "games_read"
    label = page.game_label if page is not None else ""
    out["games_label"] = f"verified {label} games" if label else "verified games"
    if not ctx.has("agg_runs"):
        return out
    cols = ctx.columns("agg_runs")
    order = next((c for c in ("finished", "finished_at", "started", "run_id") if c in cols), None)
    result = _one(
        ctx, f"SELECT * FROM agg_runs {'ORDER BY ' + order + ' DESC' if order else ''} LIMIT 1"
    )
    if result is None or not result.row_count:
        return out
    row = {k: v[0] for k, v in result.table.to_pydict().items()}
    finished = row.get("finished") or row.get("finished_at") or row.get("started")
    out["finished"] = str(finished)[:19] if finished else None
    out["version"] = row.get("job_version")
    out["games"] = row.get(games_key) if games_key in row else row.get("games")
    return out


def client_versions(ctx: Ctx, table: str = "agg_games_daily") -> list[str]:
    """Client versions in `table`, latest first (Slow6 and Slide each have their own)."""
    if not ctx.has(table):
        return []
    result = _one(ctx, f"SELECT DISTINCT client_version FROM {table}")
    if result is None:
        return []
    from analysis.cuts import version_key

    return sorted(result.table.column(0).to_pylist(), key=version_key, reverse=True)


def defaults(ctx_versions: list[str]) -> dict[str, str]:
    """The default balance cut (analysis.cuts.Cut.default): human games on the latest client."""
    return {"mode": "human", "client_version": ctx_versions[0] if ctx_versions else ""}


def coverage(ctx: Ctx, page: Page) -> int | None:
    if not page.coverage_table or not ctx.has(page.coverage_table):
        return None
    sql = sums(
        ctx,
        page.coverage_table,
        [],
        f"{page.coverage_sum} AS games",
        override=page.coverage_override,
        extra=list(page.coverage_extra),
    )
    result = _one(ctx, sql)
    if result is None or not result.row_count:
        return None
    return int(result.table.column(0)[0].as_py() or 0)
