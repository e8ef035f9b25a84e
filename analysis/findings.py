"""Findings: what a designer can act on, decided once for the whole report.

Each pre-declared question (a *kind*, `SOURCES`) is read from the one table that answers it
(one model per question: a power from the adjusted model, a rank-file cell and a lineup's own
strength from the lineup model, the first-move edge from its randomised comparison); the raw
tables that answer the same question again (agg_power_rates' pick effect, agg_setup_cell_rates,
agg_lineup_rates, the lineup model's projections) stay on their pages as drill-down and
cross-checks, not as findings. Symmetric pairs are tested once (a power against another, a
lineup against another, the second seat of two-player Slide). A power is measured against the
median power, not the average (a strong power would push every other below the average).

The first-move edge, a rank on a file and a lineup's own strength are asked once a board, its
variants pooled (`Source.rows`): one cause is one finding, not one a variant, and each row has
all the board's games.

A row is a finding when its always-valid interval lies wholly beyond its kind's minimum effect;
the report's budget of false findings is split over the kinds, families and rows
(analysis.decisions). The kinds of thousands of thinly played rows (lineups, lineup matchups)
are screened first (`Source.screen`): only the rows whose sides could clear the minimum are
tested, and share the kind's budget, so a lineup played enough is not drowned by 5,039 that
never could be; the screen reads sides, never outcomes. A row whose interval is clear of zero
and whose estimate is beyond the minimum, but not yet its interval, is on the watch list
(`Findings.watch`), with the games that would confirm it. Every family also states what it
could have seen: the minimum detectable effect of its typical and its best-informed row, or "too
few games to tell".

Outcomes of play (side events: a side that stunned a crown) and recording conventions (side 0)
are not balance levers: they are read into a descriptive section with their intervals only.

One SQL over the tables (`sql`) computes everything in the store (so a server's row limit never
cuts it): per row its effect, standard error, allocated level, interval, and whether it is a
finding; per family its rows, findings and detectable effects. It keeps the findings (at most
`PER_FAMILY` a family), one row of every family, and the descriptive rows; `from_rows` turns
them into frames. `collect(fetch, columns)` is the whole step; the dashboard's Findings page and
`balance report` both call it, and a jobs run calls `remember` to keep each finding's first
date in jobs_findings ("new this week" or "persisting since ...").
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from urllib.parse import urlencode

import polars as pl

from . import decisions as dc
from .sql import sql_literal

# at most this many findings a family (strongest first): the rest are counted
PER_FAMILY = 10
HISTORY = "jobs_findings"  # the jobs' record of when each finding was first flagged
NEW_DAYS = 7  # a finding first flagged within this many days of the latest run is "new"


@dataclass(frozen=True)
class Source:
    """How one table's rows are tested as one kind of finding (SQL expressions over it)."""

    kind: str  # the question (analysis.decisions: its minimum effect and share of the budget)
    table: str
    family: tuple[str, ...]  # the columns whose values make one family
    keys: tuple[str, ...]  # the columns naming a row (its own SQL filters on them)
    effect: str  # the estimate against the reference (score points, or log-odds: `logit`)
    se: str  # its standard error, same scale
    n: str  # the games (sides, attempts) that inform it
    test: str  # how the row is tested, in words
    against: str  # what the effect is measured against, for the statement
    chart: str  # "page#chart-id" on the dashboard
    subject: str  # a Python format over the keys: who the statement is about
    verb: str = "scores"
    where: str = "on {board_variant}"
    logit: bool = False  # effect and se are log-odds: decided there, shown as score points
    tolerance: str = "0"  # the row's own tolerance added to the minimum (a target band)
    needs: tuple[str, ...] = ()  # columns the expressions read beyond those found in them
    filter: str = "true"  # the rows pre-declared as tested (whatever their data)
    drill: str = ""  # the raw tables that cross-check it, in words
    games: tuple[tuple[str, str], ...] = ()  # explorer filter -> key column, for the games link
    upward: bool = False  # only an effect above the reference is a finding (one-sided)
    # a matchup is measured against what its two sides' own strengths predict: (the table
    # those come from, the columns read from it, the SQL joined after FROM)
    join: tuple[str, tuple[str, ...], str] | None = None
    rows: str = ""  # a query over `table` whose rows are tested instead (a pooled question)
    # test only the rows with the sides to clear the minimum (a score rate's rows, screened on
    # their sides alone, never their outcome): the kind's share is split over those rows only
    screen: bool = False


@dataclass(frozen=True)
class Described:
    """A descriptive table: shown with its intervals, never a finding."""

    kind: str
    table: str
    keys: tuple[str, ...]
    value: str
    lo: str
    hi: str
    n: str
    reference: str
    subject: str
    why: str
    filter: str = "true"


def _pts(col: str, ref: str = "0.5") -> str:
    return f"({col}) - ({ref})"


def _se_rate(n: str, ref: str = "0.5") -> str:
    """The binomial standard error of a rate at its reference (the score test's)."""
    return f"CASE WHEN ({n}) > 0 THEN sqrt(({ref}) * (1 - ({ref})) / ({n})) END"


def _se_interval(lo: str, hi: str) -> str:
    return f"(({hi}) - ({lo})) / {2 * 1.959963984540054}"


_MID = "(band_lo + band_hi) / 2"
# each power's adjusted log-odds effect, for the side and the opponent of a power-vs row
_POWER_BETAS = """LEFT JOIN (SELECT split_part(term, ':', 2) AS p, estimate AS beta
  FROM agg_adjusted WHERE estimable AND term LIKE 'power:%') own ON own.p = power
LEFT JOIN (SELECT split_part(term, ':', 2) AS p, estimate AS beta
  FROM agg_adjusted WHERE estimable AND term LIKE 'power:%') opp ON opp.p = opp_power"""
