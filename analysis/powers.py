"""Powers: pick rate, picked vs not, used vs held, turn of use, pairs, power against power."""

from __future__ import annotations

from itertools import combinations

from replays.vocabulary import POWERS

from . import views
from .cuts import Cut
from .games_sql import (
    POWER_BITS,
    POWER_LIST,
    Selection,
    decoded,
    flag,
    games,
    outcome,
    side_result,
    sides,
)
from .sql import sql_literal
from .tables import Cube

OUT = ("n", "wins", "draws", "losses")
# the 45 pairs of powers (a before b in R8.2's order), as (mask of both, a, b)
PAIRS = (
    "(VALUES "
    + ", ".join(
        f"({(1 << i) | (1 << j)}, {sql_literal(a)}, {sql_literal(b)})"
        for (i, a), (j, b) in combinations(enumerate(POWERS), 2)
    )
    + ")"
)


def _round(turn: str) -> str:
    """1-based round of a 0-based log turn (a round = one turn of each side)."""
    return f"({turn} // 2 + 1)"


def _picks(sel: Selection, key: str, *extra: str) -> str:
    """CTE `k`: the sides with powers, counted by (`key`, result, pick mask, extra): 120
    masks, so far fewer rows than sides; each mask is then spread over its powers."""
    more = "".join(f", {e}" for e in extra)
    return f"""{sides(sel)},
k AS (SELECT {key}, res, mask, count(*) AS c{more}
      FROM s WHERE mask IS NOT NULL GROUP BY {key}, res, mask)"""


def _power(sel: Selection) -> str:
    picked = ", ".join(f"coalesce(picked_{c}, 0) AS picked_{c}" for c in OUT)
    unpicked = ", ".join(f"sides_{c} - coalesce(picked_{c}, 0) AS not_{c}" for c in OUT)
    used = ", ".join(f"coalesce(used_{c}, 0) AS used_{c}" for c in OUT)
    held = ", ".join(f"coalesce(picked_{c}, 0) - coalesce(used_{c}, 0) AS held_{c}" for c in OUT)
    return decoded(
        sel,
        f"""WITH {_picks(sel, "cw")},
base AS (SELECT cw, {outcome(prefix="sides_", n="c")} FROM k GROUP BY ALL),
picked AS (
    SELECT cw, b.power, {outcome(prefix="picked_", n="c")}
    FROM k JOIN {POWER_BITS} AS b(bit, power) ON k.mask & b.bit <> 0 GROUP BY ALL),
used AS (
    SELECT g.cw, w.power, {outcome(side_result("w.side"), "used_")},
           sum({_round("w.used_turn")})::BIGINT AS used_round_sum
    FROM {sel.table("game_powers")} w JOIN g USING (game_id)
    WHERE w.used_turn IS NOT NULL AND {sel.bound("game_powers", "w")} GROUP BY ALL)
SELECT cw, power, sides_n, {picked}, {unpicked}, {used},
       coalesce(used_round_sum, 0)::BIGINT AS used_round_sum, {held}
FROM base CROSS JOIN (SELECT unnest({POWER_LIST}) AS power)
LEFT JOIN picked USING (cw, power) LEFT JOIN used USING (cw, power)""",
    )


def _used_turn(sel: Selection) -> str:
    return decoded(
        sel,
        f"""WITH {games(sel)}
SELECT g.lw, w.power, {_round("w.used_turn")}::USMALLINT AS round, count(*) AS uses
FROM {sel.table("game_powers")} w JOIN g USING (game_id)
WHERE w.used_turn IS NOT NULL AND {sel.bound("game_powers", "w")} GROUP BY ALL""",
        "lw",
    )


def _pair(sel: Selection) -> str:
    return decoded(
        sel,
        f"""WITH {_picks(sel, "lw")}
SELECT lw, p.a AS power_a, p.b AS power_b, {outcome(n="c")}
FROM k JOIN {PAIRS} AS p(m, a, b) ON k.mask & p.m = p.m GROUP BY ALL""",
        "lw",
    )


def _vs(sel: Selection) -> str:
    # per (lcell, week, result, mask): how many of those sides met each power (o0 .. o9),
    # then each mask spread over its three powers: 30 rows a group instead of 9 a side
    met = [f"{flag(f'opp_mask & {1 << i} <> 0')} AS o{i}" for i in range(len(POWERS))]
    names = ", ".join(f"'o{i}': {sql_literal(p)}" for i, p in enumerate(POWERS))
    cols = ", ".join(f"o{i}" for i in range(len(POWERS)))
    return decoded(
        sel,
        f"""WITH {_picks(sel, "lw", *met)},
m AS (UNPIVOT (SELECT lw, res, mask, {cols} FROM k) ON {cols} INTO NAME o VALUE met)
SELECT lw, b.power, MAP {{{names}}}[o] AS opp_power, {outcome(n="met")}
FROM m JOIN {POWER_BITS} AS b(bit, power) ON m.mask & b.bit <> 0
WHERE met > 0 GROUP BY ALL""",
        "lw",
    )


CUBES = [
    Cube("agg_power", "games", _power),
    Cube("agg_power_used_turn", "games", _used_turn),
    Cube("agg_power_pair", "games", _pair),
    Cube("agg_power_vs", "games", _vs),
]


def rate_tables(fetch, cut: Cut) -> dict:
    power = fetch("agg_power", cut)
    return {
        "agg_power_rates": views.power_rates(power),
        "agg_power_pair_rates": views.pair_rates(fetch("agg_power_pair", cut), power),
        "agg_power_vs_rates": views.rates(
            fetch("agg_power_vs", cut), ["board", "power", "opp_power"], family=["board"]
        ),
    }
