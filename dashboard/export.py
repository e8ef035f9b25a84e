"""Tables out: CSV, JSON and Parquet via the Polars/pyarrow/DuckDB writers; JSON-safe rows.

`encode` is what the console's SQL engine sends back (in its worker process): the file, the JSON
API's answer, or Arrow IPC for the dashboard's own queries; `decode_arrow` reads the last.
"""

from __future__ import annotations

import io
from datetime import date, datetime, time
from decimal import Decimal
from uuid import UUID

import duckdb
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from analysis.sql import sql_identifier

# "api": the JSON answer of POST /sql/api; "arrow": Arrow IPC stream (the dashboard's queries)
FORMATS = ("csv", "json", "parquet", "api", "arrow")
MEDIA_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "parquet": "application/vnd.apache.parquet",
}


def _flat(table: pa.Table) -> pa.Table:
    """CSV has no nested values: lists and structs become their JSON text (DuckDB's to_json)."""
    nested = [
        f.name
        for f in table.schema
        if pa.types.is_nested(f.type) or pa.types.is_map(f.type) or pa.types.is_dictionary(f.type)
    ]
    if not nested:
        return table
    con = duckdb.connect()  # private, in memory: only ever sees this table
    try:
        rel = con.from_arrow(table)
        cols = []
        for name in table.column_names:
            q = sql_identifier(name)
            cols.append(f"to_json({q})::VARCHAR AS {q}" if name in nested else q)
        return rel.project(", ".join(cols)).to_arrow_table()
    finally:
        con.close()


def to_bytes(table: pa.Table, fmt: str) -> bytes:
    buf = io.BytesIO()
    if fmt == "parquet":
        pq.write_table(table, buf)
    elif fmt == "csv":
        pl.from_arrow(_flat(table)).write_csv(buf)
    elif fmt == "json":
        pl.from_arrow(table).write_json(buf)  # an array of one object per row
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return buf.getvalue()


def _plain(value):
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, (Decimal, UUID)):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def rows(table: pa.Table) -> list[list]:
    """Row lists for JSON answers and HTML tables (dates as ISO text, decimals as text)."""
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return [[_plain(c[r]) for c in cols] for r in range(table.num_rows)]


def dumps(obj) -> bytes:
    return orjson.dumps(obj, default=str, option=orjson.OPT_NON_STR_KEYS)


def result_json(result, limit: int) -> dict:
    """The JSON API's answer for a result (sqlsafe.Result)."""
    return {
        "columns": result.columns,
        "types": result.types,
        "rows": rows(result.table),
        "row_count": result.row_count,
        "truncated": result.truncated,
        "limit": limit,
        "elapsed_ms": round(result.elapsed_ms, 1),
        "snapshot_at": result.snapshot_at,
    }


def to_arrow_ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def decode_arrow(body: bytes) -> pa.Table:
    return ipc.open_stream(pa.py_buffer(body)).read_all()


def encode(result, fmt: str, limit: int) -> bytes:
    """The bytes sent for a result: a file (csv/json/parquet), the API's JSON, or Arrow IPC."""
    if fmt == "api":
        return dumps(result_json(result, limit))
    if fmt == "arrow":
        return to_arrow_ipc(result.table)
    return to_bytes(result.table, fmt)
