"""The lake's loader (it commits the staged groups to the lake: staging.py), the fence tables
that stop a dead or stalled writer's commits (the argument is in store.py's docstring), the
settling of other servers' stale claims (`sweep_stale`) and the commit gate
(`commits_paused`)."""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid

import duckdb

from ..shared import insert_tables, transaction
from . import staging as lake_staging
from .claims import Claims
from .connections import FENCES, LAKE, PG, connect, conninfo
from .staging import Loader
from .token import CommitToken

log = logging.getLogger("ingest.lake")

# the application's retries of a commit that still failed on a conflict (after DuckLake's own)
COMMIT_RETRIES = 5
# A reverify batch pauses every server's new claims while it applies (`commits_paused`): the
# gate closes for at most GATE_SECONDS (should the reverify die holding it) and waits up to
# DRAIN_WAIT for the commits already claimed to land.
GATE_SECONDS, DRAIN_WAIT = 30.0, 5.0


def _is_conflict(exc: BaseException) -> bool:
    """A lake commit that certainly did not land: a logical conflict, or DuckLake out of
    retries for a snapshot id."""
    text = str(exc).lower()
    return "conflict" in text or "maximum retry count" in text or "exceeded the maximum" in text


def make_loader(
    catalog: str,
    *,
    threads: int = 0,
    token: CommitToken | None = None,
    retries: int = COMMIT_RETRIES,
    **kw,
) -> Loader:
    """The lake's loader for a process (a server, the jobs runner): not started; `kw` go to
    lake_staging.Loader. `token`: the commit token its commits hold (its own: a token is one
    connection, used by one thread)."""

    def open_lake() -> duckdb.DuckDBPyConnection:
        return connect(catalog, claims=False, threads=threads)

    def commit(lake: duckdb.DuckDBPyConnection, tables: dict, owner: str) -> None:
        load_commit(lake, tables, owner, token, retries)

    return Loader(conninfo(catalog), open_lake, commit, _LoaderFences, **kw)


def load_commit(
    lake: duckdb.DuckDBPyConnection,
    tables: dict,
    owner: str,
    token: CommitToken | None = None,
    retries: int = COMMIT_RETRIES,
) -> None:
    """The loader's lake commit: `tables` and a row in the loader's fence, holding the commit
    token; conflicts retried. Raises unless it landed (a commit of unknown outcome too: the
    next election settles it)."""
    for attempt in range(retries):
        try:
            with token.held() if token is not None else contextlib.nullcontext():
                with transaction(lake):
                    insert_tables(lake, tables)
                    lake.execute(
                        f"INSERT INTO {LAKE}.{FENCES}.{owner} VALUES (?, now()::TIMESTAMP)",
                        [attempt],
                    )
            return
        except Exception as exc:
            if not _is_conflict(exc) or _missing_fence(exc, owner) or attempt == retries - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


class _LoaderFences:
    """The loaders' fence tables (lake_staging.Loader): `balance_fence.l...`."""

    @staticmethod
    def create(con: duckdb.DuckDBPyConnection, owner: str) -> None:
        make_fence(con, owner)

    @staticmethod
    def drop(con: duckdb.DuckDBPyConnection, owner: str) -> None:
        drop_fence(con, owner)

    @staticmethod
    def loaders(con: duckdb.DuckDBPyConnection) -> list[str]:
        rows = con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = ? "
            "AND table_name LIKE 'l%'",
            [LAKE, FENCES],
        ).fetchall()
        return [name for (name,) in rows]


def sweep_stale(con: duckdb.DuckDBPyConnection, claims: Claims, mine: str | None = None) -> dict:
    """Settle the stale pending claims of other owners (dead, or stalled past their lease):
    fence each owner, then mark stored the claims whose games the lake holds and drop the
    others (a client's retry then stores them). `con`: a lake connection (USE lake). Run by
    every server now and then and by `balance lake maintain`; idempotent, safe at once."""
    stale = [(k, o) for k, o in claims.stale() if o != mine]
    if not stale:
        return {"adopted": 0, "released": 0}
    for owner in sorted({o for _, o in stale}):
        drop_fence(con, owner)
    present = lake_hashes(con, [k for k, _ in stale])
    adopted = claims.adopt([(k, o, present[k]) for k, o in stale if k in present])
    claims.release_stale([(k, o) for k, o in stale if k not in present])
    log.warning(
        "stale claims of %d dead or stalled servers settled: %d stored, %d dropped",
        len({o for _, o in stale}),
        len(adopted),
        len([k for k, _ in stale if k not in present]),
    )
    return {"adopted": len(adopted), "released": len(stale) - len(present)}