# each lineup's projection from the lineup model, for both lineups of a lineup-vs row
# (left joins: the optimizer keeps their order; as inner joins, inside the jobs' transaction
# on freshly written tables, it joined the two projections first, 15,480 rows squared)
_LINEUP_PS = """LEFT JOIN (SELECT board AS b, variant AS v, lineup AS l, predicted AS p
  FROM agg_lineup_model) own ON own.b = board AND own.v = variant AND own.l = lineup
LEFT JOIN (SELECT board AS b, variant AS v, lineup AS l, predicted AS p
  FROM agg_lineup_model) opp ON opp.b = board AND opp.v = variant AND opp.l = opp_lineup"""

SOURCES: tuple[Source, ...] = (
    Source(
        "first_move", "agg_first_move_rates", ("board",), ("board",),
        _pts("score_rate"), _se_rate("n"), "n",
        "first mover's score over every variant of the board, always-valid z",
        "an even game (0.5)", "overview#first-move", "the first mover",
        drill="agg_first_move_rates per variant, agg_adjusted's first_move term",
        games=(("board", "board"),),
        # one question a board: its variants pooled (their rows are the drill-down), so the
        # budget is split over two rows, not six, and each row has every game of its board
        rows="(SELECT board, sum(n) AS n, sum(score_rate * n) / sum(n) AS score_rate "
        "FROM agg_first_move_rates WHERE n > 0 GROUP BY board)",
    ),
    Source(
        "power", "agg_adjusted", ("family",), ("term",),
        "estimate - median(estimate) OVER ()",
        "sqrt(se * se + 1.5708 * avg(se * se) OVER () / count(*) OVER ())", "n_games",
        "adjusted logistic model (first move, board, centre ranks held fixed), always-valid z",
        "the median power", "powers#power-adjusted", "{term_label}",
        where="in the adjusted model (default cut)", logit=True,
        needs=("estimable",), filter="estimable AND family = 'power'",
        drill="agg_power_rates (raw pick effect), agg_power_vs_rates",
        games=(("power", "power_name"),),
    ),
    Source(
        "lineup_cell", "agg_lineup_model_terms", ("board",), ("board", "rank", "file"),
        "estimate", "se", "n",
        "lineup model term, its variants pooled (inverse-variance), always-valid z",
        "the same rank on an average file", "setups#lineup-model-cells",
        "rank {rank} on file {file_letter}", logit=True,
        drill="agg_lineup_model_terms per variant, agg_setup_cell_rates (raw cell rates)",
        games=(("board", "board"),),
        # one question a board: where a rank stands is the same lever in every variant, so
        # the variants' fits are pooled (a fixed-effect mean, weights 1 / se^2)
        rows="(SELECT board, rank, file, sum(n) AS n, "
        "sum(estimate / (se * se)) / sum(1 / (se * se)) AS estimate, "
        "sqrt(1 / sum(1 / (se * se))) AS se FROM agg_lineup_model_terms WHERE se > 0 "
        "GROUP BY board, rank, file)",
    ),
    Source(
        "lineup", "agg_lineup_model", ("board",), ("board", "lineup"),
        "score_rate - predicted",
        "CASE WHEN n > 0 THEN sqrt(spread) END", "n",
        "own score against its cells' projection, its variants pooled, always-valid z",
        "what its ranks' places predict", "setups#lineups", "lineup {lineup}",
        drill="agg_lineup_model per variant, agg_lineup_rates (raw rate against 0.5)",
        games=(("board", "board"), ("lineup", "lineup")),
        # one question a board: the lineup's sides over every variant, against the
        # projections of the variants they were played in (weighted by those sides)
        rows="(SELECT board, lineup, sum(n) AS n, sum(score) / sum(n) AS score_rate, "
        "sum(n * predicted) / sum(n) AS predicted, "
        "(sum(n * predicted * (1 - predicted)) + sum(n * n * "
        "power((predicted_hi - predicted_lo) / 3.92, 2))) / (sum(n) * sum(n)) AS spread "
        "FROM agg_lineup_model GROUP BY board, lineup)",
        needs=("score", "predicted_hi", "predicted_lo"),
        # 120 lineups of 5×5, 5,040 of 7×7, most with a handful of sides: only those that
        # could clear the minimum share the kind's budget
        screen=True,
    ),
    Source(
        "power_pair", "agg_power_pair_rates", ("board",), ("board", "power_a", "power_b"),
        "synergy", _se_interval("synergy_lo", "synergy_hi"), "n",
        "score against what the two powers alone predict, always-valid z",
        "what the two powers alone predict", "powers#power-pairs",
        "{power_a} + {power_b} together", where="on {board_label}",
        games=(("board", "board"), ("power", "power_a")),
    ),
    Source(
        "power_vs", "agg_power_vs_rates", ("board",), ("board", "power", "opp_power"),
        "score_rate - 1 / (1 + exp(-(coalesce(own.beta, 0) - coalesce(opp.beta, 0))))",
        _se_rate("n"), "n",
        "score against what the two powers' adjusted effects predict, always-valid z",
        "what the two powers' own strengths predict", "powers#power-vs",
        "{power} against {opp_power}", where="on {board_label}", filter="power < opp_power",
        games=(("board", "board"), ("power", "power")),
        join=("agg_adjusted", ("term", "estimate", "estimable"), _POWER_BETAS),
    ),
    Source(
        "lineup_vs", "agg_lineup_vs", ("board", "variant"),
        ("board", "variant", "lineup", "opp_lineup"),
        "score_rate - 1 / (1 + exp(-(ln(own.p / (1 - own.p)) - ln(opp.p / (1 - opp.p)))))",
        _se_rate("n"), "n",
        "score against what the two lineups' model projections predict, always-valid z",
        "what the two lineups' cells predict", "setups#lineup-vs",
        "lineup {lineup} against {opp_lineup}", filter="lineup < opp_lineup",
        games=(("board", "board"), ("variant", "variant"), ("lineup", "lineup")),
        join=("agg_lineup_model", ("board", "variant", "lineup", "predicted"), _LINEUP_PS),
        screen=True,
    ),
    Source(
        "lane_distance", "agg_lane_distance_rates", ("board", "variant"),
        ("board", "variant", "rank", "distance"),
        "first_distance_effect",
        _se_interval("first_distance_effect_lo", "first_distance_effect_hi"), "first_n",
        "first mover's score against the rank's other distances, always-valid z",
        "the first mover at the rank's other lane distances", "setups#lane-distance",
        "the first mover, rank {rank} at lane distance {distance},",
        games=(("board", "board"), ("variant", "variant")),
    ),
    Source(
        "ai_band", "agg_ai_calibration", ("board", "client_version"),
        ("board", "client_version", "ai_level"),
        _pts("score_rate", _MID), _se_rate("n", _MID), "n",
        "human score against the target band, always-valid z",
        "the middle of its target band", "computer#ai-calibration",
        "the human against level {ai_level}", where="on {board_label}, client {client_version}",
        tolerance="(band_hi - band_lo) / 2", filter="band_lo IS NOT NULL",
        games=(("board", "board"), ("ai_level", "ai_level"), ("client_version", "client_version")),
    ),
    Source(
        "ai_order", "agg_ai_calibration", ("board", "client_version"),
        ("board", "client_version", "ai_level", "previous_level"),
        "step", _se_interval("step_lo", "step_hi"), "n",
        "human score against the next easier level, always-valid z",
        "the human against the easier level {previous_level} (the levels are out of order)",
        "computer#ai-calibration",
        "the human against level {ai_level}", where="on {board_label}, client {client_version}",
        needs=("previous_level",), filter="previous_level IS NOT NULL", upward=True,
        games=(("board", "board"), ("ai_level", "ai_level"), ("client_version", "client_version")),
    ),
    Source(
        "challenge", "agg_challenge_rates", ("board",), ("board", "challenge_id"),
        _pts("solve_rate", "tested_against"), _se_rate("attempts", "tested_against"),
        "attempts", "solve rate against the board's others, always-valid z",
        "the board's pooled solve rate", "challenges#challenges", "challenge {challenge_id}",
        verb="is solved", where="on {board_label}", games=(("board", "board"),),
    ),
    Source(
        "slide_seat", "agg_slide_seat_rates", ("players",), ("players", "seat_from_first"),
        _pts("win_rate", "fair_share"), _se_rate("seats", "fair_share"), "seats",
        "win rate against a fair share, always-valid z", "a fair share (1 / players)",
        "slide#slide-seats", "seat {seat_from_first} from the first", verb="wins",
        where="in {players}-player Slide",
        # two players: the second seat's rate is the first's mirror, one fact
        filter="NOT (players = 2 AND seat_from_first > 0)",
    ),
)  # fmt: skip
KINDS = {s.kind: s for s in SOURCES}

