"""The summaries a designer looks for first, each with its interval: game length per board
and variant (mean and median) and the share of games that reach the turn limit, how games end,
the first-move rate pooled over variants, hidden against open boards, and the Slide mean score
per table size. Drawn on the Boards and Slide pages.

Intervals: a share has Wilson's; a mean the normal one from the histogram's variance
(mean ± 1.96 sd/√n: lengths and scores are bounded, the samples hundreds of games); a median
the distribution-free one from the order statistics at n/2 ± 1.96√n/2; a difference of two
score rates (hidden − open) Newcombe's hybrid Wilson interval.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from replays.slow6.board import TURN_LIMIT

from ..render import Chart, Ctx
from .base import OUT, analysis_views, board_label, draw_rate, label_expr, proportion, sums

Z = 1.959963984540054


def _length_stats(turns: np.ndarray, games: np.ndarray) -> dict:
    """Mean and median of a histogram (values `turns`, counts `games`) with 95% intervals."""
    order = np.argsort(turns)
    t, g = turns[order].astype(float), games[order].astype(float)
    n = g.sum()
    mean = float((t * g).sum() / n)
    sd = math.sqrt(max(float((g * (t - mean) ** 2).sum() / max(n - 1, 1)), 0.0))
    half = Z * sd / math.sqrt(n)
    cum = np.cumsum(g)

    def at(rank: float) -> float:  # the value of the rank-th smallest game (1-based)
        i = int(np.searchsorted(cum, min(max(rank, 1), n), side="left"))
        return float(t[min(i, len(t) - 1)])

    spread = Z * math.sqrt(n) / 2
    return {
        "mean_turns": mean,
        "mean_lo": mean - half,
        "mean_hi": mean + half,
        "median_turns": at(math.ceil(n / 2)),  # the lower median of an even count
        "median_lo": at(math.floor(n / 2 - spread)),
        "median_hi": at(math.ceil(n / 2 + spread + 1)),
    }


def _length(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    rows = []
    for (board, variant), part in df.group_by(["board", "variant"], maintain_order=True):
        turns, games = part["turns"].to_numpy(), part["games"].to_numpy()
        limit = 2 * TURN_LIMIT[int(board)]  # R2.5: T turns each; the log counts both sides
        rows.append(
            {
                "board": board,
                "variant": variant,
                "n": int(games.sum()),
                "at_limit": int(games[turns >= limit].sum()),
                "turn_limit": limit,
                **_length_stats(turns, games),
            }
        )
    out = proportion(pl.DataFrame(rows), "at_limit", "n")
    out = out.with_columns(label_expr(out, ["board", "variant"]).alias("label"))
    return out.select("label", *[c for c in out.columns if c != "label"]).sort("board", "variant")


length_summary = Chart(
    "summary-length",
    "Game length per board and variant, and the share of games that reach the turn limit",
    "agg_game_length",
    lambda ctx: sums(ctx, "agg_game_length", ["board", "variant", "turns"], "sum(games) AS games"),
    post=_length,
    draw=draw_rate(reference=None, x_title="share of games reaching the turn limit (R2.5), 95%"),
    table_rows=12,
    note="turns: the turns in the log, both sides (the limit is 2 × 15 on 5×5, 2 × 21 on 7×7). "
    "mean with its normal 95% interval, median with its order-statistic interval; at_limit: "
    "games that played every turn (they end on points, R6.3, unless a last move ended them).",
)


def _reasons(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    """Each end reason's share of the board's games (draws their own row), Wilson intervals:
    the same games below every line of a board."""
    decided = df.select(
        "board", pl.col("reason").cast(pl.String), (pl.col("games") - pl.col("draws")).alias("k")
    )
    draws = df.group_by("board").agg(
        pl.lit("draw").alias("reason"), pl.col("draws").sum().alias("k")
    )
    per = (
        pl.concat([decided, draws], how="vertical_relaxed")
        .group_by("board", "reason")
        .agg(pl.col("k").sum())
    )
    per = per.with_columns(n=pl.col("k").sum().over("board")).filter(pl.col("k") > 0)
    out = proportion(per.rename({"k": "games"}), "games", "n")
    return out.with_columns(board_label=board_label(out), label=pl.col("reason")).sort(
        "board", "lo", descending=[False, True]
    )


reasons_summary = Chart(
    "summary-end-reasons",
    "How games end: the share of each end reason, with its interval",
    "agg_end_reasons",
    lambda ctx: sums(
        ctx, "agg_end_reasons", ["board", "reason"], "sum(games) AS games, sum(draws) AS draws"
    ),
    post=_reasons,
    draw=draw_rate(
        facet="board_label", reference=None, x_title="share of games, 95% interval", width=300
    ),  # fmt: skip
    note="draw: games without a winner, whatever ended them (R6.2 double wipe-out, R6.3 equal "
    "points); the other reasons count the games they decided.",
)


def _pooled(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    out = analysis_views().first_move_rates(df, by=("board",))
    out = out.rename({"score_rate": "rate", "wilson_lo": "lo", "wilson_hi": "hi"})
    out = out.with_columns(label=pl.concat_str([board_label(out), pl.lit(" (every variant)")]))
    return out.select("label", *[c for c in out.columns if c != "label"]).sort("board")


first_move_pooled = Chart(
    "summary-first-move",
    "First-move score rate per board, every variant pooled",
    "agg_first_move",
    lambda ctx: sums(ctx, "agg_first_move", ["board"], OUT),
    post=_pooled,
    draw=draw_rate(),
    see=(
        "findings",
        "",
        "The Findings page tests the first move per board and variant on the "
        "default cut, among every family (5% FDR)",
    ),  # fmt: skip
)


def _newcombe(k1, n1, k2, n2) -> tuple[float, float, float]:
    """p1 − p2 with Newcombe's hybrid score interval (method 10) from Wilson's."""
    from analysis import stats as st

    p1, p2 = k1 / n1, k2 / n2
    (l1,), (u1,) = st.wilson(np.array([k1]), np.array([n1]))
    (l2,), (u2,) = st.wilson(np.array([k2]), np.array([n2]))
    d = p1 - p2
    lo = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    hi = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return d, lo, hi


def _hidden(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    rows = []
    for board in sorted(df["board"].unique().to_list()):
        part = {r["variant"]: r for r in df.filter(pl.col("board") == board).to_dicts()}
        h, o = part.get("hidden"), part.get("classic")
        if not (h and o and h["n"] and o["n"]):
            continue
        kh, ko = h["wins"] + h["draws"] / 2, o["wins"] + o["draws"] / 2
        d, lo, hi = _newcombe(kh, h["n"], ko, o["n"])
        rows.append(
            {
                "label": f"{board}×{board} hidden − classic",
                "board": board,
                "hidden_n": h["n"],
                "hidden_rate": kh / h["n"],
                "open_n": o["n"],
                "open_rate": ko / o["n"],
                "n": h["n"] + o["n"],
                "rate": d,
                "lo": lo,
                "hi": hi,
            }
        )
    return pl.DataFrame(rows)


hidden_vs_open = Chart(
    "summary-hidden-open",
    "Hidden against open lineups: first-move score rate, hidden − classic",
    "agg_first_move",
    lambda ctx: sums(ctx, "agg_first_move", ["board", "variant"], OUT),
    post=_hidden,
    draw=draw_rate(
        reference=0.0, domain=None, x_title="first-move score, hidden − classic, Newcombe 95%"
    ),
    table_rows=4,
    note="Does hiding the lineups (the hidden variant, R1.4) change the first mover's edge? A "
    "difference whose interval holds 0 is not shown to exist (the interval says how large it "
    "could be).",
)

# -- Slide -------------------------------------------------------------------------------------


def _slide_scores(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    rows = []
    for (players,), part in df.group_by(["players"], maintain_order=True):
        v, s = part["value"].to_numpy().astype(float), part["seats"].to_numpy().astype(float)
        n = s.sum()
        mean = float((v * s).sum() / n)
        sd = math.sqrt(max(float((s * (v - mean) ** 2).sum() / max(n - 1, 1)), 0.0))
        half = Z * sd / math.sqrt(n)
        rows.append(
            {
                "label": f"{players} players",
                "players": players,
                "n": int(n),
                "mean_score": mean,
                "rate": mean,
                "lo": mean - half,
                "hi": mean + half,
            }
        )
    return pl.DataFrame(rows).sort("players")


slide_mean_score = Chart(
    "slide-mean-score",
    "Mean final score of a seat per table size (S3.3)",
    "agg_slide_scores",
    lambda ctx: sums(
        ctx,
        "agg_slide_scores",
        ["players", "value"],
        "sum(seats) AS seats",
        extra=["measure = 'score'"],
    ),
    post=_slide_scores,
    draw=draw_rate(reference=None, domain=None, x_title="mean score of a seat, 95% interval"),
    note="n: seats (every seat of every game); the interval is the mean's, from the spread of "
    "the scores.",
)
