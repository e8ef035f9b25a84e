"""The balance lab's predictions: balance families computed on the games of a paired run
(replays/lab.py) under the base and the candidate ruleset, and each row's predicted change
(candidate minus base) with a paired bootstrap interval.

Every row is a sum of ratios of per-game sums (a mean is a ratio with one per game in the
denominator), so one bootstrap serves them all: each resample weights the *games* (multinomial
counts), and the same weights are applied to the base and the candidate game of each pair.
That is what makes the interval paired: the two sides of a pair move together, and with equal
rulesets every resample's change is exactly zero.

What bots cannot tell: the lab measures how the bots of the given levels play the candidate
rules. Players adapt (they learn a new rule, pick differently); the prediction is for players
who play like these bots, with picks drawn as the lab draws them (uniform preference orders).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from replays.vocabulary import POWERS, REASONS

from .sql import sql_literal

SIDES = ("base", "candidate")
MIN_EFFECT = 0.02  # points of score (and share of games) a change must clear to matter
MIN_TURNS = 0.5  # turns a game-length change must clear to matter
# A bootstrap interval of a handful of games is too narrow (a group of three sides that all
# lost resamples to "always lost"): no row is confident on fewer games or sides than this.
MIN_SUPPORT = 30
# The run's list of confident changes together: at most this chance that it names any row
# whose true change is within the minimum effect (Bonferroni over the rows it could name).
CONFIDENT_ALPHA = 0.05


@dataclass(frozen=True)
class RowSpec:
    family: str
    row: str
    unit: str  # "score" | "share" | "turns"
    terms: tuple[tuple[float, str, str], ...]  # (sign, numerator column, denominator column)


def _score(winner: int | None, side: int) -> float:
    return 0.5 if winner is None else float(winner == side)


def columns(pairs: Sequence[dict[str, Any]], which: str, levels: Sequence[int]) -> dict:
    """Per-game columns for one side of the pairs ('base' or 'candidate')."""
    n = len(pairs)
    cols: dict[str, np.ndarray] = {"one": np.ones(n)}

    def col(name: str) -> np.ndarray:
        if name not in cols:
            cols[name] = np.zeros(n)
        return cols[name]

    for i, pair in enumerate(pairs):
        g = pair[which]
        # (two independent runs put side by side, as the benchmark does: each game its own
        # setting, and its sides grouped by their own picks)
        first, levels_of = g.get("first", pair["first"]), g.get("levels", pair["levels"])
        grouping = g if pair.get("independent") else pair["base"]
        lineups = g.get("lineups", pair.get("lineups"))
        col("first_score")[i] = _score(g["winner"], first)
        col("turns")[i] = g["turns"]
        col(f"reason:{g['reason']}")[i] = 1.0
        for s in (0, 1):
            score = _score(g["winner"], s)
            lv = levels_of[s]
            col(f"level:{lv}:num")[i] += score
            col(f"level:{lv}:den")[i] += 1
            for file, rank in enumerate(lineups[s] if lineups else ()):
                col(f"cell:{rank}:{file}:num")[i] += score
                col(f"cell:{rank}:{file}:den")[i] += 1
            if g["picks"] is None:
                continue
            # the pick rows group the sides by their picks under the base rules on both
            # sides of the pair: the same sides, so a power the candidate removes still has a
            # row (how the sides that picked it fare without it)
            grouped = set(grouping["picks"][s])
            picked, used = set(g["picks"][s]), set(g["used"][s])
            for p in POWERS:
                tag = "pick" if p in grouped else "nopick"
                col(f"{tag}:{p}:num")[i] += score
                col(f"{tag}:{p}:den")[i] += 1
                if p in picked:
                    tag = "used" if p in used else "unused"
                    col(f"{tag}:{p}:num")[i] += score
                    col(f"{tag}:{p}:den")[i] += 1
    return cols


FILES = "abcdefg"


def row_specs(powers: bool, levels: Sequence[int], board: int = 0) -> list[RowSpec]:
    out = [RowSpec("first_move", "first mover's score", "score", ((1, "first_score", "one"),))]
    if powers:
        for p in POWERS:
            out.append(RowSpec("power_pick", p, "score",
                               ((1, f"pick:{p}:num", f"pick:{p}:den"),
                                (-1, f"nopick:{p}:num", f"nopick:{p}:den"))))  # fmt: skip
        for p in POWERS:
            out.append(RowSpec("power_used", p, "score",
                               ((1, f"used:{p}:num", f"used:{p}:den"),
                                (-1, f"unused:{p}:num", f"unused:{p}:den"))))  # fmt: skip
    for r in REASONS[:3]:  # bots never time out or resign
        out.append(RowSpec("end_reason", r, "share", ((1, f"reason:{r}", "one"),)))
    out.append(RowSpec("game_length", "mean turns", "turns", ((1, "turns", "one"),)))
    for rank in range(1, board + 1):  # the lineup cells: a rank on a file (R1.3)
        for file in range(board):
            key = f"cell:{rank}:{file}"
            out.append(RowSpec("lineup_cell", f"rank {rank} on file {FILES[file]}", "score",
                               ((1, f"{key}:num", f"{key}:den"),)))  # fmt: skip
    if len(set(levels)) > 1:
        for lv in sorted(set(levels)):
            out.append(RowSpec("level", f"level {lv}'s score", "score",
                               ((1, f"level:{lv}:num", f"level:{lv}:den"),)))  # fmt: skip
    return out


def _values(spec: RowSpec, totals: dict, size: int) -> np.ndarray:
    """The row's value for each of `size` resamples, from `totals` (column -> its weighted
    sum in each resample, `_totals`); NaN where a ratio's denominator is 0 (nobody picked the
    power in that resample)."""
    zero = np.zeros(size)
    total = np.zeros(size)
    with np.errstate(invalid="ignore", divide="ignore"):
        for sign, num, den in spec.terms:
            total = total + sign * totals.get(num, zero) / totals.get(den, zero)
    return total


def _totals(cols: dict, weights: np.ndarray) -> dict:
    """Each column's weighted sum in each resample (a row of `weights`): one product for all
    the columns, where a product a row spec would repeat it for every ratio."""
    names = list(cols)
    sums = weights @ np.column_stack([cols[k] for k in names])
    return {k: sums[:, j] for j, k in enumerate(names)}


def predict(
    pairs: Sequence[dict[str, Any]],
    *,
    powers: bool,
    levels: Sequence[int],
    min_effect: float = MIN_EFFECT,
    min_turns: float = MIN_TURNS,
    resamples: int = 1000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One dict per row: family, row, unit, base, candidate, change, lo, hi (the 95% paired
    bootstrap interval of the change), confident (the interval wholly beyond the minimum effect
    that matters, either way, on at least MIN_SUPPORT games or sides), n (the games or sides
    of the row's smallest group, the smaller arm's). None where a side has no games for it."""
    pairs = sorted(pairs, key=lambda p: p["i"])
    n = len(pairs)
    if n == 0:
        return []
    base, cand = columns(pairs, "base", levels), columns(pairs, "candidate", levels)
    lineups = pairs[0].get("lineups") or pairs[0]["base"].get("lineups")
    specs = row_specs(powers, levels, len(lineups[0]) if lineups else 0)
    rng = np.random.default_rng(seed)
    changes: list[list[np.ndarray]] = [[] for _ in specs]
    done = 0
    while done < resamples:
        size = min(200, resamples - done)
        weights = rng.multinomial(n, np.full(n, 1.0 / n), size=size).astype(np.float64)
        tb, tc = _totals(base, weights), _totals(cand, weights)
        for k, spec in enumerate(specs):
            changes[k].append(_values(spec, tc, size) - _values(spec, tb, size))
        done += size
    ones = np.ones((1, n))
    whole = _totals(base, ones), _totals(cand, ones)
    out = []
    for k, spec in enumerate(specs):
        b = float(_values(spec, whole[0], 1)[0])
        c = float(_values(spec, whole[1], 1)[0])
        support = min(
            int(min(base[den].sum(), cand[den].sum())) if den in base and den in cand else 0
            for _, _, den in spec.terms
        )
        row: dict[str, Any] = {"family": spec.family, "row": spec.row, "unit": spec.unit,
                               "base": _num(b), "candidate": _num(c), "change": None,
                               "lo": None, "hi": None, "confident": False,
                               "n": support}  # fmt: skip
        if row["base"] is not None and row["candidate"] is not None:
            draws = np.concatenate(changes[k])
            draws = draws[~np.isnan(draws)]
            row["change"] = c - b
            if len(draws):
                lo, hi = np.percentile(draws, [2.5, 97.5])
                row["lo"], row["hi"] = float(lo), float(hi)
                row["_sd"] = float(draws.std())
                row["_need"] = min_turns if spec.unit == "turns" else min_effect
        out.append(row)
    return _decide(out)


