"""The Challenges page: solve rate per challenge (a solve is a win: a draw is no solve), and
the hardest and easiest challenges of each board."""

from __future__ import annotations

import polars as pl

from ..render import Chart
from .base import OUT, Page, draw_rate, label_expr, sums

CHALLENGE = {"mode": "challenge"}
COUNTS = OUT + ", sum(solve_turns_sum) AS solve_turns_sum"
# how many challenges the hardest / easiest panels show per board
RANKED = 10


def _challenges(df: pl.DataFrame, ctx) -> pl.DataFrame:
    from analysis.opponents import challenge_rates

    out = challenge_rates(df)  # attempts, solves, draws, losses, solve_rate (+ _lo, _hi), ...
    out = out.rename(
        {
            "attempts": "n",
            "solve_rate": "rate",
            "solve_rate_lo": "lo",
            "solve_rate_hi": "hi",
            "solve_shrunk": "shrunk",
        }
    )
    out = out.with_columns(label_expr(out, ["board", "challenge_id"]).alias("label"))
    return out.select("label", *[c for c in out.columns if c != "label"]).sort(
        "lo", "n", descending=True
    )


def _ranked(df: pl.DataFrame, ctx) -> pl.DataFrame:
    """The RANKED lowest and highest shrunk solve rates of each board whose challenges differ
    in difficulty (analysis.opponents.challenges_differ; the shrunk rate: a set solved 1 time
    in 1 is not the easiest, nor one failed once the hardest). A board with fewer than
    2 * RANKED challenges is split in two halves."""
    from analysis.opponents import challenges_differ

    out = _challenges(df, ctx)
    # only boards whose challenges differ at all are ranked (else the order is noise)
    verdict = challenges_differ(out.rename({"n": "attempts"}))
    if ctx is not None:
        ctx.params["challenges_differ"] = verdict
    keep = verdict.filter(pl.col("differ")).select(pl.col("board").cast(out.schema["board"]))
    out = out.join(keep, on="board", how="semi").sort("board", "shrunk", "rate", "n")
    place = pl.int_range(1, pl.len() + 1).over("board")
    count = pl.len().over("board")
    hardest = pl.min_horizontal(pl.lit(RANKED), (count + 1) // 2)
    easiest = pl.min_horizontal(pl.lit(RANKED), count - hardest)
    side = (
        pl.when(place <= hardest)
        .then(pl.lit("hardest"))
        .when(place > count - easiest)
        .then(pl.lit("easiest"))
    )
    out = out.with_columns(difficulty=side).filter(pl.col("difficulty").is_not_null())
    out = out.with_columns(
        panel=pl.concat_str([label_expr(out, ["board"]), pl.col("difficulty")], separator=" ")
    )
    # hardest first within its panel; easiest from the easiest down
    easiest_first = pl.col("difficulty") == "easiest"
    order = pl.int_range(pl.len()).over("board")
    return (
        out.with_columns(_order=pl.when(easiest_first).then(-order).otherwise(order))
        .sort("board", easiest_first, "_order")
        .drop("_order")
        .select(
            "panel", "difficulty", *[c for c in out.columns if c not in ("panel", "difficulty")]
        )
    )


def _ranked_summary(df: pl.DataFrame, ctx) -> str:
    """Which boards are ranked, and for the others: no challenge differs."""
    verdict = ctx.params.get("challenges_differ") if ctx is not None else None
    if verdict is None or not verdict.height:
        return ""
    parts = []
    for r in verdict.sort("board").iter_rows(named=True):
        b = f"{r['board']}×{r['board']}"
        said = (
            f"{b}: the challenges differ (likelihood-ratio test of one solve rate, "
            f"p = {r['p_value']:.2g}), ranked below"
            if r["differ"]
            else f"{b}: no challenge differs from the others in these games (p = "
            f"{r['p_value']:.2g}; {r['challenges']} challenges, {r['min_attempts']:,}–"
            f"{r['max_attempts']:,} attempts each): none is ranked hardest or easiest"
        )
        parts.append(said)
    return "; ".join(parts) + "."


ranked = Chart(
    "challenges-ranked",
    f"Hardest and easiest challenges ({RANKED} of each per board, by shrunk solve rate)",
    "agg_challenge",
    lambda ctx: sums(ctx, "agg_challenge", ["board", "challenge_id"], COUNTS, override=CHALLENGE),
    post=_ranked,
    draw=draw_rate(
        facet="panel",
        reference=None,
        reference_field="tested_against",
        x_title="solve rate (wins / attempts), Wilson 95% interval",
    ),
    table_rows=40,
    summary=_ranked_summary,
    empty="No challenge differs from the others on any board: none is ranked.",
    note="Ranked by shrunk: the solve rate pulled towards the board's pooled rate (dashed line), "
    "so a set tried once cannot top or bottom the list. flagged: harder or easier than the "
    "board's other challenges (its attempts against theirs, BH at 5% across the board's "
    "challenges). mean_turns_to_solve: turns of a solved attempt (both sides).",
)

challenges = Chart(
    "challenges",
    "Solve rate per challenge (a solve = the side to move in the set position won)",
    "agg_challenge",
    lambda ctx: sums(ctx, "agg_challenge", ["board", "challenge_id"], COUNTS, override=CHALLENGE),
    post=_challenges,
    draw=draw_rate(reference=None, x_title="solve rate (wins / attempts), Wilson 95% interval"),
    table_rows=50,
    note="Challenge games only. A draw is not a solve: draws and losses are counted apart. "
    "n = attempts; shrunk = the solve rate pulled towards the board's pooled rate (a set tried "
    "once cannot top the chart). Sorted by the lower bound: the most reliably solved first.",
)

PAGE = Page("Challenges", [ranked, challenges], coverage_override=CHALLENGE)
