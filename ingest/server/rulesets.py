"""Registering and listing rulesets (rulesets.md RS4), for the admin API and `balance rules`.

Where a registration goes:

- a running server's store (POST /v1/admin/rulesets): the file store on its calls thread (the
  file's one writer; its registry is then reloaded: the next upload is judged by it); a lake
  under the registry's lock, on a connection of the server's;
- a stopped store file (`balance rules add --db`): its own connection;
- a lake (`balance rules add --lake`): a connection of its own, under the same lock; every
  server sees the ruleset the next time a record names it (pipeline.recheck_unknown).

A request is all or nothing: one refused file (invalid: 400, or clashing with what is
registered: 409, RS1.3) registers none of the request's.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

from replays import rulesets as R

from ..storage import registry
from ..storage.interface import GameStore
from ..storage.registry import Refused

Files = list[tuple[str, str | bytes]]  # (source: a file name, its TOML text)


def describe(ruleset: R.Ruleset, at: str | None = None) -> dict:
    """A ruleset as the API and `balance rules show` give it."""
    out = ruleset.to_json()
    out["builtin"] = ruleset.name == "standard"
    out["registered_at"] = at
    return out


def listing(rulesets: list[R.Ruleset], times: dict | None = None) -> list[dict]:
    """`standard` of each game, then the registered ones by game and name."""
    builtin = [describe(R.STANDARD[game]) for game in R.GAMES]
    times = times or {}
    return builtin + [describe(r, times.get((r.game, r.name))) for r in rulesets]


def register_running(store: GameStore, files: Files) -> list[dict]:
    """Register `files` in a running server's store; raises Refused (nothing registered)."""
    return store.register_rulesets(files)


# -- a store of one's own (server stopped, or a lake) ---------------------------------------


def on_file(db: str, action: Callable[[duckdb.DuckDBPyConnection], object]) -> object:
    """`action(con)` on the stopped store file `db` (created with its schema if new)."""
    from ..storage import open_db

    con = open_db(db)
    try:
        return action(con)
    finally:
        con.close()


def register_file(con: duckdb.DuckDBPyConnection, files: Files) -> list[dict]:
    """Register `files` in a store file's connection, in one transaction."""
    known = registry.Snapshot(1, {(r.game, r.name): r for r in registry.load(con)})
    parsed = registry.parse_files(files, known.lookup)
    return registry.register_in_transaction(con, parsed)


def on_lake(catalog: str, action: Callable[[duckdb.DuckDBPyConnection], object]) -> object:
    from ..storage.lake import connect  # here: a file server never loads the lake

    con = connect(catalog)
    try:
        return action(con)
    finally:
        con.close()


def register_lake(catalog: str, files: Files) -> list[dict]:
    """Register `files` in a lake, under its registry lock."""

    from ..storage.lake import conninfo

    def action(con: duckdb.DuckDBPyConnection) -> list[dict]:
        with registry.lake_lock(conninfo(catalog)):
            return register_file(con, files)

    return on_lake(catalog, action)  # type: ignore[return-value]


def stored_listing(con: duckdb.DuckDBPyConnection) -> list[dict]:
    return listing(registry.load(con), registry.registered_at(con))


__all__ = ["Files", "Refused", "listing", "register_running"]
