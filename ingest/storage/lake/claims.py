"""The lake's idempotency index: one claim per game_id, in the catalog's PostgreSQL database.

DuckLake has no unique keys, and several servers append to one lake: the rule "a game_id is
stored once; a retry is `duplicate`, an altered record `conflict`" needs a place where "is this
game_id taken?" has one answer for every server at once. That is `balance_claims`, a plain
PostgreSQL table with `game_id` as its primary key, next to DuckLake's own catalog tables:

    game_id uuid PRIMARY KEY, content_hash bigint, state 'pending' | 'stored',
    owner text, leased_until timestamptz, claimed_at timestamptz

A server claims the games of a group before writing them to the lake (`claim`: INSERT ... ON
CONFLICT DO NOTHING, in one round trip with the look-up of the claims it did not get), writes
the group in one lake commit, then marks its claims stored (`mark_stored`). The verdicts:

- its own new claim: the game is written by this server (accepted / quarantined);
- a stored claim: `duplicate` when the hashes match, else `conflict`;
- a pending claim of another server whose lease runs: that server is committing the game now
  (in flight): answered again after a moment, or 503 + Retry-After;
- a pending claim whose lease ran out: its owner died (or stalled) between its claim and
  marking the claim stored. store.py takes it over only after fencing the owner (so that no
  commit of it can land any more) and looking in the lake: held there, the claim is marked
  stored (`adopt`); not there, it changes owner (`take_over`, a compare-and-set).

Everything goes through DuckDB's postgres extension (no PostgreSQL driver is a dependency):
`postgres_query` for what returns rows (it runs a query inside `COPY (...) TO STDOUT` in a
REPEATABLE READ transaction, so the writes are SQL functions created by `install`), and
`postgres_execute` for the rest. A REPEATABLE READ claim that meets a concurrent claim of the
same id fails with a serialization error: `_query` retries it, and the retry sees the other
claim. Values are spliced into the SQL as literals of checked types only (UUID objects, ints,
owner names matching `OWNER`).

The hash column is PostgreSQL's signed bigint; content hashes are UBIGINT (two's complement
here, `_signed` / `_unsigned`).
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import duckdb

log = logging.getLogger("ingest.lake")

PENDING, STORED = "pending", "stored"
OWNER = re.compile(r"^[a-z][a-z0-9_]{0,62}$")  # also a DuckDB identifier (the fence table)
_RETRIES = 8  # serialization failures of one statement, retried at once

SCHEMA = """
CREATE TABLE IF NOT EXISTS balance_claims (
    game_id      uuid PRIMARY KEY,
    content_hash bigint NOT NULL,
    state        text NOT NULL CHECK (state IN ('pending', 'stored')),
    owner        text NOT NULL,
    leased_until timestamptz NOT NULL,
    claimed_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS balance_claims_pending ON balance_claims (owner)
    WHERE state = 'pending';
CREATE TABLE IF NOT EXISTS balance_owners (
    owner      text PRIMARY KEY,
    host       text NOT NULL,
    pid        integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    seen_at    timestamptz NOT NULL DEFAULT now(),
    closed_at  timestamptz
);
CREATE TABLE IF NOT EXISTS balance_gate (
    name         text PRIMARY KEY,
    holder       text NOT NULL,
    closed_until timestamptz NOT NULL
);
CREATE OR REPLACE FUNCTION balance_claim(
    p_ids uuid[], p_hashes bigint[], p_owner text, p_lease double precision)
RETURNS TABLE (game_id uuid, content_hash bigint, state text, owner text, mine boolean,
               stale boolean)
LANGUAGE sql VOLATILE AS $fn$
    WITH ins AS (
        INSERT INTO balance_claims AS c (game_id, content_hash, state, owner, leased_until)
        SELECT u.g, u.h, 'pending', p_owner, now() + make_interval(secs => p_lease)
        FROM unnest(p_ids, p_hashes) AS u(g, h)
        WHERE NOT EXISTS (SELECT 1 FROM balance_gate WHERE closed_until > now())
        ON CONFLICT DO NOTHING
        RETURNING c.game_id, c.content_hash)
    SELECT c.game_id, c.content_hash, c.state, c.owner, false,
           c.state = 'pending' AND c.leased_until < now()
    FROM balance_claims c WHERE c.game_id = ANY (p_ids)
    UNION ALL
    SELECT ins.game_id, ins.content_hash, 'pending', p_owner, true, false FROM ins
$fn$;
CREATE OR REPLACE FUNCTION balance_take_over(
    p_ids uuid[], p_from text[], p_hashes bigint[], p_owner text, p_lease double precision)
RETURNS TABLE (game_id uuid)
LANGUAGE sql VOLATILE AS $fn$
    UPDATE balance_claims c
    SET owner = p_owner, content_hash = u.h, claimed_at = now(),
        leased_until = now() + make_interval(secs => p_lease)
    FROM unnest(p_ids, p_from, p_hashes) AS u(g, o, h)
    WHERE c.game_id = u.g AND c.owner = u.o AND c.state = 'pending' AND c.leased_until < now()
    RETURNING c.game_id
$fn$;
CREATE OR REPLACE FUNCTION balance_adopt(p_ids uuid[], p_from text[], p_hashes bigint[])
RETURNS TABLE (game_id uuid)
LANGUAGE sql VOLATILE AS $fn$
    UPDATE balance_claims c
    SET state = 'stored', content_hash = u.h
    FROM unnest(p_ids, p_from, p_hashes) AS u(g, o, h)
    WHERE c.game_id = u.g AND c.owner = u.o AND c.state = 'pending'
    RETURNING c.game_id
$fn$;
CREATE OR REPLACE FUNCTION balance_import(
    p_ids uuid[], p_hashes bigint[], p_owner text, p_lease double precision)
RETURNS TABLE (game_id uuid, content_hash bigint, state text, owner text, mine boolean)
LANGUAGE sql VOLATILE AS $fn$
    WITH ins AS (
        INSERT INTO balance_claims AS c (game_id, content_hash, state, owner, leased_until)
        SELECT u.g, u.h, 'pending', p_owner, now() + make_interval(secs => p_lease)
        FROM unnest(p_ids, p_hashes) AS u(g, h)
        ON CONFLICT DO NOTHING
        RETURNING c.game_id, c.content_hash),
    renewed AS (  -- the importer's own pending claims of an earlier, interrupted run
        UPDATE balance_claims c SET leased_until = now() + make_interval(secs => p_lease)
        WHERE c.game_id = ANY (p_ids) AND c.owner = p_owner AND c.state = 'pending'
        RETURNING c.game_id)
    SELECT c.game_id, c.content_hash, c.state, c.owner, false
    FROM balance_claims c WHERE c.game_id = ANY (p_ids)
    UNION ALL
    SELECT ins.game_id, ins.content_hash, 'pending', p_owner, true FROM ins
$fn$;
DROP FUNCTION IF EXISTS balance_import(uuid[], bigint[], text);
"""


@dataclass(slots=True, frozen=True)
class Claim:
    """The claim of one game_id as `claim` found or made it."""

    key: int  # the UUID as an int
    content_hash: int  # unsigned, as content_hash in raw_records
    state: str  # PENDING | STORED
    owner: str
    mine: bool  # made by this call: the caller writes the game
    stale: bool  # pending, and its lease ran out


def _signed(h: int) -> int:
    return h - (1 << 64) if h >= 1 << 63 else h


def _unsigned(h: int) -> int:
    return h + (1 << 64) if h < 0 else h


def _uuids(keys: Iterable[int]) -> str:
    inner = ",".join(f"'{uuid.UUID(int=k)}'" for k in keys)
    return f"ARRAY[{inner}]::uuid[]"


def _ints(values: Iterable[int]) -> str:
    return "ARRAY[" + ",".join(str(int(v)) for v in values) + "]::bigint[]"


def _owner(owner: str) -> str:
    if not OWNER.match(owner):
        raise ValueError(f"not an owner name: {owner!r}")
    return f"'{owner}'"


def _owners(owners: Iterable[str]) -> str:
    return "ARRAY[" + ",".join(_owner(o) for o in owners) + "]::text[]"


def _key(value) -> int:
    return value.int if isinstance(value, uuid.UUID) else uuid.UUID(str(value)).int


def _serialization(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "could not serialize" in text or "deadlock detected" in text


class Claims:
    """The claims table through `con`, a DuckDB connection with the postgres extension loaded
    and the catalog's database attached as `alias` (TYPE postgres). Each call is its own
    PostgreSQL transaction (the connection stays in autocommit)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, alias: str):
        self.con = con
        self.alias = alias

    # -- plumbing -----------------------------------------------------------------------------

    def _query(self, sql: str) -> list[tuple]:
        for attempt in range(_RETRIES):
            try:
                return self.con.execute(
                    f"SELECT * FROM postgres_query('{self.alias}', ?)", [sql]
                ).fetchall()
            except duckdb.Error as exc:
                if not _serialization(exc) or attempt == _RETRIES - 1:
                    raise
                time.sleep(0.002 * (attempt + 1))
        raise AssertionError("unreachable")

    def execute(self, sql: str) -> None:
        for attempt in range(_RETRIES):
            try:
                self.con.execute(f"CALL postgres_execute('{self.alias}', ?)", [sql])
                return
            except duckdb.Error as exc:
                if not _serialization(exc) or attempt == _RETRIES - 1:
                    raise
                time.sleep(0.002 * (attempt + 1))

    def install(self) -> None:
        """Create the claims and owners tables and the functions (idempotent)."""
        self.execute(SCHEMA)

    # -- the claims ---------------------------------------------------------------------------

    def claim(self, keys: Sequence[int], hashes: Sequence[int], owner: str, lease: float):
        """Claim `keys` (distinct) for `owner`; the claim of each as found or made, by key.
        A key missing from the answer was claimed concurrently by a transaction this one
        could not see yet: treat it as in flight."""
        if not keys:
            return {}
        rows = self._query(
            f"SELECT * FROM balance_claim({_uuids(keys)}, "
            f"{_ints(_signed(h) for h in hashes)}, {_owner(owner)}, {float(lease)})"
        )
        out = {}
        for gid, h, state, who, mine, stale in rows:
            key = _key(gid)
            out[key] = Claim(key, _unsigned(h), state, who, bool(mine), bool(stale))
        return out

    def take_over(self, taken: Sequence[tuple[int, str, int]], owner: str, lease: float):
        """Compare-and-set: each (key, old owner, new hash) whose claim is still the old
        owner's, pending and stale becomes `owner`'s with the new hash. The keys won."""
        if not taken:
            return set()
        keys, olds, hashes = zip(*taken, strict=True)
        rows = self._query(
            f"SELECT * FROM balance_take_over({_uuids(keys)}, {_owners(olds)}, "
            f"{_ints(_signed(h) for h in hashes)}, {_owner(owner)}, {float(lease)})"
        )
        return {_key(g) for (g,) in rows}

    def adopt(self, found: Sequence[tuple[int, str, int]]) -> set[int]:
        """Each (key, old owner, hash in the lake): the lake holds the game of a stale
        pending claim; mark it stored with the lake's hash. The keys marked."""
        if not found:
            return set()
        keys, olds, hashes = zip(*found, strict=True)
        rows = self._query(
            f"SELECT * FROM balance_adopt({_uuids(keys)}, {_owners(olds)}, "
            f"{_ints(_signed(h) for h in hashes)})"
        )
        return {_key(g) for (g,) in rows}

    def mark_stored(self, keys: Sequence[int], owner: str) -> None:
        """`owner` committed these games to the lake."""
        if keys:
            self.execute(
                "UPDATE balance_claims SET state = 'stored' WHERE state = 'pending' "
                f"AND owner = {_owner(owner)} AND game_id = ANY ({_uuids(keys)})"
            )

    def release(self, keys: Sequence[int], owner: str) -> None:
        """`owner` did not (and never will) commit these games: drop its pending claims."""
        if keys:
            self.execute(
                "DELETE FROM balance_claims WHERE state = 'pending' "
                f"AND owner = {_owner(owner)} AND game_id = ANY ({_uuids(keys)})"
            )

    def import_claims(self, keys: Sequence[int], hashes: Sequence[int], owner: str, lease: float):
        """For `balance lake import`: claim for `owner`, renewing its own pending claims of an
        interrupted run; the claims by key as (content_hash, state, owner, made now)."""
        if not keys:
            return {}
        rows = self._query(
            f"SELECT * FROM balance_import({_uuids(keys)}, "
            f"{_ints(_signed(h) for h in hashes)}, {_owner(owner)}, {float(lease)})"
        )
        return {_key(g): (_unsigned(h), st, o, bool(m)) for g, h, st, o, m in rows}

    def stale(self, limit: int = 10_000) -> list[tuple[int, str]]:
        """(key, owner) of pending claims whose lease ran out (oldest first)."""
        rows = self._query(
            "SELECT game_id, owner FROM balance_claims WHERE state = 'pending' "
            f"AND leased_until < now() ORDER BY leased_until LIMIT {int(limit)}"
        )
        return [(_key(g), o) for g, o in rows]

    def release_stale(self, pairs: Sequence[tuple[int, str]]) -> None:
        """Drop the stale pending claims (key, owner) still so: their owners are fenced and
        the lake does not hold their games."""
        if pairs:
            keys, owners = zip(*pairs, strict=True)
            self.execute(
                f"DELETE FROM balance_claims c USING unnest({_uuids(keys)}, {_owners(owners)}) "
                "AS u(g, o) WHERE c.game_id = u.g AND c.owner = u.o AND c.state = 'pending' "
                "AND c.leased_until < now()"
            )

    def pending_of(self, owner: str) -> list[int]:
        rows = self._query(
            "SELECT game_id FROM balance_claims WHERE state = 'pending' "
            f"AND owner = {_owner(owner)}"
        )
        return [_key(g) for (g,) in rows]

    def stored_count(self) -> int:
        ((n,),) = self._query("SELECT count(*) FROM balance_claims WHERE state = 'stored'")
        return int(n)

    def counts(self) -> dict[str, int]:
        rows = self._query("SELECT state, count(*) FROM balance_claims GROUP BY state")
        return {state: int(n) for state, n in rows}

    # -- the gate -----------------------------------------------------------------------------

    def close_gate(self, holder: str, seconds: float) -> None:
        """From now until `open_gate` (or `seconds`, should the holder die), `claim` claims
        nothing new: every server's new games wait (in flight, answered again after a
        moment), so that the holder's lake transaction meets no concurrent insert."""
        close = (
            "INSERT INTO balance_gate (name, holder, closed_until) VALUES ('commits', "
            f"{_owner(holder)}, now() + make_interval(secs => {float(seconds)})) "
            "ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, "
            "closed_until = EXCLUDED.closed_until"
        )
        try:
            self.execute(close)
        except duckdb.Error as exc:  # a lake made before the gate: its functions upgraded
            if "balance_gate" not in str(exc):
                raise
            self.install()
            self.execute(close)

    def open_gate(self, holder: str) -> None:
        self.execute(f"DELETE FROM balance_gate WHERE holder = {_owner(holder)}")

    def in_flight(self) -> int:
        """Pending claims under a running lease: games some server is committing now."""
        ((n,),) = self._query(
            "SELECT count(*) FROM balance_claims WHERE state = 'pending' AND leased_until >= now()"
        )
        return int(n)

    # -- the servers --------------------------------------------------------------------------

    def register(self, owner: str, host: str, pid: int) -> None:
        host = re.sub(r"[^A-Za-z0-9_.:-]", "_", host)[:200]
        self.execute(
            "INSERT INTO balance_owners (owner, host, pid) "
            f"VALUES ({_owner(owner)}, '{host}', {int(pid)}) "
            "ON CONFLICT (owner) DO UPDATE SET seen_at = now(), closed_at = NULL"
        )

    def heartbeat(self, owner: str) -> None:
        self.execute(f"UPDATE balance_owners SET seen_at = now() WHERE owner = {_owner(owner)}")

    def closed(self, owner: str) -> None:
        self.execute(
            "UPDATE balance_owners SET closed_at = now(), seen_at = now() "
            f"WHERE owner = {_owner(owner)}"
        )

    def owners(self) -> list[tuple[str, str, int, float, bool]]:
        """(owner, host, pid, seconds since it was last seen, closed) of every server."""
        rows = self._query(
            "SELECT owner, host, pid, extract(epoch FROM now() - seen_at)::float8, "
            "closed_at IS NOT NULL FROM balance_owners ORDER BY started_at"
        )
        return [(o, h, int(p), float(s), bool(c)) for o, h, p, s, c in rows]

    def forget_owners(self, owners: Sequence[str]) -> None:
        if owners:
            self.execute(
                f"DELETE FROM balance_owners WHERE owner = ANY ({_owners(owners)}) "
                "AND NOT EXISTS (SELECT 1 FROM balance_claims c WHERE c.state = 'pending' "
                "AND c.owner = balance_owners.owner)"
            )
