"""docs/agg-tables.md documents every agg_* table the jobs write, and every column of each."""

from __future__ import annotations

import re
from pathlib import Path

from analysis import jobs
from analysis import synthetic as sy

DOC = Path(__file__).resolve().parents[2] / "docs" / "agg-tables.md"


def sections() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    parts = re.split(r"^###? (agg_\w+)\s*$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_every_table_and_column_is_documented(tmp_path):
    con, _ = sy.make_store(tmp_path / "doc.duckdb", sy.Plan(n=600, seed=2), quarantined=20)
    summary = jobs.run(con, lambda fn: fn(con))
    docs = sections()
    text = DOC.read_text(encoding="utf-8")
    # the dimension tables: Slow6 before the first section, Slide at the head of its part
    shared = text.split("## Overview")[0] + text.split("## Slide")[1].split("###")[0]
    for table in [*summary["tables"], "agg_runs"]:
        assert table in docs, f"{table} has no section"
        cols = [c for (c,) in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]
        ).fetchall()]  # fmt: skip
        # a rate table may say "the counts above": those are documented with its cube
        parent = {"agg_lineup_vs": "agg_lineup_rates"}.get(table, table.removesuffix("_rates"))
        text = docs[table] + docs.get(parent, "") + shared
        missing = [c for c in cols if f"`{c}`" not in text]
        assert not missing, f"{table}: undocumented columns {missing}"
