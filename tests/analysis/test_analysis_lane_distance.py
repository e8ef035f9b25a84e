"""First move by lane distance (agg_lane_distance_rates) is tested against the board's own
first-move rate: a first-move edge alone flags nothing, a distance effect is found at its size.

The counts are simulated straight into agg_lane_distance's shape: per game, two uniformly
random lineups (so each rank's lane distance is that of dealt lineups) and the first mover's
result from a known probability, which may depend on one rank's distance.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from analysis import setups
from analysis.tables import LANE_COUNTS

DRAWS = 0.05


def lane_frame(
    rng, games: int, board: int, first_score: float, planted: tuple[int, int, float] | None = None
) -> pl.DataFrame:
    """agg_lane_distance rows (one week, one version) of `games` simulated games. The first
    mover scores `first_score` on average; `planted` = (rank, distance, shift): the first mover
    scores `shift` more when that rank starts at that distance."""
    pos0 = np.argsort(rng.random((games, board)), axis=1)  # file of each rank, side 0
    pos1 = np.argsort(rng.random((games, board)), axis=1)
    dist = np.abs(pos0 - pos1)  # (game, rank - 1)
    score = np.full(games, first_score)
    if planted:
        rank, distance, shift = planted
        score = score + shift * (dist[:, rank - 1] == distance)
    u = rng.random(games)
    # a draw scores 1/2: win with probability score - DRAWS / 2 leaves the mean at `score`
    result = np.where(u < score - DRAWS / 2, 1, np.where(u < score + DRAWS / 2, 0, -1))
    rows = pl.DataFrame(
        {
            "rank": np.repeat(np.arange(1, board + 1), games).astype(np.uint8),
            "distance": dist.T.ravel().astype(np.uint8),
            "res": np.tile(result, board),
        }
    )
    out = rows.group_by("rank", "distance").agg(
        pieces=pl.len() * 2,  # both sides' pieces of that rank
        first_n=pl.len(),
        first_wins=(pl.col("res") == 1).sum(),
        first_draws=(pl.col("res") == 0).sum(),
        first_losses=(pl.col("res") == -1).sum(),
    )
    return out.with_columns(
        board=pl.lit(board, pl.UInt8),
        variant=pl.lit("classic"),
        promoted=pl.lit(0),
        crowns_alive=pl.lit(0),
        home_wins=pl.lit(0),
    ).select("board", "variant", "rank", "distance", *LANE_COUNTS)


@pytest.mark.parametrize("board", [5, 7])
def test_a_first_move_edge_without_a_distance_effect_flags_nothing(board):
    # the first mover scores 0.56 everywhere: tested against 1/2, nearly every row was flagged
    rng = np.random.default_rng(board)
    flagged = rows = 0
    for _ in range(10):
        out = setups.lane_rates(lane_frame(rng, 20_000, board, 0.56))
        assert out["first_tested_against"].to_numpy() == pytest.approx(0.56, abs=0.01)
        flagged += out["first_flagged"].sum()
        rows += out.height
        # every row shares the board's edge: its interval against 1/2 would exclude it
        assert (out["first_wilson_lo"] > 0.5).mean() > 0.5
    assert rows >= 10 * board * (board - 1)
    # BH at 5% with every hypothesis null: a flag in at most about 5% of the ten families
    assert flagged <= 2, flagged


def test_a_planted_distance_effect_is_found_at_its_size():
    # rank 3 starting in its own lane (distance 0) is worth 0.04 more to the first mover, on a
    # board where the first mover scores 0.56 anyway; about 4,000 of the 20,000 games have it
    rng = np.random.default_rng(11)
    found = covered = 0
    for _ in range(10):
        out = setups.lane_rates(lane_frame(rng, 20_000, 5, 0.56, planted=(3, 0, 0.04)))
        row = out.filter((pl.col("rank") == 3) & (pl.col("distance") == 0)).row(0, named=True)
        found += row["first_flagged"]
        covered += row["first_distance_effect_lo"] < 0.04 < row["first_distance_effect_hi"]
        others = out.filter(pl.col("rank") != 3)
        assert others["first_flagged"].sum() <= 1
    assert found >= 8  # z about 4.6 (se 0.009) against a BH threshold near 3.1: power ~0.93
    assert covered >= 8  # a 95% interval
