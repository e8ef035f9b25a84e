"""`LakeStore`, the server's store on a lake, with the surface the app uses of `Store`
(docs/lake.md).

With staging (the default, staging.py) a group's claims, their marking and its rows are
one PostgreSQL transaction and the lake's elected loader commits them to the lake later; the
steps below are the direct path (`staging=False`), which imports and the fencing tests use.

Storing a group of games (the committer thread, one group at a time; requests queue meanwhile
and make the next group, as in store.py):

1. claim every new game_id of the group in PostgreSQL (claims.py): one round trip; a
   stored claim answers duplicate / conflict, a pending claim of a live server defers the
   request (answered again after a moment, else 503 + Retry-After: it is in flight there);
2. a stale pending claim (its lease ran out: its server died between its claim and marking it
   stored) is taken over only after *fencing* its owner and looking in the lake (below);
3. build the rows of verified games that came without them (the judge processes, gather.py);
4. one lake transaction: raw records, derived rows, and one row in this server's fence table;
   a commit conflict is retried (DuckLake retries snapshot conflicts itself, and this retries
   its failures again);
5. answer: an acknowledged game is in a lake commit. The housekeeping thread marks the
   claims stored just after (until then another server asking for them waits, as in 1).

Fencing. Every server owns a table `balance_fence.<owner>` in the lake and inserts a row into
it in every commit. To take over a dead server's stale claims, a server first drops that
table (a lake commit of its own): from then on no commit of the old owner can land (DuckLake
fails a transaction that inserts into a table dropped since it began, and the table is gone
for any later one). Only then does it read the lake: a game the old owner committed is there
(the claim is marked stored with the lake's hash: `duplicate` or `conflict`), a game it did not
can never appear (the claim changes owner by compare-and-set, and the new owner writes it).
So a game_id is stored once however servers die or stall, with no clock assumption: the lease
only decides how soon a claim may be taken over. A server whose own fence was dropped (it
stalled past its lease) fails that group, releases its claims, continues as a new owner with
a new fence and tries the group's requests again. Every server also settles stale claims of
others at start and every lease (`sweep_stale`), so a dead server's committed games get
their claims marked without waiting for a retry.

A commit that fails for a reason other than a conflict (PostgreSQL unreachable, the data
path failing) may or may not have landed: the server fences itself and looks in the lake; its
claims are then marked stored or released. Until that works, uploads are answered 503 and a
probe retries every few seconds (`failure`, /healthz).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import TimeoutError as CommitTimeout
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import duckdb
import orjson
import psycopg
import pyarrow as pa

from .. import codec, registry, rows
from .. import failures as failures_mod
from ..failures import Failures, StorageUnavailable, logged_reason, without_passwords
from ..interface import Pinned
from ..rejudge import QUARANTINED, VERIFIED, Rejudge, rows_judged_again
from ..shared import (
    ACCEPTED,
    CONFLICT,
    DUPLICATE,
    STOP,
    Call,
    Pending,
    insert_tables,
    storage_error,
    transaction,
)
from . import staging as lake_staging
from .claims import STORED, Claims
from .connections import (
    FENCES,
    LAKE,
    PG,
    _local_data_path,
    check_version,
    connect,
    conninfo,
    latest_snapshot,
)
from .loader import (
    COMMIT_RETRIES,
    _is_conflict,
    _missing_fence,
    drop_fence,
    lake_hashes,
    make_fence,
    make_loader,
    sweep_stale,
)
from .staging import Loader, LostClaims, Stager
from .token import TOKEN_WAIT, CommitToken

log = logging.getLogger("ingest.lake")

# seconds a pending claim is its owner's before it may be taken over: with staging a claim is
# pending only while its group is judged and staged (milliseconds to a second or two), and the
# staging transaction's compare-and-set (staging.py) needs no clock to stay correct
LEASE = 10.0
IN_FLIGHT_WAIT = 5.0  # seconds a request waits for a game another server is committing
RETRY_AFTER_IN_FLIGHT = 1
_FENCE_TRIM = 500  # a server empties its fence table every this many commits
_PROBE_FIRST, _PROBE_MAX = 0.5, 10.0
# A lake call (a group commit, a call, the probe) that has not returned after this long means
# the catalog or the data path is not answering (a frozen PostgreSQL, a hung mount): uploads
# are answered 503 at once, and /healthz says so, until it returns. Above the commit token's
# wait (TOKEN_WAIT) and a commit's conflict retries, which a busy lake may take.
STALL_AFTER = 20.0
# committer threads of a server with staging (each its own PostgreSQL connection): a group's
# one statement takes about a round trip, and with more threads the gatherer's chunks, and so
# the groups, were smaller, each costing its statement, its Arrow tables and the loader's
# unpacking (measured: 4 threads did not store more games a second than 2, at more CPU a game)
STAGERS = 2
# /healthz says "degraded" (still 200) once a lake call has waited this long, or the loader is
# this many seconds behind: the load balancer may prefer other servers before anything fails
DEGRADED_AFTER, LOADER_LATE = 2.0, 10.0
# A call (a jobs run's publish, a rejections flush) may be long on a large lake: its own
# limit (uploads queued behind it still time out at their deadline).
CALL_STALL_AFTER = 300.0


class _Fenced(Exception):
    """This server's fence table was dropped: another server took over its stale claims."""


class _NotStored(Exception):
    """Rows that do not fit the tables (a bug): nothing written, the claims released."""

    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause


class _Busy(StorageUnavailable):
    """A commit lost to other writers' commits every time it was tried (nothing stored): the
    request is answered 503, the store is not failing."""


@dataclass(slots=True, eq=False)
class _Task:
    """One request's games in the committer's queue; `done` is set once it is answered."""

    items: list[Pending]
    deadline: float  # monotonic: not started by then, it fails with CommitTimeout
    done: threading.Event = field(default_factory=threading.Event)
    outcomes: list[str] | None = None
    error: BaseException | None = None
    retry: bool = False  # a game of it is in flight at another server: nothing stored


def _new_owner() -> str:
    return f"s{os.getpid()}_{uuid.uuid4().hex[:12]}"


def lake_error(exc: BaseException) -> bool:
    """Whether `exc` says the lake's storage failed (PostgreSQL unreachable, the data path
    failing) rather than that some rows did not fit."""
    if storage_error(exc) or isinstance(exc, (duckdb.ConnectionException, duckdb.HTTPException)):
        return True
    if isinstance(exc, (duckdb.TransactionException, duckdb.InternalException)):
        return True
    if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
        return True  # staging's connection (staging.py)
    text = str(exc).lower()
    return any(w in text for w in ("postgres", "connect", "server closed", "timeout", "ssl"))


