"""The balance lab's stored runs (`lab_runs`, `lab_rows`; docs/tables.md): a run's settings
and its predicted rows, kept so that `balance lab show` (and the dashboard) can give it again
and anyone can play it again from the same seed and engine version.

A run's id is its key (a digest of what decides its games), so storing the same run twice is
a no-op, not a second copy.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb

RUN_COLUMNS = (
    "id", "created_at", "game", "base", "candidate", "board", "powers", "levels", "games",
    "seed", "engine_version", "min_effect", "picks_differ", "seconds",
)  # fmt: skip
ROW_COLUMNS = (
    "family", "row", "unit", "base", "candidate", "change", "lo", "hi", "confident", "n",
)  # fmt: skip


def save(
    con: duckdb.DuckDBPyConnection,
    run: dict[str, Any],
    rows: Sequence[dict],
    transaction: bool = True,
) -> bool:
    """Store a run and its rows in one transaction (`transaction=False`: in the caller's, as
    a running server's writer gives one); False when a run with its id is stored already
    (the same games: nothing written)."""
    if not transaction:
        return _insert(con, run, rows)
    con.execute("BEGIN")
    try:
        new = _insert(con, run, rows)
        con.execute("COMMIT" if new else "ROLLBACK")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return new


def _insert(con: duckdb.DuckDBPyConnection, run: dict[str, Any], rows: Sequence[dict]) -> bool:
    if con.execute("SELECT 1 FROM lab_runs WHERE id = ?", [run["id"]]).fetchall():
        return False
    con.execute(
        f"INSERT INTO lab_runs ({', '.join(RUN_COLUMNS)}) "
        "VALUES (?, ?, ?, ?::JSON, ?::JSON, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            run["id"], run.get("created_at") or datetime.now(UTC), run["game"],
            json.dumps(run["base"]), json.dumps(run["candidate"]), run["board"],
            run["powers"], list(run["levels"]), run["games"], run["seed"],
            run["engine_version"], run["min_effect"], run["picks_differ"], run["seconds"],
        ],
    )  # fmt: skip
    con.executemany(
        f"INSERT INTO lab_rows (run_id, ord, {', '.join(ROW_COLUMNS)}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [[run["id"], k, *(r[c] for c in ROW_COLUMNS)] for k, r in enumerate(rows)],
    )
    return True


def _run(row: tuple) -> dict[str, Any]:
    out = dict(zip(RUN_COLUMNS, row, strict=True))
    out["base"], out["candidate"] = json.loads(out["base"]), json.loads(out["candidate"])
    out["levels"] = list(out["levels"])
    return out


# (JSON as text; a TIMESTAMPTZ as UTC text: DuckDB hands one to Python only with pytz)
_READ = {
    "base": "base::VARCHAR",
    "candidate": "candidate::VARCHAR",
    "created_at": "strftime(timezone('UTC', created_at), '%Y-%m-%dT%H:%M:%SZ')",
}
_SELECT = "SELECT " + ", ".join(_READ.get(c, c) for c in RUN_COLUMNS) + " FROM lab_runs"


def runs(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every stored run, newest first (without rows)."""
    return [
        _run(r) for r in con.execute(_SELECT + " ORDER BY lab_runs.created_at DESC, id").fetchall()
    ]


def run(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
    """One run with its rows (`rows`, in their order); an id prefix is enough when only one
    run starts with it."""
    found = con.execute(_SELECT + " WHERE starts_with(id, ?) ORDER BY id", [run_id]).fetchall()
    if len(found) != 1:
        return None
    out = _run(found[0])
    out["rows"] = [
        dict(zip(ROW_COLUMNS, r, strict=True))
        for r in con.execute(
            f"SELECT {', '.join(ROW_COLUMNS)} FROM lab_rows WHERE run_id = ? ORDER BY ord",
            [out["id"]],
        ).fetchall()
    ]
    return out
