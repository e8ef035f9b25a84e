"""The demo store (simulated games as production fills it) and what the dashboard tests do
with it: a copy per app, the pages, the agg_* tables."""

from __future__ import annotations

import shutil
from pathlib import Path

from .app import AppClient
from .records import example_records

PAGES = [
    "/dashboard/",
    *(
        f"/dashboard/p/{n}"
        for n in (
            "findings",
            "setups",
            "powers",
            "boards",
            "computer",
            "challenges",
            "quality",
            "trends",
            "versions",
            "slide",
        )
    ),
]


def build_demo_db(path: Path, games: int = 300, slide: int = 150) -> Path:
    """Simulated games and the spec's quarantined examples through the ingest path
    (`ingest.server.demo.load_records`), then the analysis jobs write the agg_* tables."""
    import duckdb

    from analysis import jobs
    from ingest.server.demo import load_records, simulated_records
    from ingest.storage import Store

    store = Store(path)
    try:
        load_records(store, simulated_records(games, slide, seed=0, level=2), echo=lambda _: None)
        load_records(store, example_records("slow6-invalid"), echo=lambda _: None)
    finally:
        store.close()
    con = duckdb.connect(str(path))
    try:
        jobs.run(con, lambda fn: fn(con))
    finally:
        con.close()
    return path


def demo_copy(demo_db: Path, workdir: Path) -> Path:
    """A copy of the demo store in `workdir` (each server or app gets its own file)."""
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "store.duckdb"
    shutil.copy(demo_db, db)
    return db


def demo_env(env: dict | None = None) -> dict:
    """A dashboard server's settings: every chart spec checked by Altair."""
    return {"BALANCE_VALIDATE_CHARTS": "1", **(env or {})}


def demo_app(work: Path, demo_db: Path) -> AppClient:
    """A started in-process app on a copy of the session's demo store, charts checked."""
    return AppClient(work, env=demo_env(), db=demo_copy(demo_db, work)).start()


def page(app, path: str) -> str:
    """The HTML of a page that must answer 200."""
    r = app.get(path)
    assert r.status == 200, (path, r.status, r.body[:300])
    return r.body.decode()


def agg_names(con) -> list[str]:
    """Every agg_* table of the connection's database but agg_runs, by name."""
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'agg_%' "
        "AND table_name <> 'agg_runs' AND table_catalog = current_database()"
    ).fetchall()
    return sorted(r[0] for r in rows)


def agg_tables(con) -> dict[str, list[tuple]]:
    """Every agg_* table of the connection's database but agg_runs, its rows sorted."""
    return {n: con.execute(f"SELECT * FROM {n} ORDER BY ALL").fetchall() for n in agg_names(con)}
