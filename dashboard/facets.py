"""Facets: how many rows of a whole result (not only the page shown) hold each value of some of
its columns, counted in SQL by one GROUPING SETS query, never in Python over rows.

The SQL console (sql_routes.py) facets a query's result by its `board`, `variant`, `mode` and
version columns; the game explorer (pages.py) the games its filters select. Each turns a value
into its own link (the console's `f.<column>=`, the explorer's filter fields): `link` below.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from analysis.sql import sql_identifier

FACET_VALUES = 20  # values shown per facet (the most frequent)
MAX_GROUPS = 10_000  # rows the counting query may return (every facet's values together)


def counts_sql(inner: str, columns: Sequence[str]) -> str:
    """One query counting `inner`'s rows by each of `columns` alone: a row a (column, value),
    `_g<i>` = 0 on the rows grouped by column i, `_v<i>` its value as text, `_n` the count."""
    groups = ", ".join(f"GROUPING({sql_identifier(c)}) AS _g{i}" for i, c in enumerate(columns))
    values = ", ".join(
        f"CAST({sql_identifier(c)} AS VARCHAR) AS _v{i}" for i, c in enumerate(columns)
    )
    sets = ", ".join(f"({sql_identifier(c)})" for c in columns)
    return (
        f"SELECT {groups}, {values}, count(*) AS _n FROM (\n{inner}\n) AS _facet\n"
        f"GROUP BY GROUPING SETS ({sets})"
    )


def ranked(rows: Sequence[Sequence], columns: Sequence[str]) -> dict[str, list[tuple]]:
    """column -> [(value, count)], most frequent first, from the rows of `counts_sql`."""
    counts: dict[str, list[tuple]] = {c: [] for c in columns}
    k = len(columns)
    for row in rows:
        for i, c in enumerate(columns):
            if row[i] == 0:  # this row is grouped by column i
                counts[c].append((row[k + i], row[-1]))
    return {c: sorted(vs, key=lambda vn: (-vn[1], str(vn[0]))) for c, vs in counts.items()}


def facet_list(
    counts: dict[str, list[tuple]],
    link: Callable[[str, str | None], str | None],
    active: dict[str, str | None],
    labels: dict[str, str] | None = None,
    unlink: Callable[[str], str] | None = None,
) -> list[dict]:
    """What the `_facets.html` partial shows: per column its label, its FACET_VALUES most
    frequent values with their counts and links (`link(column, value)`, None: not a value one
    can filter on), how many more there are, whether it is filtered (`active`, column -> the
    value chosen) and the link that drops that filter (`unlink`)."""
    out = []
    for column, values in counts.items():
        on = column in active
        out.append(
            {
                "column": column,
                "label": (labels or {}).get(column, column),
                "values": [
                    {
                        "value": v,
                        "n": n,
                        "href": link(column, v),
                        "on": on and active[column] == v,
                    }
                    for v, n in values[:FACET_VALUES]
                ],
                "more": max(0, len(values) - FACET_VALUES),
                "active": on,
                "off": unlink(column) if on and unlink is not None else None,
            }
        )
    return out
