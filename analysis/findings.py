"""Findings: every row the balance tables flag, in one list, strongest evidence first.

Each rate table and model table already tests its rows and flags them with Benjamini-Hochberg
at 5% within a *family* (docs/agg-tables.md says which rows are tested together). This module
reads those flags, it does not test anything again: one SQL over the tables (`sql`) projects
each table's rows onto the same columns (the effect on the score or rate scale with its 95%
interval, n, p, q, flag, the family's size), keeps the flagged rows (at most `PER_FAMILY` a
family: a strong rank-file cell makes hundreds of lineups flag) and one row of every family
(so the families tested are counted, flagged or not), and `from_rows` turns them into a frame
sorted by q-value, then by the size of the effect, with a plain-language statement a row.

`collect(fetch, columns)` is the whole step: `fetch(sql)` runs SQL on the store (a DuckDB
connection, the dashboard's snapshot, a server's /sql/api), `columns(table)` names a table's
columns (a table or column the store lacks leaves its family out, and the summary says so).
The dashboard's Findings page and `balance report` both call it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import polars as pl

from .sql import sql_literal

# at most this many findings a family (ranked by q, then effect): the rest are counted
PER_FAMILY = 10
ALPHA = 0.05  # the tables' own BH level (q <= 0.05 is `flagged`)


@dataclass(frozen=True)
class Source:
    """How one table's flagged rows read as findings (SQL expressions over the table)."""

    kind: str  # the family's name (several families a table: one per value of `family`)
    table: str
    family: tuple[str, ...]  # the columns whose values make one BH family
    keys: tuple[str, ...]  # the columns naming a row (its own SQL filters on them)
    effect: str  # on the score / rate scale: a difference, or the value less the reference
    lo: str
    hi: str
    n: str
    p: str
    q: str
    flag: str
    test: str  # the test that flagged the row, in words
    against: str  # what the effect is measured against, for the statement ("an even game")
    chart: str  # "page#chart-id" on the dashboard
    subject: str  # a Python format over the keys: who the statement is about
    verb: str = "scores"
    where: str = "on {board_variant}"  # after the interval
    needs: tuple[str, ...] = ()  # columns the expressions read (checked against the table)
    filter: str = "true"  # rows of the table that are tested at all


def _shift(col: str, by: str = "0.5") -> str:
    return f"({col}) - {by}"


def _expit(col: str) -> str:
    return f"1 / (1 + exp(-({col}))) - 0.5"


_EDGE = "CASE WHEN score_rate < band_lo THEN band_lo WHEN score_rate > band_hi THEN band_hi END"

