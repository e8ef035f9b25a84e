"""Did a client version change balance? Version A against version B, from the additive tables.

    comparison = compare(fetch, a="3.0.0", b="3.1.0")  # fetch(table, cut) as in analysis.rates

Every number is a difference B - A of two independent samples (the games of each version),
computed from summed counts of the agg_* tables under each version's cut (never an average of
rates), so it costs what reading a few hundred aggregated rows costs, whatever the store holds.
Families (Benjamini-Hochberg runs within each, over all its rows):

- `first_move`: the first mover's score rate, per board and variant;
- `powers`: per board and power, the pick rate (picked / sides in games with powers), the pick
  effect (score when picked - score when not picked: the difference of the two versions'
  differences) and the used rate (used / picked);
- `ai_levels`: the human's score rate against each computer level, per board (computer games);
- `end_reasons`: the share of games that end by each reason, per board and variant;
- `game_length`: the mean number of turns, per board and variant;
- `lineup_cells`: the lineup model's rank-in-file effects (analysis.lineup_model, fitted on
  each version's per-lineup counts), per board, variant, rank and file;
- `adjusted_powers`: each power's adjusted effect (analysis.adjusted: first move, board and the
  opponent's picks held fixed; a contrast against the median power), fitted on a sample of
  each version's games (`adjusted_sample_sql`: the ADJUSTED_SAMPLE whose ids hash lowest).

A difference is `flagged` (a change) when its always-valid interval (always_lo, always_hi:
analysis.decisions' confidence sequence, at the report's error level split equally over the
families and within a family over its rows) lies wholly beyond its measure's MINIMUM: identical
versions read "0 things changed" however many rows are compared and however often the page is
read. The one-look 95% interval (lo, hi), p and BH q-value stay as drill-down.

Tests (`test` column): proportions and score rates use the pooled two-proportion z-test
(stats.diff_test) and Newcombe's hybrid score interval (stats.diff_newcombe); the pick effect,
a combination of four rates, the Wald z-test and the MOVER interval built from the four Wilson
intervals (Zou and Donner 2008; Newcombe's is its two-rate case); the mean length a Welch z-test
and normal interval from the histogram's exact mean and variance; a lineup cell the difference
of the two fits' effects (log-odds) with the sum of their posterior variances, a normal z (each
fit is regularised towards 0, so a change is shrunk, not exaggerated). Draws make score rates less
variable than the binomial the tests assume, so their p-values are slightly conservative.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl

from replays.rulesets import Ruleset

from . import decisions as dc
from . import stats as st
from . import tables
from .cuts import HUMAN_MODES, Cut, version_key
from .live_version import LiveVersion, is_prerelease, live_version
from .sql import sql_literal

ALPHA = 0.05  # the one-look tests' BH level (q_value), kept for drill-down
# The smallest change worth a designer's action, per measure (score points unless said): a row
# is `flagged` when its always-valid interval (analysis.decisions) lies wholly beyond it. The
# page's error budget is the report's (BALANCE_REPORT_ALPHA), split equally over FAMILIES and
# within a family over its rows, so identical versions show "0 things changed" on all but
# about one comparison in ten, however often the page is read.
MINIMUM = {
    "first-mover score": 0.02,
    "pick rate": 0.05,
    "pick effect": 0.02,
    "used rate": 0.05,
    "human score": 0.02,
    "share of games": 0.03,
    "mean turns": 1.0,  # turns
    "rank-in-file effect (log-odds)": dc.logit_points(0.02),
    "adjusted effect (log-odds, against the median power)": dc.logit_points(0.02),
}
FAMILIES = {
    "first_move": "agg_first_move",
    "powers": "agg_power",
    "ai_levels": "agg_vs_ai",
    "end_reasons": "agg_end_reasons",
    "game_length": "agg_game_length",
    "lineup_cells": "agg_lineup",
    "adjusted_powers": "games",  # a sample of each version's games (adjusted_sample_sql)
}
ADJUSTED_SAMPLE = 9_000  # games a version: the dashboard's chart query returns at most 20,000
TITLES = {
    "first_move": "First move",
    "powers": "Powers",
    "ai_levels": "Computer levels",
    "end_reasons": "End reasons",
    "game_length": "Game length",
    "lineup_cells": "Lineup cells",
    "adjusted_powers": "Adjusted power effects",
}
PROPORTION_TEST = "two-proportion z (pooled); Newcombe interval"
DID_TEST = "Wald z of the difference of differences; MOVER interval (Wilson)"
MEAN_TEST = "Welch z; normal interval"
CELL_TEST = "difference of the lineup model's effects (log-odds), normal z"
ADJUSTED_TEST = "difference of the adjusted model's effects (log-odds), normal z"
COLUMNS = {
    "family": pl.String,
    "board": pl.Int64,
    "variant": pl.String,
    "item": pl.String,
    "measure": pl.String,
    "label": pl.String,
    "a_n": pl.Int64,
    "a_value": pl.Float64,
    "b_n": pl.Int64,
    "b_value": pl.Float64,
    "diff": pl.Float64,
    "lo": pl.Float64,
    "hi": pl.Float64,
    "p_value": pl.Float64,
    "q_value": pl.Float64,
    "flagged": pl.Boolean,
    "test": pl.String,
    "minimum": pl.Float64,
    "always_lo": pl.Float64,
    "always_hi": pl.Float64,
    "se": pl.Float64,
    "alpha": pl.Float64,
}

Fetch = Callable[[str, Cut], pl.DataFrame | None]


@dataclass
class Comparison:
    a: str
    b: str
    table: pl.DataFrame  # one row per difference tested, strongest evidence first
    notes: list[str] = field(default_factory=list)  # what could not be compared, and why

    @property
    def flagged(self) -> pl.DataFrame:
        return self.table.filter(pl.col("flagged"))

    def summary(self) -> str:
        """One line: how many differences clear their minimum, which (strongest first), and
        when none does, how many games a version needs to see one."""
        f = self.flagged
        if not self.table.height:
            return f"Nothing to compare between {self.a} (A) and {self.b} (B)."
        if not f.height:
            needs = self.games_needed()
            return (
                f"0 things changed by more than their minimum from {self.a} (A) to {self.b} "
                f"(B): none of the {self.table.height} differences clears the minimum that "
                "matters, with the page's error control (a smaller change, or one these games "
                "cannot see, may still be there)."
                + (
                    f" To see a change of twice the minimum, a version needs about {needs}."
                    if needs
                    else ""
                )
            )
        things = "1 thing changed" if f.height == 1 else f"{f.height} things changed"
        parts = [describe(r) for r in f.head(5).iter_rows(named=True)]
        more = f"; and {f.height - 5} more" if f.height > 5 else ""
        return (
            f"{things} by more than the minimum from {self.a} (A) to {self.b} (B): "
            + "; ".join(parts)
            + more
            + "."
        )

    def games_needed(self) -> str:
        """Per family, the games (sides, attempts) each version needs for a change of twice
        the minimum to be found with 80% power, from its typical row's spread."""
        out = []
        for fam in FAMILIES:
            t = self.table.filter((pl.col("family") == fam) & (pl.col("se") > 0))
            if not t.height:
                continue
            r = t.sort("se").row(t.height // 2, named=True)
            spread = r["se"] / np.sqrt(1 / max(r["a_n"], 1) + 1 / max(r["b_n"], 1))
            m = r["minimum"]
            n = dc.games_needed(spread * np.sqrt(2), r["alpha"], dc.scale(r["alpha"], m), m, 2 * m)
            if n > 0:
                rounded = int(float(f"{n:.2g}"))
                unit = (
                    "games"
                    if fam in ("first_move", "end_reasons", "game_length")
                    else ("sides" if fam in ("powers", "lineup_cells") else "games")
                )
                out.append(f"{TITLES[fam].lower()} {rounded:,} {unit} ({r['measure']})")
        return "; ".join(out)


def describe(row: dict) -> str:
    fmt = "{:+.1f}" if row["family"] == "game_length" else "{:+.3f}"
    if row["family"] in ("lineup_cells", "adjusted_powers"):
        fmt = "{:+.2f}"  # log-odds
    d, lo, hi, m = (fmt.format(row[k]) for k in ("diff", "always_lo", "always_hi", "minimum"))
    return f"{TITLES[row['family']].lower()} {row['label']} {d} [{lo}, {hi}] (minimum {m[1:]})"


# -- default versions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    a: str | None  # None: nothing to compare B with
    b: str | None
    why: str


def default_pair(human_games: Mapping[str | None, int]) -> Pair:
    """B: the live version (analysis.live_version); A: the newest release before it that has
    human games. Pre-releases are compared only when chosen."""
    versions = sorted((v for v, n in human_games.items() if v and n > 0), key=version_key)
    if not versions:
        return Pair(None, None, "no client version has verified human games yet")
    live: LiveVersion = live_version(human_games)
    if live.version is None:
        return Pair(None, None, f"no release to compare: {live.reason}")
    b = live.version
    older = [v for v in versions if not is_prerelease(v) and version_key(v) < version_key(b)]
    if not older:
        only = "the only release" if len(versions) == 1 else "the oldest release"
        return Pair(None, b, f"{b} is {only} with human games: nothing before it to compare")
    a = older[-1]
    why = (
        f"B = {b}, the live version ({live.reason}); A = {a}, the release before it "
        f"({human_games[a]:,} human games)"
    )
    return Pair(a, b, why)


# -- the comparison ------------------------------------------------------------------------------


def compare(
    fetch: Fetch,
    a: str,
    b: str,
    cut: Cut | None = None,
    alpha: float = ALPHA,
    families: list[str] | None = None,
) -> Comparison:
    """Every difference B - A under `cut` (its client version is replaced by each version's;
    default: human games, online and friend). Computer levels are read from computer games.
    `families`: some of FAMILIES only (each family's flags are its own either way)."""
    cut = Cut(mode=HUMAN_MODES) if cut is None else cut
    notes: list[str] = []
    parts = []
    for family, table in FAMILIES.items():
        if families is not None and family not in families:
            continue
        fcut = cut.with_modes("computer") if family == "ai_levels" else cut
        fcut, dropped = _fit_cut(table, fcut) if table in tables.ADDITIVE else (fcut, [])
        if dropped:
            notes.append(f"{TITLES[family]}: {table} has no {', '.join(dropped)}: not applied")
        frames = {}
        for v in (a, b):
            frame = fetch(table, replace(fcut, client_version=(v,)))
            frames[v] = frame if frame is not None else pl.DataFrame()
        df, said = BUILDERS[family](frames[a], frames[b])
        notes += [f"{TITLES[family]}: {s}".replace("{a}", a).replace("{b}", b) for s in said]
        if df.height:
            q, _ = st.bh(df["p_value"].to_numpy(), alpha)
            df = decide(df.with_columns(pl.Series("q_value", q)), len(FAMILIES))
            parts.append(df.with_columns(family=pl.lit(family)).select(list(COLUMNS)))
    out = pl.concat(parts) if parts else pl.DataFrame(schema=COLUMNS)
    # strongest evidence first: the flagged by how far they clear the minimum, in errors
    beyond = (pl.col("diff").abs() - pl.col("minimum")) / pl.col("se")
    out = out.sort(
        pl.col("flagged"), beyond, "p_value", "family", "label",
        descending=[True, True, False, False, False], nulls_last=True,
    )  # fmt: skip
    return Comparison(a, b, out, notes)


def decide(df: pl.DataFrame, families: int) -> pl.DataFrame:
    """`flagged`: the row's always-valid interval (always_lo, always_hi; analysis.decisions,
    at the report's level split over `families` and the family's rows) lies wholly beyond its
    measure's MINIMUM."""
    d = df["diff"].to_numpy().astype(float)
    se = ((df["hi"] - df["lo"]).to_numpy().astype(float)) / (2 * st.Z95)
    m = np.array([MINIMUM[x] for x in df["measure"]], dtype=float)
    alpha = dc.report_alpha() / families / df.height
    hw = dc.half_width(se, alpha, dc.scale(alpha, m))
    with np.errstate(invalid="ignore"):
        changed = ((d - hw) > m) | ((d + hw) < -m)
    return df.with_columns(
        pl.Series("minimum", m),
        pl.Series("always_lo", d - hw).fill_nan(None),
        pl.Series("always_hi", d + hw).fill_nan(None),
        pl.Series("se", se).fill_nan(None),
        pl.Series("alpha", np.full(df.height, alpha)),
        pl.Series("flagged", np.nan_to_num(changed, nan=0).astype(bool)),
    )


def _fit_cut(table: str, cut: Cut) -> tuple[Cut, list[str]]:
    """The cut without the dimensions the table does not carry (the light tables have no
    platform and no AI level), and those dimensions."""
    dims = tables.ADDITIVE[table][0]
    dropped = [d for d in ("platform", "ai_level") if getattr(cut, d) is not None and d not in dims]
    platform = None if "platform" in dropped else cut.platform
    ai_level = None if "ai_level" in dropped else cut.ai_level
    return replace(cut, platform=platform, ai_level=ai_level), dropped


def _summed(frame: pl.DataFrame, by: list[str], cols: list[str]) -> pl.DataFrame:
    schema = {**{k: pl.String for k in by}, **{c: pl.Float64 for c in cols}}
    if not frame.height:
        return pl.DataFrame(schema=schema)
    return (
        frame.with_columns(*(pl.col(k).cast(schema[k]) for k in by))
        .group_by(by)
        .agg(pl.col(c).cast(pl.Float64).sum() for c in cols)
    )


def _paired(fa, fb, by: list[str], cols: list[str], groups: list[str], n_col: str, what: str):
    """The summed counts of A and B side by side (columns a_<col>, b_<col>) for the keys both
    versions have games in, and the notes on the groups only one version has."""
    sa = _summed(fa, by, cols).rename({c: f"a_{c}" for c in cols})
    sb = _summed(fb, by, cols).rename({c: f"b_{c}" for c in cols})
    both = sa.join(sb, on=by, how="full", coalesce=True).with_columns(
        pl.col(f"{p}_{c}").fill_null(0.0) for p in "ab" for c in cols
    )
    notes = []
    if not both.height:
        return both, [f"no {what} of either version"]
    na, nb = both[f"a_{n_col}"].sum(), both[f"b_{n_col}"].sum()
    if na == 0 or nb == 0:
        v, n = ("{a} (A)", nb) if na == 0 else ("{b} (B)", na)
        other = "B" if na == 0 else "A"
        return both.clear(), [f"no {what} of {v} ({int(n):,} of {other}): nothing to compare"]
    g = both.group_by(groups).agg(pl.col(f"a_{n_col}").sum(), pl.col(f"b_{n_col}").sum())
    for r in g.sort(groups).iter_rows(named=True):
        if r[f"a_{n_col}"] == 0 or r[f"b_{n_col}"] == 0:
            v = "{b} (B)" if r[f"a_{n_col}"] == 0 else "{a} (A)"
            n = int(r[f"a_{n_col}"] + r[f"b_{n_col}"])
            notes.append(f"{_group_label(r, groups)}: {what} of {v} only ({n:,}): not compared")
    keep = (pl.col(f"a_{n_col}") > 0) & (pl.col(f"b_{n_col}") > 0)
    return both.filter(keep).sort(by), notes


def _group_label(row: dict, parts: list[str]) -> str:
    out = []
    for p in parts:
        v = row.get(p)
        if p == "board" and v is not None:
            out.append(f"{v}×{v}")
        elif p == "ai_level" and v is not None:
            out.append(f"level {v}")
        elif v is not None:
            out.append(str(v))
    return " ".join(out)


def _rows(df: pl.DataFrame, *, board, variant, item, measure, label, a, b, ci, p, test):
    n = df.height
    return pl.DataFrame(
        {
            "board": board,
            "variant": variant if variant is not None else [None] * n,
            "item": item if item is not None else [None] * n,
            "measure": [measure] * n,
            "label": label,
            "a_n": a[0],
            "a_value": a[1],
            "b_n": b[0],
            "b_value": b[1],
            "diff": ci[0],
            "lo": ci[1],
            "hi": ci[2],
            "p_value": p,
            "test": [test] * n,
        },
        schema_overrides={k: COLUMNS[k] for k in ("board", "variant", "item", "a_n", "b_n")},
    )


def _proportion(df, k: str, n: str, **kw) -> pl.DataFrame:
    """B - A of k / n: Newcombe's interval and the pooled two-proportion z-test."""
    ka, na = df[f"a_{k}"].to_numpy(), df[f"a_{n}"].to_numpy()
    kb, nb = df[f"b_{k}"].to_numpy(), df[f"b_{n}"].to_numpy()
    ci = st.diff_newcombe(kb, nb, ka, na)
    a = (na.astype(np.int64), st.rate(ka, na))
    b = (nb.astype(np.int64), st.rate(kb, nb))
    return _rows(df, a=a, b=b, ci=ci, p=st.diff_test(kb, nb, ka, na), test=PROPORTION_TEST, **kw)


def _labels(df: pl.DataFrame, parts: list[str], suffix: str = "") -> list[str]:
    return [_group_label(r, parts) + suffix for r in df.iter_rows(named=True)]


def _board(df: pl.DataFrame) -> np.ndarray:
    return df["board"].cast(pl.Int64).to_numpy()


SCORE = ["n", "wins", "draws"]


def _score(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(score=pl.col("wins") + pl.col("draws") / 2) if frame.height else frame


def first_move(fa, fb):
    by = ["board", "variant"]
    df, notes = _paired(_score(fa), _score(fb), by, ["n", "score"], by, "n", "games")
    out = _proportion(
        df, "score", "n", board=_board(df), variant=df["variant"], item=None,
        measure="first-mover score", label=_labels(df, by),
    )  # fmt: skip
    return out, notes


def ai_levels(fa, fb):
    by = ["board", "ai_level"]
    what = "computer games"
    df, notes = _paired(_score(fa), _score(fb), by, ["n", "score"], ["board"], "n", what)
    out = _proportion(
        df, "score", "n", board=_board(df), variant=None, item=_labels(df, ["ai_level"]),
        measure="human score", label=_labels(df, by),
    )  # fmt: skip
    return out, notes


def end_reasons(fa, fb):
    by = ["board", "variant", "reason"]
    df, notes = _paired(fa, fb, by, ["games"], ["board", "variant"], "games", "games")
    # every reason of a board and variant, against all its games (a reason one version never
    # ended a game by has a share of 0 there, not a missing row)
    grid = df.select("board", "variant").unique().join(df.select("reason").unique(), how="cross")
    df = grid.join(df, on=by, how="left").with_columns(pl.col("a_games", "b_games").fill_null(0))
    df = (
        df.with_columns(
            a_total=pl.col("a_games").sum().over("board", "variant"),
            b_total=pl.col("b_games").sum().over("board", "variant"),
        )
        .filter((pl.col("a_games") > 0) | (pl.col("b_games") > 0))
        .sort(by)
    )
    out = _proportion(
        df, "games", "total", board=_board(df), variant=df["variant"], item=df["reason"],
        measure="share of games", label=_labels(df, by),
    )  # fmt: skip
    return out, notes


def game_length(fa, fb):
    by = ["board", "variant"]
    prep = []
    for f in (fa, fb):
        if f.height:
            t = pl.col("turns").cast(pl.Float64)
            f = f.with_columns(t_sum=t * pl.col("games"), t2_sum=t * t * pl.col("games"))
        prep.append(f)
    cols = ["games", "t_sum", "t2_sum"]
    df, notes = _paired(prep[0], prep[1], by, cols, by, "games", "games")
    stats = {}
    for v in "ab":
        n = df[f"{v}_games"].to_numpy()
        mean = df[f"{v}_t_sum"].to_numpy() / n
        var = (df[f"{v}_t2_sum"].to_numpy() - n * mean**2) / np.maximum(n - 1, 1)
        stats[v] = (n, mean, np.maximum(var, 0.0))
    (na, ma, va), (nb, mb, vb) = stats["a"], stats["b"]
    d = mb - ma
    se = np.sqrt(va / na + vb / nb)
    ci = (d, d - st.Z95 * se, d + st.Z95 * se)
    p = np.where(se > 0, st.normal_p(d, np.where(se > 0, se, 1.0)), np.where(d == 0, 1.0, 0.0))
    out = _rows(
        df, board=_board(df), variant=df["variant"], item=None, measure="mean turns",
        label=_labels(df, by), a=(na.astype(np.int64), ma), b=(nb.astype(np.int64), mb),
        ci=ci, p=p, test=MEAN_TEST,
    )  # fmt: skip
    return out, notes


def _mover(terms):
    """Interval of sum(sign * rate) over independent rates (MOVER, from Wilson intervals),
    and the Wald p-value. terms: (k, n, sign) arrays."""
    est = sum(s * st.rate(k, n) for k, n, s in terms)
    down, up, var = 0.0, 0.0, 0.0
    for k, n, s in terms:
        p = st.rate(k, n)
        lo, hi = st.wilson(k, n)
        below, above = (p - lo, hi - p) if s > 0 else (hi - p, p - lo)
        down, up = down + below**2, up + above**2
        with np.errstate(invalid="ignore", divide="ignore"):
            var = var + p * (1 - p) / n
    se = np.sqrt(var)
    p_value = np.where(se > 0, st.normal_p(est, np.where(se > 0, se, 1.0)), np.nan)
    return (est, est - np.sqrt(down), est + np.sqrt(up)), p_value


POWER_COLS = ["sides_n", "picked_n", "picked_score", "not_n", "not_score", "used_n"]


def powers(fa, fb):
    by = ["board", "power"]
    prep = []
    for f in (fa, fb):
        if f.height:
            f = f.with_columns(
                picked_score=pl.col("picked_wins") + pl.col("picked_draws") / 2,
                not_score=pl.col("not_wins") + pl.col("not_draws") / 2,
            )
        prep.append(f)
    df, notes = _paired(prep[0], prep[1], by, POWER_COLS, ["board"], "sides_n", "games with powers")
    board, item = _board(df), df["power"]
    kw = dict(board=board, variant=None, item=item)
    out = [
        _proportion(df, "picked_n", "sides_n", measure="pick rate",
                    label=_labels(df, by, " pick rate"), **kw),
    ]  # fmt: skip
    # score when picked - when not, B minus A: four independent rates (two per version)
    terms = [
        (df[f"{v}_{w}_score"].to_numpy(), df[f"{v}_{w}_n"].to_numpy(), sign * inner)
        for v, sign in (("b", 1), ("a", -1))
        for w, inner in (("picked", 1), ("not", -1))
    ]
    ci, p = _mover(terms)
    effect = {
        v: (df[f"{v}_picked_n"].to_numpy().astype(np.int64),
            st.rate(df[f"{v}_picked_score"], df[f"{v}_picked_n"])
            - st.rate(df[f"{v}_not_score"], df[f"{v}_not_n"]))
        for v in "ab"
    }  # fmt: skip
    out.append(
        _rows(df, measure="pick effect", label=_labels(df, by, " pick effect"), a=effect["a"],
              b=effect["b"], ci=ci, p=p, test=DID_TEST, **kw)
    )  # fmt: skip
    used = df.filter((pl.col("a_picked_n") > 0) & (pl.col("b_picked_n") > 0))
    out.append(
        _proportion(used, "used_n", "picked_n", board=_board(used), variant=None,
                    item=used["power"], measure="used rate", label=_labels(used, by, " used rate"))
    )  # fmt: skip
    return pl.concat(out), notes


def lineup_cells(fa, fb):
    """The lineup model fitted on each version's lineups; B − A of every rank-in-file effect
    both fits have games for."""
    from . import lineup_model

    keys = ["board", "variant", "rank", "file"]
    fits, notes = {}, []
    for v, f in (("a", fa), ("b", fb)):
        _, terms = lineup_model.tables(_score(f).select("board", "variant", "lineup", "n", "score")
                                       if f.height else pl.DataFrame(
                                           schema={"board": pl.UInt8, "variant": pl.String,
                                                   "lineup": pl.String, "n": pl.Int64,
                                                   "score": pl.Float64}))  # fmt: skip
        fits[v] = terms.with_columns(pl.col("board").cast(pl.Int64)).select(
            *keys, pl.col("n_sides").alias(f"{v}_n"), pl.col("estimate").alias(f"{v}_est"),
            pl.col("se").alias(f"{v}_se"),
        )  # fmt: skip
    if not fits["a"].height or not fits["b"].height:
        v = "{a} (A)" if not fits["a"].height else "{b} (B)"
        return pl.DataFrame(schema=COLUMNS).drop("family", "q_value", "flagged"), [
            f"no lineups of {v}: nothing to compare"
        ]
    groups = ["board", "variant"]
    only = fits["a"].select(groups).unique().join(fits["b"].select(groups).unique(), on=groups,
                                                  how="anti")  # fmt: skip
    only_b = fits["b"].select(groups).unique().join(fits["a"].select(groups).unique(), on=groups,
                                                    how="anti")  # fmt: skip
    for frame, v in ((only, "{a} (A)"), (only_b, "{b} (B)")):
        for r in frame.sort(groups).iter_rows(named=True):
            notes.append(f"{_group_label(r, groups)}: lineups of {v} only: not compared")
    df = fits["a"].join(fits["b"], on=keys).filter((pl.col("a_n") > 0) & (pl.col("b_n") > 0))
    df = df.sort(keys)
    d = (df["b_est"] - df["a_est"]).to_numpy()
    se = np.sqrt(df["a_se"].to_numpy() ** 2 + df["b_se"].to_numpy() ** 2)
    files = "abcdefg"
    label = [
        f"{r['board']}×{r['board']} {r['variant']} rank {r['rank']} on file {files[r['file']]}"
        for r in df.iter_rows(named=True)
    ]
    out = _rows(
        df, board=_board(df), variant=df["variant"],
        item=[f"rank {r} file {files[f]}" for r, f in zip(df["rank"], df["file"], strict=True)],
        measure="rank-in-file effect (log-odds)", label=label,
        a=(df["a_n"].to_numpy(), df["a_est"].to_numpy()),
        b=(df["b_n"].to_numpy(), df["b_est"].to_numpy()),
        ci=(d, d - st.Z95 * se, d + st.Z95 * se), p=st.normal_p(d, se), test=CELL_TEST,
    )  # fmt: skip
    return out, notes


def adjusted_sample_sql(
    version: str | None, where: str = "TRUE", ruleset: str | None = None
) -> str:
    """The sample adjusted_powers fits for a version (and ruleset; None: any): human games
    (online, friend) of it matching `where` (a predicate on games), at most ADJUSTED_SAMPLE,
    lowest id hashes."""
    from . import sample

    modes = ", ".join(f"'{m}'" for m in HUMAN_MODES)
    cond = f"mode IN ({modes})"
    if version is not None:
        cond += f" AND client_version = {sql_literal(version)}"
    if ruleset is not None:
        cond += f" AND ruleset = {sql_literal(ruleset)}"
    return sample.rows_sql(f"({where}) AND {cond}", ADJUSTED_SAMPLE)


# -- what changed in the rules -------------------------------------------------------------------


def rules_changed(a: Ruleset | None, b: Ruleset | None, a_name: str, b_name: str) -> str:
    """In words, what changed in the rules from A's ruleset to B's (rulesets.md RS6.1: a
    comparison of rulesets says which parameters differ, next to the differences measured).
    `a` / `b`: the rulesets' full parameters; None when not known (a name not registered)."""
    if a_name == b_name:
        return f"Both sides played ruleset {a_name}: the rules did not change."
    missing = [n for n, r in ((a_name, a), (b_name, b)) if r is None]
    if missing:
        return (
            f"Ruleset {a_name} (A) -> {b_name} (B); the parameters of {', '.join(missing)} are "
            "not registered here, so what changed cannot be said."
        )
    assert a is not None and b is not None
    changes = b.changes_from(a)
    if not changes:
        return f"Ruleset {a_name} (A) -> {b_name} (B): the same parameters (no rule changed)."
    what = "; ".join(f"{p} {_shown(x)} -> {_shown(y)}" for p, x, y in changes)
    return f"Ruleset {a_name} (A) -> {b_name} (B). What changed: {what}."


def _shown(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def adjusted_powers(fa, fb):
    """The adjusted model fitted on each version's sample; B − A of every power's effect
    (a contrast against the version's median power) both fits estimate."""
    from . import adjusted, sample

    fits = {}
    for v, f in (("a", fa), ("b", fb)):
        fit = adjusted.fit(sample.model_frame(f)) if f.height else pl.DataFrame()
        if fit.height:
            fit = fit.filter(pl.col("estimable") & (pl.col("family") == "power"))
        fits[v] = (f.height, fit)
    for v, (n, fit) in fits.items():
        if not fit.height:
            who = "{a} (A)" if v == "a" else "{b} (B)"
            return pl.DataFrame(), [
                f"{n:,} sampled games of {who}: too few for the adjusted model with powers"
            ]
    (na, a), (nb, b) = fits["a"], fits["b"]
    df = (
        a.select("term", pl.col("estimate").alias("a_est"), pl.col("se").alias("a_se"))
        .join(
            b.select("term", pl.col("estimate").alias("b_est"), pl.col("se").alias("b_se")),
            on="term",
        )
        .sort("term")
    )
    # each against its version's median power (one power that changed must not move the
    # other nine's contrasts, as a change of the average does); the median's own noise is
    # about pi/2 times the mean's
    a_est = df["a_est"].to_numpy() - np.median(df["a_est"].to_numpy())
    b_est = df["b_est"].to_numpy() - np.median(df["b_est"].to_numpy())
    df = df.with_columns(pl.Series("a_est", a_est), pl.Series("b_est", b_est))
    d = b_est - a_est
    ref = np.pi / 2 / max(df.height, 1)
    va, vb = df["a_se"].to_numpy() ** 2, df["b_se"].to_numpy() ** 2
    se = np.sqrt(va + vb + ref * (va.mean() + vb.mean()))
    power = [t.split(":", 1)[1] for t in df["term"]]
    out = _rows(
        df, board=[None] * df.height, variant=None, item=power,
        measure="adjusted effect (log-odds, against the median power)",
        label=[f"{p} adjusted effect" for p in power],
        a=(np.full(df.height, na, dtype=np.int64), df["a_est"].to_numpy()),
        b=(np.full(df.height, nb, dtype=np.int64), df["b_est"].to_numpy()),
        ci=(d, d - st.Z95 * se, d + st.Z95 * se), p=st.normal_p(d, se), test=ADJUSTED_TEST,
    )  # fmt: skip
    return out, []


BUILDERS = {
    "first_move": first_move,
    "powers": powers,
    "ai_levels": ai_levels,
    "end_reasons": end_reasons,
    "game_length": game_length,
    "lineup_cells": lineup_cells,
    "adjusted_powers": adjusted_powers,
}
