"""Tables out: CSV, JSON, JSON lines and Parquet via the Polars/pyarrow/DuckDB writers;
JSON-safe rows. Every CSV cell goes through analysis/csvsafe.py (no spreadsheet formulas).

`encode` is what the console's SQL engine sends back (in its worker process): the file, the JSON
API's answer, or Arrow IPC for the dashboard's own queries; `decode_arrow` reads the last.
`StreamWriter` writes a whole result batch by batch (downloads): the same files as `to_bytes`
gives for the same rows, without ever holding all of them.
"""

from __future__ import annotations

import io
from datetime import date, datetime, time
from decimal import Decimal
from typing import TYPE_CHECKING
from uuid import UUID

import duckdb
import orjson
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from analysis import csvsafe
from analysis.sql import sql_identifier

if TYPE_CHECKING:
    import polars as pl

# "api": the JSON answer of POST /sql/api; "arrow": Arrow IPC stream (the dashboard's queries)
FORMATS = ("csv", "json", "jsonl", "parquet", "api", "arrow")
# Flask adds "; charset=utf-8" to a text/* mimetype itself (so it is not written here twice)
MEDIA_TYPES = {
    "csv": "text/csv",
    "json": "application/json",
    "jsonl": "application/x-ndjson",
    "parquet": "application/vnd.apache.parquet",
}
FILE_FORMATS = tuple(MEDIA_TYPES)
PARQUET_ROW_GROUP_ROWS = 128 * 1024  # rows buffered before a row group is written
PARQUET_ROW_GROUP_BYTES = 8 * 1024 * 1024  # ... or this many bytes of Arrow


def _nested(schema: pa.Schema) -> list[str]:
    return [
        f.name
        for f in schema
        if pa.types.is_nested(f.type) or pa.types.is_map(f.type) or pa.types.is_dictionary(f.type)
    ]


def _flatten(con, table: pa.Table, nested: list[str]) -> pa.Table:
    rel = con.from_arrow(table)
    cols = []
    for name in table.column_names:
        q = sql_identifier(name)
        cols.append(f"to_json({q})::VARCHAR AS {q}" if name in nested else q)
    return rel.project(", ".join(cols)).to_arrow_table()


def _flat(table: pa.Table) -> pa.Table:
    """CSV has no nested values: lists and structs become their JSON text (DuckDB's to_json)."""
    nested = _nested(table.schema)
    if not nested:
        return table
    con = duckdb.connect()  # private, in memory: only ever sees this table
    try:
        return _flatten(con, table, nested)
    finally:
        con.close()


def _frame(table: pa.Table) -> pl.DataFrame:
    """`table` as a Polars frame (Polars loads with the first download, not at start)."""
    import polars as pl

    return pl.DataFrame(table)


def to_bytes(table: pa.Table, fmt: str) -> bytes:
    buf = io.BytesIO()
    if fmt == "parquet":
        pq.write_table(table, buf)
    elif fmt == "csv":
        csvsafe.write_csv(_frame(_flat(table)), buf)
    elif fmt == "json":
        _frame(table).write_json(buf)  # an array of one object per row
    elif fmt == "jsonl":
        _frame(table).write_ndjson(buf)  # one object a line
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return buf.getvalue()


class StreamWriter:
    """A whole result written to a binary file batch by batch: csv (a header, then the rows;
    nested values as JSON text), json (one array), jsonl (one object a line) or parquet (row
    groups of up to PARQUET_ROW_GROUP_ROWS rows). `rows` and `bytes` say how far it got."""

    def __init__(self, fmt: str, out, schema: pa.Schema):
        if fmt not in FILE_FORMATS:
            raise ValueError(f"unknown format {fmt!r}")
        self.fmt = fmt
        self.out = out
        self.schema = schema
        self.rows = 0
        self.bytes = 0
        self._started = False
        self._nested = _nested(schema) if fmt == "csv" else []
        self._con = duckdb.connect() if self._nested else None  # private: flattens batches
        self._parquet = None
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = self._pending_bytes = 0
        if fmt == "parquet":
            self._parquet = pq.ParquetWriter(_Counted(out, self), schema)
        elif fmt == "json":
            self._put(b"[")

    def _put(self, data: bytes) -> None:
        if data:
            self.out.write(data)
            self.bytes += len(data)

    def write(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows and self.fmt != "csv":
            return
        self.rows += batch.num_rows
        if self._parquet is not None:  # fmt parquet
            self._pending.append(batch)
            self._pending_rows += batch.num_rows
            self._pending_bytes += batch.nbytes
            if (
                self._pending_rows >= PARQUET_ROW_GROUP_ROWS
                or self._pending_bytes >= PARQUET_ROW_GROUP_BYTES
            ):
                self._flush_parquet(self._parquet)
            return
        table = pa.Table.from_batches([batch], schema=self.schema)
        buf = io.BytesIO()
        if self.fmt == "csv":
            if self._nested:
                table = _flatten(self._con, table, self._nested)
            csvsafe.write_csv(_frame(table), buf, include_header=not self._started)
            self._started = True
            self._put(buf.getvalue())
        elif self.fmt == "jsonl":
            _frame(table).write_ndjson(buf)
            self._put(buf.getvalue())
        else:  # json: the batch's array without its brackets, after a comma
            _frame(table).write_json(buf)
            body = buf.getvalue().strip()[1:-1]
            if body:
                self._put((b"," if self._started else b"") + body)
                self._started = True

    def _flush_parquet(self, writer) -> None:
        if self._pending:
            writer.write_table(pa.Table.from_batches(self._pending, schema=self.schema))
        self._pending = []
        self._pending_rows = self._pending_bytes = 0

    def close(self) -> None:
        if self.fmt == "csv" and not self._started:  # no rows: the header alone
            empty = pa.Table.from_batches([], schema=self.schema)
            if self._nested:
                empty = _flatten(self._con, empty, self._nested)
            buf = io.BytesIO()
            csvsafe.write_csv(_frame(empty), buf)
            self._put(buf.getvalue())
            self._started = True
        elif self.fmt == "json":
            self._put(b"]")
        elif self._parquet is not None:  # fmt parquet
            self._flush_parquet(self._parquet)
            self._parquet.close()
        if self._con is not None:
            self._con.close()
            self._con = None


class _Counted:
    """A file object that counts what the Parquet writer puts in it."""

    def __init__(self, out, writer: StreamWriter):
        self._out = out
        self._writer = writer
        self.closed = False

    def write(self, data) -> int:
        n = self._out.write(data)
        self._writer.bytes += len(data)
        return n

    def tell(self) -> int:
        return self._writer.bytes

    def flush(self) -> None:
        self._out.flush()

    def close(self) -> None:  # the caller closes the file itself
        self.closed = True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False


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