SOURCES: tuple[Source, ...] = (
    Source(
        "first_move", "agg_first_move_rates", (), ("board", "variant"),
        _shift("score_rate"), _shift("wilson_lo"), _shift("wilson_hi"), "n",
        "p_value", "q_value", "flagged", "score test against 0.5", "an even game (0.5)",
        "overview#first-move", "the first mover",
    ),
    Source(
        "power_adjusted", "agg_adjusted", ("family",), ("term",),
        _expit("estimate"), _expit("lo"), _expit("hi"), "n_games",
        "p_value", "q_value", "flagged", "logistic model, Wald z (robust SE)",
        "{against}", "powers#power-adjusted", "{term_label}",
        where="in the adjusted model (default cut)",
        needs=("estimable",), filter="estimable",
    ),
    Source(
        "power_pick", "agg_power_rates", ("board",), ("board", "power"),
        "pick_effect", "pick_effect_lo", "pick_effect_hi", "picked_n",
        "pick_effect_p", "pick_effect_q", "flagged", "pooled two-proportion z",
        "sides not picking it", "powers#power-pick-effect", "sides picking {power}",
        where="on {board_label} (raw difference)",
    ),
    Source(
        "power_pair", "agg_power_pair_rates", ("board",), ("board", "power_a", "power_b"),
        "synergy", "synergy_lo", "synergy_hi", "n", "p_value", "q_value", "flagged",
        "score test against the expected rate", "what the two powers alone predict",
        "powers#power-pairs", "{power_a} + {power_b} together", where="on {board_label}",
    ),
    Source(
        "power_vs", "agg_power_vs_rates", ("board",), ("board", "power", "opp_power"),
        _shift("score_rate"), _shift("wilson_lo"), _shift("wilson_hi"), "n",
        "p_value", "q_value", "flagged", "score test against 0.5", "an even game (0.5)",
        "powers#power-vs", "{power} against {opp_power}", where="on {board_label}",
        filter="power <> opp_power",
    ),
    Source(
        "lineup_cell", "agg_lineup_model_terms", ("board", "variant"),
        ("board", "variant", "rank", "file"),
        "score_effect", "score_effect_lo", "score_effect_hi", "n",
        "p_value", "q_value", "flagged", "lineup model term, Wald z",
        "the same rank on an average file", "setups#lineup-model-cells",
        "rank {rank} on file {file_letter}",
    ),
    Source(
        "lineup_model", "agg_lineup_model", ("board", "variant"), ("board", "variant", "lineup"),
        _shift("predicted"), _shift("predicted_lo"), _shift("predicted_hi"), "n",
        "p_value", "q_value", "flagged", "lineup model prediction against 0.5",
        "an even game (0.5)", "setups#lineup-model", "lineup {lineup}",
        verb="is predicted to score",
    ),
    Source(
        "lineup", "agg_lineup_rates", ("board", "variant"), ("board", "variant", "lineup"),
        _shift("score_rate"), _shift("wilson_lo"), _shift("wilson_hi"), "n",
        "p_value", "q_value", "flagged", "score test against 0.5", "an even game (0.5)",
        "setups#lineups", "lineup {lineup}",
    ),
    Source(
        "lineup_vs", "agg_lineup_vs", ("board", "variant"),
        ("board", "variant", "lineup", "opp_lineup"),
        _shift("score_rate"), _shift("wilson_lo"), _shift("wilson_hi"), "n",
        "p_value", "q_value", "flagged", "score test against 0.5", "an even game (0.5)",
        "setups#lineup-vs", "lineup {lineup} against {opp_lineup}",
    ),
    Source(
        "setup_cell", "agg_setup_cell_rates", ("board", "variant"),
        ("board", "variant", "rank", "file"),
        _shift("score_rate"), _shift("wilson_lo"), _shift("wilson_hi"), "n",
        "p_value", "q_value", "flagged", "score test against 0.5", "an even game (0.5)",
        "setups#setup-cells", "rank {rank} starting on file {file_letter}",
    ),
    Source(
        "lane_distance", "agg_lane_distance_rates", ("board", "variant"),
        ("board", "variant", "rank", "distance"),
        "first_distance_effect", "first_distance_effect_lo", "first_distance_effect_hi",
        "first_n", "first_p_value", "first_q_value", "first_flagged",
        "pooled two-proportion z against the rank's other distances",
        "the first mover at the rank's other lane distances", "setups#lane-distance",
        "the first mover, rank {rank} at lane distance {distance},",
    ),
    Source(
        "side_events", "agg_side_events_rates", ("board", "variant"),
        ("board", "variant", "made_stun", "made_catch"),
        _shift("score_rate", "tested_against"), _shift("wilson_lo", "tested_against"),
        _shift("wilson_hi", "tested_against"), "n", "p_value", "q_value", "flagged",
        "score test against the pooled rate", "the board's pooled score",
        "boards#board-stuns", "sides that {stun_catch}",
    ),
    Source(
        "ai_band", "agg_ai_calibration", ("board", "client_version"),
        ("board", "client_version", "ai_level"),
        _shift("score_rate", _EDGE), _shift("wilson_lo", _EDGE), _shift("wilson_hi", _EDGE),
        "n", "band_p", "band_q", "off_target IS NOT NULL",
        "score test against the target band's nearer edge", "the target band's nearer edge",
        "computer#ai-calibration", "the human against level {ai_level}",
        where="on {board_label}, client {client_version}",
        needs=("score_rate", "band_lo", "band_hi", "off_target"),
        filter="band_lo IS NOT NULL",
    ),
    Source(
        "ai_order", "agg_ai_calibration", ("board", "client_version"),
        ("board", "client_version", "ai_level", "previous_level"),
        "step", "step_lo", "step_hi", "n", "step_p", "step_q", "\"order\" = 'reversed'",
        "pooled two-proportion z against the next easier level",
        "against level {previous_level} (the levels are out of order)",
        "computer#ai-calibration", "the human against level {ai_level}",
        where="on {board_label}, client {client_version}",
        needs=("order", "previous_level"), filter="previous_level IS NOT NULL",
    ),
    Source(
        "challenge", "agg_challenge_rates", ("board",), ("board", "challenge_id"),
        _shift("solve_rate", "tested_against"), _shift("solve_rate_lo", "tested_against"),
        _shift("solve_rate_hi", "tested_against"), "attempts", "p_value", "q_value", "flagged",
        "pooled two-proportion z against the board's other challenges",
        "the board's pooled solve rate", "challenges#challenges",
        "challenge {challenge_id}", verb="is solved", where="on {board_label}",
    ),
    Source(
        "slide_seat", "agg_slide_seat_rates", ("players",), ("players", "seat_from_first"),
        _shift("win_rate", "fair_share"), _shift("wilson_lo", "fair_share"),
        _shift("wilson_hi", "fair_share"), "seats", "p_value", "q_value", "flagged",
        "score test against a fair share", "a fair share (1 / players)", "slide#slide-seats",
        "seat {seat_from_first} from the first", verb="wins", where="in {players}-player Slide",
    ),
)  # fmt: skip
KINDS = {s.kind: s for s in SOURCES}


