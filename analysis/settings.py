"""The analysis layer's settings: one table (ingest/storage/settings.py says how the tables
are read and held equal to docs/settings.md). The bands and effects are parsed where they are
used (ai_calibration.py, decisions.py), whose errors name the setting."""

from __future__ import annotations

from collections.abc import Mapping

from ingest.storage.settings import Setting, read, text

TABLE: tuple[Setting, ...] = (
    Setting("JOBS_MEMORY_LIMIT", "1GB", text, "`1GB`",
            "DuckDB memory limit of `balance jobs run` (its `--memory-limit` default)"),
    Setting("AI_TARGETS", "", text,
            "`1=0.70-0.85,2=0.55-0.70,3=0.40-0.55,4=0.25-0.40`",
            "the human score wanted against each computer level (agg_ai_calibration)"),
    Setting("MIN_EFFECTS", "", text,
            "`first_move=0.02,power=0.02,power_pair=0.03,power_vs=0.03,lineup_cell=0.02,"
            "lineup=0.05,lineup_vs=0.10,lane_distance=0.03,ai_band=0.02,ai_order=0.02,"
            "challenge=0.10,slide_seat=0.03`",
            "the smallest effect worth a designer's action per kind of finding, in points of "
            "score (0.02 = two points); name only the kinds to change (analysis/decisions.py, "
            "docs/agg-tables.md)"),
    Setting("REPORT_ALPHA", "", text, "`0.1`",
            "the Findings report's budget of false findings: on data with no effect beyond the "
            "minimums, at most this many false findings a report on average, however many "
            "weeks it is read (and at most this many false entries in the findings and the "
            "watch list together on data with no effect)"),
    Setting("DOCS_DIR", None, text, "`docs/` beside the code or the working directory",
            "where `tables.md` and `agg-tables.md` are read for the console's schema browser "
            "and the public dataset's dictionary"),
)  # fmt: skip
BY_NAME = {s.name: s for s in TABLE}


def value(name: str, environ: Mapping[str, str] | None = None):
    """An analysis setting (this table) from the environment, parsed, else its default."""
    return read(BY_NAME, name, environ)
