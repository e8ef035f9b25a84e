"""The client version the default cut shows: what a designer means by "the live game".

The newest *release* (no pre-release part: `3.1.0-beta.2` is one, `3.0.0+sim` is not: `+`
is build metadata) that has at least MIN_GAMES verified human games, else the newest release
before it that has; if no release has that many, the release with the most. A pre-release or
a handful of computer games on a newer build never takes over the default: pre-releases are
shown only when a designer picks them. With no release at all, the default is every version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .cuts import HUMAN_MODES, Cut, version_key

MIN_GAMES = 200  # verified human games a version needs to be the default (docs/agg-tables.md)


@dataclass(frozen=True)
class LiveVersion:
    version: str | None  # None: every version
    reason: str  # one line for the pages: why this version


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


def default_cut(live: LiveVersion) -> Cut:
    """The balance cut of a game: human against human (online and friend) on its live version."""
    version = None if live.version is None else (live.version,)
    return Cut(mode=HUMAN_MODES, client_version=version, label="default")


def human_games_sql(table: str, where: str = "TRUE", count: str = "count(*)") -> str:
    """Verified human games by client version in `table` (a games table or an additive agg_*
    table, whose `count` expression then sums its game counts): live_version's input."""
    modes = ", ".join(f"'{m}'" for m in HUMAN_MODES)
    return (
        f"SELECT client_version, {count} FROM {table} "
        f"WHERE ({where}) AND mode IN ({modes}) GROUP BY client_version"
    )