def _expressions(s: Source) -> list[str]:
    return [s.effect, s.lo, s.hi, s.n, s.p, s.q, s.flag, s.filter]


def available(s: Source, columns: Collection[str]) -> bool:
    """The table is in the store with every column the source reads."""
    text = re.sub(r"'[^']*'", "", " ".join(_expressions(s)))  # string literals are no columns
    words = set(re.findall(r"[a-z_][a-z0-9_]*", text)) - _SQL_WORDS
    return bool(columns) and {*s.family, *s.keys, *s.needs, *words} <= set(columns)


# the words of SOURCES' expressions that are not columns
_SQL_WORDS = frozenset("case when then else end is not null and or true false exp abs".split())


def source_sql(s: Source, per_family: int = PER_FAMILY) -> str:
    """The source's flagged rows (at most `per_family` a family) and one row a family."""
    fam = f"PARTITION BY {', '.join(s.family)}" if s.family else ""
    keys = ", ".join(f"{k} := {_q(k)}" for k in s.keys)
    fam_keys = ", ".join(f"{k} := {_q(k)}" for k in s.family) or "kind := 'all'"
    return f"""SELECT {sql_literal(s.kind)} AS kind, {sql_literal(s.table)} AS source,
  to_json(struct_pack({fam_keys}))::VARCHAR AS family_keys,
  to_json(struct_pack({keys}))::VARCHAR AS keys,
  ({s.effect})::DOUBLE AS effect, ({s.lo})::DOUBLE AS lo, ({s.hi})::DOUBLE AS hi,
  ({s.n})::BIGINT AS n, ({s.p})::DOUBLE AS p_value, ({s.q})::DOUBLE AS q_value,
  coalesce({s.flag}, false) AS flagged,
  count({s.q}) OVER ({fam}) AS family_tested,
  sum(CASE WHEN coalesce({s.flag}, false) THEN 1 ELSE 0 END) OVER ({fam}) AS family_flagged,
  row_number() OVER ({fam} ORDER BY coalesce({s.flag}, false) DESC, {s.q} NULLS LAST,
    abs({s.effect}) DESC NULLS LAST, {", ".join(map(_q, s.keys))}) AS family_rank
FROM {s.table}
WHERE {s.filter}
QUALIFY family_rank = 1 OR (flagged AND family_rank <= {int(per_family)})"""


def _q(name: str) -> str:
    return f'"{name}"'


def sql(columns: Callable[[str], Collection[str]], per_family: int = PER_FAMILY) -> str:
    """One query over every source the store has: what the Findings page runs."""
    parts = [source_sql(s, per_family) for s in SOURCES if available(s, columns(s.table))]
    if not parts:
        return "SELECT NULL::VARCHAR AS kind WHERE false"
    return "\nUNION ALL BY NAME\n".join(f"({p})" for p in parts) + "\nORDER BY kind, family_rank"


