"""The spec's example records and what tests make of them: fresh copies, wire forms, verdicts,
reading a stopped store. Nothing here imports pytest or the app at module level, so a
benchmark may use it cheaply."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def spec_dir() -> Path:
    """The spec: tests/spec/ (its copy in the checkout) first, else the shared spec folder next
    to the checkout."""
    for candidate in (REPO / "tests" / "spec", REPO.parent / "shared" / "spec"):
        if (candidate / "examples" / "slow6-valid.ndjson").exists():
            return candidate
    raise FileNotFoundError(f"spec not found in {REPO / 'tests' / 'spec'} or ../shared/spec")


def examples_dir() -> Path:
    """The spec's example records (slow6-valid.ndjson, malformed.expected.ndjson, ...)."""
    return spec_dir() / "examples"


EXAMPLES = examples_dir()

NDJSON, JSON = "application/x-ndjson", "application/json"


def example_lines(name: str) -> list[str]:
    return [line for line in (EXAMPLES / f"{name}.ndjson").read_text().splitlines() if line]


def example_records(name: str) -> list[dict]:
    return [json.loads(line) for line in example_lines(name)]


SLOW6 = example_records("slow6-valid")
SLIDE = example_records("slide-valid")


def fresh(record: dict, **changes) -> dict:
    """A copy with a new game_id (still a valid game: the id is not part of the rules)."""
    out = copy.deepcopy(record)
    out["game_id"] = str(uuid.uuid4())
    out.update(changes)
    return out


def fresh_slow6(i: int = 0) -> dict:
    return fresh(SLOW6[i % len(SLOW6)])


def dumps(record: dict) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode()


def padded(record: dict, size: int) -> bytes:
    """The record as JSON text of exactly `size` bytes (spaces before the final brace)."""
    text = dumps(record)
    assert len(text) <= size, (len(text), size)
    return text[:-1] + b" " * (size - len(text)) + b"}"


def query(db: Path, sql: str, params=None) -> list[tuple]:
    """Read the store file (the server must be stopped: DuckDB has one writer process)."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def verdicts(response) -> list[str]:
    return [r["verdict"] for r in response.json()["results"]]
