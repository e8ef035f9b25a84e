"""Staging: where a lake server's uploads become durable before they reach the lake.

Why: a DuckLake commit costs ~40 catalog statements and 60-150 ms whatever its size, and
commits are serialized across the lake (one snapshot id after another), so acknowledging each
group of uploads after its own lake commit capped single-game uploads at a few hundred a
second for the whole lake, fewer with more servers. Here a server acknowledges a
group once one short PostgreSQL transaction in the catalog's database holds it (store.py,
`LakeStore._group`):

    SELECT * FROM balance_claim(...)            -- claim the group's game_ids (in order)
    UPDATE balance_claims SET state = 'stored'  -- this server's claims of the games it writes
    INSERT INTO balance_staging.groups          -- their rows, as Arrow IPC, one blob per table

Most groups hold only games no server has claimed (a retry is the exception), and for them
the three steps are one statement, `stage_new` (the SQL function `balance_staging.stage_new`):
it inserts the claims already stored and the group's rows, and raises (everything rolled back)
if any game_id was claimed before; the caller then takes the steps above. One statement in
autocommit is one round trip and no BEGIN/COMMIT: measured on the catalog alone, a group of 10
games cost PostgreSQL a third and the server a fifth of the CPU of the transaction above.

Both or neither: a game is acknowledged only when its claim says stored and its rows are in
staging. The UPDATE is a compare-and-set on (owner, pending): a claim that another server took
over in the meantime (a stale lease) is not this server's any more, the transaction is rolled
back and the requests tried again. So staging needs no fence: PostgreSQL's row locks decide.
Many servers stage at once (plain row inserts, no snapshot id to fight over).

One **loader** at a time (`Loader`, a thread in every server and in `balance jobs run --lake
--every`; a PostgreSQL advisory session lock elects it, so when its process or session dies
another takes over within a second) moves staged groups into the lake: every `every` seconds
(or at once while more than `batch_games` wait) one lake commit of up to `batch_games` games,
then the groups are deleted from staging. The lake commit and that delete are two
transactions (DuckLake's catalog transaction runs on DuckDB's own PostgreSQL connection; one
DuckDB transaction may not write two attached databases), so the load is made idempotent by
game_id instead:

- a loader commits into its own fence table (`balance_fence.l...`) in every load;
- a newly elected loader first drops the fence of every earlier loader (a lake commit): from
  then on no commit of an earlier loader can land (DuckLake fails a transaction inserting into
  a table dropped since it began), even one whose session lost the lock without noticing;
- then it looks in the lake for the staged games (raw_records, narrowed to the groups'
  received_at range so file statistics prune the scan): a group found there was committed by a
  loader that died before its delete, and is deleted without loading again.

A crash anywhere therefore neither loses a game (staging keeps it until the lake holds it) nor
doubles one (a group is looked up before it is loaded again; game_ids are unique in staging,
claims guarantee it). The loader's own failures (a commit of unknown outcome, the catalog
gone) end its election: the next election, in this process or another, settles them the same
way.

Bounded: every server watches the games staged and the age of the oldest; past
`BALANCE_LAKE_STAGING_MAX` games its uploads are answered 503 + Retry-After (back-pressure:
nothing accepted is lost) and /healthz, /metrics say so.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.ipc as ipc

from ..failures import without_passwords
from .claims import Claim, _signed, _unsigned

log = logging.getLogger("ingest.lake")

SCHEMA = "balance_staging"
# advisory locks are per database: one key for the loader of the lake of this database
LOADER_KEY = zlib.crc32(b"balance lake loader")
LOAD_EVERY = 1.0  # seconds between loads while staging holds less than a batch
LOAD_GAMES = 20_000  # games a load takes at most (one lake commit)
STAGING_MAX = 200_000  # games staged past which uploads are refused (back-pressure)
CONNECT_TIMEOUT = 5

DDL = f"""
CREATE SCHEMA IF NOT EXISTS {SCHEMA};
CREATE TABLE IF NOT EXISTS {SCHEMA}.groups (
    id           bigserial PRIMARY KEY,
    owner        text NOT NULL,
    staged_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    games        integer NOT NULL,
    game_ids     uuid[] NOT NULL,
    received_min timestamp NOT NULL,
    received_max timestamp NOT NULL,
    tables       text[] NOT NULL,
    blobs        bytea[] NOT NULL
);
CREATE TABLE IF NOT EXISTS {SCHEMA}.loader (
    id        integer PRIMARY KEY CHECK (id = 1),
    owner     text NOT NULL,
    since     timestamptz NOT NULL DEFAULT now(),
    loaded_at timestamptz,
    loads     bigint NOT NULL DEFAULT 0,
    games     bigint NOT NULL DEFAULT 0
);
"""


# The one-statement stage of a group of new games (`Stager.stage_new`). Its claims are
# inserted in the caller's (sorted) order, as balance_claim's are, so that two such statements
# meeting on the same games wait for each other instead of deadlocking.
CLAIMED = "BL001"  # SQLSTATE it raises when a game_id of the group was claimed already
STAGE_NEW = f"""
CREATE OR REPLACE FUNCTION {SCHEMA}.stage_new(
    p_ids uuid[], p_hashes bigint[], p_owner text, p_games integer,
    p_received_min timestamp, p_received_max timestamp, p_tables text[], p_blobs bytea[])
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    n integer;
    staged bigint;
