"""The store's declared surface (ingest/storage/interface.py): both backends offer it, the
server uses nothing else, and a third backend is one class.

A backend's conformance is checked twice: mypy holds `Store` and `LakeStore` to `GameStore`
(interface.py's TYPE_CHECKING block, run by CI), and here every member's signature is compared
(names, kinds and defaults of the parameters), and a real `Store` is an instance of it. The
in-memory backend below is written against the protocol alone (shared.py's helpers, nothing of
store.py or lake/store.py): the whole app, uploads to /healthz, /metrics and the admin routes, runs
on it."""

from __future__ import annotations

import inspect
import threading
from concurrent.futures import Future

import duckdb
import orjson
import pytest
from support import examples_dir

from ingest.storage import (
    ACCEPTED,
    CONFLICT,
    DUPLICATE,
    QUARANTINED,
    VERIFIED,
    GameStore,
    Pending,
    Store,
    Target,
    insert_tables,
    open_store,
    registry,
    rows,
    schema_sql,
    transaction,
)
from ingest.storage.lake import LakeStore

EXAMPLES = examples_dir()


def _members(proto: type) -> dict[str, object]:
    """The protocol's methods and properties (what a backend must define on its class)."""
    out = {}
    for name, value in vars(proto).items():
        if name.startswith("_") and name not in ("__enter__", "__exit__"):
            continue
        if callable(value) or isinstance(value, property):
            out[name] = value
    return out


def _parameters(fn) -> list[tuple[str, object, object]]:
    sig = inspect.signature(fn.fget if isinstance(fn, property) else fn)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


@pytest.mark.parametrize("backend", [Store, LakeStore], ids=["file", "lake"])
def test_each_backend_defines_every_member_with_the_declared_parameters(backend):
    members = _members(GameStore)
    assert {"ingest", "submit", "reader", "health", "register_rulesets", "pinned"} <= set(members)
    for name, declared in members.items():
        offered = getattr(backend, name, None)
        assert offered is not None, f"{backend.__name__} lacks {name}"
        assert isinstance(offered, property) == isinstance(declared, property), name
        want, have = _parameters(declared), _parameters(offered)
        if name == "__exit__":  # (*exc) either way
            assert [k for _, k, _ in have] == [k for _, k, _ in want], name
            continue
        # the backend may take more optional parameters after the declared ones (a lake's
        # reader waits for its loader), never fewer or others
        assert have[: len(want)] == want, f"{backend.__name__}.{name}: {have} vs {want}"
        assert all(p[2] is not inspect.Parameter.empty for p in have[len(want) :]), name
    # the data attributes are set per instance (a real Store's are checked below); the
    # capability is the class's own
    assert Store.shared_writers is False and LakeStore.shared_writers is True


def test_open_store_makes_the_file_backend_and_it_is_a_game_store(tmp_path):
    with open_store(Target(db=str(tmp_path / "s.duckdb")), file_options={"defer_rows": False}) as s:
        assert isinstance(s, Store) and isinstance(s, GameStore)
        assert s.pinned() is None and s.stored_records() == 0 and s.gauges() == {}
        before = s.change_stamp()
        out = s.register_rulesets([("p.toml", _ruleset_toml("iface-1"))])
        assert [e["status"] for e in out] == ["added"]
        assert s.registry.lookup("slow6", "iface-1") is not None  # reloaded after
        assert s.change_stamp() != before


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        ({}, "exactly one"),
        ({"db": "a", "lake": "b"}, "exactly one"),
        ({"db": "a", "data_path": "d"}, "lake's"),
    ],
)
def test_a_target_names_one_store(kwargs, why):
    with pytest.raises(ValueError, match=why):
        Target(**kwargs)


def _ruleset_toml(name: str) -> str:
    """The shortest valid ruleset (rulesets.md RS4.1): one parameter changed."""
    return f'name = "{name}"\ngame = "slow6"\nbased_on = "standard"\n\n[params]\nreach = 1\n'


# -- a third backend, written against the protocol alone ---------------------------------------