DESCRIBED: tuple[Described, ...] = (
    Described(
        "side_events", "agg_side_events_rates", ("board", "variant", "made_stun", "made_catch"),
        "score_rate", "wilson_lo", "wilson_hi", "n", "tested_against",
        "sides that {stun_catch} on {board_variant}",
        "an outcome of play (what happened in the game), not a setting a designer can change",
    ),
    Described(
        "side_0", "agg_adjusted", ("term",), "p_at_even", "1 / (1 + exp(-lo))",
        "1 / (1 + exp(-hi))", "n_games", "0.5", "side 0 against side 1",
        "a recording convention (which side the client writes first), not a balance lever",
        filter="term = 'side_0' AND estimable",
    ),
)  # fmt: skip


_SQL_WORDS = frozenset(
    "case when then else end is not null and or true false exp abs sqrt power median avg "
    "over count ln coalesce".split()
)


def _words_in(*exprs: str) -> set[str]:
    text = re.sub(r"'[^']*'", "", " ".join(exprs))  # string literals are no columns
    return set(re.findall(r"[a-z_][a-z0-9_]*", text)) - _SQL_WORDS


def available(s: Source | Described, columns: Collection[str]) -> bool:
    """The table is in the store with every column the source reads."""
    if isinstance(s, Described):
        words = _words_in(s.value, s.lo, s.hi, s.n, s.reference, s.filter) | set(s.keys)
    else:
        words = _words_in(s.effect, s.se, s.n, s.tolerance, s.filter) - _JOINED
        words |= {*s.family, *s.keys, *s.needs}
    return bool(columns) and words <= set(columns)


# the joined tables' aliases and columns, and the pooled rows' own columns
_JOINED = frozenset({"own", "opp", "beta", "p", "spread"})


def joinable(s: Source, columns: Callable[[str], Collection[str]]) -> bool:
    """The source's table is readable, and so is the table its matchups are measured by."""
    if not available(s, columns(s.table)):
        return False
    return s.join is None or set(s.join[1]) <= set(columns(s.join[0]))