@contextlib.contextmanager
def commits_paused(
    con: duckdb.DuckDBPyConnection, *, seconds: float = GATE_SECONDS, drain: float = DRAIN_WAIT
):
    """While inside, no server claims a new game (its uploads wait, answered again after a
    moment: in flight), and the commits claimed before have landed (or `drain` ran out), so
    that a lake transaction made inside meets no concurrent insert. `con`: a connection with
    the catalog attached (`connect(..., claims=True)`). For a delete on the tables the servers
    append to (reverify), which DuckLake fails when an insert commits beside it."""
    claims = Claims(con.cursor(), PG)
    holder = f"gate_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    try:
        claims.close_gate(holder, seconds)
    except BaseException:
        claims.con.close()
        raise
    try:
        deadline = time.monotonic() + drain
        while True:  # (a claim made as the gate closed shows once its transaction commits)
            time.sleep(0.05)
            if not claims.in_flight() or time.monotonic() > deadline:
                break
        # and the loader has committed what was staged: its inserts would meet the deletes
        staged_loaded(claims, max(0.0, deadline - time.monotonic()) + drain)
        yield
    finally:
        try:
            claims.open_gate(holder)
        except Exception as exc:  # noqa: BLE001 - it opens by itself after `seconds`
            log.warning("the commit gate stays closed until its time runs out: %s", exc)
        claims.con.close()


def staged_loaded(claims: Claims, timeout: float) -> bool:
    """Until the groups staged so far are in the lake (through the catalog attached to
    `claims`' connection); False if the loader did not get there within `timeout`."""
    groups = f"{lake_staging.SCHEMA}.groups"
    try:
        ((upto,),) = claims._query(f"SELECT coalesce(max(id), 0) FROM {groups}")
    except duckdb.Error as exc:  # a lake no server with staging has opened
        if lake_staging.SCHEMA in str(exc):
            return True
        raise
    deadline = time.monotonic() + timeout
    while True:
        ((left,),) = claims._query(f"SELECT count(*) FROM {groups} WHERE id <= {int(upto)}")
        if not left:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def make_fence(con: duckdb.DuckDBPyConnection, owner: str) -> None:
    """Make `owner`'s fence table (a server's or a loader's), retried on a commit conflict:
    its commits write to it, so dropping it (drop_fence) stops every one still in flight."""
    for attempt in range(10):
        try:
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {LAKE}.{FENCES}")
            con.execute(f"CREATE TABLE {LAKE}.{FENCES}.{owner} (n BIGINT, committed_at TIMESTAMP)")
            return
        except duckdb.Error as exc:
            if not _is_conflict(exc) or attempt == 9:
                raise
            time.sleep(0.05 * (attempt + 1))


def drop_fence(con: duckdb.DuckDBPyConnection, owner: str) -> None:
    """Drop `owner`'s fence table: no commit of it can land from now on."""
    for attempt in range(10):
        try:
            con.execute(f"DROP TABLE IF EXISTS {LAKE}.{FENCES}.{owner}")
            return
        except duckdb.Error as exc:
            if not _is_conflict(exc) or attempt == 9:
                raise
            time.sleep(0.05 * (attempt + 1))


def lake_hashes(con: duckdb.DuckDBPyConnection, keys: list[int]) -> dict[int, int]:
    """game_id -> content_hash of those of `keys` the lake holds (its latest snapshot)."""
    if not keys:
        return {}
    ids = [str(uuid.UUID(int=k)) for k in keys]
    found = con.execute(
        "SELECT game_id::VARCHAR, content_hash FROM raw_records "
        "WHERE game_id IN (SELECT unnest(?::UUID[]))",
        [ids],
    ).fetchall()
    return {uuid.UUID(g).int: h for g, h in found}


def _missing_fence(exc: BaseException, owner: str) -> bool:
    text = str(exc)
    return owner in text and "does not exist" in text