class MemoryStore:
    """Every game in one in-memory DuckDB database, one lock for every write."""

    shared_writers = False
    defer_rows = False  # the app hands it games with their rows
    rows_when_judged = False  # built later, as the file store's

    @property
    def parallel_groups(self) -> int:
        return 1  # one lock: one group at a time

    def __init__(self) -> None:
        self.path = ":memory:"
        self._con = duckdb.connect(":memory:")
        self._con.execute(schema_sql())
        self._lock = threading.Lock()
        self._known: dict[int, int] = {}
        self._closed = False
        self.registry = registry.Registry(lambda: self._read(registry.load), exclusive=True)
        self.registry.reload()
        self.rebuild = None
        self.writes = 0  # calls and commits, as its gauge says

    def _read(self, fn):
        cur = self._con.cursor()
        try:
            return fn(cur)
        finally:
            cur.close()

    @property
    def failure(self) -> str | None:
        return None

    @property
    def closed(self) -> bool:
        return self._closed

    def ingest(self, items: list[Pending], timeout: float | None = 60.0) -> list[str]:
        out = []
        with self._lock, transaction(self._con):
            for item in items:
                seen = self._known.get(item.key)
                if seen is not None:
                    out.append(DUPLICATE if seen == item.content_hash else CONFLICT)
                    continue
                assert item.rows is not None  # defer_rows is False
                tables = {"raw_records": rows.to_arrow("raw_records", [item.raw_row()])}
                insert_tables(self._con, {**tables, **rows.tables_of([item.rows])})
                self._known[item.key] = item.content_hash
                out.append(ACCEPTED if item.status == VERIFIED else QUARANTINED)
            self.writes += 1
        return out

    def submit(self, fn, *, transaction: bool = True, token: bool = False) -> Future:
        future: Future = Future()
        with self._lock:
            self.writes += 1
            try:
                if transaction:
                    with _transaction(self._con):
                        future.set_result(fn(self._con))
                else:
                    future.set_result(fn(self._con))
            except Exception as exc:  # the caller's, through the future
                future.set_exception(exc)
        return future

    def register_rulesets(self, files):
        parsed = registry.parse_files(files, self.registry.lookup)
        try:
            return self.submit(lambda con: registry.register(con, parsed)).result()
        finally:
            self.registry.reload()

    def flush_rows(self, timeout: float | None = 60.0) -> None:
        return None  # rows are written with their game

    def close(self, checkpoint: bool = True) -> None:
        with self._lock:
            self._closed = True

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reader(self) -> duckdb.DuckDBPyConnection:
        return self._con.cursor()

    def known_count(self) -> int:
        return len(self._known)

    def stored_records(self) -> int:
        return self._read(lambda cur: cur.execute("SELECT count(*) FROM raw_records").fetchone()[0])

    def change_stamp(self) -> object:
        return (len(self._known), self.writes)

    def pinned(self):
        return None

    def health(self) -> dict:
        return {"failure": None, "failing_seconds": 0.0, "journal_backlog": 0}

    def degraded(self) -> str | None:
        return None

    def gauges(self) -> dict[str, tuple[str, float]]:
        return {"balance_memory_store_writes": ("writes to the in-memory store", self.writes)}

    def report(self, exc: BaseException) -> None:
        return None


_transaction = transaction  # (the parameter `transaction` of submit shadows it there)


def test_the_whole_app_runs_on_a_third_backend_written_against_the_protocol(tmp_path):
    from ingest.server.app import close_app, create_app

    store = MemoryStore()
    assert isinstance(store, GameStore)
    app = create_app(
        {
            "STORE": store,
            "BALANCE_WORKERS": 0,
            "BALANCE_RATE_LIMIT": 0,
            "BALANCE_JOBS_INTERVAL": 0,
            "BALANCE_TOKEN": "s3cret",
            "BALANCE_SNAPSHOT_DIR": str(tmp_path / "snaps"),
        }
    )
    client = app.test_client()
    try:
        lines = (EXAMPLES / "slow6-valid.ndjson").read_bytes().splitlines()[:3]
        body = b"\n".join(lines) + b"\n"
        headers = {"Content-Type": "application/x-ndjson"}
        first = client.post("/v1/games", data=body, headers=headers)
        assert first.status_code == 200, first.get_data(as_text=True)
        verdicts = [r["verdict"] for r in first.get_json()["results"]]
        assert verdicts == ["accepted"] * 3
        again = client.post("/v1/games", data=body, headers=headers).get_json()["results"]
        assert [r["verdict"] for r in again] == ["duplicate"] * 3
        # what the server reads goes through the protocol too
        health = client.get("/healthz").get_json()
        assert health["status"] == "ok" and health["stored_records"] == 3
        metrics = client.get("/metrics").get_data(as_text=True).splitlines()
        assert f"balance_memory_store_writes {store.writes}" in metrics  # the backend's gauge
        auth = {"Authorization": "Bearer s3cret"}
        added = client.post(
            "/v1/admin/rulesets",
            data=_ruleset_toml("iface-2"),
            headers={**auth, "Content-Type": "application/toml"},
        )
        assert added.status_code in (200, 201), added.get_data(as_text=True)
        assert store.registry.lookup("slow6", "iface-2") is not None
        summary = client.post("/v1/admin/reverify", headers=auth)
        assert summary.status_code == 200, summary.get_data(as_text=True)
        assert orjson.loads(summary.data)["checked"] == 3
    finally:
        close_app(app)
    assert store.closed