def _q(name: str) -> str:
    return f'"{name}"'


def _rows_sql(s: Source, pol: dc.Policy) -> str:
    """One source's rows to test, with what decides them as columns: its kind's share of the
    budget (`alpha_k`), minimum (`min_k`, in log-odds for a `logit` source), and how it is
    tested (`logit_k`, `up_k`, `screen_k`)."""
    minimum = pol.minimums[s.kind]
    if s.logit:
        minimum = dc.logit_points(minimum)
    alpha = pol.alpha * pol.weights[s.kind]
    keys = ", ".join(f"{k} := {_q(k)}" for k in s.keys)
    fam_keys = ", ".join(f"{k} := {_q(k)}" for k in s.family)
    return f"""SELECT {sql_literal(s.kind)} AS kind, {sql_literal(s.table)} AS source,
    {alpha!r}::DOUBLE AS alpha_k, {minimum!r}::DOUBLE AS min_k, {s.logit} AS logit_k,
    {s.upward} AS up_k, {s.screen} AS screen_k,
    to_json(struct_pack({fam_keys}))::VARCHAR AS family_keys,
    to_json(struct_pack({keys}))::VARCHAR AS keys,
    ({s.effect})::DOUBLE AS est, ({s.se})::DOUBLE AS se, ({s.n})::BIGINT AS n,
    ({s.tolerance})::DOUBLE AS tol
  FROM {s.rows or s.table} {s.join[2] if s.join else ""} WHERE {s.filter}"""


def source_sql(s: Source, per_family: int = PER_FAMILY, policy: dc.Policy | None = None) -> str:
    """The source's findings and watch rows (at most `per_family` a family) and one row a
    family, decided in SQL (analysis.decisions has the same arithmetic in numpy)."""
    return sources_sql([s], per_family, policy)


def sources_sql(
    sources: Collection[Source], per_family: int = PER_FAMILY, policy: dc.Policy | None = None
) -> str:
    """source_sql of several sources in one pass: their rows are stacked first and every
    step after runs once, a family being (kind, family_keys). The same steps a source at a
    time cost DuckDB about 20 operators each, planned and run a source at a time: the page's
    and each jobs run's query took several times as long on a small store."""
    pol = policy or dc.policy()
    hw = dc.half_width_sql("se", "alpha_row", "tau")
    hw_typ = dc.half_width_sql("se_typical", "alpha_row", "tau")
    hw_best = dc.half_width_sql("se_best", "alpha_row", "tau")
    lo, hi, m = "est - hw", "est + hw", "(min_k + tol)"

    def show(x: str) -> str:  # a logit source is decided in log-odds, shown as score points
        return f"(CASE WHEN logit_k THEN 1 / (1 + exp(-({x}))) - 0.5 ELSE {x} END)"

    def two_sided(upper: str, lower: str) -> str:  # one-sided sources count only `upper`
        return f"(CASE WHEN up_k THEN {upper} ELSE ({upper} OR {lower}) END)"

    size = "(CASE WHEN up_k THEN est ELSE abs(est) END)"
    fam = "PARTITION BY kind, family_keys"
    z = dc.Z_POWER
    # the watch list: the same interval clear of zero (of the tolerance: a target band's
    # edge), the estimate beyond the minimum, not a finding
    clear = two_sided("lo_ > tol", "hi_ < -tol")
    rows = "\n  UNION ALL\n  ".join(f"({_rows_sql(s, pol)})" for s in sources)
    return f"""WITH r AS (
  {rows}
), c AS (
  SELECT *, count(*) OVER ({fam}) AS family_rows,
    dense_rank() OVER (PARTITION BY kind ORDER BY family_keys) AS family_no FROM r
), {_screen_sql(pol)}
), d AS (
  SELECT *, CASE WHEN testable THEN alpha_k / (families_tested * rows_tested)
    ELSE alpha_k / (greatest(families_tested, 1) * (rows_tested + 1)) END AS alpha_row
  FROM c3
), d1 AS (
  SELECT *, {dc.big_sql("alpha_row")} AS big_ FROM d
), d1u AS (
  SELECT *, {dc.u_sql("big_")} AS u_ FROM d1
), d2 AS (
  SELECT *, ({pol.tau_sql("alpha_row", "min_k", "big_", "u_")})::DOUBLE AS tau FROM d1u
), e AS (
  SELECT *, CASE WHEN testable THEN {hw} END AS hw,
    min(CASE WHEN se > 0 THEN se END) OVER ({fam}) AS se_best,
    median(CASE WHEN se > 0 THEN se END) OVER ({fam}) AS se_typical,
    median(tol) OVER ({fam}) AS tol_typical
  FROM d2
), e2 AS (
  SELECT *, {lo} AS lo_, {hi} AS hi_ FROM e
), f AS (
  SELECT *, coalesce({two_sided(f"{lo} > {m}", f"{hi} < -{m}")}, false) AS found,
    ({size} - {m}) / se AS z_beyond, ({size} - tol) / se AS z_zero FROM e2
), g AS (
  SELECT *, coalesce(NOT found AND {clear} AND {size} > {m}, false) AS watch FROM f
)
SELECT kind, source, 'finding' AS role, family_keys, keys,
  ({show("est")})::DOUBLE AS effect, ({show(lo)})::DOUBLE AS lo, ({show(hi)})::DOUBLE AS hi,
  (({show("est")}) - sign(est) * (({show("min_k")}) + tol))::DOUBLE AS beyond,
  n, alpha_row, z_beyond, z_zero, found AS flagged, watch, est AS est_model, se AS se_model,
  tau, (min_k + tol)::DOUBLE AS minimum_model,
  count(hw) OVER ({fam}) AS family_tested,
  family_rows,
  sum(CASE WHEN found THEN 1 ELSE 0 END) OVER ({fam}) AS family_flagged,
  sum(CASE WHEN watch THEN 1 ELSE 0 END) OVER ({fam}) AS family_watched,
  max(n) OVER ({fam}) AS family_n,
  ({show(f"min_k + tol_typical + {hw_typ} + {z!r} * se_typical")})::DOUBLE AS mde_typical,
  ({show(f"min_k + tol_typical + {hw_best} + {z!r} * se_best")})::DOUBLE AS mde_best,
  ({show("min_k")})::DOUBLE AS minimum,
  row_number() OVER ({fam} ORDER BY found DESC, watch DESC,
    z_beyond DESC NULLS LAST, keys) AS family_rank
FROM g
QUALIFY family_rank = 1 OR ((found OR watch) AND family_rank <= {int(per_family)})"""


