"""The dashboard's snapshot manager stood in by a plain DuckDB connection, for tests that draw
charts from tables they made (no store, no snapshot file)."""

from __future__ import annotations

from types import SimpleNamespace


class Snapshots:
    """The dashboard's snapshot manager over a plain connection (run -> .table, .truncated)."""

    snapshot_at = "test"

    def __init__(self, con):
        self.con = con

    def current(self):
        """The snapshot in use: its path keys the dashboard's table cache (one per store)."""
        return SimpleNamespace(path=f"test-connection-{id(self.con)}")

    def run(self, sql, limit=1000, timeout=5):
        table = self.con.sql(sql).arrow()
        table = table.read_all() if hasattr(table, "read_all") else table
        return SimpleNamespace(table=table.slice(0, limit), truncated=table.num_rows > limit)