class LakeStore:
    """The server's store on a lake; the surface of `Store` the app uses (see the module
    docstring for the write path). `work_dir` is this server's own local directory (the
    dashboard's snapshots go there, next to `path`); a temporary one by default."""

    defer_rows = True  # takes verified games without their rows (gather.py): built before commit
    shared_writers = True  # every server of the lake writes it (interface.GameStore)
    # a group's rows are staged with it: built in the gatherer's judge process, in the replay
    # that judged the game, not in a second replay on the judge pool before the commit
    rows_when_judged = True

    def __init__(
        self,
        catalog: str,
        data_path: str | None = None,
        *,
        commit_max: int = 5000,
        on_commit: Callable[[int, float], None] | None = None,
        judge=None,
        threads: int = 0,
        work_dir: str | Path | None = None,
        lease: float = LEASE,
        in_flight_wait: float = IN_FLIGHT_WAIT,
        commit_retries: int = COMMIT_RETRIES,
        heartbeat: float = 5.0,
        min_free: int | None = None,
        commit_token: bool = True,
        token_wait: float = TOKEN_WAIT,
        stall_after: float = STALL_AFTER,
        staging: bool = True,
        loader: bool = True,
        staging_max: int = lake_staging.STAGING_MAX,
        load_every: float = lake_staging.LOAD_EVERY,
        load_games: int = lake_staging.LOAD_GAMES,
        stagers: int = STAGERS,
        stage_new: bool = True,
    ):
        self.catalog = catalog
        # staging (staging.py): an upload is acknowledged once PostgreSQL holds it, and
        # the lake's one loader moves it into the lake; off: each group waits for its own lake
        # commit (the path `balance lake import` and the tests of fencing use)
        self.staging = staging
        self.staging_max = int(staging_max)
        # a group of games nobody claimed yet staged in one statement (Stager.stage_new);
        # off: every group claims, then stages, in a transaction of its own
        self.stage_new = stage_new
        self._threads = threads
        self.min_free = failures_mod.min_free(min_free)
        self.commit_max = commit_max
        self.lease = float(lease)
        self.in_flight_wait = float(in_flight_wait)
        self.commit_retries = commit_retries
        self._on_commit = on_commit
        self._judge = judge
        self.rebuild: Callable[[list, list], list] | None = None  # set by the app (workers)
        self._own_dir = work_dir is None
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="balance-lake-"))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.path = str(self.work_dir / "lake")
        try:
            self._con = connect(catalog, data_path, threads=threads)
            # token_wait: how long a commit waits for a token another server holds
            self._token = CommitToken(conninfo(catalog), token_wait) if commit_token else None
            # the loader's own (a token is one connection, used by one thread)
            self._load_token = (
                CommitToken(conninfo(catalog), token_wait) if commit_token and staging else None
            )
            check_version(self._con)
            # the lake's rulesets; another server's registrations are read again when a
            # record names one this server has not seen (pipeline.recheck_unknown)
            self._registry_version = registry.LakeVersion(conninfo(catalog))
            self.registry = registry.Registry(self._load_rulesets, version=self._registry_version)
            self.registry.reload()
            if judge is not None:
                judge.registry = self.registry
            self._space_dir = _local_data_path(self._con)
            self._writer = self._cursor()
            self._claims = Claims(self._con.cursor(), PG)
            self._house_claims = Claims(self._con.cursor(), PG)
            self.owner = _new_owner()
            self._make_fence()
            self._claims.register(self.owner, socket.gethostname(), os.getpid())
            self._known = self._claims.stored_count()
            if staging:
                lake_staging.install(conninfo(catalog))
        except BaseException:
            self._undo_open()
            raise
        # staging: several committer threads, each with its own PostgreSQL connection, so
        # that a group's claim and staging transaction overlap the next group's (one thread
        # waiting on PostgreSQL's fsync capped a server at one group per round trip)
        self._stagers_n = max(1, int(stagers)) if staging else 1
        self._stagers: list[Stager] = []
        self._local = threading.local()
        self._lake_lock = threading.RLock()  # the lake cursor and DuckDB claims: one at a time
        self._last_group = 0  # the id of the last group this server staged
        self._loader: Loader | None = None
        if staging:
            self._loader = make_loader(
                catalog,
                threads=threads,
                token=self._load_token,
                every=load_every,
                batch_games=load_games,
                elect=loader,
                on_backlog=self._backlog,
            )
        self._commits = 0
        self._closed = False
        self._sweep_at = 0.0
        self._queue: deque = deque()
        self._cond = threading.Condition()
        # causes: "lake" (see _fail), "space" (the data path's disk, _check_space)
        self._failures = Failures("lake", log)
        self._check_space()
        self._probe_at, self._probe_backoff = 0.0, _PROBE_FIRST
        self.stall_after = float(stall_after)
        # the committer's lake call: since when (monotonic), and how long it may take
        self._busy: dict[int, tuple[float, float]] = {}  # per committer thread
        self._house_since: float | None = None  # the housekeeping's lake call, since when
        # claims of commits whose outcome is not known yet: (keys, owner at the time)
        self._unresolved: list[tuple[list[int], str]] = []
        # committed games whose claims the housekeeping thread marks stored (off the commit
        # path: the answer needs the lake commit only; until marked, another server waits)
        self._unmarked: deque[tuple[list[int], str]] = deque()
        self._marks = threading.Condition()
        self._marking = False
        self._resolved: dict[tuple, bool] = {}  # unresolved commits settled: landed?
        self.commit_seconds: deque[float] = deque(maxlen=10_000)  # recent lake commits
        self.counters = {"conflict_retries": 0, "takeovers": 0, "adopted": 0, "deferred": 0}
        self._heartbeat = heartbeat
        self._stop_house = False
        try:
            self._sweep()  # claims a dead server left (before serving: its games settle now)
        except BaseException:
            self._con.close()
            raise
        self._thread = threading.Thread(target=self._run, name="lake-commit", daemon=True)
        self._thread.start()
        self._more = [
            threading.Thread(target=self._run_more, name=f"lake-stage-{n}", daemon=True)
            for n in range(1, self._stagers_n)
        ]
        for thread in self._more:
            thread.start()
        self._house = threading.Thread(target=self._housekeep, name="lake-house", daemon=True)
        self._house.start()
        if self._loader is not None:
            self._loader.start()

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        cur = self._con.cursor()
        cur.execute(f"USE {LAKE}")
        return cur

    # -- public interface -------------------------------------------------------------------

    @property
    def failure(self) -> str | None:
        return self._failures.reason or self._stalled()

    def health(self) -> dict:
        failing = self._failures.health()
        waited = self._stall_seconds()
        if failing["failure"] is None and waited:
            failing = {"failure": _stall_reason(waited), "failing_seconds": round(waited, 1)}
        with self._cond:
            queued = sum(len(t.items) for t in self._queue if isinstance(t, _Task))
        out = {**failing, "journal_backlog": queued, "lake_owner": self.owner}
        loader = self._loader
        if loader is not None:
            out["staging"] = {
                "staged_games": loader.staged,
                "oldest_seconds": round(loader.oldest, 1),
                "loader_here": loader.owner is not None,
                "loader_error": loader.error,
            }
        return out

    def degraded(self) -> str | None:
        """Why this server is slower than it should be, while it still stores uploads: a
        lake call slower than a few seconds (before it counts as a stall), or the loader
        behind (staged games waiting long). None when all is well."""
        now = time.monotonic()
        for began, limit in list(self._busy.values()):
            if now - began >= min(DEGRADED_AFTER, limit):
                return f"a lake call has waited {now - began:.0f} s"
        house = self._house_since
        if house is not None and now - house >= DEGRADED_AFTER:
            return f"a catalog call has waited {now - house:.0f} s"
        loader = self._loader
        if loader is not None and loader.oldest >= LOADER_LATE:
            return f"the lake's loader is {loader.oldest:.0f} s behind ({loader.staged} games)"
        if loader is not None and loader.seen_at and now - loader.seen_at >= LOADER_LATE:
            return f"staging not seen for {now - loader.seen_at:.0f} s"
        return None

    def gauges(self) -> dict[str, tuple[str, float]]:
        """For /metrics (Metrics.sources): the lake's events since this server started."""
        token = self._token.counters if self._token is not None else {"held": 0, "missed": 0}
        return {
            "balance_lake_commits_with_token_total": (
                "Lake commits made holding the commit token.",
                token["held"],
            ),
            "balance_lake_commits_without_token_total": (
                "Lake commits made without the commit token because it could not be had "
                "(held past its wait, or its connection down); 0 while it is turned off.",
                token["missed"],
            ),
            "balance_lake_conflict_retries_total": (
                "Lake commits this server tried again after DuckLake's own retries failed.",
                self.counters["conflict_retries"],
            ),
            "balance_lake_takeovers_total": (
                "Stale claims of dead servers this server took over.",
                self.counters["takeovers"],
            ),
            "balance_lake_adopted_total": (
                "Stale claims whose game was found in the lake, marked stored.",
                self.counters["adopted"],
            ),
            **self._loader_gauges(),
        }

    def _loader_gauges(self) -> dict[str, tuple[str, float]]:
        loader = self._loader
        if loader is None:
            return {}
        return {
            "balance_lake_staged_games": (
                "Games acknowledged and staged, not in the lake yet (every server's).",
                loader.staged,
            ),
            "balance_lake_staged_oldest_seconds": (
                "Seconds the oldest staged game has waited for the loader (its lag).",
                loader.oldest,
            ),
            "balance_lake_loader": (
                "1 while this server is the lake's loader.",
                int(loader.owner is not None),
            ),
            "balance_lake_loads_total": (
                "Lake commits this server made as the loader.",
                loader.counters["loads"],
            ),
            "balance_lake_loaded_games_total": (
                "Games this server moved from staging into the lake as the loader.",
                loader.counters["loaded"],
            ),
            "balance_lake_loader_failures_total": (
                "Loader rounds that failed (each ends its election; retried).",
                loader.counters["failures"],
            ),
        }

    def ingest(self, items: list[Pending], timeout: float | None = 60.0) -> list[str]:
        """Store `items` (in order): accepted/quarantined/duplicate/conflict per item, after
        the lake commit that holds them. Raises CommitTimeout when the committer stayed busy
        (a long call) for `timeout` seconds, StorageUnavailable while the lake fails or when a
        game of the request is being stored by another server for longer than
        `in_flight_wait` (nothing of `items` was stored then)."""
        if not items:
            return []
        self._failures.check()
        stalled = self._stalled()
        if stalled is not None:
            raise StorageUnavailable(stalled)
        wait = 1e9 if timeout is None else timeout
        give_up = time.monotonic() + self.in_flight_wait
        pause = 0.02
        while True:
            task = _Task(items, time.monotonic() + wait)
            self._enqueue(task)
            self._await(task)
            if task.error is not None:
                raise task.error
            if not task.retry:
                if task.outcomes is None:  # (never: a task is answered, retried or failed)
                    raise RuntimeError("the commit was interrupted; nothing was stored")
                return task.outcomes
            if time.monotonic() + pause > give_up:
                raise StorageUnavailable(
                    "a game of this request is being stored by another server right now",
                    retry_after=RETRY_AFTER_IN_FLIGHT,
                )
            time.sleep(pause)
            pause = min(0.5, pause * 2)

    def _await(self, task: _Task) -> None:
        """Until the committer answered `task`; raises instead when the committer is stuck in
        a lake call (StorageUnavailable while the task is still queued: withdrawn, nothing of
        it stored) or the task's deadline passed (CommitTimeout: a task the committer took
        may still land, and a retry is then answered `duplicate`)."""
        while not task.done.wait(0.25):
            stalled = self._stalled()
            if stalled is None and time.monotonic() < task.deadline:
                continue
            with self._cond:
                queued = task in self._queue
                if queued:
                    self._queue.remove(task)
            if task.done.is_set():
                return
            if queued and stalled is not None:
                raise StorageUnavailable(stalled)
            raise CommitTimeout()

    def _stall_seconds(self) -> float:
        """How long the oldest lake call past its limit has waited (0: none): the
        committer's, or the housekeeping's (its heartbeat finds a hung catalog while no
        upload comes)."""
        now = time.monotonic()
        waits = [0.0]
        for began, limit in list(self._busy.values()):
            if now - began >= limit:
                waits.append(now - began)
        house = self._house_since
        if house is not None and now - house >= self.stall_after:
            waits.append(now - house)
        return max(waits)

    def _stalled(self) -> str | None:
        """Why uploads cannot be stored now if a lake call is stuck (see STALL_AFTER)."""
        waited = self._stall_seconds()
        return _stall_reason(waited) if waited else None

    def submit(
        self,
        fn: Callable[[duckdb.DuckDBPyConnection], object],
        *,
        transaction: bool = True,
        token: bool = False,
    ):
        """Run `fn(con)` on the committer thread (this server's uploads wait), on the lake,
        inside its own transaction unless `transaction` is False; a Future of its result.
        `token`: hold the commit token for it, so that it meets no other server's commit
        (for a short write: every other server's commits wait meanwhile)."""
        call = Call(fn, transaction, token=token)
        self._enqueue(call)
        return call.future

    def reader(self, wait: float = 30.0) -> duckdb.DuckDBPyConnection:
        """A new cursor on the lake for trusted read-only queries from another thread (the
        caller closes it): it sees every game acknowledged before the call, by any server,
        once the loader has moved them into the lake (waited for up to `wait` seconds; a
        loader further behind than that is logged and the cursor sees the lake as it is)."""
        self.wait_loaded(wait)
        return self._cursor()

    def wait_loaded(self, timeout: float = 30.0) -> bool:
        """Until every game staged before the call (by any server) is in the lake."""
        if self._loader is None:
            return True
        self._loader.kick()
        try:
            done = lake_staging.wait_loaded(conninfo(self.catalog), timeout)
        except Exception as exc:  # noqa: BLE001 - the reader sees the lake as it is
            log.warning("waiting for the loader: %s", without_passwords(str(exc)))
            return False
        if not done:
            log.warning("the lake's loader is behind: a reader sees the lake without the "
                        "games staged in the last %.0f s", timeout)  # fmt: skip
        return done

    def flush_rows(self, timeout: float | None = 60.0) -> None:
        """Wait until the claims of every game committed so far are marked stored (a game's
        rows are in the commit that acknowledged it: nothing else to wait for)."""
        deadline = time.monotonic() + (1e9 if timeout is None else timeout)
        with self._marks:
            while self._unmarked or self._marking:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("claims not marked stored in time")
                self._marks.wait(min(left, 0.5))
        if self._loader is not None and self._last_group:
            self._loader.kick()
            left = max(0.0, deadline - time.monotonic())
            if not lake_staging.wait_loaded(conninfo(self.catalog), left, self._last_group):
                raise TimeoutError("staged games not loaded into the lake in time")

    def known_count(self) -> int:
        """Games stored in the lake: this server's at once, every server's within a minute."""
        return self._known

    def stored_records(self) -> int:
        return self._known  # no lake query: a hung catalog must not hang /healthz

    def change_stamp(self) -> object:
        return self.pinned().version

    def pinned(self) -> Pinned:
        """The lake's latest snapshot: readers attach it at that version, nothing copied."""
        cur = self.reader()
        try:
            version, at = latest_snapshot(cur)
        finally:
            cur.close()
        return Pinned(self.catalog, version, at)

    def register_rulesets(self, files: list[tuple[str, str | bytes]]) -> list[dict]:
        """Under the lake's registry lock, on a connection of its own: based_on may name what
        another server registered, and every server reloads after."""
        with registry.lake_lock(conninfo(self.catalog)):
            self.registry.reload()  # bases registered by another server
            parsed = registry.parse_files(files, self.registry.lookup)
            con = self.reader()
            try:
                out = registry.register_in_transaction(con, parsed)
            finally:
                con.close()
        self.registry.reload()
        return out

    @property
    def parallel_groups(self) -> int:
        """Groups this store commits at once (its committer threads): the gatherer hands it
        that many chunks before it waits for one (gather.py)."""
        return self._stagers_n

    @property
    def closed(self) -> bool:
        """Closed: no upload or call is taken any more."""
        return self._closed

    def report(self, exc: BaseException) -> None:
        """A reader saw `exc`: a lake failure makes the committer probe the lake."""
        if lake_error(exc):
            self._fail(_reason("lake read", exc))

    def close(self, checkpoint: bool = True) -> None:
        """Answer what is queued, then leave: the fence table goes (no claim of this server
        is pending any more), the server is marked closed. No lake maintenance here (that is
        `balance lake maintain`, once, not by every server)."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._queue.append(STOP)
            self._cond.notify()
        self._thread.join()
        with self._cond:
            self._cond.notify_all()
        for thread in self._more:
            thread.join()
        if self._loader is not None:  # the last loader out leaves staging empty if it can
            self._loader.stop(timeout=10.0, drain=True)
        for stager in self._stagers:
            stager.close()
        with self._marks:
            self._stop_house = True
            self._marks.notify_all()
        self._house.join()  # after a last try to mark what is committed
        try:
            if self._unresolved:
                self._resolve_unresolved()
            if not self._unresolved:
                self._drop_fence(self.owner)
            self._claims.closed(self.owner)
        except Exception as exc:  # noqa: BLE001 - the lake is consistent either way
            log.warning("lake store closed uncleanly (claims are taken over later): %s", exc)
        with contextlib.suppress(duckdb.Error):
            self._con.close()
        if self._token is not None:
            self._token.close()
        self._registry_version.close()
        if self._load_token is not None:
            self._load_token.close()
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def _undo_open(self) -> None:
        """A store that failed to open (an unreachable catalog, an older lake): close what it
        opened and remove the directory it made, so that a server retrying leaks neither."""
        for name in ("_con", "_token", "_load_token", "_registry_version"):
            opened = getattr(self, name, None)
            if opened is not None:
                with contextlib.suppress(Exception):
                    opened.close()
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> LakeStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- failures ---------------------------------------------------------------------------

    def _fail(self, reason: str) -> None:
        """The lake failed: uploads are refused until the committer's probe (_probe) works."""
        if self._failures.fail("lake", reason):
            self._probe_at = time.monotonic() + self._probe_backoff

    def _check_space(self) -> bool:
        """Whether the data path's disk has `min_free` bytes free (a local data path only: an
        object store has no such limit); sets or clears the "space" cause. Checked at each
        group commit and at each heartbeat, as the file store checks its disk."""
        if self._space_dir is None:
            return True
        return failures_mod.check_space(self._failures, self._space_dir, self.min_free)

    def _clear(self) -> None:
        self._failures.clear("lake")
        self._probe_backoff = _PROBE_FIRST

    # -- the committer thread -----------------------------------------------------------------

    def _enqueue(self, item) -> None:
        with self._cond:
            if self._closed:
                raise RuntimeError("store is closed")
            self._queue.append(item)
            self._cond.notify()

    def _take(self, tasks_only: bool = False):
        """The next call, or the next group of tasks (up to commit_max games), or STOP; None
        after a second without work (for the probe). `tasks_only`: a group or None (the
        other committer threads: calls and STOP are the first thread's)."""
        with self._cond:
            if not self._queue:
                self._cond.wait(1.0)
            if not self._queue:
                return None
            head = self._queue[0]
            if not isinstance(head, _Task):
                if tasks_only:
                    self._cond.wait(0.05)
                    return None
                return self._queue.popleft()
            group: list[_Task] = []
            size = 0
            while self._queue and isinstance(self._queue[0], _Task):
                task = self._queue[0]
                if group and size + len(task.items) > self.commit_max:
                    break
                group.append(self._queue.popleft())
                size += len(task.items)
            return group

    def _run(self) -> None:
        while True:
            work = self._take()
            if work is STOP:
                return
            if isinstance(work, Call):
                with self._busy_for(max(self.stall_after, CALL_STALL_AFTER)), self._lake_lock:
                    self._call(work)
            with self._busy_for(self.stall_after):
                if work is not None and not isinstance(work, Call):
                    self._commit_group(work)
                # between groups, busy or idle: the probe while failing, the sweep when due
                with self._lake_lock:
                    self._probe()
                    if not self._failures and time.monotonic() >= self._sweep_at:
                        self._sweep()

    def _run_more(self) -> None:
        """Another committer thread (staging): groups only, until the store closes."""
        while True:
            work = self._take(tasks_only=True)
            if work is None:
                if self._closed:
                    return
                continue
            with self._busy_for(self.stall_after):
                self._commit_group(work)

    def _claimer(self):
        """The claims of this committer thread: with staging its own PostgreSQL connection
        (a Stager), else the store's DuckDB one."""
        if not self.staging:
            return self._claims
        stager = getattr(self._local, "stager", None)
        if stager is None:
            stager = self._local.stager = Stager(conninfo(self.catalog))
            self._stagers.append(stager)
        return stager

    @contextlib.contextmanager
    def _busy_for(self, limit: float) -> Iterator[None]:
        """The committer is in a lake call that should return within `limit` seconds."""
        me = threading.get_ident()
        self._busy[me] = (time.monotonic(), limit)
        try:
            yield
        finally:
            self._busy.pop(me, None)

    def _commit_group(self, work: list[_Task]) -> None:
        try:
            self._commit_tasks(work)
        finally:
            for task in work:
                if task.outcomes is None and task.error is None and not task.retry:
                    task.error = RuntimeError("the commit was interrupted; nothing was stored")
                task.done.set()

    def _call(self, call: Call) -> None:
        if not call.future.set_running_or_notify_cancel():
            return
        try:
            with self._token_held() if call.token else contextlib.nullcontext():
                result = call.run(self._writer)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            call.future.set_exception(exc)
        else:
            call.future.set_result(result)

    def _sweep(self) -> None:
        """Settle stale claims of other servers (sweep_stale), at open and every lease."""
        self._sweep_at = time.monotonic() + max(10.0, self.lease)
        try:
            swept = sweep_stale(self._writer, self._claims, self.owner)
        except Exception as exc:  # noqa: BLE001 - next time
            log.warning("stale claims not settled (retried): %s", exc)
            return
        self.counters["adopted"] += swept["adopted"]

    def _probe(self) -> None:
        """While failing: once the backoff is over, settle the unresolved commits and try
        the lake and the claims; success clears the failure."""
        if not self._failures or time.monotonic() < self._probe_at:
            return
        try:
            self._resolve_unresolved()
            self._writer.execute("SELECT count(*) FROM store_meta").fetchall()
            self._claims.heartbeat(self.owner)
        except Exception as exc:  # noqa: BLE001 - retried with backoff
            self._probe_backoff = min(_PROBE_MAX, self._probe_backoff * 2)
            self._probe_at = time.monotonic() + self._probe_backoff
            self._fail(_reason("lake", exc))
            return
        self._clear()

    def _commit_tasks(self, tasks: list[_Task]) -> None:
        now = time.monotonic()
        live = []
        for task in tasks:
            if now > task.deadline:
                task.error = CommitTimeout()
            else:
                live.append(task)
        if not live:
            return
        self._check_space()
        if self._failures:
            for task in live:
                task.error = StorageUnavailable(self.failure or "storage unavailable")
            return
        try:
            if self._unresolved:
                self._resolve_unresolved()
            self._group(live)
        except _Fenced:  # nothing of the group was stored: every request is tried again
            for task in live:
                if task.outcomes is None:
                    task.retry = True
        except _Busy as exc:
            for task in live:
                if task.outcomes is None and not task.retry:
                    task.error = exc
        except _NotStored as exc:  # a bug in some rows: nothing stored, claims released
            self._one_by_one(live, exc.cause)
        except Exception as exc:
            if not (lake_error(exc) or isinstance(exc, StorageUnavailable)):
                self._one_by_one(live, exc)
                return
            reason = exc.reason if isinstance(exc, StorageUnavailable) else None
            reason = reason or _reason("lake write", exc)
            if not isinstance(exc, StorageUnavailable):
                self._fail(reason)
            for task in live:
                if task.outcomes is None and not task.retry:
                    task.error = StorageUnavailable(reason)

    def _one_by_one(self, live: list[_Task], exc: BaseException) -> None:
        """A group failed for something other than the storage: alone, its request gets the
        error (a 500); else each request is tried alone, so one bad request does not fail
        its neighbours."""
        if len(live) == 1:
            log.error("lake write failed: %s: %s", type(exc).__name__, exc)
            live[0].error = exc
            return
        for task in live:
            if task.outcomes is None and not task.retry:
                self._commit_tasks([task])

    def _group(self, tasks: list[_Task]) -> None:
        """Store a group: on the direct path claim, commit to the lake, answer; with staging
        all of the group's PostgreSQL work (its claims, marking them stored, its rows) is
        one transaction on this thread's connection, committed before anyone is answered.
        A server that dies inside it leaves nothing behind (PostgreSQL rolls it back: no
        pending claim waits for a lease), and a concurrent claim of the same game_id at
        another server waits for it, then reads it stored (`duplicate`)."""
        if not self.staging:
            self._group_body(tasks)()
            return
        stager = cast("Stager", self._claimer())
        sent: list[tuple[list[int], str]] = []  # the staged keys, once the statements went
        answers: list[Callable[[], None]] = []  # what answers the group, once it is known
        one_statement = self.stage_new
        try:
            if one_statement:
                self._stage_new(stager, tasks, sent, answers)
            if not answers:  # a game of the group was claimed already: claim, then stage
                one_statement = False
                with stager.transaction():
                    answers.append(self._group_body(tasks, sent))
        except LostClaims as exc:
            log.warning("staging: %s (taken over meanwhile): tried again", exc)
            raise _Fenced(self.owner) from exc
        except psycopg.errors.DeadlockDetected as exc:  # (keys are claimed in order: rare)
            raise _Fenced(self.owner) from exc
        except psycopg.Error as exc:
            # psycopg's errors do not say which database: the log gets it (password masked;
            # clients and /healthz get the scrubbed reason, `_reason`)
            named = psycopg.OperationalError(f"{exc}; the catalog: {self.catalog}")
            if not sent:  # rolled back: nothing of the group is stored
                raise named from exc
            keys, owner = sent[0]
            landed = stager.landed(keys, owner)  # the COMMIT failed: did it land?
            if not landed:  # no (False), or not known while the catalog is gone (None): a
                # transaction that did not commit left nothing behind, and one that did
                # answers a retry `duplicate`
                if one_statement:  # the group's first statement failed: as a claim that
                    raise named from exc  # failed, the store probes the catalog
                raise StorageUnavailable(_reason("staging", named)) from exc
            log.warning("a staging commit that raised had landed: %d games", len(keys))
        answers[-1]()
        if self._loader is not None and sent:
            if self._loader.staged + len(sent[0][0]) >= self._loader.batch_games:
                self._loader.kick()

    def _stage_new(self, stager: Stager, tasks: list[_Task], sent: list, answers: list) -> None:
        """The group as games no server has claimed: their rows built, then claims and rows
        in one statement (`Stager.stage_new`). What answers the tasks goes to `answers` (the
        statement's keys to `sent`) before the statement, so that one of unknown outcome is
        answered if it landed; both are emptied again when nothing was written because a game
        of the group was claimed already. Its rows are built before the
        claim, so a retry's are built in vain: retries are the exception, and the claim's row
        locks are then held for a round trip, not for the rows' building."""
        started = time.perf_counter()
        first: dict[int, Pending] = {}
        for task in tasks:
            for item in task.items:
                first.setdefault(item.key, item)
        keys = sorted(first)
        items = [first[k] for k in keys]
        self._fill_rows(items)
        tables = self._tables(items)
        received = (min(i.received for i in items), max(i.received for i in items))

        def answer() -> None:
            self._known += len(keys)
            for task in tasks:
                out = []
                for item in task.items:
                    stored = first[item.key]
                    if stored is item:
                        out.append(ACCEPTED if item.status == VERIFIED else QUARANTINED)
                    else:  # a repeat within the group answers from its first occurrence
                        same = stored.content_hash == item.content_hash
                        out.append(DUPLICATE if same else CONFLICT)
                task.outcomes = out
            if self._on_commit is not None:
                self._on_commit(sum(len(t.items) for t in tasks), time.perf_counter() - started)

        sent.append((keys, self.owner))  # from here on a failure may have landed
        answers.append(answer)
        group = stager.stage_new(
            keys, [item.content_hash for item in items], self.owner, received, tables
        )
        if group is None:
            sent.clear()
            answers.clear()
            return
        self._last_group = group
        self.commit_seconds.append(time.perf_counter() - started)

    def _group_body(self, tasks: list[_Task], sent: list | None = None) -> Callable[[], None]:
        """The group's claims, decisions and write; returns what answers its tasks (called
        once the write is durable)."""
        started = time.perf_counter()
        # the first occurrence of each game_id in the group; later ones answer from it
        first: dict[int, tuple[int, Pending]] = {}
        repeats: list[tuple[int, int, Pending]] = []  # (task, index, item)
        outcomes: list[list[str | None]] = [[None] * len(t.items) for t in tasks]
        for t, task in enumerate(tasks):
            for i, item in enumerate(task.items):
                if item.key in first:
                    repeats.append((t, i, item))
                else:
                    first[item.key] = (t, item)
        keys = sorted(first)  # one lock order on the claims for every server's transaction
        claims = self._claimer().claim(
            keys, [first[k][1].content_hash for k in keys], self.owner, self.lease
        )
        write: dict[int, Pending] = {}
        answer_hashes: dict[int, int] = {}  # key -> the hash stored (duplicate / conflict)
        deferred: set[int] = set()
        stale: list[tuple[int, str, Pending]] = []
        for key in keys:
            t, item = first[key]
            claim = claims.get(key)
            if claim is None:
                deferred.add(t)  # claimed concurrently, not visible yet: in flight
            elif claim.mine:
                write[key] = item
            elif claim.state == STORED:
                answer_hashes[key] = claim.content_hash
            elif claim.stale and claim.owner != self.owner:
                stale.append((key, claim.owner, item))
            else:
                deferred.add(t)  # another server is storing it now
        try:
            if stale:
                with self._lake_lock:
                    self._take_over(stale, write, answer_hashes, deferred, first)
            changed = True
            while changed:  # a repeat of a deferred first occurrence defers its task too
                changed = False
                for t, _, item in repeats:
                    if first[item.key][0] in deferred and t not in deferred:
                        deferred.add(t)
                        changed = True
            if deferred:
                self.counters["deferred"] += len(deferred)
                dropped = [k for k, (t, _) in first.items() if t in deferred and k in write]
                self._claimer().release(dropped, self.owner)
                for key in dropped:
                    del write[key]
            if write:
                self._fill_rows(list(write.values()))
        except BaseException:
            self._abandon(list(write), self.owner)
            raise
        if write and self.staging:
            self._stage(list(write.values()))
            if sent is not None:
                sent.append((list(write), self.owner))
        elif write:
            self._commit_lake(list(write.values()))

        def answer() -> None:
            self._known += len(write)
            for t, task in enumerate(tasks):
                if t in deferred:
                    task.retry = True
                    continue
                out = outcomes[t]
                for i, item in enumerate(task.items):
                    if first[item.key][1] is item and item.key in write:
                        out[i] = ACCEPTED if item.status == VERIFIED else QUARANTINED
                    else:
                        stored = answer_.get(item.key)
                        if stored is None:
                            stored = first[item.key][1].content_hash
                        out[i] = DUPLICATE if stored == item.content_hash else CONFLICT
                task.outcomes = cast("list[str]", out)  # every item answered just above
            if self._on_commit is not None:
                self._on_commit(sum(len(t.items) for t in tasks), time.perf_counter() - started)

        answer_ = answer_hashes
        return answer

    def _take_over(self, stale, write, answer, deferred, first) -> None:
        """Stale pending claims: fence their owners, then either adopt what the lake holds
        (stored) or take the claim over (compare-and-set) and write the game here."""
        for owner in sorted({o for _, o, _ in stale}):
            self._drop_fence(owner)
        present = self._lake_hashes([k for k, _, _ in stale])
        found = [(k, o, present[k]) for k, o, _ in stale if k in present]
        if found:
            self.counters["adopted"] += len(self._claims.adopt(found))
            for k, _, h in found:
                answer[k] = h
        absent = [(k, o, item.content_hash) for k, o, item in stale if k not in present]
        won = self._claims.take_over(absent, self.owner, self.lease)
        self.counters["takeovers"] += len(won)
        for k, _, _ in absent:
            if k in won:
                write[k] = first[k][1]
            else:
                deferred.add(first[k][0])
        if found or absent:
            log.warning(
                "stale claims of %s: %d found in the lake, %d taken over",
                ", ".join(sorted({o for _, o, _ in stale})),
                len(found),
                len(won),
            )

    def _abandon(self, keys: list[int], owner: str) -> None:
        """Nothing of these claims was written: release them, or (the catalog unreachable)
        leave them to `_resolve_unresolved`, which fences this owner first. With staging the
        group's transaction is rolled back instead, and its claims with it."""
        if not keys or self.staging:
            return
        try:
            self._claimer().release(keys, owner)
        except Exception:  # noqa: BLE001 - settled once the catalog answers
            self._unresolved.append((keys, owner))

    def _lake_hashes(self, keys: list[int]) -> dict[int, int]:
        return lake_hashes(self._writer, keys)

    # -- staging (staging.py) -------------------------------------------------------------

    def _stage(self, items: list[Pending]) -> None:
        """In the group's transaction (`_group`): its claims marked stored, its rows staged.
        LostClaims when a claim is not this owner's pending one any more."""
        keys = [item.key for item in items]
        owner = self.owner
        tables = self._tables(items)
        received = (min(i.received for i in items), max(i.received for i in items))
        began = time.perf_counter()
        self._last_group = cast("Stager", self._claimer()).stage(keys, owner, received, tables)
        self.commit_seconds.append(time.perf_counter() - began)

    def _tables(self, items: list[Pending]) -> dict[str, pa.Table]:
        """The staged tables of `items` (their rows built); _NotStored if they do not fit."""
        try:
            tables = {"raw_records": rows.to_arrow("raw_records", [i.raw_row() for i in items])}
            games: list[rows.Rows | rows.Part] = []
            for item in items:
                if item.rows is None:
                    raise ValueError(f"game {item.gid}: its rows were never built")
                games.append(item.rows)
            tables.update(rows.tables_of(games))
        except Exception as exc:  # rows that do not fit (a bug): nothing written
            raise _NotStored(exc) from exc
        return tables

    def _backlog(self, staged: int, oldest: float) -> None:
        """The loader's look at staging: past `staging_max` games uploads are refused
        (back-pressure, "staging" cause) until it is back under 90% of it."""
        if staged > self.staging_max:
            self._failures.fail(
                "staging",
                f"the lake's loader is behind: {staged} games wait to be loaded (the limit is "
                f"{self.staging_max}, BALANCE_LAKE_STAGING_MAX); retry shortly",
            )
        elif staged < 0.9 * self.staging_max:
            self._failures.clear("staging")

    # -- the lake commit ----------------------------------------------------------------------

    def _commit_lake(self, items: list[Pending]) -> None:
        """One lake transaction for `items` (claimed by this owner), then their claims marked
        stored. Raises (nothing acknowledged) unless the games are in the lake."""
        raw = [item.raw_row() for item in items]
        keys = [item.key for item in items]
        owner = self.owner
        try:
            tables = {"raw_records": rows.to_arrow("raw_records", raw)}
            games: list[rows.Rows | rows.Part] = []
            for item in items:  # (their rows built: `_fill_rows`)
                if item.rows is None:
                    raise ValueError(f"game {item.gid}: its rows were never built")
                games.append(item.rows)
            tables.update(rows.tables_of(games))
        except Exception as exc:  # rows that do not fit (a bug): nothing written
            self._abandon(keys, owner)
            raise _NotStored(exc) from exc
        try:
            self._commit_tries(tables, keys, owner)
        except (_Fenced, _NotStored, StorageUnavailable):
            raise  # the claims are settled (released, or kept for `_resolve_unresolved`)
        except Exception:
            # not committed, or not known: settled by `_resolve_unresolved` (which fences
            # this owner first), never left pending under a live owner
            if not any(k is keys for k, _ in self._unresolved):
                self._unresolved.append((keys, owner))
            raise
        with self._marks:
            self._unmarked.append((keys, owner))
            self._marks.notify_all()

    def _commit_tries(self, tables: dict[str, pa.Table], keys: list[int], owner: str) -> None:
        """Commit, retrying conflicts; returns once the games are in the lake."""
        for attempt in range(self.commit_retries):
            began = time.perf_counter()
            try:
                self._commit_once(tables)
            except Exception as exc:
                if not _is_conflict(exc) and not _missing_fence(exc, owner):
                    if not lake_error(exc):  # rows that do not fit: nothing was written
                        self._claims.release(keys, owner)
                        raise _NotStored(exc) from exc
                    self._uncertain(keys, owner, exc)  # returns if the lake holds them
                    return
                if not self._fence_exists(owner):
                    self._fenced(keys, owner)
                self.counters["conflict_retries"] += 1
                if attempt == self.commit_retries - 1:
                    self._claims.release(keys, owner)
                    raise _Busy(_reason("lake commit (conflicts)", exc)) from exc
                time.sleep(0.05 * (attempt + 1))
                continue
            self.commit_seconds.append(time.perf_counter() - began)
            return

    def _commit_once(self, tables: dict[str, pa.Table]) -> None:
        con = self._writer
        self._commits += 1
        with self._token_held(), transaction(con):
            insert_tables(con, tables)
            fence = f"{LAKE}.{FENCES}.{self.owner}"
            if self._commits % _FENCE_TRIM == 0:
                con.execute(f"DELETE FROM {fence}")
            con.execute(f"INSERT INTO {fence} VALUES (?, now()::TIMESTAMP)", [self._commits])

    def _token_held(self) -> contextlib.AbstractContextManager:
        return self._token.held() if self._token is not None else contextlib.nullcontext()

    def _uncertain(self, keys: list[int], owner: str, exc: BaseException) -> None:
        """A commit failed in a way that may have landed. Fence this owner (no commit of it
        can land later), look in the lake: present, the commit stands (return); absent, the
        claims are released and StorageUnavailable raised. Unreachable lake: the claims are
        kept for `_resolve_unresolved` and the failure is raised."""
        self._unresolved.append((keys, owner))
        self._resolve_unresolved()  # raises while the lake is unreachable
        if not self._resolved.pop(tuple(keys), False):
            raise StorageUnavailable(_reason("lake commit", exc)) from exc
        log.warning("a lake commit that raised had landed: %d games stored", len(keys))

    def _resolve_unresolved(self) -> None:
        """Settle commits of unknown outcome: fence their owner (this server, under the owner
        name it had then), look in the lake, mark stored what is there, release the rest."""
        while self._unresolved:
            keys, owner = self._unresolved[0]
            if owner == self.owner:
                self._renew_owner()
            self._drop_fence(owner)
            present = self._lake_hashes(keys)
            stored = [k for k in keys if k in present]
            missing = [k for k in keys if k not in present]
            self._claims.mark_stored(stored, owner)
            self._claims.release(missing, owner)
            self._resolved[tuple(keys)] = bool(stored)
            if len(self._resolved) > 100:  # only the last one is asked for
                self._resolved.pop(next(iter(self._resolved)))
            self._unresolved.pop(0)

    def _fenced(self, keys: list[int], owner: str) -> None:
        """This owner's fence is gone (it was presumed dead): this commit did not land. Its
        claims that were not taken over are released; a new owner and fence from now on."""
        log.warning("this server's fence was dropped (stalled past its lease?): new owner")
        with contextlib.suppress(Exception):
            self._claims.release(keys, owner)
        self._renew_owner()
        raise _Fenced(owner)

    def _renew_owner(self) -> None:
        old = self.owner
        self.owner = _new_owner()
        self._make_fence()
        self._claims.register(self.owner, socket.gethostname(), os.getpid())
        with contextlib.suppress(Exception):
            self._claims.closed(old)

    def _make_fence(self) -> None:
        make_fence(self._writer, self.owner)

    def _drop_fence(self, owner: str) -> None:
        drop_fence(self._writer, owner)

    def _fence_exists(self, owner: str) -> bool:
        ((n,),) = self._writer.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = ? "
            "AND schema_name = ? AND table_name = ?",
            [LAKE, FENCES, owner],
        ).fetchall()
        return bool(n)

    # -- rows ---------------------------------------------------------------------------------

    def _local_judge(self) -> Rejudge:
        self._judge = self._judge or Rejudge(registry=self.registry)
        return self._judge

    def _load_rulesets(self) -> tuple:
        cur = self._cursor()
        try:
            return registry.load_with_times(cur)
        finally:
            cur.close()

    def _fill_rows(self, items: list[Pending]) -> None:
        """Build the rows of verified games that came without them (gather.py): in the judge
        processes (`rebuild`), else here. A game whose verdict changed on the way (a bug)
        is stored quarantined with rule 'internal', as the file store does."""
        missing = [item for item in items if item.rows is None]
        if not missing:
            return
        lines = [(i, codec.decode(item.codec, item.blob)) for i, item in enumerate(missing)]
        times = [item.received for item in missing]
        built = rows_judged_again(lines, times, self.rebuild, self._local_judge)
        for item, (_, text), (status, game_rows) in zip(missing, lines, built, strict=True):
            if status == item.status and game_rows is not None:
                item.rows = game_rows
                continue
            log.error("game %s: judged again, its verdict changed; quarantined", item.gid)
            record = orjson.loads(text)
            fault = SimpleNamespace(
                rule="internal", turn=None, seat=None, message="judged again, its verdict changed"
            )
            item.status = QUARANTINED
            item.rows = rows.quarantine_row(item.gid, record, fault, item.received)

    # -- housekeeping -------------------------------------------------------------------------

    def _housekeep(self) -> None:
        """Mark committed claims stored (at once), heartbeat, refresh the stored count."""
        last_beat = last_count = time.monotonic()
        backoff = 0.0
        while True:
            with self._marks:
                if not self._unmarked and not self._stop_house:
                    self._marks.wait(self._heartbeat)
                batch = list(self._unmarked)
                self._marking = bool(batch)
                stopping = self._stop_house
            self._house_since = time.monotonic()
            try:
                done = 0
                for keys, owner in _by_owner(batch):
                    self._house_claims.mark_stored(keys, owner)
                    done += 1
                with self._marks:
                    for _ in batch:
                        self._unmarked.popleft()
                    self._marking = False
                    self._marks.notify_all()
                backoff = 0.0
                now = time.monotonic()
                if now - last_beat >= self._heartbeat and not stopping:
                    self._house_claims.heartbeat(self.owner)
                    self._check_space()  # so uploads resume once room is back
                    last_beat = now
                if now - last_count > 60.0 and not stopping:
                    self._known = self._house_claims.stored_count()
                    last_count = now
                self._house_since = None
            except Exception as exc:  # noqa: BLE001 - retried; a dead server's are adopted
                self._house_since = None
                with self._marks:
                    self._marking = False
                    self._marks.notify_all()
                log.warning("lake housekeeping (retried): %s", without_passwords(str(exc)))
                if stopping:
                    return
                backoff = min(5.0, backoff * 2 or 0.1)
                time.sleep(backoff)
                continue
            if stopping:
                return


def _by_owner(batch: list[tuple[list[int], str]]) -> list[tuple[list[int], str]]:
    merged: dict[str, list[int]] = {}
    for keys, owner in batch:
        merged.setdefault(owner, []).extend(keys)
    return [(keys, owner) for owner, keys in merged.items()]


def _stall_reason(waited: float) -> str:
    return f"the lake is not answering (a lake call has waited {waited:.0f} s)"


def _reason(what: str, exc: BaseException) -> str:
    """The failure's reason for clients and /healthz: no catalog string, host, password or
    path (the log gets it whole, passwords masked)."""
    return logged_reason(log, what, exc)