def _screen_sql(pol: dc.Policy) -> str:
    """CTEs c2, c3: which rows are tested (`testable`), how many a family (`rows_tested`) and
    how many families of its kind have any (`families_tested`). Unscreened (`screen_k`
    false): every row. Screened: a row is tested when its sides could show an effect twice
    the minimum (clear of zero: the watch list; three times: a finding): its interval's
    half-width at an even game's binomial error (its sides alone, not its outcome) at most
    twice the minimum, at the level it would get as the family's k-th best-informed row (k:
    its place by sides); the half-width grows with k, so the tested rows are the family's
    first K by sides."""
    se0 = "CASE WHEN n > 0 THEN sqrt(0.25 / n) END"
    hw0 = dc.half_width_sql(se0, "level_", pol.tau_sql("level_", "min_k", "lbig_", "lu_"))
    return f"""c1 AS (
  SELECT *, row_number() OVER (PARTITION BY kind, family_keys ORDER BY n DESC NULLS LAST, keys)
    AS by_n, max(family_no) OVER (PARTITION BY kind) AS families_ FROM c
), c1l AS (
  SELECT *, (alpha_k / (families_ * by_n)) AS level_ FROM c1
), c1b AS (
  SELECT *, {dc.big_sql("level_")} AS lbig_ FROM c1l
), c1u AS (
  SELECT *, {dc.u_sql("lbig_")} AS lu_ FROM c1b
), c2 AS (
  SELECT *, CASE WHEN screen_k THEN coalesce({hw0} <= 2 * min_k, false) ELSE true END
    AS testable FROM c1u
), c2b AS (
  SELECT *, sum(testable::INTEGER) OVER (PARTITION BY kind, family_keys) AS rows_tested
  FROM c2
), c3 AS (
  SELECT *, count(DISTINCT CASE WHEN rows_tested > 0 THEN family_keys END)
    OVER (PARTITION BY kind) AS families_tested FROM c2b"""


def described_sql(d: Described) -> str:
    keys = ", ".join(f"{k} := {_q(k)}" for k in d.keys)
    return f"""SELECT {sql_literal(d.kind)} AS kind, {sql_literal(d.table)} AS source,
  'descriptive' AS role, NULL::VARCHAR AS family_keys,
  to_json(struct_pack({keys}))::VARCHAR AS keys,
  ({d.value})::DOUBLE AS effect, ({d.lo})::DOUBLE AS lo, ({d.hi})::DOUBLE AS hi,
  ({d.reference})::DOUBLE AS reference, ({d.n})::BIGINT AS n
FROM {d.table} WHERE {d.filter}"""


def sql(
    columns: Callable[[str], Collection[str]],
    per_family: int = PER_FAMILY,
    policy: dc.Policy | None = None,
) -> str:
    """One query over every source the store has: what the Findings page runs."""
    tested = [s for s in SOURCES if joinable(s, columns)]
    parts = [sources_sql(tested, per_family, policy)] if tested else []
    parts += [described_sql(d) for d in DESCRIBED if available(d, columns(d.table))]
    if not parts:
        return "SELECT NULL::VARCHAR AS kind WHERE false"
    union = "\nUNION ALL BY NAME\n".join(f"({p})" for p in parts)
    if {"kind", "keys", "first_flagged", "last_flagged"} <= set(columns(HISTORY)):
        union = f"""SELECT u.*, h.first_flagged,
  (SELECT max(last_flagged) FROM {HISTORY}) AS latest_run
FROM ({union}) u LEFT JOIN {HISTORY} h ON u.kind = h.kind AND u.keys = h.keys"""
    return f"SELECT * FROM ({union}) ORDER BY kind, family_rank NULLS LAST, keys"


