"""The client version the default cut shows: what a designer means by "the live game".

The newest *release* (no pre-release part: `3.1.0-beta.2` is one, `3.0.0+sim` is not: `+`
is build metadata) that has at least MIN_GAMES verified human games, else the newest release
before it that has; if no release has that many, the release with the most. A pre-release or
a handful of computer games on a newer build never takes over the default: pre-releases are
shown only when a designer picks them. With no release at all, the default is every version.

The default cut is that version *and its ruleset* (rulesets.md RS6.1): the ruleset most of its
human games were judged under. Games of that version under another ruleset (a client that
named another one) are left out, and the reason says how many.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from .cuts import HUMAN_MODES, Cut, version_key

MIN_GAMES = 200  # verified human games a version needs to be the default (docs/agg-tables.md)


@dataclass(frozen=True)
class LiveVersion:
    version: str | None  # None: every version
    reason: str  # one line for the pages: why this version
    ruleset: str | None = None  # the ruleset of the default cut (None: not known, every one)


def is_prerelease(version: str) -> bool:
    return "-" in version.partition("+")[0]


def live_version(human_games: Mapping[str | None, int], min_games: int = MIN_GAMES) -> LiveVersion:
    """`human_games`: verified human games (online and friend) by client version."""
    releases = sorted(
        (v for v, n in human_games.items() if v and n > 0 and not is_prerelease(v)),
        key=version_key,
        reverse=True,
    )
    if not releases:
        return LiveVersion(None, "every version: no release version has verified human games")
    for rank, version in enumerate(releases):
        n = human_games[version]
        if n >= min_games:
            why = f"the newest release with at least {min_games:,} human games ({n:,})"
            if rank:
                newer = ", ".join(f"{v} ({human_games[v]:,})" for v in releases[:rank])
                why += f"; newer releases have fewer: {newer}"
            return LiveVersion(version, why)
    best = max(releases, key=lambda v: (human_games[v], version_key(v)))
    return LiveVersion(
        best,
        f"no release has {min_games:,} human games yet: the one with the most "
        f"({human_games[best]:,})",
    )


def live_cut(rows: Iterable[tuple[str | None, str | None, int]], min_games: int = MIN_GAMES):
    """The live version and its ruleset from verified human games by (client version,
    ruleset) (`human_games_sql(..., ruleset=True)`'s rows)."""
    named = [(v, r or "standard", int(n or 0)) for v, r, n in rows]
    by_version: dict[str | None, int] = {}
    for v, _, n in named:
        by_version[v] = by_version.get(v, 0) + n
    live = live_version(by_version, min_games)
    return with_ruleset(live, named)


def with_ruleset(live: LiveVersion, rows: list[tuple[str | None, str, int]]) -> LiveVersion:
    """`live` with the ruleset most of its version's human games (of every version, when it is
    None) were judged under; the reason names the games of other rulesets left out."""
    mine: dict[str, int] = {}
    for v, r, n in rows:
        if live.version is None or v == live.version:
            mine[r] = mine.get(r, 0) + n
    if not mine:
        return live
    ruleset = max(mine, key=lambda r: (mine[r], r == "standard", r))
    reason = f"{live.reason}; ruleset {ruleset}"
    others = {r: n for r, n in mine.items() if r != ruleset and n}
    if others:
        what = ", ".join(f"{r} ({n:,})" for r, n in sorted(others.items()))
        reason += f" (games of other rulesets are not pooled with it: {what})"
    return replace(live, ruleset=ruleset, reason=reason)


def default_cut(live: LiveVersion) -> Cut:
    """The balance cut of a game: human against human (online and friend) on its live version
    and that version's ruleset."""
    version = None if live.version is None else (live.version,)
    ruleset = None if live.ruleset is None else (live.ruleset,)
    return Cut(mode=HUMAN_MODES, client_version=version, ruleset=ruleset, label="default")


def human_games_sql(
    table: str, where: str = "TRUE", count: str = "count(*)", ruleset: bool = False
) -> str:
    """Verified human games by client version (and ruleset, with `ruleset`) in `table` (a
    games table or an additive agg_* table, whose `count` expression then sums its game
    counts): live_version's (live_cut's) input."""
    modes = ", ".join(f"'{m}'" for m in HUMAN_MODES)
    keys = "client_version, ruleset" if ruleset else "client_version"
    return (
        f"SELECT {keys}, {count} FROM {table} WHERE ({where}) AND mode IN ({modes}) GROUP BY {keys}"
    )
