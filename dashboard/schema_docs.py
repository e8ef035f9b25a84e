"""Column documentation for the schema browser.

Sources, later ones filling gaps only: DuckDB `COMMENT ON` (copied into the snapshot), the
analyst docs docs/tables.md and docs/agg-tables.md, and the trailing `-- comments` of the
store's schema.sql (installed with the package, so always there). In the docs, headings name a
table and markdown table rows name a column in their first cell and describe it in their last.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from ingest import storage

IDENT = re.compile(r"`?([A-Za-z_][A-Za-z0-9_]*)`?")
CREATE = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:TABLE|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z_]\w*)", re.I
)
COLUMN = re.compile(r"^\s*([A-Za-z_]\w*)\s+[A-Z][^-]*?--\s*(.+?)\s*$")


Docs = dict[str, dict]  # table -> {"doc": str, "columns": {column: doc}}


def _entry(docs: Docs, table: str) -> dict:
    return docs.setdefault(table, {"doc": "", "columns": {}})


def parse_schema_sql(text: str) -> Docs:
    docs: Docs = {}
    table = None
    pending: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        m = CREATE.search(line)
        if m:
            table = m.group(1)
            entry = _entry(docs, table)
            entry["doc"] = entry["doc"] or " ".join(pending)
            pending = []
            continue
        if stripped.startswith("--"):
            if table is None or not line.startswith(" "):
                pending.append(stripped.lstrip("- ").strip())
            continue
        if stripped.startswith(")"):
            table = None
            continue
        if table:
            c = COLUMN.match(line)
            if c and c.group(1).upper() not in ("PRIMARY", "UNIQUE", "CHECK", "FOREIGN"):
                _entry(docs, table)["columns"].setdefault(c.group(1), c.group(2))
        if not stripped:
            pending = []
    return docs


def _cells(line: str) -> list[str]:
    inner = line.strip().strip("|")
    return [c.strip() for c in inner.split("|")]


def parse_markdown(text: str) -> Docs:
    docs: Docs = {}
    table = None
    want_doc = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            heading = stripped.lstrip("#").strip()
            # "## `games`", "## games", "## raw_records — every acknowledged record"
            m = re.match(r"`?([A-Za-z_]\w*)`?(?:\s|$|[—:(-])", heading + " ")
            names = re.findall(r"`([A-Za-z_]\w*)`", heading)
            table = m.group(1) if m else (names[0] if names else None)
            want_doc = table is not None
            if table:
                _entry(docs, table)
            continue
        if table is None:
            continue
        if stripped.startswith("|"):
            want_doc = False
            cells = _cells(stripped)
            if len(cells) < 2 or set(cells[0]) <= set("-: "):
                continue
            # "game_id", "`game_id`", or several columns sharing a row: "points_0, points_1"
            names = [IDENT.fullmatch(part.strip()) for part in re.split(r"[,/]", cells[0])]
            if not all(names) or names[0].group(1).lower() in ("column", "field", "name"):
                continue
            doc = next((c for c in reversed(cells[1:]) if c), "")
            for m in names:
                _entry(docs, table)["columns"].setdefault(m.group(1), doc)
        elif want_doc and stripped:
            entry = _entry(docs, table)
            entry["doc"] = (entry["doc"] + " " + stripped).strip()
        elif want_doc and not stripped and _entry(docs, table)["doc"]:
            want_doc = False
    return docs


def _merge(into: Docs, more: Docs) -> None:
    for table, entry in more.items():
        target = _entry(into, table)
        target["doc"] = target["doc"] or entry["doc"]
        for col, doc in entry["columns"].items():
            if doc and not target["columns"].get(col):
                target["columns"][col] = doc


def docs_dirs(explicit: str | None = None) -> list[Path]:
    dirs = [Path(explicit)] if explicit else []
    dirs += [Path(__file__).resolve().parents[1] / "docs", Path.cwd() / "docs"]
    return dirs


@lru_cache(maxsize=4)
def load(docs_dir: str | None = None) -> Docs:
    docs: Docs = {}
    seen = set()
    for d in docs_dirs(docs_dir):  # the analysts' docs first: they say the most
        for name in ("tables.md", "agg-tables.md"):
            path = d / name
            if path.is_file() and path.resolve() not in seen:
                seen.add(path.resolve())
                _merge(docs, parse_markdown(path.read_text(encoding="utf-8")))
    _merge(docs, parse_schema_sql(storage.schema_sql()))  # installed with the package
    return docs


SCHEMA_SQL = (
    "SELECT c.table_name, t.kind, c.column_name, c.data_type, c.comment AS column_comment, "
    "t.comment AS table_comment "
    "FROM duckdb_columns() c JOIN ("
    "  SELECT table_name, 'table' AS kind, comment FROM duckdb_tables() "
    "  WHERE database_name = current_database() AND NOT temporary "
    "  UNION ALL SELECT view_name, 'view', comment FROM duckdb_views() "
    "  WHERE database_name = current_database() AND NOT internal AND NOT temporary"
    ") t USING (table_name) "
    "WHERE c.database_name = current_database() ORDER BY c.table_name, c.column_index"
)


def browser(rows: list[list], docs: Docs) -> list[dict]:
    """Tables and views with their columns and documentation, from the SCHEMA_SQL rows."""
    out: dict[str, dict] = {}
    for table, kind, column, dtype, col_comment, table_comment in rows:
        entry = docs.get(table, {"doc": "", "columns": {}})
        t = out.setdefault(
            table,
            {"name": table, "kind": kind, "doc": table_comment or entry["doc"], "columns": []},
        )
        t["columns"].append(
            {"name": column, "type": dtype, "doc": col_comment or entry["columns"].get(column, "")}
        )
    return list(out.values())