@dataclass
class Findings:
    table: pl.DataFrame  # one row a finding, strongest evidence first
    families: pl.DataFrame  # one row a family: tested, flagged, shown, what it could see
    missing: list[str] = field(default_factory=list)  # tables the store lacks
    descriptive: pl.DataFrame = field(default_factory=pl.DataFrame)  # outcomes, conventions
    # not yet findings: clear of zero, the estimate beyond the minimum, the interval not yet
    # wholly beyond it (strongest evidence against zero first)
    watch: pl.DataFrame = field(default_factory=lambda: _finish_watch([]))

    @property
    def tested(self) -> int:
        return self.families.height

    def summary(self) -> str:
        f = self.families
        if not f.height:
            head = "No balance tables to read yet (balance jobs run writes them)."
        else:
            n = self.table.height
            blind = int((f["verdict"] == TOO_FEW).sum())
            head = (
                f"{n} finding{'s' if n != 1 else ''} in {f.height} families of questions "
                f"({blind} with too few games to tell). A finding is an effect whose "
                f"interval lies wholly beyond the minimum that matters for its kind; the "
                f"intervals stay valid however often the report is read, and on data with "
                f"no effect the whole report shows on average at most "
                f"{dc.report_alpha():g} false findings."
            )
            new = int((self.table["since"] == "new this week").sum()) if n else 0
            if n:
                head += f" New this week: {new}."
            w = self.watch.height
            if w:
                head += (
                    f" Watch, not yet findings: {w} effect{'s' if w != 1 else ''} clear of "
                    "zero and beyond the minimum by its estimate, its interval not yet wholly "
                    "beyond it (the same error budget, against zero)."
                )
            cut = f.filter(pl.col("flagged") > pl.col("shown"))
            if cut.height:
                head += (
                    f" Shown: the {PER_FAMILY} strongest of a family; "
                    + "; ".join(
                        f"{r['family']}: {r['flagged']:,}" for r in cut.iter_rows(named=True)
                    )
                    + "."
                )
        if self.missing:
            head += f" Not in the store (not read): {', '.join(self.missing)}."
        return head


TOO_FEW = "too few games to tell"
COLUMNS = [
    "rank", "statement", "item", "family", "kind", "effect", "lo", "hi", "beyond", "minimum",
    "n", "since", "first_flagged", "test", "z_beyond", "alpha", "chart", "games", "sql", "key",
]  # fmt: skip


def collect(
    fetch: Callable[[str], pl.DataFrame],
    columns: Callable[[str], Collection[str]] | None = None,
    per_family: int = PER_FAMILY,
    policy: dc.Policy | None = None,
) -> Findings:
    """Every finding of the store's balance tables, strongest evidence first."""
    if columns is None:
        columns = store_columns(fetch)
    frame = fetch(sql(columns, per_family, policy))
    return from_rows(frame, missing_tables(columns))


def missing_tables(columns: Callable[[str], Collection[str]]) -> list[str]:
    gone = {s.table for s in DESCRIBED if not available(s, columns(s.table))}
    for s in SOURCES:
        if not available(s, columns(s.table)):
            gone.add(s.table)
        elif not joinable(s, columns) and s.join is not None:
            gone.add(s.join[0])
    return sorted(gone)


def store_columns(fetch: Callable[[str], pl.DataFrame]) -> Callable[[str], Collection[str]]:
    """columns(table) from the store's catalog, read once."""
    rows = fetch(
        "SELECT table_name, column_name FROM duckdb_columns() "
        "WHERE database_name = current_database() "
        f"AND (table_name LIKE 'agg_%' OR table_name = '{HISTORY}')"
    )
    by: dict[str, set[str]] = {}
    for t, c in rows.iter_rows():
        by.setdefault(t, set()).add(c)
    return lambda table: by.get(table, set())


FAMILY_SCHEMA = {
    "kind": pl.String, "family": pl.String, "rows": pl.Int64, "tested": pl.Int64,
    "flagged": pl.Int64, "shown": pl.Int64, "watched": pl.Int64, "games": pl.Int64,
    "minimum": pl.Float64,
    "detectable_typical": pl.Float64, "detectable_best": pl.Float64, "verdict": pl.String,
}  # fmt: skip
DESCRIPTIVE_SCHEMA = {
    "kind": pl.String, "statement": pl.String, "value": pl.Float64, "lo": pl.Float64,
    "hi": pl.Float64, "reference": pl.Float64, "n": pl.Int64, "why": pl.String,
}  # fmt: skip


def _since(first, latest) -> str:
    if first is None:
        return "new this week"
    first_d, latest_d = _date(first), _date(latest) if latest is not None else None
    if latest_d is not None and (latest_d - first_d).days < NEW_DAYS:
        return "new this week"
    return f"persisting since {first_d.isoformat()}"


def _date(v) -> dt.date:
    if isinstance(v, dt.datetime):
        return v.date()
    if isinstance(v, dt.date):
        return v
    return dt.date.fromisoformat(str(v)[:10])


def from_rows(frame: pl.DataFrame, missing: list[str] | None = None) -> Findings:
    """The rows of `sql` as findings, families and the descriptive section."""
    found: list[dict] = []
    watch: list[dict] = []
    families: dict[tuple[str, str], dict] = {}
    described: list[dict] = []
    rows = frame.to_dicts() if frame.height and "keys" in frame.columns else []
    for r in rows:
        keys = json.loads(r["keys"])
        if r.get("role") == "descriptive":
            d = next(x for x in DESCRIBED if x.kind == r["kind"])
            described.append(
                {
                    "kind": d.kind,
                    "statement": d.subject.format(**_words(d.kind, keys)),
                    "value": r["effect"], "lo": r["lo"], "hi": r["hi"],
                    "reference": r.get("reference"), "n": r["n"], "why": d.why,
                }
            )  # fmt: skip
            continue
        s = KINDS[r["kind"]]
        fam_label = _family_label(s, json.loads(r["family_keys"]))
        fam = families.setdefault((s.kind, fam_label), _family(s, fam_label, r))
        if r.get("watch"):
            watch.append(_watch_row(s, keys, r, fam_label))
            continue
        if not r["flagged"]:
            continue
        fam["shown"] += 1
        words = _words(s.kind, keys)
        found.append(
            {
                "statement": statement(s, keys, r),
                "item": s.subject.format(**words).rstrip(","),
                "family": fam_label,
                "kind": s.kind,
                "effect": r["effect"],
                "lo": r["lo"],
                "hi": r["hi"],
                "beyond": r["beyond"],
                "minimum": r["minimum"],
                "n": r["n"],
                "since": _since(r.get("first_flagged"), r.get("latest_run")),
                "first_flagged": None if r.get("first_flagged") is None
                else _date(r["first_flagged"]).isoformat(),
                "test": s.test,
                "z_beyond": r["z_beyond"],
                "alpha": r["alpha_row"],
                "chart": _chart(s, keys),
                "games": games_link(s, keys, words),
                "sql": row_sql(s, keys),
                "key": finding_key(s.kind, r["keys"]),
            }
        )  # fmt: skip
    fams = pl.DataFrame(list(families.values()), schema=FAMILY_SCHEMA).sort("kind", "family")
    desc = pl.DataFrame(described, schema=DESCRIPTIVE_SCHEMA)
    return Findings(_finish(found), fams, missing or [], desc, _finish_watch(watch))