BEGIN
    IF EXISTS (SELECT 1 FROM balance_gate WHERE closed_until > now()) THEN
        RETURN NULL;  -- the claims' gate is closed: the caller's claim says so
    END IF;
    INSERT INTO balance_claims (game_id, content_hash, state, owner, leased_until)
    SELECT u.g, u.h, 'stored', p_owner, now() FROM unnest(p_ids, p_hashes) AS u(g, h)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n <> cardinality(p_ids) THEN
        RAISE EXCEPTION 'a game of the group was claimed already' USING ERRCODE = '{CLAIMED}';
    END IF;
    INSERT INTO {SCHEMA}.groups (owner, games, game_ids, received_min, received_max, tables,
                                 blobs)
    VALUES (p_owner, p_games, p_ids, p_received_min, p_received_max, p_tables, p_blobs)
    RETURNING id INTO staged;
    RETURN staged;
END
$fn$;
"""
_STAGE_NEW_SIGNATURE = (
    f"{SCHEMA}.stage_new(uuid[], bigint[], text, integer, timestamp, timestamp, text[], bytea[])"
)
INSTALL_KEY = zlib.crc32(b"balance lake staging install")


class LostClaims(Exception):
    """Some claims of the group are no longer this server's pending ones (taken over after
    their lease ran out, or released by a sweep): nothing was staged."""


def install(conninfo: str) -> None:
    """Create the staging schema if it is missing (idempotent; `lake init` and every server's
    start: a lake made before staging gets it without an upgrade step)."""
    probe = (
        f"SELECT to_regclass('{SCHEMA}.loader') IS NOT NULL "
        f"AND to_regprocedure('{_STAGE_NEW_SIGNATURE}') IS NOT NULL"
    )
    with psycopg.connect(conninfo, connect_timeout=CONNECT_TIMEOUT, autocommit=True) as con:
        found = con.execute(probe).fetchone()
        if found and found[0]:
            return
        # servers starting together: one installs, the others wait and find it done
        # (concurrent CREATE OR REPLACE FUNCTION fails with "tuple concurrently updated")
        with con.transaction():
            con.execute("SELECT pg_advisory_xact_lock(%s)", (INSTALL_KEY,))
            found = con.execute(probe).fetchone()
            if found and found[0]:
                return
            con.execute(DDL)
            con.execute(STAGE_NEW)
            # the staged rows are compressed with lz4 where PostgreSQL has it (14+, built
            # with lz4): pglz, the default, cost the catalog ~40% more CPU per staged group
            with contextlib.suppress(psycopg.Error), con.transaction():
                con.execute(f"ALTER TABLE {SCHEMA}.groups ALTER COLUMN blobs SET COMPRESSION lz4")


# A server that freezes (a stopped VM, a host gone without a FIN) inside its staging
# transaction holds its new claims' row locks: another server's claim of one of those games
# (a client's retry elsewhere) waits on them, and its committer thread with it. PostgreSQL
# ends such a session: idle inside a transaction this long, or its peer silent to keepalives
# (5 s, then 3 probes 2 s apart). A staging transaction is idle only while its server builds
# the group's rows, milliseconds.
IDLE_IN_TRANSACTION = 10.0  # seconds


def connect_pg(conninfo: str, name: str) -> psycopg.Connection:
    given = psycopg.conninfo.conninfo_to_dict(conninfo).get("options") or ""
    options = (
        f"{given} -c idle_in_transaction_session_timeout={int(IDLE_IN_TRANSACTION * 1000)} "
        "-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=3"
    ).strip()  # after the catalog string's own options, if it has any
    return psycopg.connect(
        conninfo,
        connect_timeout=CONNECT_TIMEOUT,
        autocommit=True,
        application_name=name,
        keepalives=1,
        keepalives_idle=5,
        keepalives_interval=2,
        keepalives_count=3,
        options=options,
    )


# -- the payload ---------------------------------------------------------------------------


def pack(tables: dict[str, pa.Table]) -> tuple[list[str], list[bytes]]:
    """Each non-empty table as one Arrow IPC stream."""
    names, blobs = [], []
    for name, table in tables.items():
        if not len(table):
            continue
        sink = pa.BufferOutputStream()
        with ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        names.append(name)
        blobs.append(sink.getvalue().to_pybytes())
    return names, blobs


def unpack(names: Sequence[str], blobs: Sequence[bytes]) -> dict[str, pa.Table]:
    return {
        n: ipc.open_stream(pa.py_buffer(b)).read_all() for n, b in zip(names, blobs, strict=True)
    }


_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"  # an IPC stream's end


def gather(names_blobs: Sequence[tuple[Sequence[str], Sequence[bytes]]]) -> dict[str, pa.Table]:
    """The staged tables of several groups as one Arrow table per table (`merge` of their
    `unpack`), read as one IPC stream per table: each group's stream is its schema message,
    its record batches and an end marker, so the streams of one table with the same schema
    are one stream once the later schemas and ends are cut out. A loader's hundreds of small
    groups were a reader each, per table. Tables whose streams differ in schema (or that
    cannot be read so) go through `unpack` and `merge`."""
    by_table: dict[str, list[bytes]] = {}
    for names, blobs in names_blobs:
        for name, blob in zip(names, blobs, strict=True):
            by_table.setdefault(name, []).append(bytes(blob))
    out: dict[str, pa.Table] = {}
    for name, blobs in by_table.items():
        try:
            out[name] = _one_stream(blobs)
        except (ValueError, pa.ArrowException):
            out[name] = merge([unpack([name], [blob]) for blob in blobs])[name]
    return out


def _one_stream(blobs: list[bytes]) -> pa.Table:
    head_size = 8 + int.from_bytes(blobs[0][4:8], "little", signed=True)
    head = blobs[0][:head_size]
    if blobs[0][:4] != b"\xff\xff\xff\xff" or head_size <= 8:
        raise ValueError("not an IPC stream")
    body = [head]
    for blob in blobs:
        if blob[:head_size] != head or not blob.endswith(_EOS):
            raise ValueError("streams of different schemas")
        body.append(blob[head_size:-8])
    body.append(_EOS)
    return ipc.open_stream(pa.py_buffer(b"".join(body))).read_all().combine_chunks()


def merge(groups: list[dict[str, pa.Table]]) -> dict[str, pa.Table]:
    """The tables of several groups as one Arrow table per table, each in one chunk: DuckDB's
    insert of a table made of many small chunks (a load of hundreds of one-game groups) cost
    it several times the CPU of the same rows in one."""
    parts: dict[str, list[pa.Table]] = {}
    for tables in groups:
        for name, table in tables.items():
            parts.setdefault(name, []).append(table)
    return {
        n: pa.concat_tables(ts, promote_options="default").combine_chunks()
        for n, ts in parts.items()
    }


# -- a server's side: staging a group ------------------------------------------------------


def _uuids(keys: Sequence[int]) -> list[uuid.UUID]:
    return [uuid.UUID(int=k) for k in keys]


def _uuid_array(keys: Sequence[int]) -> str:
    """`keys` as the text of a PostgreSQL uuid[] (32 hex digits each, which uuid's input
    takes): psycopg's dumping of a list of UUID objects cost more than the statement."""
    return "{" + ",".join(f"{k:032x}" for k in keys) + "}"


