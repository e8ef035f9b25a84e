"""What every cube reads, as SQL: the selected games, their sides and their child rows.

A `Selection` says which rows a cube counts: a predicate on the source table (the run's cut
and the part it computes: everything, some weeks, or the games new since the last run), a
rowid bound for each child table (the children of new games were appended after the last
run, see analysis.watermark: the bound only prunes the scan, children are always joined to
the selected games), and the tables to read instead of the store's (a run copies its few new
games and their children into temporary tables once, and every cube reads those).

Slow6 cubes group by integers: each game's `cell` numbers its combination of the six
dimensions other than the week (mixed radix over the `Dicts` of the selected games), `lcell`
the same for the four of the tables without platform and AI level, and `cw` and `lw` add the
week to them. A child row joined to its game carries a few integers instead of seven strings,
DuckDB hashes one integer key instead of several columns (about twice as fast), and the
(small) aggregated rows decode it back into dimension columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from replays.vocabulary import POWERS

from .sql import sql_literal

SLIDE_DIMS = "players, mode, platform, client_version, ruleset, week"
POWER_LIST = "[" + ", ".join(sql_literal(p) for p in POWERS) + "]"
# (bit, power) for each power: its bit in a side's pick mask is its place in R8.2's order
POWER_BITS = (
    "(VALUES " + ", ".join(f"({1 << i}, {sql_literal(p)})" for i, p in enumerate(POWERS)) + ")"
)
# a cell's dimensions; the light ones drop platform and AI level and keep the order of the rest
CELL_DIMS = ("board", "variant", "mode", "ai_level", "platform", "client_version", "ruleset")
LIGHT_DIMS = ("board", "variant", "mode", "client_version", "ruleset")
TYPES = {"board": "UTINYINT", "ai_level": "UTINYINT"}
WEEKS = 8192  # a cell's weeks: Mondays counted from 1970-01-05, far past this century
WEEK_N = "((date_trunc('week', ended_at)::DATE - DATE '1970-01-05') // 7)"


def _list(values, typ: str = "VARCHAR") -> str:
    items = ", ".join("NULL" if v is None else sql_literal(v) for v in values)
    return f"[{items}]::{typ}[]"


@dataclass(frozen=True)
class Dicts:
    """Each dimension's values among the selected games: a code is a place in its list."""

    values: dict[str, tuple]

    @classmethod
    def read(cls, con, table: str, where: str) -> Dicts:
        cols = {d: (f"coalesce({d}, 0)" if d == "ai_level" else d) for d in CELL_DIMS}
        row = con.execute(
            "SELECT "
            + ", ".join(f"list(DISTINCT {c} ORDER BY {c})" for c in cols.values())
            + f" FROM {table} WHERE game = 'slow6' AND ({where})"
        ).fetchone()
        return cls(
            {d: tuple(v or [0 if d in TYPES else ""]) for d, v in zip(cols, row, strict=True)}
        )

    def _code(self, dim: str) -> str:
        if len(self.values[dim]) == 1:  # one value (a store of one ruleset): no lookup a row
            return "0"
        col = f"coalesce({dim}, 0)" if dim == "ai_level" else dim
        return f"(list_position({_list(self.values[dim], TYPES.get(dim, 'VARCHAR'))}, {col}) - 1)"

    def encode(self, dims=CELL_DIMS) -> str:
        """SQL of the cell (of `dims`) of a games row."""
        out = "0"
        for d in dims:
            out = f"({out} * {len(self.values[d])} + {self._code(d)})"
        return out

    def light(self, col: str = "cw") -> str:
        """SQL of the lw of a cw column `col` (platform and AI level dropped)."""
        n = {d: len(self.values[d]) for d in CELL_DIMS}
        tail = n["client_version"] * n["ruleset"]  # the dimensions after platform
        below = n["ai_level"] * n["platform"] * tail
        cell = f"({col} // {WEEKS})"
        light = f"({cell} // {below} * {tail} + {cell} % {tail})"
        return f"({light} * {WEEKS} + {col} % {WEEKS})"

    def decode(self, col: str = "cell", dims=CELL_DIMS, week: bool = False) -> str:
        """The dimension columns of cell column `col` (of `dims`; with `week`, a cell and
        week key: cw, lw), as a select list."""
        parts, stride = [], 1
        if week:
            parts.append(f"DATE '1970-01-05' + ({col} % {WEEKS} * 7)::INTEGER AS week")
            stride = WEEKS
        for d in reversed(dims):
            n = len(self.values[d])
            typ = TYPES.get(d, "VARCHAR")
            values = [None if d == "ai_level" and v == 0 else v for v in self.values[d]]
            parts.append(f"({_list(values, typ)})[{col} // {stride} % {n} + 1] AS {d}")
            stride *= n
        return ", ".join(reversed(parts))