def games_to_confirm(r: dict) -> int | None:
    """More games (sides, attempts) the row needs for its interval to clear the minimum with
    80% power if its effect is what it is estimated now; None where it never would."""
    n, se = r.get("n"), r.get("se_model")
    if not n or se is None or not se > 0:
        return None
    need = dc.games_needed(
        float(se) * math.sqrt(n), float(r["alpha_row"]), float(r["tau"]),
        float(r["minimum_model"]), abs(float(r["est_model"])),
    )  # fmt: skip
    return None if need < 0 else max(need - int(n), 0)


def _confirm_words(more: int | None, n: int | None) -> str:
    if more is None or (n and more > 100 * n):
        return "more than a hundred times its games"
    return f"about {float(f'{more:.2g}'):,.0f} more"


def _watch_row(s: Source, keys: dict, r: dict, fam_label: str) -> dict:
    words = _words(s.kind, keys)
    more = games_to_confirm(r)
    return {
        "statement": statement(s, keys, r, watch=True),
        "item": s.subject.format(**words).rstrip(","),
        "family": fam_label, "kind": s.kind, "effect": r["effect"], "lo": r["lo"],
        "hi": r["hi"], "beyond": r["beyond"], "minimum": r["minimum"], "n": r["n"],
        "to_confirm": more, "confirm": _confirm_words(more, r["n"]), "test": s.test,
        "z_zero": r["z_zero"], "alpha": r["alpha_row"], "chart": _chart(s, keys),
        "games": games_link(s, keys, words), "sql": row_sql(s, keys),
        "key": finding_key(s.kind, r["keys"]),
    }  # fmt: skip


WATCH_COLUMNS = [
    "rank", "statement", "item", "family", "kind", "effect", "lo", "hi", "beyond", "minimum",
    "n", "to_confirm", "confirm", "test", "z_zero", "alpha", "chart", "games", "sql", "key",
]  # fmt: skip


# the columns a finding and a watch-list row share (each adds its own: `_finish`, `_finish_watch`)
_ROW_SCHEMA = {
    "statement": pl.String, "item": pl.String, "family": pl.String, "kind": pl.String,
    "effect": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "beyond": pl.Float64,
    "minimum": pl.Float64, "n": pl.Int64, "test": pl.String, "alpha": pl.Float64,
    "chart": pl.String, "games": pl.String, "sql": pl.String, "key": pl.String,
}  # fmt: skip


def _finish_watch(rows: list[dict]) -> pl.DataFrame:
    schema = {**_ROW_SCHEMA, "to_confirm": pl.Int64, "confirm": pl.String, "z_zero": pl.Float64}
    out = pl.DataFrame(rows, schema=schema)
    out = out.sort(pl.col("z_zero"), "statement", descending=[True, False], nulls_last=True)
    return out.with_columns(rank=pl.int_range(1, out.height + 1, dtype=pl.Int64)).select(
        WATCH_COLUMNS
    )


def _family(s: Source, label: str, r: dict) -> dict:
    tested = int(r["family_tested"] or 0)
    flagged = int(r["family_flagged"] or 0)
    watched = int(r.get("family_watched") or 0)
    minimum = r["minimum"]
    best, typical = r["mde_best"], r["mde_typical"]
    if flagged:
        verdict = f"{flagged} found" + (f", {watched} to watch" if watched else "")
    elif watched:
        verdict = f"none found yet; {watched} to watch"
    elif tested == 0 or best is None or best > dc.TOO_FEW_FACTOR * minimum:
        verdict = TOO_FEW
    else:
        verdict = f"none found; it could see {typical:.3f} or more (typical row)"
    return {
        "kind": s.kind, "family": label, "rows": int(r["family_rows"] or 0), "tested": tested,
        "flagged": flagged, "shown": 0, "watched": watched, "games": int(r["family_n"] or 0),
        "minimum": minimum,
        "detectable_typical": typical, "detectable_best": best, "verdict": verdict,
    }  # fmt: skip


def finding_key(kind: str, keys_json: str) -> str:
    return f"{kind}:{keys_json}"


def _finish(found: list[dict]) -> pl.DataFrame:
    schema = {**_ROW_SCHEMA, "since": pl.String, "first_flagged": pl.String,
              "z_beyond": pl.Float64}  # fmt: skip
    out = pl.DataFrame(found, schema=schema)
    # strongest evidence first: how many standard errors the estimate clears the minimum by
    out = out.sort(
        pl.col("z_beyond"), pl.col("beyond").abs(), "statement",
        descending=[True, True, False], nulls_last=True,
    )  # fmt: skip
    return out.with_columns(rank=pl.int_range(1, out.height + 1, dtype=pl.Int64)).select(COLUMNS)


