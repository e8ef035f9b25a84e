"""The analyst SQL console: /sql (page), /sql/api (JSON), /sql/download.<fmt>, /sql/snapshot.

JSON API (what `balance sql` uses):
  POST /sql/api  {"sql": "...", "limit": 100 (optional, capped), "format": "json"|"csv"|"parquet"}
  200 {"columns", "types", "rows", "row_count", "truncated", "elapsed_ms", "snapshot_at", "limit"}
  400 {"error": "refused"|"error", "message"}; 408 {"error": "timeout", "message"}
  with "format" csv/parquet the 200 body is the file instead.
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app, render_template, request

from . import export, schema_docs, setting, snapshots
from .auth import require_token
from .sqlsafe import DEFAULT_LIMIT, DEFAULT_TIMEOUT, QueryError

bp = Blueprint("sql", __name__, url_prefix="/sql", template_folder="templates")
bp.before_request(require_token)

STATUS = {"refused": 400, "error": 400, "timeout": 408}

EXAMPLES = [
    (
        "Verified games by board and variant",
        "SELECT board, variant, count(*) AS games\nFROM games\nGROUP BY ALL\nORDER BY ALL",
    ),
    (
        "Win rate of the side that moves first",
        "SELECT board, variant,\n"
        "       avg(CASE WHEN winner = first THEN 1 WHEN winner IS NULL THEN 0.5 ELSE 0 END)"
        " AS first_score,\n       count(*) AS games\nFROM games\nGROUP BY ALL\nORDER BY ALL",
    ),
    (
        "Quarantine by rule and client version",
        "SELECT rule, client_version, count(*) AS records\nFROM quarantine\nGROUP BY ALL\n"
        "ORDER BY records DESC",
    ),
    (
        "When powers are used",
        "SELECT power, avg(used_turn) AS mean_turn, count(used_turn) AS used, count(*) AS picked\n"
        "FROM game_powers\nGROUP BY power\nORDER BY used DESC",
    ),
    ("Every table and view", "SELECT database_name, table_name FROM duckdb_tables() ORDER BY 2"),
]


def limits() -> tuple[int, float]:
    app = current_app
    return (
        int(setting(app, "SQL_ROW_LIMIT", DEFAULT_LIMIT)),
        float(setting(app, "SQL_TIMEOUT", DEFAULT_TIMEOUT)),
    )


def run_query(sql: str, limit: int | None = None):
    max_rows, timeout = limits()
    if limit is None or limit <= 0 or limit > max_rows:
        limit = max_rows
    return snapshots(current_app).run(sql, limit=limit, timeout=timeout)


def _json(obj, status: int = 200) -> Response:
    return Response(export.dumps(obj), status, mimetype="application/json")


def _error(exc: QueryError) -> Response:
    return _json({"error": exc.kind, "message": exc.message}, STATUS.get(exc.kind, 400))


def file_response(result, fmt: str, name: str = "query") -> Response:
    body = export.to_bytes(result.table, fmt)
    resp = Response(body, 200, mimetype=export.MEDIA_TYPES[fmt])
    resp.headers["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    resp.headers["X-Truncated"] = "true" if result.truncated else "false"
    resp.headers["X-Row-Count"] = str(result.row_count)
    if result.snapshot_at:
        resp.headers["X-Snapshot-At"] = result.snapshot_at
    return resp


def result_json(result, limit: int) -> dict:
    return {
        "columns": result.columns,
        "types": result.types,
        "rows": export.rows(result.table),
        "row_count": result.row_count,
        "truncated": result.truncated,
        "limit": limit,
        "elapsed_ms": round(result.elapsed_ms, 1),
        "snapshot_at": result.snapshot_at,
    }


@bp.post("/api")
def api():
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or not isinstance(body.get("sql"), str):
        return _json({"error": "error", "message": 'Send JSON {"sql": "SELECT ..."}.'}, 400)
    fmt = body.get("format", "json")
    if fmt not in ("json", "csv", "parquet"):
        return _json({"error": "error", "message": "format is json, csv or parquet"}, 400)
    limit = body.get("limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        return _json({"error": "error", "message": "limit must be an integer"}, 400)
    try:
        result = run_query(body["sql"], limit)
    except QueryError as exc:
        return _error(exc)
    if fmt != "json":
        return file_response(result, fmt)
    return _json(result_json(result, limit or limits()[0]))


@bp.get("/download.<fmt>")
def download(fmt: str):
    if fmt not in export.MEDIA_TYPES:
        return _json({"error": "error", "message": "format is csv, json or parquet"}, 404)
    try:
        result = run_query(request.args.get("q", ""))
    except QueryError as exc:
        return _error(exc)
    name = "".join(ch for ch in request.args.get("name", "query") if ch.isalnum() or ch in "-_")
    return file_response(result, fmt, name or "query")


@bp.post("/snapshot")
def snapshot():
    """Take a new snapshot of the store now (after a jobs run, or from a test)."""
    engine = snapshots(current_app).refresh()
    return _json({"snapshot_at": engine.snapshot_at})


def schema_tables() -> list[dict]:
    result = snapshots(current_app).run(schema_docs.SCHEMA_SQL, limit=100_000, timeout=10)
    docs = schema_docs.load(setting(current_app, "DOCS_DIR"))
    return schema_docs.browser(export.rows(result.table), docs)


@bp.get("/schema")
def schema_api():
    return _json({"tables": schema_tables(), "snapshot_at": snapshots(current_app).snapshot_at})


@bp.get("")
@bp.get("/")
def console():
    sql = request.args.get("q", "")
    max_rows, timeout = limits()
    result = error = None
    if sql.strip():
        try:
            result = run_query(sql)
        except QueryError as exc:
            error = exc
    table_rows = export.rows(result.table) if result is not None else []
    status = STATUS.get(error.kind, 400) if error is not None else 200
    html = render_template(
        "sql.html",
        sql=sql,
        result=result,
        rows=table_rows,
        error=error,
        tables=schema_tables(),
        examples=EXAMPLES,
        max_rows=max_rows,
        timeout=timeout,
        snapshot_at=snapshots(current_app).snapshot_at,
        active="sql",
    )
    return Response(html, status, mimetype="text/html")
