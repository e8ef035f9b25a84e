"""The ruleset registry (rulesets.md RS4): the rulesets registered in a store, file or lake.

- `load` / `register`: the `rulesets` table read, and rulesets added to it, immutably (RS1.3:
  the same name with the same parameters again is a no-op, with anything else refused, naming
  the first parameter that differs; `standard` is built in and never registered);
- `parse_files`: RS4.1 TOML files parsed and validated (replays.rulesets), `based_on` resolved
  against the store's rulesets and the other files of the same request, in any order;
- `Registry`: what a process judges by: a snapshot of the registered rulesets (its `lookup`
  is the verifier's `rulesets=`), reloaded from the store when asked (`refresh`), and handed
  to the judge processes as `state()` (they `adopt` it: a version number and the rulesets).

A lake's servers each hold a Registry; a registration by one is seen by the others when they
next `refresh` (the upload path does, before it quarantines a record as RS5.1). Registrations
on a lake are serialized by an advisory lock in the catalog's database (`lake_lock`), so two
operators registering one name at once cannot both succeed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from replays import rulesets as R

if TYPE_CHECKING:  # for the annotations: the judges read rulesets here without DuckDB
    import duckdb

REGISTRY_LOCK_KEY = zlib.crc32(b"balance ruleset registry")


class Refused(ValueError):
    """A registration refused: `param` names the parameter (or field) at fault, `status` is
    the HTTP status that says it (400: the file is invalid, 409: it clashes with what is
    registered), `source` the file it came from (when known)."""

    def __init__(self, message: str, param: str | None, status: int, source: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.source = source

    def as_dict(self) -> dict:
        return {"error": self.message, "param": self.param, "file": self.source}


# -- the table ------------------------------------------------------------------------------


def _from_row(game: str, name: str, params, description: str | None) -> R.Ruleset:
    values = orjson.loads(params) if isinstance(params, str | bytes) else params
    return R.Ruleset.from_json(
        {"name": name, "game": game, "description": description or "", "params": values}
    )


def load(con: duckdb.DuckDBPyConnection, table: str = "rulesets") -> list[R.Ruleset]:
    """Every registered ruleset (never `standard`), by game and name (`table`: another
    database's, e.g. 'src.main.rulesets')."""
    found = con.execute(
        f"SELECT game, name, params::VARCHAR, description FROM {table} ORDER BY game, name"
    ).fetchall()
    return [_from_row(*row) for row in found]


def load_with_times(con: duckdb.DuckDBPyConnection) -> tuple[list[R.Ruleset], dict]:
    """`load` and `registered_at`, for a Registry (what GET /v1/rulesets answers from)."""
    return load(con), registered_at(con)


def registered_at(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], str]:
    """(game, name) -> when it was registered (ISO 8601, UTC)."""
    rows = con.execute(
        "SELECT game, name, strftime(registered_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ') "
        "FROM rulesets"
    ).fetchall()
    return {(g, n): at for g, n, at in rows}


def register(con: duckdb.DuckDBPyConnection, rulesets: list[R.Ruleset]) -> list[dict]:
    """Add `rulesets` to the table, in the caller's transaction: all of them or, when one is
    refused (Refused, 409), none. Returns {"game", "name", "status": "added" | "unchanged"}
    for each."""
    out = []
    now = dt.datetime.now(dt.UTC)
    for ruleset in rulesets:
        if ruleset.name == "standard":
            raise Refused(
                f"`standard` is built in: it cannot be registered or changed (RS1.2); "
                f"name the {ruleset.game} ruleset anew",
                "name",
                409,
            )
        found = con.execute(
            "SELECT game, name, params::VARCHAR, description FROM rulesets "
            "WHERE game = ? AND name = ?",
            [ruleset.game, ruleset.name],
        ).fetchall()
        if found:
            stored = _from_row(*found[0])
            first = first_difference(stored, ruleset)
            if first is not None:
                raise Refused(_changed(stored, ruleset, first), first, 409)
            out.append({"game": ruleset.game, "name": ruleset.name, "status": "unchanged"})
            continue
        con.execute(
            "INSERT INTO rulesets VALUES (?, ?, ?::JSON, ?, ?)",
            [
                ruleset.game,
                ruleset.name,
                orjson.dumps(dict(ruleset.to_json()["params"])).decode(),
                ruleset.description or "",
                now,
            ],
        )
        out.append({"game": ruleset.game, "name": ruleset.name, "status": "added"})
    return out


def first_difference(stored: R.Ruleset, new: R.Ruleset) -> str | None:
    """The first parameter (RS3 order) whose value differs, None when the parameters are the
    same (RS1.3: a description is not a parameter; the stored one is kept)."""
    changes = new.changes_from(stored)
    return changes[0][0] if changes else None