@dataclass(frozen=True)
class Selection:
    where: str = "TRUE"  # on the source table's own columns
    bounds: dict[str, int] = field(default_factory=dict)  # child table -> rows past this rowid
    tables: dict[str, str] = field(default_factory=dict)  # store table -> table to read instead
    dicts: Dicts | None = None  # Slow6 games: their dimensions' values (Dicts.read)

    def table(self, name: str) -> str:
        return self.tables.get(name, name)

    def known_dicts(self) -> Dicts:
        """The Dicts of the selected games; read_dicts must have read them (Slow6 cubes)."""
        if self.dicts is None:
            raise ValueError("this selection's Dicts were not read: call read_dicts first")
        return self.dicts

    def read_dicts(self, con, source: str) -> Selection:
        """This selection with the Dicts of its games (Slow6 cubes need them)."""
        if source != "games":
            return self
        return replace(self, dicts=Dicts.read(con, self.table("games"), self.where))

    def bound(self, table: str, alias: str) -> str:
        """The child rows that may belong to the selected games (TRUE: any)."""
        if table not in self.bounds:
            return "TRUE"
        return f"{alias}.rowid > {int(self.bounds[table])}"


def pick_mask(picks: str) -> str:
    """A pick list as a 10-bit mask (NULL without powers)."""
    bits = f"list_transform({picks}, x -> (1 << (list_position({POWER_LIST}, x) - 1))::INTEGER)"
    return f"(CASE WHEN len({picks}) > 0 THEN list_reduce({bits}, (a, b) -> a | b) END)"


def lane_distances() -> str:
    """A game's lane distance of every rank r, 3 bits at bit 3(r - 1). R5.1: rank r promotes
    in the file where the other side's rank r started, so its distance |own file - that
    file| is the same for both sides: one number per rank and game, found once per game (a
    piece then takes its rank's bits). A rank the board lacks is in neither lineup: 0."""
    one = "(abs(strpos(lineup_0, '{r}') - strpos(lineup_1, '{r}')) << {t})"
    return "(" + " + ".join(one.format(r=r, t=3 * (r - 1)) for r in range(1, 8)) + ")"


def games(sel: Selection) -> str:
    """CTE `g`: one row per selected Slow6 game, with its cell, lcell and week, and the
    results the cubes count (1 win, 0 draw, -1 loss) for side 0 and for the first mover."""
    d = sel.known_dicts()
    return f"""g AS (
    SELECT *, cell::BIGINT * {WEEKS} + week_n AS cw, lcell::BIGINT * {WEEKS} + week_n AS lw FROM (
    SELECT game_id, {d.encode()} AS cell, {d.encode(LIGHT_DIMS)} AS lcell, {WEEK_N} AS week_n,
           ended_at::DATE AS day, board, variant,
           mode, platform, client_version, ruleset,
           "first", winner, reason, turns, lineup_0, lineup_1,
           {pick_mask("powers_0")} AS mask_0, {pick_mask("powers_1")} AS mask_1,
           {lane_distances()} AS dist, challenge_id, ai_side,
           (CASE WHEN winner IS NULL THEN 0 WHEN winner = 0 THEN 1 ELSE -1 END)::TINYINT AS res0,
           (CASE WHEN winner IS NULL THEN 0 WHEN winner = "first" THEN 1 ELSE -1 END)::TINYINT
               AS res_first
    FROM {sel.table("games")} WHERE game = 'slow6' AND ({sel.where})))"""


