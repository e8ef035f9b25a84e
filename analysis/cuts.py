"""Which games a number is about: the dimensions every agg_* table can be cut by.

A `Cut` filters games (as SQL, before the jobs aggregate) or the rows of an additive agg_*
table (as a Polars expression, after): both give the same numbers, which the tests check.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .sql import sql_literal

if TYPE_CHECKING:  # for the annotations: Polars loads where a frame is cut, not with the
    import polars as pl  # dashboard's filters at a server's start

# The cut dimensions, in the order the agg_* tables carry them.
# `ruleset` (rulesets.md RS6.1): games of different rulesets are never pooled unless asked
DIMS = ("board", "variant", "mode", "ai_level", "platform", "client_version", "ruleset", "week")
TEXT = ("variant", "mode", "platform", "client_version", "ruleset")  # the cut's text dimensions
CUT_DIMS = ("board", "variant", "mode", "ai_level", "platform", "client_version", "ruleset")
HUMAN_MODES = ("online", "friend")
VARIANTS = ("classic", "powers", "hidden")


def _tuple(v) -> tuple | None:
    if v is None:
        return None
    if isinstance(v, str | int):
        return (v,)
    return tuple(v)


def version_key(version: str) -> tuple:
    """Sort key of a client version, semantic-versioning style: '2.10.0' > '2.9.1', and a
    pre-release sorts just below its release ('3.1.0-beta.2' < '3.1.0', but > '3.0.0')."""
    core, _, pre = version.partition("-")
    nums = tuple(int(x) if x.isdigit() else -1 for x in re.split(r"[.+]", core))
    if not pre:
        return (nums, 1, ())
    parts = tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in pre.split("."))
    return (nums, 0, parts)


def latest_version(versions: Iterable[str]) -> str | None:
    versions = [v for v in versions if v is not None]
    return max(versions, key=version_key) if versions else None


def week_start(day: dt.date) -> dt.date:
    return day - dt.timedelta(days=day.weekday())


@dataclass(frozen=True)
class Cut:
    """A set of games. None = no restriction on that dimension; a tuple = any of those values.

    `date_from` / `date_to` are inclusive UTC dates of `ended_at`. Tables that carry `week`
    instead of a day can only be cut on whole weeks (Monday to Sunday): `weekly()` widens a cut
    to the weeks it touches.
    """

    board: tuple[int, ...] | None = None
    variant: tuple[str, ...] | None = None
    mode: tuple[str, ...] | None = None
    ai_level: tuple[int, ...] | None = None
    platform: tuple[str, ...] | None = None
    client_version: tuple[str, ...] | None = None
    ruleset: tuple[str, ...] | None = None
    date_from: dt.date | None = None
    date_to: dt.date | None = None
    label: str = field(default="", compare=False)

    def __post_init__(self):
        for name in CUT_DIMS:
            object.__setattr__(self, name, _tuple(getattr(self, name)))
        for name in ("date_from", "date_to"):
            v = getattr(self, name)
            if isinstance(v, str):
                object.__setattr__(self, name, dt.date.fromisoformat(v))
            elif isinstance(v, dt.datetime):
                object.__setattr__(self, name, v.date())

    @classmethod
    def default(cls, latest: str | None, ruleset: str | None = None) -> Cut:
        """The balance cut: human against human (online and friend games) on the latest client
        and its ruleset."""
        versions = None if latest is None else (latest,)
        rulesets = None if ruleset is None else (ruleset,)
        return cls(mode=HUMAN_MODES, client_version=versions, ruleset=rulesets, label="default")

    def with_modes(self, *modes: str) -> Cut:
        return replace(self, mode=modes)

    def weekly(self) -> Cut:
        """The smallest cut on whole weeks that contains this one."""
        lo = week_start(self.date_from) if self.date_from else None
        hi = week_start(self.date_to) + dt.timedelta(days=6) if self.date_to else None
        return replace(self, date_from=lo, date_to=hi)

    @property
    def is_weekly(self) -> bool:
        return self.weekly() == self

    def restricts(self) -> list[str]:
        """The table columns this cut needs."""
        out = [d for d in CUT_DIMS if getattr(self, d) is not None]
        if self.date_from or self.date_to:
            out.append("date")
        return out

    # -- SQL on the games table -------------------------------------------------------------

    def sql_where(self, alias: str = "") -> str:
        """A WHERE condition on `games` (values are quoted literals, never user SQL)."""
        a = f"{alias}." if alias else ""
        conds = []
        for name in ("board", "ai_level"):
            vals = getattr(self, name)
            if vals is not None:
                conds.append(f"{a}{name} IN ({', '.join(str(int(v)) for v in vals)})")
        for name in TEXT:
            vals = getattr(self, name)
            if vals is not None:
                conds.append(f"{a}{name} IN ({', '.join(sql_literal(v) for v in vals)})")
        if self.date_from:
            conds.append(f"{a}ended_at >= DATE {sql_literal(self.date_from.isoformat())}")
        if self.date_to:
            nxt = self.date_to + dt.timedelta(days=1)
            conds.append(f"{a}ended_at < DATE {sql_literal(nxt.isoformat())}")
        return " AND ".join(conds) if conds else "TRUE"

    def table_where(self, columns: Iterable[str]) -> str:
        """A WHERE condition on an agg_* table's dimensions that it has (dates aside): a
        superset of the cut's rows, that `apply` then cuts exactly."""
        cols = set(columns)
        conds = []
        for name in ("board", "ai_level"):
            vals = getattr(self, name)
            if vals is not None and name in cols:
                conds.append(f"{name} IN ({', '.join(str(int(v)) for v in vals)})")
        for name in TEXT:
            vals = getattr(self, name)
            if vals is not None and name in cols:
                conds.append(f"{name} IN ({', '.join(sql_literal(v) for v in vals)})")
        return " AND ".join(conds) if conds else "TRUE"

    # -- Polars on agg_* rows ---------------------------------------------------------------

    def expr(self, columns: Iterable[str]) -> pl.Expr:
        """A filter on the rows of a table with these columns; raises if the table lacks a
        dimension this cut restricts (it cannot be cut that way: use a finer table)."""
        import polars as pl

        cols = set(columns)
        conds: list[pl.Expr] = []
        for name in CUT_DIMS:
            vals = getattr(self, name)
            if vals is None:
                continue
            if name not in cols:
                raise ValueError(f"this table has no {name!r} column: it cannot be cut by {name}")
            conds.append(pl.col(name).is_in(list(vals)))
        if self.date_from or self.date_to:
            if "day" in cols:
                col, lo, hi = "day", self.date_from, self.date_to
            elif "week" in cols:
                if not self.is_weekly:
                    raise ValueError(
                        "this table is weekly: cut it on whole weeks (Cut.weekly()), "
                        f"e.g. {self.weekly().date_from} to {self.weekly().date_to}"
                    )
                col = "week"
                lo = self.date_from
                hi = week_start(self.date_to) if self.date_to else None
            else:
                raise ValueError("this table has no date column: it cannot be cut by date")
            if lo:
                conds.append(pl.col(col) >= lo)
            if hi:
                conds.append(pl.col(col) <= hi)
        return pl.all_horizontal(conds) if conds else pl.lit(True)

    def apply(self, frame: pl.DataFrame | pl.LazyFrame):
        import polars as pl

        cols = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
        return frame.filter(self.expr(cols))

    def as_dict(self) -> dict:
        out: dict[str, list | str] = {}
        for name in CUT_DIMS:
            v = getattr(self, name)
            if v is not None:
                out[name] = list(v)
        if self.date_from:
            out["date_from"] = self.date_from.isoformat()
        if self.date_to:
            out["date_to"] = self.date_to.isoformat()
        return out

    def as_json(self) -> str:
        return json.dumps(self.as_dict(), sort_keys=True)
