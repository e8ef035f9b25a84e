"""The surface every backend of the store offers, declared once, and `open_store`, the one way
to make one.

Two backends implement it: `Store` (store.py: one DuckDB file, one writing process) and
`LakeStore` (lake/store.py: several servers on one DuckLake). The server (ingest/), the jobs and the
dashboard use a store only through `GameStore`: where the backends differ (a lake is written
by other servers too, keeps versions, has a catalog to lock), the difference is a method or
a declared capability here, never a test of the backend's class. A third backend is one more
module in this folder that offers this surface and one more branch in `open_store`.

Named errors every backend raises:

- `StorageUnavailable` (failures.py): uploads cannot be made durable now (a full disk, an I/O
  error, a lake that does not answer); `reason` says why, `retry_after` when to try again.
  `ingest` raises it before storing anything.
- `concurrent.futures.TimeoutError`: `ingest` waited `timeout` seconds for the store (busy
  with a long call); nothing of that upload was stored.
- `TimeoutError`: `flush_rows` did not see the rows written in time.
- `RuntimeError("store is closed")`: an upload or a call after `close`.
- `registry.Refused`: `register_rulesets` refused the files (nothing registered).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: a Target is had without DuckDB and Arrow (where.py)
    import duckdb

    from . import registry
    from .lake import LakeStore
    from .shared import Pending
    from .store import Store


class Pinned(NamedTuple):
    """A version of a store that keeps versions (a lake's snapshot): readers attach it
    read-only and see the same data however long they read, with nothing copied."""

    catalog: str
    version: int
    at: str  # when it was taken, ISO 8601 UTC


@runtime_checkable
class GameStore(Protocol):
    """A store of uploaded games, as the server, the jobs and the dashboard use it."""

    # -- attributes ---------------------------------------------------------------------------

    path: str
    """A local path this process owns for the store; its own files (the dashboard's
    snapshots) go beside it."""

    registry: registry.Registry
    """The registered rulesets the store judges by (rulesets.md RS5); `reload` after another
    process may have registered one."""

    rebuild: Callable[[list, list], list] | None
    """Set by the app: builds the rows of verified games that came without them (its judge
    processes); None: the store builds them on its own threads."""

    defer_rows: bool
    """Takes verified games without their rows (`Pending.rows` None) and builds them before
    they are readable: the app hands such games over (gather.py) only when this is true."""

    rows_when_judged: bool
    """Wants a verified game's rows built where it is judged (the gatherer's judge process,
    one replay) rather than later (`rebuild`): a store that writes them at once (a lake
    stages them with the game). False: the rows are built later, in batches."""

    shared_writers: bool
    """Other processes write the same store (a lake's other servers). A long write (reverify)
    then runs in batches on a connection of its own, pausing commits for each batch, rather
    than as one `submit` that would stop this process's uploads for its whole length."""

    @property
    def parallel_groups(self) -> int:
        """Groups of uploads the store commits at once: the gatherer hands it that many chunks
        before it waits for one (1: one at a time)."""
        ...

    @property
    def failure(self) -> str | None:
        """Why uploads cannot be stored now (None: they can)."""
        ...

    @property
    def closed(self) -> bool:
        """Closed: no upload or call is taken any more."""
        ...

    # -- writing ------------------------------------------------------------------------------

    def ingest(self, items: list[Pending], timeout: float | None = 60.0) -> list[str]:
        """Store `items` in order; per item ACCEPTED / QUARANTINED / DUPLICATE / CONFLICT, once
        durable (a 2xx may be sent then). Raises StorageUnavailable or TimeoutError with
        nothing of `items` stored."""
        ...

    def submit(
        self,
        fn: Callable[[duckdb.DuckDBPyConnection], object],
        *,
        transaction: bool = True,
        token: bool = False,
    ) -> Future:
        """Run `fn(con)` on the store's writing connection (this process's uploads wait),
        in a transaction of its own unless `transaction` is False; a Future of its result.
        `token`: the write must meet no other process's commit (on a store with
        `shared_writers`, every other writer waits meanwhile; a single writer already meets
        none)."""
        ...

    def register_rulesets(self, files: list[tuple[str, str | bytes]]) -> list[dict]:
        """Register the ruleset TOML `files` ((source, text) each): all or none (registry.Refused
        names the parameter); the registry is reloaded after."""
        ...

    def flush_rows(self, timeout: float | None = 60.0) -> None:
        """Until everything acknowledged so far is readable, derived rows included."""
        ...

    def close(self, checkpoint: bool = True) -> None:
        """Answer what is queued, then stop taking uploads and calls."""
        ...

    def __enter__(self) -> GameStore: ...

    def __exit__(self, *exc: object) -> None: ...

    # -- reading ------------------------------------------------------------------------------

    def reader(self) -> duckdb.DuckDBPyConnection:
        """A new cursor for trusted read-only queries from another thread (the caller closes
        it); it sees every game acknowledged before the call."""
        ...

    def known_count(self) -> int:
        """Games stored, as this process knows without a query."""
        ...

    def stored_records(self) -> int:
        """Stored raw records for /healthz: a query where one cannot hang (a file), the known
        count where it could (a lake's catalog): a hung store must not hang the health check."""
        ...

    def change_stamp(self) -> object:
        """A cheap value that changes whenever the stored data does (the dashboard takes a
        new snapshot when it changed)."""
        ...

    def pinned(self) -> Pinned | None:
        """The store's latest version, when it keeps versions (a lake); None when a reader
        needs a copy instead (a file: `submit` a copy on the writing connection)."""
        ...

    # -- health -------------------------------------------------------------------------------

    def health(self) -> dict:
        """For /healthz: `failure` (None when ok), `failing_seconds`, `journal_backlog` (games
        acknowledged and not yet readable), and what else the backend reports."""
        ...

    def degraded(self) -> str | None:
        """Why the store is slower than it should be while it still stores uploads; None."""
        ...

    def gauges(self) -> dict[str, tuple[str, float]]:
        """Metrics of the backend for /metrics: name -> (help, value)."""
        ...

    def report(self, exc: BaseException) -> None:
        """A reader saw `exc`: the store checks whether its storage failed."""
        ...


@dataclass(frozen=True)
class Target:
    """Which store: a DuckDB file (`db`), or a lake (`lake`: its PostgreSQL catalog; `data_path`:
    its data files, when not the one the catalog records)."""

    db: str | None = None
    lake: str | None = None
    data_path: str | None = None

    def __post_init__(self) -> None:
        if (self.db is None) == (self.lake is None):
            raise ValueError("a store target names exactly one of a file (db) and a lake")
        if self.data_path is not None and self.lake is None:
            raise ValueError("data_path is a lake's (a file keeps its data in itself)")

    @property
    def kind(self) -> str:
        return "lake" if self.lake is not None else "file"

    def describe(self) -> str:
        return f"lake {self.lake}" if self.lake is not None else f"store file {self.db}"


def open_store(
    target: Target,
    *,
    file_options: dict | None = None,
    lake_options: dict | None = None,
    **common,
) -> GameStore:
    """The store `target` names, open for writing. `common`: what every backend takes
    (commit_max, on_commit, judge, threads, min_free); `file_options` / `lake_options`: the
    settings of one backend only (the other's are ignored, so a caller passes both)."""
    if target.lake is not None:
        from .lake import LakeStore  # its extensions load only for a lake

        return LakeStore(target.lake, target.data_path, **common, **(lake_options or {}))
    from .store import Store

    assert target.db is not None
    return Store(target.db, **common, **(file_options or {}))


if TYPE_CHECKING:  # mypy holds both backends to the protocol

    def _file(store: Store) -> GameStore:
        return store

    def _lake(store: LakeStore) -> GameStore:
        return store