def _changed(stored: R.Ruleset, new: R.Ruleset, param: str) -> str:
    before, after = stored.params.get(param), new.params.get(param)
    return (
        f"{new.game} ruleset {new.name!r} is registered already with {param} = "
        f"{_show(before)}, not {_show(after)}: a registered ruleset never changes (RS1.3); "
        "register the new rules under a new name"
    )


def _show(value: object) -> str:
    if isinstance(value, tuple | list):
        return "[" + ", ".join(map(str, value)) + "]"
    return "null" if value is None else str(value)


# -- parsing files --------------------------------------------------------------------------


def parse_files(
    files: list[tuple[str, str | bytes]], lookup: R.RulesetLookup | None = None
) -> list[R.Ruleset]:
    """The rulesets of RS4.1 TOML `files` ((source, text) each), validated; `based_on` names
    `standard`, a ruleset `lookup` knows (the store's) or one of the other files, whatever
    their order. Raises Refused (400) naming the file and the parameter; two files of one
    request that give one name different parameters are refused (409)."""
    parsed: dict[tuple[str, str], R.Ruleset] = {}
    source_of: dict[tuple[str, str], str] = {}

    def known(game: str, name: str) -> R.Ruleset | None:
        got = parsed.get((game, name))
        if got is not None:
            return got
        return lookup(game, name) if lookup is not None else R.builtin_lookup(game, name)

    waiting = list(files)
    while waiting:
        deferred, errors = [], []
        for source, text in waiting:
            try:
                ruleset = R.parse_toml(text, known)
            except R.RulesetError as exc:
                if getattr(exc, "param", None) == "based_on":
                    deferred.append((source, text))  # its base may be a later file
                    errors.append((source, exc))
                    continue
                raise _invalid(source, exc) from exc
            key = (ruleset.game, ruleset.name)
            if key in parsed:
                first = first_difference(parsed[key], ruleset)
                if first is not None:
                    raise Refused(
                        f"{source}: {ruleset.game} ruleset {ruleset.name!r} is also in "
                        f"{source_of[key]} with another {first}",
                        first,
                        409,
                        source,
                    )
                continue
            parsed[key] = ruleset
            source_of[key] = source
        if len(deferred) == len(waiting):  # no progress: the bases are nowhere
            where, fault = errors[0]
            raise _invalid(where, fault) from fault
        waiting = deferred
    return list(parsed.values())


def _invalid(source: str, exc: R.RulesetError) -> Refused:
    param = getattr(exc, "param", None)
    return Refused(f"{source}: invalid ruleset: {exc}", param, 400, source)


# -- what a process judges by ---------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """The registered rulesets at one moment; `version` changes with every change seen."""

    version: int = 0
    rulesets: Mapping[tuple[str, str], R.Ruleset] = field(default_factory=dict)
    registered_at: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def lookup(self, game: str, name: str) -> R.Ruleset | None:
        if name == "standard":
            return R.STANDARD.get(game)
        return self.rulesets.get((game, name))


class Registry:
    """The rulesets a process judges by (see the module docstring). `load` reads the store's
    table: a list of rulesets, or (rulesets, registered_at) as `load_with_times` gives them
    (None: a registry of the built-in `standard` only, or one fed by `adopt`).
    `exclusive`: every registration goes through this process (a store file's server), so
    `refresh` never needs to read the table again."""

    def __init__(
        self,
        load: Callable[[], list | tuple] | None = None,
        exclusive: bool = False,
        version: Callable[[], int] | None = None,
    ):
        self._load = load
        self.exclusive = exclusive
        # a cheap counter that changes with every registration (LakeVersion): `refresh` reads
        # the rulesets again only when it moved (or FULL_RELOAD_AFTER passed)
        self._version = version
        self._seen: int | None = None
        self._full_at = float("-inf")
        self.snapshot = Snapshot()
        self._lock = threading.Lock()
        self._loaded_at = float("-inf")  # time.time() when the last load began
        self._states: dict[int, tuple] = {}

    def lookup(self, game: str, name: str) -> R.Ruleset | None:
        """The verifier's `rulesets=`: (game, name) -> Ruleset, None when unknown (RS5.1)."""
        return self.snapshot.lookup(game, name)

    def all(self) -> list[R.Ruleset]:
        return [self.snapshot.rulesets[k] for k in sorted(self.snapshot.rulesets)]

    def set(self, loaded: list[R.Ruleset] | tuple[list[R.Ruleset], dict]) -> bool:
        """Judge by the `loaded` rulesets from now on; whether that changed anything."""
        rulesets, times = loaded if isinstance(loaded, tuple) else (loaded, {})
        new = {(r.game, r.name): r for r in rulesets}
        if new == dict(self.snapshot.rulesets):
            return False
        self.snapshot = Snapshot(self.snapshot.version + 1, new, dict(times))
        return True

    def reload(self) -> bool:
        """Read the store's rulesets again; whether they changed."""
        if self._load is None:
            return False
        with self._lock:
            return self._reload(time.time())

    def _reload(self, began: float) -> bool:
        seen = None
        if self._version is not None:
            try:
                seen = self._version()  # read first: a registration meanwhile moves it again
            except Exception:  # noqa: BLE001 - unknown: the next refresh reads the rulesets
                seen = None
        changed = self.set(self._load())  # type: ignore[misc]
        self._seen, self._full_at, self._loaded_at = seen, began, began
        return changed

    def refresh(self, since: float) -> bool:
        """Read the rulesets again unless that was done after `since` (time.time()):
        everything registered before `since` is seen on return. Concurrent callers share one
        read; with a `version` counter that has not moved, the read is only of the counter."""
        if self._load is None or self.exclusive or self._loaded_at >= since:
            return False
        with self._lock:
            if self._loaded_at >= since:
                return False
            began = time.time()
            if self._version is not None and began - self._full_at < FULL_RELOAD_AFTER:
                try:
                    unchanged = self._version() == self._seen
                except Exception:  # noqa: BLE001 - the counter unreadable: read the rulesets
                    unchanged = False
                if unchanged:
                    self._loaded_at = began
                    return False
            return self._reload(began)

    def state(self) -> tuple[int, tuple[dict, ...]]:
        """What a judge process needs to judge as this one does (picklable, small)."""
        snap = self.snapshot
        got = self._states.get(snap.version)
        if got is None:
            got = (snap.version, tuple(snap.rulesets[k].to_json() for k in sorted(snap.rulesets)))
            self._states = {snap.version: got}
        return got

    def adopt(self, state: tuple[int, tuple[dict, ...]] | None) -> None:
        """Judge by the rulesets of another process's `state()` (a judge process)."""
        if state is None or state[0] == self.snapshot.version:
            return
        rulesets = {}
        for obj in state[1]:
            ruleset = R.Ruleset.from_json(obj)
            rulesets[(ruleset.game, ruleset.name)] = ruleset
        self.snapshot = Snapshot(state[0], rulesets)


