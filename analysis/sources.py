"""The store tables the jobs read: three sources of games, each with its child tables, and a
run's cut as a predicate on each.

A source's rows carry `received_at` (the server's clock when the record arrived) and
`ended_at` (the client's clock, whose week is a dimension of the tables); its children are the
tables written in the same transaction as its rows (ingest/storage/rows.py GAME_TABLES).
"""

from __future__ import annotations

from dataclasses import dataclass

from .cuts import Cut


@dataclass(frozen=True)
class Source:
    name: str
    children: tuple[str, ...]

    def where(self, cut: Cut) -> str:
        if self.name == "games":
            return games_where(cut)
        if self.name == "quarantine":
            return quarantine_where(cut)
        return slide_where(cut)


GAMES = Source("games", ("game_pieces", "game_powers", "game_turns"))
QUARANTINE = Source("quarantine", ())
SLIDE = Source("slide_games", ("slide_seats", "slide_rounds"))
SLIDE_TABLES = ("slide_games", "slide_seats", "slide_rounds")


def games_where(cut: Cut) -> str:
    return f"game = 'slow6' AND {cut.sql_where()}"


def quarantine_where(cut: Cut) -> str:
    """Quarantined records have no board, variant or AI level: only these dimensions apply."""
    sub = Cut(
        mode=cut.mode,
        platform=cut.platform,
        client_version=cut.client_version,
        ruleset=cut.ruleset,
        date_from=cut.date_from,
        date_to=cut.date_to,
    )
    return sub.sql_where()


def slide_where(cut: Cut) -> str:
    """Slide games have no board, variant or AI level: a cut on those selects Slow6 only."""
    if cut.board is not None or cut.variant is not None or cut.ai_level is not None:
        return "FALSE"
    return quarantine_where(cut)


def table_names(con) -> set[str]:
    """The tables of the connection's current database and schema, in one catalog query (on
    a lake each such query goes to its catalog: tens of milliseconds, so not one a table)."""
    q = (
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_catalog = current_database() AND table_schema = current_schema()"
    )
    return {name for (name,) in con.execute(q).fetchall()}


def table_exists(con, name: str) -> bool:
    return name in table_names(con)


def present(con, names: set[str] | None = None) -> list[Source]:
    """The sources this store has (an older store may have no Slide tables)."""
    names = table_names(con) if names is None else names
    slide = all(t in names for t in SLIDE_TABLES)
    return [GAMES, QUARANTINE, *([SLIDE] if slide else [])]