def row_sql(s: Source, keys: dict) -> str:
    """The SQL behind a finding: its row of its table."""
    cond = " AND ".join(
        f"{_q(k)} IS NULL" if v is None else f"{_q(k)} = {_literal(v)}" for k, v in keys.items()
    )
    return f"SELECT * FROM {s.table} WHERE {cond}"


def games_link(s: Source, keys: dict, words: dict) -> str:
    """The dashboard's game explorer filtered to the finding's games (human games)."""
    args: dict[str, str] = {"mode": "human"} if s.kind not in ("ai_band", "ai_order") else {}
    if s.kind in ("ai_band", "ai_order"):
        args["mode"] = "computer"
    if s.kind == "slide_seat":
        return ""
    for arg, col in s.games:
        v = words.get(col, keys.get(col))
        if v is not None and v != "—":
            args[arg] = str(v)
    return "games?" + urlencode(args)


def _literal(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    return sql_literal(v)


def _chart(s: Source, keys: dict) -> str:
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
        elif k == "family":
            continue
        else:
            parts.append(str(v))
    return " ".join([s.kind.replace("_", " "), *parts])


def _words(kind: str, keys: dict) -> dict:
    w = {k: ("—" if v is None else v) for k, v in keys.items()}
    if "board" in keys:
        w["board_label"] = _board(keys["board"])
        w["board_variant"] = " ".join(p for p in (_board(keys["board"]), keys.get("variant")) if p)
    if "file" in keys and keys["file"] is not None:
        w["file_letter"] = "abcdefg"[int(keys["file"])]
    if kind == "side_events":
        stun, catch = keys.get("made_stun"), keys.get("made_catch")
        stunned = "stunned a crown" if stun else "stunned none"
        w["stun_catch"] = f"{stunned} and {'caught one' if catch else 'caught none'}"
    if kind == "power":
        term = str(keys.get("term", ""))
        w["power_name"] = term.partition(":")[2]
        w["term_label"] = w["power_name"]
    return w


def statement(s: Source, keys: dict, r: dict, watch: bool = False) -> str:
    """One line: "surge scores 0.043 [0.027, 0.060] above the median power in the adjusted
    model (0.023 beyond the minimum of 0.020; n = 4,012)"."""
    w = _words(s.kind, keys)
    subject = s.subject.format(**w)
    against = s.against.format(**w)
    where = s.where.format(**w)
    effect, lo, hi = r["effect"], r["lo"], r["hi"]
    up = effect >= 0
    size, a, b = (effect, lo, hi) if up else (-effect, -hi, -lo)
    n = f"n = {int(r['n']):,}" if r.get("n") is not None else "n unknown"
    beyond = abs(r["beyond"]) if r.get("beyond") is not None else None
    past = f"{beyond:.3f} beyond the minimum of {r['minimum']:.3f}; " if beyond is not None else ""
    if watch and beyond is not None:
        past = (
            f"estimate {beyond:.3f} beyond the minimum of {r['minimum']:.3f}, its interval "
            "clear of zero but not yet of the minimum; "
        )
    return (
        f"{subject} {s.verb} {size:.3f} [{_num(a)}, {_num(b)}] {'above' if up else 'below'} "
        f"{against} {where} ({past}{n})"
    )


def _num(v) -> str:
    return "?" if v is None else f"{v:.3f}"


# -- the record of when each finding was first flagged ---------------------------------------

HISTORY_DDL = f"""CREATE TABLE IF NOT EXISTS {HISTORY} (
    kind VARCHAR NOT NULL, keys VARCHAR NOT NULL, statement VARCHAR,
    first_flagged TIMESTAMP NOT NULL, last_flagged TIMESTAMP NOT NULL,
    first_run BIGINT, last_run BIGINT)"""


def remember(con, run_id: int, at: dt.datetime) -> int:
    """Keep jobs_findings up to date after a run (inside its transaction): a finding flagged
    now keeps its first date (or starts one), a finding no longer flagged is dropped (if it
    comes back it is new again). Returns the findings flagged now."""
    con.execute(HISTORY_DDL)
    fetch = lambda q: con.execute(q).pl()  # noqa: E731
    f = collect(fetch)
    now = f.table
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _findings_now (kind VARCHAR, keys VARCHAR, statement VARCHAR)"
    )
    if now.height:
        keys = [k.partition(":")[2] for k in now["key"].to_list()]
        con.executemany(
            "INSERT INTO _findings_now VALUES (?, ?, ?)",
            list(zip(now["kind"].to_list(), keys, now["statement"].to_list(), strict=True)),
        )
    con.execute(
        f"DELETE FROM {HISTORY} h WHERE NOT EXISTS (SELECT 1 FROM _findings_now n "
        "WHERE n.kind = h.kind AND n.keys = h.keys)"
    )
    con.execute(
        f"UPDATE {HISTORY} h SET last_flagged = ?, last_run = ?, statement = n.statement "
        "FROM _findings_now n WHERE n.kind = h.kind AND n.keys = h.keys",
        [at, run_id],
    )
    con.execute(
        f"INSERT INTO {HISTORY} SELECT kind, keys, statement, ?, ?, ?, ? FROM _findings_now n "
        f"WHERE NOT EXISTS (SELECT 1 FROM {HISTORY} h WHERE n.kind = h.kind AND n.keys = h.keys)",
        [at, at, run_id, run_id],
    )
    con.execute("DROP TABLE _findings_now")
    return now.height