@dataclass
class Findings:
    table: pl.DataFrame  # one row a finding, strongest evidence first
    families: pl.DataFrame  # one row a family tested: kind, family, tested, flagged, shown
    missing: list[str] = field(default_factory=list)  # tables the store lacks

    @property
    def tested(self) -> int:
        return self.families.height

    def summary(self) -> str:
        f = self.families
        flagged = int(f["flagged"].sum()) if f.height else 0
        with_flag = int((f["flagged"] > 0).sum()) if f.height else 0
        head = (
            f"{flagged:,} flagged row{'s' if flagged != 1 else ''} in {with_flag} of "
            f"{self.tested} families tested. Flags are per family at a 5% false discovery rate "
            f"(Benjamini–Hochberg within each family): about 5% of a family's flags may be "
            f"chance, and on data with no effect at all about 5% of the families "
            f"(≈ {ALPHA * self.tested:.1f} of {self.tested}) could show a flag."
        )
        if not self.tested:
            head = "No balance tables to read yet (balance jobs run writes them)."
        cut = f.filter(pl.col("flagged") > pl.col("shown")) if f.height else f
        if cut.height:
            head += (
                " Shown: the "
                + str(PER_FAMILY)
                + " strongest of a family; "
                + "; ".join(
                    f"{r['family']}: {r['flagged']:,} flagged" for r in cut.iter_rows(named=True)
                )
            )
            head += "."
        if self.missing:
            head += f" Not in the store (not read): {', '.join(self.missing)}."
        return head


COLUMNS = [
    "rank", "statement", "item", "family", "kind", "effect", "lo", "hi", "n", "test", "p_value",
    "q_value", "chart", "sql",
]  # fmt: skip


def collect(
    fetch: Callable[[str], pl.DataFrame],
    columns: Callable[[str], Collection[str]] | None = None,
    per_family: int = PER_FAMILY,
) -> Findings:
    """Every flagged row of the store's balance tables, strongest evidence first."""
    if columns is None:
        columns = store_columns(fetch)
    frame = fetch(sql(columns, per_family))
    missing = sorted({s.table for s in SOURCES if not available(s, columns(s.table))})
    return from_rows(frame, missing)


def store_columns(fetch: Callable[[str], pl.DataFrame]) -> Callable[[str], Collection[str]]:
    """columns(table) from the store's catalog, read once."""
    rows = fetch(
        "SELECT table_name, column_name FROM duckdb_columns() "
        "WHERE database_name = current_database() AND table_name LIKE 'agg_%'"
    )
    by: dict[str, set[str]] = {}
    for t, c in rows.iter_rows():
        by.setdefault(t, set()).add(c)
    return lambda table: by.get(table, set())


def from_rows(frame: pl.DataFrame, missing: list[str] | None = None) -> Findings:
    """The rows of `sql` as findings and families."""
    empty = pl.DataFrame(schema={"kind": pl.String, "family": pl.String})
    if frame.height == 0 or "family_keys" not in frame.columns:
        fams = empty.with_columns(
            tested=pl.lit(0, pl.Int64), flagged=pl.lit(0, pl.Int64), shown=pl.lit(0, pl.Int64)
        ).clear()
        return Findings(_finish([]), fams, missing or [])
    rows = frame.to_dicts()
    families: dict[tuple[str, str], dict] = {}
    found = []
    for r in rows:
        s = KINDS[r["kind"]]
        fam_label = _family_label(s, json.loads(r["family_keys"]))
        fam = families.setdefault(
            (s.kind, fam_label),
            {
                "kind": s.kind,
                "family": fam_label,
                "tested": int(r["family_tested"] or 0),
                "flagged": int(r["family_flagged"] or 0),
                "shown": 0,
            },
        )
        if not r["flagged"]:
            continue
        fam["shown"] += 1
        keys = json.loads(r["keys"])
        found.append(
            {
                "statement": statement(s, keys, r),
                "item": s.subject.format(**_words(s, keys)).rstrip(","),
                "family": fam_label,
                "kind": s.kind,
                "effect": r["effect"],
                "lo": r["lo"],
                "hi": r["hi"],
                "n": r["n"],
                "test": s.test,
                "p_value": r["p_value"],
                "q_value": r["q_value"],
                "chart": _chart(s, keys),
                "sql": row_sql(s, keys),
            }
        )
    fams = pl.DataFrame(list(families.values())).sort("kind", "family")
    return Findings(_finish(found), fams, missing or [])