def _bigint_array(values: Sequence[int]) -> str:
    return "{" + ",".join(str(int(v)) for v in values) + "}"


class Stager:
    """A server's connection for staging (the committer thread's; not shared)."""

    def __init__(self, conninfo: str):
        self.conninfo = conninfo
        self._con: psycopg.Connection | None = None
        self._pipeline: psycopg.Pipeline | None = None  # while in `transaction`

    def _connection(self) -> psycopg.Connection:
        if self._con is None or self._con.closed or self._con.broken:
            self.close()
            self._con = connect_pg(self.conninfo, "balance staging")
        return self._con

    def close(self) -> None:
        if self._con is not None:
            with contextlib.suppress(Exception):
                self._con.close()
            self._con = None

    def claim(self, keys: Sequence[int], hashes: Sequence[int], owner: str, lease: float):
        """claims.Claims.claim, on this connection (psycopg: one round trip, no DuckDB
        in the way); the claims by key."""
        if not keys:
            return {}
        con = self._connection()
        try:
            cur = con.execute(
                "SELECT * FROM balance_claim(%s, %s, %s, %s)",
                (_uuids(keys), [_signed(h) for h in hashes], owner, float(lease)),
            )
            if self._pipeline is not None:
                # a Sync, not a flush: between statements the session is then "idle in
                # transaction" to PostgreSQL, whose timeout ends it should this server
                # freeze now (a flushed pipeline leaves it "active", with no timeout)
                self._pipeline.sync()
            rows = cur.fetchall()
        except psycopg.Error:
            if con.closed or con.broken:
                self.close()
            raise
        out = {}
        for gid, h, state, who, mine, stale in rows:
            key = gid.int
            out[key] = Claim(key, _unsigned(h), state, who, bool(mine), bool(stale))
        return out

    def release(self, keys: Sequence[int], owner: str) -> None:
        """`owner` did not (and never will) stage these games: drop its pending claims."""
        if not keys:
            return
        con = self._connection()
        try:
            con.execute(
                "DELETE FROM balance_claims WHERE state = 'pending' AND owner = %s "
                "AND game_id = ANY (%s)",
                (owner, _uuids(keys)),
            )
        except psycopg.Error:
            if con.closed or con.broken:
                self.close()
            raise

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """A transaction on this connection for the block (committed at its end, rolled back
        if it raises); a failed connection is dropped (the next call reconnects)."""
        con = self._connection()
        try:
            # in pipeline mode BEGIN goes out with the group's first statement (the claim)
            # instead of waiting for its own round trip
            with con.pipeline() as self._pipeline, con.transaction():
                yield
        except psycopg.Error:
            if con.closed or con.broken:
                self.close()
            raise
        finally:
            self._pipeline = None

    def stage(
        self, keys: Sequence[int], owner: str, received: tuple, tables: dict[str, pa.Table]
    ) -> int:
        """`owner`'s pending claims of `keys` marked stored, the rows staged (inside the
        caller's `transaction`: both or neither). Returns the group's id. LostClaims when a
        claim is not `owner`'s pending one any more."""
        names, blobs = pack(tables)
        con = self._connection()
        ids = _uuids(keys)
        try:  # one statement, one round trip: the rows go in only if every claim was marked
            row = con.execute(
                "WITH marked AS (UPDATE balance_claims SET state = 'stored' "
                "WHERE state = 'pending' AND owner = %s AND game_id = ANY (%s) RETURNING 1), "
                f"staged AS (INSERT INTO {SCHEMA}.groups (owner, games, game_ids, "
                "received_min, received_max, tables, blobs) "
                "SELECT %s, %s, %s, %s, %s, %s, %b WHERE (SELECT count(*) FROM marked) = %s "
                "RETURNING id) "
                "SELECT (SELECT count(*) FROM marked), (SELECT id FROM staged)",
                (owner, ids, owner, len(keys), ids, received[0], received[1], names, blobs,
                 len(keys)),
            ).fetchone()  # fmt: skip
        except psycopg.Error:
            if con.closed or con.broken:
                self.close()
            raise
        marked = int(row[0]) if row else 0
        if marked != len(keys) or not row or row[1] is None:
            raise LostClaims(f"{len(keys) - marked} of {len(keys)} claims lost")
        return int(row[1])

    def stage_new(
        self,
        keys: Sequence[int],
        hashes: Sequence[int],
        owner: str,
        received: tuple,
        tables: dict[str, pa.Table],
    ) -> int | None:
        """A group of games no server has claimed, in one statement (autocommit): their claims
        inserted stored under `owner` and their rows staged; the group's id. None, with
        nothing written, when a game_id was claimed already or the claims' gate is closed
        (the caller then claims and stages in a `transaction`). `keys` sorted."""
        names, blobs = pack(tables)
        con = self._connection()
        try:
            row = con.execute(
                f"SELECT {SCHEMA}.stage_new(%s::uuid[], %s::bigint[], %s, %s, %s, %s, %s, %b)",
                (_uuid_array(keys), _bigint_array([_signed(h) for h in hashes]), owner,
                 len(keys), received[0], received[1], names, blobs),
            ).fetchone()  # fmt: skip
        except psycopg.Error as exc:
            if exc.sqlstate == CLAIMED:
                return None
            if con.closed or con.broken:
                self.close()
            raise
        return None if row is None or row[0] is None else int(row[0])

    def landed(self, keys: Sequence[int], owner: str) -> bool | None:
        """After a stage of unknown outcome: True if it committed (its claims are stored under
        `owner`), False if not (they are still pending: released by the caller), None while
        the catalog cannot tell."""
        try:
            con = self._connection()
            rows = con.execute(
                "SELECT state, owner FROM balance_claims WHERE game_id = ANY (%s)",
                (_uuids(keys),),
            ).fetchall()
        except psycopg.Error:
            self.close()
            return None
        return any(state == "stored" and who == owner for state, who in rows)