# -- the lake -------------------------------------------------------------------------------


VERSION_TABLE = "balance_ruleset_version"  # in the catalog's database: one row, a counter
# A server that has only checked the counter reads the rulesets again after this long anyway
# (a registration whose counter update was lost: its PostgreSQL session died after the lake
# commit).
FULL_RELOAD_AFTER = 60.0


@contextlib.contextmanager
def lake_lock(conninfo: str) -> Iterator[None]:
    """Hold the registry's lock of a lake (a transaction advisory lock in its catalog's
    database, released with the transaction, or with the session of a holder that dies).
    When the block ends without an exception, the registry's counter goes up with the
    release, so that servers re-read the rulesets (`LakeVersion`)."""
    import psycopg

    with psycopg.connect(conninfo) as pg:  # commits (and so unlocks) at the end
        pg.execute("SELECT pg_advisory_xact_lock(%s)", [REGISTRY_LOCK_KEY])
        yield
        pg.execute(
            f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} "
            "(one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), n BIGINT NOT NULL)"
        )
        pg.execute(
            f"INSERT INTO {VERSION_TABLE} VALUES (TRUE, 1) "
            f"ON CONFLICT (one) DO UPDATE SET n = {VERSION_TABLE}.n + 1"
        )


class LakeVersion:
    """The lake registry's counter (one PostgreSQL round trip on a connection of its own),
    what a server checks before it reads the rulesets again: a lake read of them costs tens
    of milliseconds, too much to pay for every upload that names an unknown ruleset."""

    def __init__(self, conninfo: str):
        self._conninfo = conninfo
        self._con: Any = None  # a psycopg connection, opened on first use
        self._lock = threading.Lock()

    def __call__(self) -> int:
        import psycopg

        with self._lock:
            try:
                if self._con is None:
                    self._con = psycopg.connect(self._conninfo, autocommit=True)
                row = self._con.execute(f"SELECT max(n) FROM {VERSION_TABLE}").fetchone()
            except psycopg.errors.UndefinedTable:
                return 0
            except BaseException:
                self.close_locked()
                raise
            return int(row[0]) if row and row[0] is not None else 0

    def close_locked(self) -> None:
        if self._con is not None:
            with contextlib.suppress(Exception):
                self._con.close()
            self._con = None

    def close(self) -> None:
        with self._lock:
            self.close_locked()


def register_in_transaction(con: duckdb.DuckDBPyConnection, rulesets: list[R.Ruleset]) -> list:
    """`register` in a transaction of its own on `con` (a lake connection: under
    `lake_lock`), retried while another writer's commit conflicts with it."""
    import duckdb

    for attempt in range(20):
        con.execute("BEGIN TRANSACTION")
        try:
            out = register(con, rulesets)
            con.execute("COMMIT")
            return out
        except duckdb.TransactionException as exc:
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")
            if "conflict" not in str(exc).lower() or attempt == 19:
                raise
            time.sleep(0.05 * (attempt + 1))
        except BaseException:
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")
            raise
    raise RuntimeError("unreachable")
