"""The frames every job builds on: games, sides (each game once per side) and pieces.

Each game gets a `cell`: one integer naming its combination of cut dimensions (board, variant,
mode, ai_level, platform, client_version, week), the mixed-radix number of their codes. The
jobs group by cell and a few integer keys, and `Dims.decode` turns cells back into readable
dimension columns on the (small) aggregated frames.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from replays.vocabulary import POWERS

from .cuts import DIMS, Cut
from .load import EPOCH_DAY, Data

POWER = pl.Enum(POWERS)
# the dimensions of the tables with many rows per cell (setup cells, power pairs and power
# against power, lane distances, histograms): no platform, no AI level
LIGHT_DIMS = ("board", "variant", "mode", "client_version", "week")
DTYPES = {
    "board": pl.UInt8,
    "variant": pl.String,
    "mode": pl.String,
    "ai_level": pl.UInt8,
    "platform": pl.String,
    "client_version": pl.String,
    "week": pl.Date,
    "reason": pl.String,
}


def outcome(res: str = "res") -> list[pl.Expr]:
    """n, wins, draws, losses of rows whose result (from their own side) is 1 / 0 / -1."""
    r = pl.col(res)
    return [
        pl.len().cast(pl.Int64).alias("n"),
        (r == 1).sum().cast(pl.Int64).alias("wins"),
        (r == 0).sum().cast(pl.Int64).alias("draws"),
        (r == -1).sum().cast(pl.Int64).alias("losses"),
    ]


def with_score(frame):
    return frame.with_columns((pl.col("wins") + pl.col("draws") / 2).alias("score"))


def count(expr: pl.Expr, name: str) -> pl.Expr:
    return expr.sum().cast(pl.Int64).alias(name)


def bit(mask: str, i: int) -> pl.Expr:
    """Whether power i is in the pick mask (NULL mask: no powers -> False)."""
    return ((pl.col(mask) // (1 << i)) % 2 == 1).fill_null(False)


def digit(lineup: str, file: int | pl.Expr, board: str = "board") -> pl.Expr:
    """The rank on `file` (0 = file a) of an integer lineup (31524: rank 3 on file a)."""
    power = pl.lit(10, pl.Int64).pow(pl.col(board).cast(pl.Int64) - 1 - file)
    return ((pl.col(lineup).cast(pl.Int64) // power) % 10).cast(pl.UInt8)


@dataclass
class Dims:
    values: dict[str, list]

    @property
    def radix(self) -> dict[str, int]:
        return {d: max(len(self.values[d]), 1) for d in DIMS}

    @property
    def stride(self) -> dict[str, int]:
        out, s = {}, 1
        for d in reversed(DIMS):
            out[d] = s
            s *= self.radix[d]
        return out

    def cell(self) -> pl.Expr:
        """The cell of a frame with the code columns <dim>_c."""
        st = self.stride
        return pl.sum_horizontal(pl.col(f"{d}_c").cast(pl.Int64) * st[d] for d in DIMS).alias(
            "cell"
        )

    def coarse(self, keep=None, col: str = "cell") -> pl.Expr:
        """The cell with the codes of dimensions outside `keep` set to 0 (default keep:
        LIGHT_DIMS): grouping by it merges those dimensions."""
        keep = LIGHT_DIMS if keep is None else keep
        drop = [d for d in DIMS if d not in keep]
        out = pl.col(col)
        for d in drop:
            out = out - self.code(d, col) * self.stride[d]
        return out.alias(col)

    def code(self, dim: str, col: str = "cell") -> pl.Expr:
        return (pl.col(col) // self.stride[dim]) % self.radix[dim]

    def dtype(self, dim: str) -> pl.DataType:
        # text dimensions stay dictionary-coded (Enum) all the way into DuckDB
        if DTYPES[dim] == pl.String:
            return pl.Enum([str(v) for v in self.values[dim]])
        return DTYPES[dim]

    def value(self, dim: str, code: pl.Expr) -> pl.Expr:
        mapping = dict(enumerate(self.values[dim]))
        return code.replace_strict(mapping, return_dtype=self.dtype(dim)).alias(dim)

    def decode(self, frame: pl.LazyFrame, dims=DIMS, col: str = "cell") -> pl.LazyFrame:
        """Swap `cell` for the dimension columns, dimensions first."""
        out = frame.with_columns(self.value(d, self.code(d, col)) for d in dims).drop(col)
        rest = [c for c in out.collect_schema().names() if c not in dims]
        return out.select(*dims, *rest)

    def decode_codes(self, frame: pl.LazyFrame, dims) -> pl.LazyFrame:
        """Swap <dim>_c code columns for the dimension columns."""
        return frame.with_columns(self.value(d, pl.col(f"{d}_c")) for d in dims).drop(
            f"{d}_c" for d in dims
        )

    def cells_in(self, cells: pl.Series, cut: Cut) -> pl.Series:
        """Which of these cells are in the cut."""
        lf = pl.DataFrame({"cell": cells.unique()}).lazy()
        decoded = self.decode(lf.with_columns(cell_id=pl.col("cell")), DIMS).collect()
        return decoded.filter(cut.expr(decoded.columns))["cell_id"]


def day_date(col: str = "day_n") -> pl.Expr:
    return (pl.lit(EPOCH_DAY) + pl.duration(days=pl.col(col))).cast(pl.Date).alias("day")


@dataclass
class Base:
    games: pl.DataFrame
    dims: Dims
    sides: pl.DataFrame
    pieces: pl.DataFrame
    powers_used: pl.DataFrame
    events: pl.DataFrame
    quarantine: pl.DataFrame

    def decode(self, frame: pl.LazyFrame, dims=DIMS) -> pl.LazyFrame:
        return self.dims.decode(frame, dims)

    def light(self, frame: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
        """Merge platform and AI level away (sum the other columns within the coarse cell
        and `keys`), then decode the LIGHT_DIMS."""
        cols = [c for c in frame.collect_schema().names() if c not in ("cell", *keys)]
        merged = frame.group_by(self.dims.coarse(), *keys).agg(pl.col(c).sum() for c in cols)
        return self.dims.decode(merged, LIGHT_DIMS)

    def in_cut(self, frame: pl.DataFrame, cut: Cut) -> pl.DataFrame:
        """Rows (with a cell column) of games in the cut."""
        return frame.filter(pl.col("cell").is_in(self.dims.cells_in(frame["cell"], cut).to_list()))


def rank_matrix(lineup: np.ndarray, board: np.ndarray) -> np.ndarray:
    """Ranks by file of integer lineups (31524 -> [3, 1, 5, 2, 4]); 7 columns, 0 past the edge."""
    out = np.zeros((len(lineup), 7), dtype=np.uint8)
    lineup = lineup.astype(np.int64)
    for n in np.unique(board):
        rows = board == n
        powers = 10 ** np.arange(int(n) - 1, -1, -1, dtype=np.int64)
        out[rows, : int(n)] = (lineup[rows, None] // powers) % 10
    return out


def lane_distances(r0: np.ndarray, r1: np.ndarray, board: np.ndarray) -> np.ndarray:
    """Per game, the lane distance of every rank, packed 3 bits per rank r at bit 3r.

    R5.1: rank r promotes in the file where the other side's rank r started, so its distance
    |own file - that file| is the same for both sides: one number per rank and game."""
    out = np.zeros(len(r0), dtype=np.int64)
    for n in np.unique(board):
        n = int(n)
        rows = board == n
        # argsort of a permutation of 1..n is its inverse: the file of each rank
        f0 = np.argsort(r0[rows, :n], axis=1).astype(np.int64)
        f1 = np.argsort(r1[rows, :n], axis=1).astype(np.int64)
        out[rows] = (np.abs(f0 - f1) << (3 * np.arange(1, n + 1, dtype=np.int64))).sum(axis=1)
    return out


def build(data: Data) -> Base:
    dims = Dims(data.dicts)
    winner, first = pl.col("winner"), pl.col("first")
    board = data.games["board"].to_numpy()
    ranks = [rank_matrix(data.games[f"lineup_{s}"].to_numpy(), board) for s in (0, 1)]
    games = data.games.with_columns(
        dims.cell(),
        # result for side 0: 1 win, 0 draw, -1 loss
        res0=pl.when(winner.is_null())
        .then(0)
        .when(winner == 0)
        .then(1)
        .otherwise(-1)
        .cast(pl.Int8),
        # result for the side that moved first
        res_first=pl.when(winner.is_null())
        .then(0)
        .when(winner == first)
        .then(1)
        .otherwise(-1)
        .cast(pl.Int8),
        dist=pl.Series(lane_distances(*ranks, board)),
    )
    common = ["gk", "cell", "board", "variant_c", "mode_c", "client_version_c", "week_c"]
    sides = pl.concat(
        [
            games.select(
                *common,
                pl.lit(s, pl.UInt8).alias("side"),
                (first == s).alias("moved_first"),
                pl.col(f"lineup_{s}").alias("lineup"),
                pl.col(f"lineup_{1 - s}").alias("opp_lineup"),
                pl.col(f"mask_{s}").alias("mask"),
                pl.col(f"mask_{1 - s}").alias("opp_mask"),
                (pl.col("res0") * (1 if s == 0 else -1)).cast(pl.Int8).alias("res"),
            ).with_columns(pl.Series(f"r{f}", ranks[s][:, f]) for f in range(7))
            for s in (0, 1)
        ]
    )
    at = _gather_index(games["gk"].to_numpy(), data.pieces["gk"].to_numpy())
    side = data.pieces["side"].to_numpy()
    rank = data.pieces["rank"].to_numpy().astype(np.int64)
    res0 = games["res0"].to_numpy()[at]
    pieces = data.pieces.with_columns(
        pl.Series("cell", games["cell"].to_numpy()[at]),
        pl.Series("res", np.where(side == 0, res0, -res0).astype(np.int8)),
        pl.Series("moved_first", games["first"].to_numpy()[at] == side),
        pl.Series("distance", ((games["dist"].to_numpy()[at] >> (3 * rank)) & 7).astype(np.uint8)),
    )
    used = data.powers_used
    at = _gather_index(games["gk"].to_numpy(), used["gk"].to_numpy())
    res0 = games["res0"].to_numpy()[at]
    used = used.with_columns(
        pl.Series("cell", games["cell"].to_numpy()[at]),
        pl.Series("res", np.where(used["side"].to_numpy() == 0, res0, -res0).astype(np.int8)),
    )
    return Base(
        games=games,
        dims=dims,
        sides=sides,
        pieces=pieces,
        powers_used=used,
        events=data.side_events,
        quarantine=data.quarantine,
    )


def _gather_index(game_keys: np.ndarray, child_keys: np.ndarray) -> np.ndarray:
    """Row of `games` for each child row (child keys are always keys of these games: the
    loader reads children through the same filtered join)."""
    if len(game_keys) == 0:
        return np.zeros(len(child_keys), dtype=np.int64)
    lookup = np.full(int(game_keys.max()) + 1, -1, dtype=np.int64)
    lookup[game_keys] = np.arange(len(game_keys))
    at = lookup[child_keys]
    if len(at) and at.min() < 0:
        raise ValueError("child rows of games that were not read (inconsistent snapshot)")
    return at


__all__ = ["POWER", "POWERS", "Base", "Dims", "build"]