def _finish(found: list[dict]) -> pl.DataFrame:
    schema = {
        "statement": pl.String, "item": pl.String, "family": pl.String, "kind": pl.String,
        "effect": pl.Float64,
        "lo": pl.Float64, "hi": pl.Float64, "n": pl.Int64, "test": pl.String,
        "p_value": pl.Float64, "q_value": pl.Float64, "chart": pl.String, "sql": pl.String,
    }  # fmt: skip
    out = pl.DataFrame(found, schema=schema)
    # evidence first: q, then the size of the effect, then p (q ties under BH's step-up)
    out = out.sort(
        pl.col("q_value"), pl.col("effect").abs(), pl.col("p_value"), "statement",
        descending=[False, True, False, False], nulls_last=True,
    )  # fmt: skip
    return out.with_columns(rank=pl.int_range(1, out.height + 1, dtype=pl.Int64)).select(COLUMNS)


def row_sql(s: Source, keys: dict) -> str:
    """The SQL behind a finding: its row of its table."""
    cond = " AND ".join(
        f"{_q(k)} IS NULL" if v is None else f"{_q(k)} = {_literal(v)}" for k, v in keys.items()
    )
    return f"SELECT * FROM {s.table} WHERE {cond}"


def _literal(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    return sql_literal(v)


def _chart(s: Source, keys: dict) -> str:
    if s.kind == "power_adjusted" and not str(keys.get("term", "")).startswith("power:"):
        return "overview#first-move" if "first_move" in str(keys.get("term")) else ""
    return s.chart


def _board(b) -> str:
    return f"{b}×{b}"


def _family_label(s: Source, fam: dict) -> str:
    parts = []
    for k, v in fam.items():
        if k == "board":
            parts.append(_board(v))
        elif k == "players":
            parts.append(f"{v} players")
        elif k == "client_version":
            parts.append(f"client {v}")
        elif k == "kind":
            continue
        else:
            parts.append(str(v))
    return " ".join([s.kind.replace("_", " "), *parts])


def _words(s: Source, keys: dict) -> dict:
    w = {k: ("—" if v is None else v) for k, v in keys.items()}
    if "board" in keys:
        w["board_label"] = _board(keys["board"])
        w["board_variant"] = " ".join(p for p in (_board(keys["board"]), keys.get("variant")) if p)
    if "file" in keys and keys["file"] is not None:
        w["file_letter"] = "abcdefg"[int(keys["file"])]
    if s.kind == "side_events":
        stun, catch = keys.get("made_stun"), keys.get("made_catch")
        stunned = "stunned a crown" if stun else "stunned none"
        w["stun_catch"] = f"{stunned} and {'caught one' if catch else 'caught none'}"
    if s.kind == "power_adjusted":
        term = str(keys.get("term", ""))
        kind, _, rest = term.partition(":")
        if kind == "power":
            w["term_label"], w["against"] = rest, "the average power"
        elif kind == "centre_rank":
            board, _, rank = rest.partition(":")
            w["term_label"] = f"rank {rank} on the centre file of {board.replace('x', '×')}"
            w["against"] = "the average centre rank"
        elif term == "first_move":
            w["term_label"], w["against"] = "moving first", "an even game"
        elif term == "first_move_x_board7":
            w["term_label"], w["against"] = "moving first on 7×7", "moving first on 5×5"
        else:
            w["term_label"], w["against"] = "side 0", "an even game"
    return w


def statement(s: Source, keys: dict, r: dict) -> str:
    """One line: "surge scores 0.043 [0.020, 0.070] above the average power on 5×5 (n = …)"."""
    w = _words(s, keys)
    subject = s.subject.format(**w)
    against = s.against.format(**w)
    where = s.where.format(**w)
    effect, lo, hi = r["effect"], r["lo"], r["hi"]
    if effect is None:
        return f"{subject}: flagged ({s.test})"
    up = effect >= 0
    size, a, b = (effect, lo, hi) if up else (-effect, -hi if hi is not None else None, -lo)
    interval = f"[{_num(a)}, {_num(b)}]"
    n = f"n = {int(r['n']):,}" if r.get("n") is not None else "n unknown"
    return (
        f"{subject} {s.verb} {size:.3f} {interval} {'above' if up else 'below'} {against} "
        f"{where} ({n})"
    )


def _num(v) -> str:
    return "?" if v is None else f"{v:.3f}"