def sides(sel: Selection) -> str:
    """CTEs `g` and `s`: each selected game once per side, from that side (`res`)."""
    pick = "CASE WHEN t.side = 0 THEN {0} ELSE {1} END"
    return (
        games(sel)
        + f""",
s AS (
    SELECT g.*, t.side, {pick.format("lineup_0", "lineup_1")} AS lineup,
           {pick.format("lineup_1", "lineup_0")} AS opp_lineup,
           {pick.format("mask_0", "mask_1")} AS mask, {pick.format("mask_1", "mask_0")} AS opp_mask,
           {pick.format("res0", "-res0")} AS res
    FROM g, (VALUES (0::UTINYINT), (1::UTINYINT)) AS t(side))"""
    )


def flag(cond: str, n: str = "") -> str:
    """How many rows meet `cond` (each counting `n`, when the rows are counts already). A
    FILTER clause: DuckDB counts it in 64 bits, where a sum of 0/1 integers goes through
    128-bit sums, five times slower."""
    if n:
        return f"coalesce(sum({n}) FILTER ({cond}), 0)::BIGINT"
    return f"count(*) FILTER ({cond})"


def outcome(res: str = "res", prefix: str = "", n: str = "") -> str:
    """n, wins, draws, losses of rows whose result is `res` (each row counting `n`, when
    the rows are counts already)."""
    total = f"sum({n})::BIGINT" if n else "count(*)"
    return (
        f"{total} AS {prefix}n, {flag(f'{res} = 1', n)} AS {prefix}wins, "
        f"{flag(f'{res} = 0', n)} AS {prefix}draws, {flag(f'{res} = -1', n)} AS {prefix}losses"
    )


KEYS = {  # a cube's integer key column -> (its dimensions, whether it holds the week)
    "cell": (CELL_DIMS, False),
    "lcell": (LIGHT_DIMS, False),
    "cw": (CELL_DIMS, True),
    "lw": (LIGHT_DIMS, True),
}


def decoded(sel: Selection, sql: str, col: str = "cw") -> str:
    """The rows of `sql` (grouped by the key column `col`) with their dimension columns."""
    dims, week = KEYS[col]
    return f"SELECT {sel.known_dicts().decode(col, dims, week)}, * EXCLUDE ({col}) FROM ({sql})"


def scored(sql: str) -> str:
    """`sql` with a score column (win 1, draw 1/2), computed from the summed wins and draws so
    that it stays exact however the counts were added up."""
    return f"SELECT *, wins + draws / 2 AS score FROM ({sql})"


def side_result(side: str) -> str:
    """The result of `side` (a column of a child row) in its game `g`."""
    return f"(CASE WHEN {side} = 0 THEN g.res0 ELSE -g.res0 END)"


def lineup_source(variant: str = "variant") -> str:
    """Hidden-variant lineups are chosen by the player, not dealt: their rates are not causal."""
    return f"(CASE WHEN {variant} = 'hidden' THEN 'chosen' ELSE 'dealt' END)"


def slide_games(sel: Selection) -> str:
    """CTE `sg`: one row per selected Slide game."""
    return f"""sg AS (
    SELECT game_id, players, mode, platform, client_version, ruleset,
           date_trunc('week', ended_at)::DATE AS week, shared, len(winners) AS n_winners,
           match_id, match_game
    FROM {sel.table("slide_games")} WHERE {sel.where})"""