def _decide(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mark the confident rows: the row's 95% interval and its interval at 1 - CONFIDENT_ALPHA/k
    (normal, the bootstrap's spread; k, the rows on at least MIN_SUPPORT games or sides) both
    wholly beyond the minimum effect, either way. A run reads dozens of rows at once; with the
    95% intervals alone, a run with no change behind it would name a confident change or two
    by chance. Removes the working keys `_sd` and `_need`."""
    able = {id(r) for r in rows if "_sd" in r and r["n"] >= MIN_SUPPORT}
    z = NormalDist().inv_cdf(1 - CONFIDENT_ALPHA / (2 * max(len(able), 1)))
    for r in rows:
        sd, need = r.pop("_sd", None), r.pop("_need", None)
        if id(r) in able and sd is not None and need is not None:
            lo, hi = min(r["lo"], r["change"] - z * sd), max(r["hi"], r["change"] + z * sd)
            r["confident"] = bool(lo > need or hi < -need)
    return rows


def _num(x: float) -> float | None:
    return None if np.isnan(x) else x


def ranked(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with a change, largest change first (in its unit)."""
    return sorted((r for r in rows if r["change"] is not None), key=lambda r: -abs(r["change"]))


# -- prediction against observation --------------------------------------------------------


OBSERVED_MODES = ("online", "friend")  # players' games against players


def observed_sql(ruleset: str, board: int, powers: bool, sample: int | None = None) -> str:
    """Verified human-vs-human Slow6 games of `ruleset` on the run's board and variant, a row
    a game (the text the dashboard runs on its snapshot and `lab check` on the store); with
    `sample`, at most that many, a fixed sample by a hash of the game id."""
    modes = ", ".join(sql_literal(m) for m in OBSERVED_MODES)
    where = (f"g.ruleset = {sql_literal(ruleset)} AND g.board = {int(board)} "
             f"AND g.powers = {'true' if powers else 'false'} AND NOT g.hidden "
             f"AND g.mode IN ({modes})")  # fmt: skip
    if sample:  # (the sample chosen apart: the rows come in game-id order either way)
        where += (f" AND g.game_id IN (SELECT g.game_id FROM games g WHERE {where} "
                  f"ORDER BY hash(g.game_id), g.game_id LIMIT {int(sample)})")  # fmt: skip
    return f"""SELECT g.first, g.winner, g.reason, g.turns, g.lineup_0, g.lineup_1,
                  g.powers_0, g.powers_1,
                  list(p.power) FILTER (WHERE p.side = 0 AND p.used_turn IS NOT NULL) AS used_0,
                  list(p.power) FILTER (WHERE p.side = 1 AND p.used_turn IS NOT NULL) AS used_1
           FROM games g LEFT JOIN game_powers p ON p.game_id = g.game_id
           WHERE {where}
           GROUP BY g.game_id, g.first, g.winner, g.reason, g.turns, g.lineup_0, g.lineup_1,
                    g.powers_0, g.powers_1
           ORDER BY g.game_id"""


def observed_from_rows(rows: Sequence[Sequence[Any]], powers: bool) -> list[dict[str, Any]]:
    """observed_sql's rows as the lab's game dicts (winner, reason, turns, picks, used; first
    and lineups)."""
    out = []
    for first, winner, reason, turns, l0, l1, p0, p1, u0, u1 in rows:
        game = {"winner": winner, "reason": reason, "turns": turns,
                "picks": [sorted(p0), sorted(p1)] if powers and p0 and p1 else None,
                "used": [sorted(u0 or []), sorted(u1 or [])]}  # fmt: skip
        lineups = [[int(c) for c in l0], [int(c) for c in l1]]
        out.append({"first": first, "levels": [0, 0], "lineups": lineups, "independent": True,
                    "base": game})  # fmt: skip
    return out


def observed_games(con: Any, ruleset: str, board: int, powers: bool) -> list[dict[str, Any]]:
    return observed_from_rows(con.execute(observed_sql(ruleset, board, powers)).fetchall(), powers)


def observe(
    before: Sequence[dict[str, Any]],
    after: Sequence[dict[str, Any]],
    *,
    powers: bool,
    board: int,
    resamples: int = 1000,
    seed: int = 0,
    tested: int = 1,
) -> dict[tuple[str, str], dict[str, Any]]:
    """(family, row) -> the observed before, after, change and its 95% bootstrap interval
    (the two releases' games resampled independently: they are different games), and
    `lo_adj`, `hi_adj`: the interval at 1 - 0.05 / `tested` (Bonferroni over the `tested`
    hypotheses a release is checked on)."""
    specs = row_specs(powers, [0], board)
    if not before or not after:
        return {}
    cols = [columns(before, "base", [0]), columns(after, "base", [0])]
    rng = np.random.default_rng(seed)
    draws: list[list[np.ndarray]] = [[] for _ in specs]
    done = 0
    while done < resamples:
        size = min(200, resamples - done)
        w = [rng.multinomial(len(g), np.full(len(g), 1.0 / len(g)), size=size).astype(float)
             for g in (before, after)]  # fmt: skip
        t0, t1 = _totals(cols[0], w[0]), _totals(cols[1], w[1])
        for k, spec in enumerate(specs):
            draws[k].append(_values(spec, t1, size) - _values(spec, t0, size))
        done += size
    whole = [_totals(c, np.ones((1, len(g)))) for c, g in zip(cols, (before, after), strict=True)]
    out = {}
    for k, spec in enumerate(specs):
        b = _num(float(_values(spec, whole[0], 1)[0]))
        a = _num(float(_values(spec, whole[1], 1)[0]))
        row: dict[str, Any] = {"before": b, "after": a, "change": None, "lo": None, "hi": None}
        if a is not None and b is not None:
            d = np.concatenate(draws[k])
            d = d[~np.isnan(d)]
            row["change"] = a - b
            if len(d):
                row["lo"], row["hi"] = (float(x) for x in np.percentile(d, [2.5, 97.5]))
                tail = 100 * ALPHA / 2 / max(tested, 1)
                row["lo_adj"], row["hi_adj"] = (
                    float(x) for x in np.percentile(d, [tail, 100 - tail])
                )
        out[(spec.family, spec.row)] = row
    return out


ALPHA = 0.05  # a release's checks together: at most this chance of calling a true one missed


def compare(
    rows: Sequence[dict[str, Any]], seen: dict[tuple[str, str], dict[str, Any]]
) -> list[dict[str, Any]]:
    """A run's predicted rows beside what was observed (`observe`, with `tested` = the number
    of rows with a predicted interval: the run's pre-registered hypotheses, and only those).

    inside: the observed change lies in the predicted interval; consistent: the two 95%
    intervals overlap; missed: the observed interval at the release's Bonferroni level lies
    wholly outside the predicted interval (the prediction is refuted, with at most ALPHA
    chance over all of the run's rows together that any true one is called missed)."""
    out = []
    for row in rows:
        obs = seen.get((row["family"], row["row"]), {})
        change = obs.get("change")
        known = change is not None and row["lo"] is not None
        inside = bool(row["lo"] <= change <= row["hi"]) if known else None
        # consistent: the two intervals overlap (the observation cannot tell them apart), the
        # looser reading where a small run's prediction is narrower than the observation's
        consistent = missed = None
        if known and obs.get("lo") is not None:
            consistent = bool(obs["lo"] <= row["hi"] and row["lo"] <= obs["hi"])
            missed = bool(obs["lo_adj"] > row["hi"] or obs["hi_adj"] < row["lo"])
        out.append({"family": row["family"], "row": row["row"], "unit": row.get("unit"),
                    "predicted": row["change"], "predicted_lo": row["lo"],
                    "predicted_hi": row["hi"], "observed": change,
                    "observed_lo": obs.get("lo"), "observed_hi": obs.get("hi"),
                    "inside": inside, "consistent": consistent, "missed": missed})  # fmt: skip
    return out


def hypotheses(rows: Sequence[dict[str, Any]]) -> int:
    """How many of a run's rows are tested on its release: those with a predicted interval."""
    return sum(r["lo"] is not None for r in rows)


def record(checked: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A run's track record on its release: rows compared, how many fell inside the
    prediction, were consistent with it, were missed."""
    compared = [r for r in checked if r["inside"] is not None]
    return {
        "compared": len(compared),
        "inside": sum(bool(r["inside"]) for r in compared),
        "consistent": sum(bool(r["consistent"]) for r in compared),
        "missed": sum(bool(r["missed"]) for r in compared),
    }


# -- what a power is worth (restricted play) -------------------------------------------------


def worth(
    pairs_by_power: Mapping[str, Sequence[dict[str, Any]]],
    *,
    min_effect: float = MIN_EFFECT,
    resamples: int = 1000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """A `power_worth` row a power from replays/lab_worth.py's pairs: base, the restricted
    side's score when free; candidate, when barred from the power; change, candidate minus
    base (a power worth having is negative), with its paired bootstrap interval; n, pairs."""
    rng = np.random.default_rng(seed)
    out = []
    for power, pairs in pairs_by_power.items():
        free = np.array([p["free"] for p in pairs], dtype=float)
        barred = np.array([p["restricted"] for p in pairs], dtype=float)
        n = len(pairs)
        row: dict[str, Any] = {"family": "power_worth", "row": power, "unit": "score",
                               "base": None, "candidate": None, "change": None, "lo": None,
                               "hi": None, "confident": False, "n": n}  # fmt: skip
        if n:
            diff = barred - free
            weights = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples) / n
            draws = weights @ diff
            lo, hi = np.percentile(draws, [2.5, 97.5])
            row.update(base=float(free.mean()), candidate=float(barred.mean()),
                       change=float(diff.mean()), lo=float(lo), hi=float(hi),
                       _sd=float(draws.std()), _need=min_effect)  # fmt: skip
        out.append(row)
    return _decide(out)
