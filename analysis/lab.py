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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from replays.vocabulary import POWERS, REASONS

SIDES = ("base", "candidate")
MIN_EFFECT = 0.02  # points of score (and share of games) a change must clear to matter
MIN_TURNS = 0.5  # turns a game-length change must clear to matter
# A bootstrap interval of a handful of games is too narrow (a group of three sides that all
# lost resamples to "always lost"): no row is confident on fewer games or sides than this.
MIN_SUPPORT = 30


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


def _values(spec: RowSpec, cols: dict, weights: np.ndarray) -> np.ndarray:
    """The row's value for each row of `weights` (resamples x games); NaN where a ratio's
    denominator is 0 (nobody picked the power in that resample)."""
    return _ratios(spec, _sums(cols, weights))


def _sums(cols: dict, weights: np.ndarray) -> dict[str, np.ndarray]:
    """Every column's weighted sum for each row of `weights`, in one matrix product (a product
    per row and term made the prediction of a large run take longer than playing a tenth of
    it). Exact, in any order of addition: the columns hold whole or half numbers, the weights
    whole ones."""
    names = list(cols)
    product = weights @ np.column_stack([cols[name] for name in names])
    return {name: product[:, j] for j, name in enumerate(names)}


def _ratios(spec: RowSpec, sums: dict[str, np.ndarray]) -> np.ndarray:
    """`_values` from the weighted sums (a column nobody has sums to 0)."""
    zero = np.zeros(len(sums["one"]))
    total = np.zeros(len(zero))
    with np.errstate(invalid="ignore", divide="ignore"):
        for sign, num, den in spec.terms:
            total = total + sign * sums.get(num, zero) / sums.get(den, zero)
    return total


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
        sums_b, sums_c = _sums(base, weights), _sums(cand, weights)
        for k, spec in enumerate(specs):
            changes[k].append(_ratios(spec, sums_c) - _ratios(spec, sums_b))
        done += size
    ones = np.ones((1, n))
    out = []
    for k, spec in enumerate(specs):
        b = float(_values(spec, base, ones)[0])
        c = float(_values(spec, cand, ones)[0])
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
                need = min_turns if spec.unit == "turns" else min_effect
                row["confident"] = support >= MIN_SUPPORT and bool(lo > need or hi < -need)
        out.append(row)
    return out


def _num(x: float) -> float | None:
    return None if np.isnan(x) else x


def ranked(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with a change, largest change first (in its unit)."""
    return sorted((r for r in rows if r["change"] is not None), key=lambda r: -abs(r["change"]))


# -- prediction against observation --------------------------------------------------------


def observed_games(con: Any, ruleset: str, board: int, powers: bool) -> list[dict[str, Any]]:
    """Verified human-vs-human Slow6 games of `ruleset` on the run's board and variant, as
    the lab's game dicts (winner, reason, turns, picks, used; first and lineups)."""
    rows = con.execute(
        """SELECT g.game_id, g.first, g.winner, g.reason, g.turns, g.lineup_0, g.lineup_1,
                  g.powers_0, g.powers_1,
                  list(p.power) FILTER (WHERE p.side = 0 AND p.used_turn IS NOT NULL),
                  list(p.power) FILTER (WHERE p.side = 1 AND p.used_turn IS NOT NULL)
           FROM games g LEFT JOIN game_powers p ON p.game_id = g.game_id
           WHERE g.ruleset = ? AND g.board = ? AND g.powers = ? AND NOT g.hidden
             AND g.mode IN ('online', 'friend')
           GROUP BY ALL ORDER BY g.game_id""",
        [ruleset, board, powers],
    ).fetchall()
    out = []
    for _, first, winner, reason, turns, l0, l1, p0, p1, u0, u1 in rows:
        game = {"winner": winner, "reason": reason, "turns": turns,
                "picks": [sorted(p0), sorted(p1)] if powers and p0 and p1 else None,
                "used": [sorted(u0 or []), sorted(u1 or [])]}  # fmt: skip
        lineups = [[int(c) for c in l0], [int(c) for c in l1]]
        out.append({"first": first, "levels": [0, 0], "lineups": lineups, "independent": True,
                    "base": game})  # fmt: skip
    return out


def observe(
    before: Sequence[dict[str, Any]],
    after: Sequence[dict[str, Any]],
    *,
    powers: bool,
    board: int,
    resamples: int = 1000,
    seed: int = 0,
) -> dict[tuple[str, str], dict[str, Any]]:
    """(family, row) -> the observed before, after, change and its 95% bootstrap interval
    (the two releases' games resampled independently: they are different games)."""
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
        before_sums, after_sums = _sums(cols[0], w[0]), _sums(cols[1], w[1])
        for k, spec in enumerate(specs):
            draws[k].append(_ratios(spec, after_sums) - _ratios(spec, before_sums))
        done += size
    out = {}
    for k, spec in enumerate(specs):
        b = _num(float(_values(spec, cols[0], np.ones((1, len(before))))[0]))
        a = _num(float(_values(spec, cols[1], np.ones((1, len(after))))[0]))
        row: dict[str, Any] = {"before": b, "after": a, "change": None, "lo": None, "hi": None}
        if a is not None and b is not None:
            d = np.concatenate(draws[k])
            d = d[~np.isnan(d)]
            row["change"] = a - b
            if len(d):
                row["lo"], row["hi"] = (float(x) for x in np.percentile(d, [2.5, 97.5]))
        out[(spec.family, spec.row)] = row
    return out
