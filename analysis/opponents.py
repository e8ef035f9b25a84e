"""Computer opponents (human score by AI level) and challenges (solve rate per challenge)."""

from __future__ import annotations

import polars as pl

from . import stats as st
from . import views
from .cuts import Cut
from .games_sql import Selection, decoded, games, outcome, scored
from .tables import Cube


def _vs_ai(sel: Selection) -> str:
    # the human plays the side the computer does not
    return scored(
        decoded(
            sel,
            f"""WITH {games(sel)}
SELECT cw, "first" <> ai_side AS human_first, {outcome("r")}
FROM (SELECT *, CASE WHEN ai_side = 0 THEN -res0 ELSE res0 END AS r FROM g
      WHERE mode = 'computer' AND ai_side IS NOT NULL)
GROUP BY ALL""",
        )
    )


def _challenge(sel: Selection) -> str:
    # Challenge games have no computer side in the record; the player is the side to move in
    # the set position, which R9.2 makes `first`. A solve is a win of that side.
    return scored(
        decoded(
            sel,
            f"""WITH {games(sel)}
SELECT cw, challenge_id, {outcome("res_first")} FROM g
WHERE mode = 'challenge' AND challenge_id IS NOT NULL GROUP BY ALL""",
        )
    )


CUBES = [
    Cube("agg_vs_ai", "games", _vs_ai),
    Cube("agg_challenge", "games", _challenge),
]


def rate_tables(fetch, cut: Cut) -> dict[str, pl.DataFrame]:
    ai = views.rates(
        fetch("agg_vs_ai", cut.with_modes("computer")),
        ["board", "ai_level"],
        family=["board"],
        p0=0.5,
    )
    ch = challenge_rates(fetch("agg_challenge", cut.with_modes("challenge")))
    return {"agg_vs_ai_rates": ai, "agg_challenge_rates": ch}


def challenge_rates(frame, by=("board", "challenge_id")) -> pl.DataFrame:
    """Solve rate (wins of the player / attempts) with Wilson interval, and shrunk towards the
    board's pooled solve rate (a challenge tried 5 times does not top the chart)."""
    df = views.summed(frame, list(by), ["n", "wins", "draws", "losses"]).filter(pl.col("n") > 0)
    df = df.rename({"n": "attempts", "wins": "solves"})
    df = views.add_proportion(df, "solves", "attempts", "solve_rate")
    labels = df.select(pl.struct(list(by)[:-1]).rank("dense")).to_series().to_numpy()
    shrunk = st.shrink_grouped(df["solves"].to_numpy(), df["attempts"].to_numpy(), labels)
    return df.with_columns(pl.Series("solve_shrunk", shrunk))
