"""What every page's charts share: the Page record, the SQL that sums an agg_* table under the
page's filters, and the rate step (`analysis.views`) with its columns renamed for drawing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import polars as pl

from .. import charts
from ..filters import SLOW6_SELECTS
from ..render import Chart, Ctx

OUT = "sum(n) AS n, sum(wins) AS wins, sum(draws) AS draws, sum(losses) AS losses"


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
    versions_table: str = "agg_games_daily"  # client versions (the default: the live one)
    versions_games: str = "sum(games)"  # a version's games in versions_table
    game_label: str = ""  # named in the default-cut line when it is not Slow6
    games_read: str = "games_read"  # the agg_runs column the freshness line counts
    # a page with filters of its own: prepare(ctx, request args) reads them into ctx.params
    # (and their errors into ctx.filters.errors); see dashboard/catalog/versions.py
    prepare: Callable[[Ctx, Mapping[str, str]], None] | None = None
    params: tuple[str, ...] = ()  # the query keys prepare reads
    version_select: bool = True  # the client version select (a page may choose its own)
    # the cut the page opens on: "balance" (human against human on the live version: how the
    # live game plays), "records" (every record of every mode and version), "human" (human
    # games of every version); `cut_why` says why a page opens on another than "balance"
    dates: bool = True  # the form's date inputs (a page whose tables take no date has none)
    cut: str = "balance"
    cut_why: str = ""


def analysis_views():
    # analysis.views loads scipy: on the first chart drawn, not when the dashboard is imported
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
    df = analysis_views().rates(frame, by, family=family, p0=p0)
    df = df.rename({"score_rate": "rate", "wilson_lo": "lo", "wilson_hi": "hi"})
    if label:
        df = df.with_columns(label_expr(df, label).alias("label"))
        df = df.select("label", *[c for c in df.columns if c != "label"])
    return df.sort(sort, descending=True, nulls_last=True)


def proportion(frame: pl.DataFrame, k: str, n: str, name: str = "rate") -> pl.DataFrame:
    df = analysis_views().add_proportion(frame, k, n, name)
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


def draw_rate(label="label", **kw):
    return lambda rows, ctx: charts.rate_chart(rows, label, **kw)


def first_move_rates(df: pl.DataFrame, ctx: Ctx) -> pl.DataFrame:
    """First-move score rates by board and variant, sorted by the lower bound."""
    out = analysis_views().first_move_rates(df, by=("board", "variant"))
    out = out.rename({"score_rate": "rate", "wilson_lo": "lo", "wilson_hi": "hi"})
    out = out.with_columns(label_expr(out, ["board", "variant"]).alias("label"))
    return out.select("label", *[c for c in out.columns if c != "label"]).sort(
        "lo", descending=True
    )