# -- how much waits ------------------------------------------------------------------------


def backlog(con: psycopg.Connection) -> tuple[int, float, int]:
    """(games staged, seconds the oldest has waited, the largest group id) now."""
    row = con.execute(
        f"SELECT coalesce(sum(games), 0), "
        "coalesce(extract(epoch FROM clock_timestamp() - min(staged_at)), 0)::float8, "
        f"coalesce(max(id), 0) FROM {SCHEMA}.groups"
    ).fetchone()
    assert row is not None
    return int(row[0]), float(row[1]), int(row[2])


def wait_loaded(conninfo: str, timeout: float = 60.0, upto: int | None = None) -> bool:
    """Wait until every group staged before the call (or up to the id `upto`) is in the lake:
    whatever was acknowledged before is then in the lake's latest snapshot. False when the
    loader did not get there within `timeout` (no loader running, or far behind)."""
    deadline = time.monotonic() + timeout
    with connect_pg(conninfo, "balance wait for the loader") as con:
        found = con.execute(f"SELECT to_regclass('{SCHEMA}.groups') IS NOT NULL").fetchone()
        if not (found and found[0]):  # a lake no server with staging has opened yet
            return True
        if upto is None:
            upto = backlog(con)[2]
        pause = 0.02
        while True:
            row = con.execute(
                f"SELECT EXISTS (SELECT 1 FROM {SCHEMA}.groups WHERE id <= %s)", (upto,)
            ).fetchone()
            if not (row and row[0]):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)
            pause = min(0.25, pause * 2)


