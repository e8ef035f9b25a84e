"""The games frame of what needs one row per game (the adjusted model's sample).

Each game gets a `cell`: one integer naming its combination of cut dimensions (board, variant,
mode, ai_level, platform, client_version, ruleset, week), the mixed-radix number of their codes,
so that `Base.in_cut` can keep the games of a cut; and its results: `res0` for side 0,
`res_first` for the side that moved first (1 win, 0 draw, -1 loss).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from replays.vocabulary import POWERS

from .cuts import DIMS, Cut
from .load import Data

POWER = pl.Enum(POWERS)
DTYPES: dict[str, pl.DataType] = {
    "board": pl.UInt8(),
    "variant": pl.String(),
    "mode": pl.String(),
    "ai_level": pl.UInt8(),
    "platform": pl.String(),
    "client_version": pl.String(),
    "ruleset": pl.String(),
    "week": pl.Date(),
    "reason": pl.String(),
}


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

    def cells_in(self, cells: pl.Series, cut: Cut) -> pl.Series:
        """Which of these cells are in the cut."""
        lf = pl.DataFrame({"cell": cells.unique()}).lazy()
        decoded = self.decode(lf.with_columns(cell_id=pl.col("cell")), DIMS).collect()
        return decoded.filter(cut.expr(decoded.columns))["cell_id"]


@dataclass
class Base:
    games: pl.DataFrame
    dims: Dims

    def in_cut(self, frame: pl.DataFrame, cut: Cut) -> pl.DataFrame:
        """Rows (with a cell column) of games in the cut."""
        return frame.filter(pl.col("cell").is_in(self.dims.cells_in(frame["cell"], cut).to_list()))


def build(data: Data) -> Base:
    dims = Dims(data.dicts)
    winner, first = pl.col("winner"), pl.col("first")
    games = data.games.with_columns(
        dims.cell(),
        res0=pl.when(winner.is_null())
        .then(0)
        .when(winner == 0)
        .then(1)
        .otherwise(-1)
        .cast(pl.Int8),
        res_first=pl.when(winner.is_null())
        .then(0)
        .when(winner == first)
        .then(1)
        .otherwise(-1)
        .cast(pl.Int8),
    )
    return Base(games=games, dims=dims)


__all__ = ["POWER", "POWERS", "Base", "Dims", "build"]
