"""Values and names written into SQL text, for where a DuckDB parameter cannot go.

A parameter is the first choice. These are for the rest: a type (`ENUM('a', 'b')`), a statement
DuckDB parses without parameters (ATTACH, COMMENT ON), and SQL shown to a person, downloaded or
opened in the console, which must run as it reads. Imports nothing, so the dashboard's SQL worker
processes can use it too.
"""

from __future__ import annotations


def sql_literal(value: object) -> str:
    """`value` as text in a SQL string literal: in single quotes, each one inside doubled."""
    return "'" + str(value).replace("'", "''") + "'"


def sql_identifier(name: str) -> str:
    """`name` as a quoted SQL identifier: in double quotes, each one inside doubled."""
    return '"' + name.replace('"', '""') + '"'