# -- the loader ----------------------------------------------------------------------------


def _new_loader() -> str:
    return f"l{os.getpid()}_{uuid.uuid4().hex[:12]}"


class Loader:
    """The lake's loader, if this process is elected (see the module docstring). `open_lake`
    makes a lake connection (`lake.connect(..., claims=False)`), `commit(con, tables, fence)`
    makes one lake commit of `tables` plus a row in `fence` (the caller's commit token and
    retries), `fence_ops` are the lake's fence helpers (create, drop, list). While not
    elected it still watches the backlog (`staged`, `oldest`) for back-pressure."""

    def __init__(
        self,
        conninfo: str,
        open_lake: Callable[[], Any],
        commit: Callable[[Any, dict[str, pa.Table], str], None],
        fences,
        *,
        every: float = LOAD_EVERY,
        batch_games: int = LOAD_GAMES,
        elect: bool = True,
        on_backlog: Callable[[int, float], None] | None = None,
    ):
        self.conninfo = conninfo
        self._open_lake = open_lake
        self._commit = commit
        self._fences = fences
        self.every = float(every)
        self.batch_games = int(batch_games)
        self.elect = elect
        self._on_backlog = on_backlog
        self.owner: str | None = None  # set while elected
        self.staged = 0  # games waiting, as last seen
        self.oldest = 0.0  # seconds the oldest staged group has waited, as last seen
        self.seen_at = 0.0  # monotonic time of the last look (0: never)
        self.counters = {"loads": 0, "loaded": 0, "recovered": 0, "elections": 0, "failures": 0}
        self.load_seconds: list[float] = []
        self.error: str | None = None
        self._con: psycopg.Connection | None = None
        self._lake: Any = None
        self._stop = threading.Event()
        self._kick = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lake-loader", daemon=True)

    def start(self) -> Loader:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0, drain: bool = False) -> None:
        """Stop; `drain`: if this is the loader, first load what is staged (up to `timeout`
        seconds), so that the last server to stop leaves nothing for a loader to come."""
        self._stop.set()
        self._kick.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        if drain and not self._thread.is_alive() and self.owner is not None:
            deadline = time.monotonic() + timeout
            try:
                while time.monotonic() < deadline and self.load_once():
                    pass
            except Exception as exc:  # noqa: BLE001 - the next loader takes it
                log.warning("lake loader: staged games left for the next loader: %s",
                            without_passwords(str(exc)))  # fmt: skip
        self._resign()

    def kick(self) -> None:
        """Load now (a reader waits for the staged games)."""
        self._kick.set()

    # -- the loop ---------------------------------------------------------------------------

    def _run(self) -> None:
        backoff = 0.0
        while not self._stop.is_set():
            more = False
            try:
                con = self._pg()
                if self.owner is None and self.elect:
                    self._try_elect(con)
                if self.owner is not None:
                    more = self.load_once() >= self.batch_games
                else:
                    self._look(con)
                self.error = None
                backoff = 0.0
            except Exception as exc:  # noqa: BLE001 - the next election settles it
                self.counters["failures"] += 1
                self.error = without_passwords(
                    str(exc).strip().splitlines()[0] if str(exc) else type(exc).__name__
                )
                log.warning("lake loader (retried): %s", self.error)
                self._resign()
                backoff = min(5.0, backoff * 2 or 0.5)
                self._stop.wait(backoff)
                continue
            if not more:
                self._kick.wait(self.every)
                self._kick.clear()

    def _pg(self) -> psycopg.Connection:
        if self._con is None or self._con.closed or self._con.broken:
            self._resign()
            self._con = connect_pg(self.conninfo, "balance lake loader")
        return self._con

    def _look(self, con: psycopg.Connection) -> tuple[int, float, int]:
        found = backlog(con)
        self.staged, self.oldest, _ = found
        self.seen_at = time.monotonic()
        if self._on_backlog is not None:
            self._on_backlog(self.staged, self.oldest)
        return found

    def _try_elect(self, con: psycopg.Connection) -> None:
        row = con.execute("SELECT pg_try_advisory_lock(%s)", (LOADER_KEY,)).fetchone()
        if not (row and row[0]):
            return
        owner = _new_loader()
        try:
            lake = self._lake = self._open_lake()
            self._fences.create(lake, owner)
            for old in self._fences.loaders(lake):  # no earlier loader's commit lands now
                if old != owner:
                    self._fences.drop(lake, old)
            self.owner = owner
            self.counters["elections"] += 1
            self._recover(con, lake)
            con.execute(
                f"INSERT INTO {SCHEMA}.loader (id, owner) VALUES (1, %s) ON CONFLICT (id) DO "
                "UPDATE SET owner = EXCLUDED.owner, since = now()",
                (owner,),
            )
        except BaseException:
            self._resign()
            raise
        log.info("lake loader elected: %s", owner)

    def _recover(self, con: psycopg.Connection, lake) -> None:
        """Delete the staged groups the lake already holds (a loader died between its lake
        commit and its delete). Looked up by game_id within the groups' received_at range."""
        groups = con.execute(
            f"SELECT id, game_ids, received_min, received_max FROM {SCHEMA}.groups ORDER BY id"
        ).fetchall()
        if not groups:
            return
        ids = [str(g) for _, gids, _, _ in groups for g in gids]
        low = min(r[2] for r in groups)
        high = max(r[3] for r in groups)
        found = {
            str(g)
            for (g,) in lake.execute(
                "SELECT game_id::VARCHAR FROM raw_records WHERE received_at BETWEEN ? AND ? "
                "AND game_id IN (SELECT unnest(?::UUID[]))",
                [low, high, ids],
            ).fetchall()
        }
        done = [gid for gid, gids, _, _ in groups if str(gids[0]) in found]
        if done:
            con.execute(f"DELETE FROM {SCHEMA}.groups WHERE id = ANY (%s)", (done,))
            self.counters["recovered"] += len(done)
            log.warning("lake loader: %d staged groups were in the lake already", len(done))

    def load_once(self) -> int:
        """One load: up to `batch_games` staged games into the lake in one commit, then
        deleted from staging. Returns the games loaded."""
        con, lake, owner = self._pg(), self._lake, self.owner
        if owner is None or lake is None:
            return 0
        staged, oldest, _ = self._look(con)
        if not staged:
            return 0
        began = time.perf_counter()
        heads = con.execute(f"SELECT id, games FROM {SCHEMA}.groups ORDER BY id").fetchall()
        take: list[int] = []
        games = 0
        for gid, n in heads:
            if take and games + n > self.batch_games:
                break
            take.append(gid)
            games += n
        rows = con.execute(  # binary: the blobs as bytes, not hex text to decode
            f"SELECT id, games, tables, blobs FROM {SCHEMA}.groups WHERE id = ANY (%s) ORDER BY id",
            (take,),
            binary=True,
        ).fetchall()
        if not rows:
            return 0
        tables = gather([(names, blobs) for _, _, names, blobs in rows])
        self._commit(lake, tables, owner)
        ids = [r[0] for r in rows]
        games = sum(r[1] for r in rows)
        con.execute(f"DELETE FROM {SCHEMA}.groups WHERE id = ANY (%s)", (ids,))
        con.execute(
            f"UPDATE {SCHEMA}.loader SET loaded_at = now(), loads = loads + 1, "
            "games = games + %s WHERE id = 1",
            (games,),
        )
        self.counters["loads"] += 1
        self.counters["loaded"] += games
        self.load_seconds.append(time.perf_counter() - began)
        del self.load_seconds[:-1000]
        self.staged = max(0, staged - games)
        return games

    def _resign(self) -> None:
        """No longer the loader: the lock goes with the session; the next election (here or
        elsewhere) fences this owner and settles what it left."""
        self.owner = None
        if self._con is not None:
            with contextlib.suppress(Exception):
                self._con.close()
            self._con = None
        if self._lake is not None:
            with contextlib.suppress(Exception):
                self._lake.close()
            self._lake = None
