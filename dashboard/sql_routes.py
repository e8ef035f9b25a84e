"""The analyst SQL console: /sql (page), /sql/api (JSON), /sql/download.<fmt>, /sql/snapshot.

JSON API (what `balance sql` uses):
  POST /sql/api  {"sql": "...", "limit": 100 (optional, capped), "format": "json"|"csv"|"parquet"}
  200 {"columns", "types", "rows", "row_count", "truncated", "elapsed_ms", "snapshot_at", "limit"}
  400 {"error": "refused"|"error", "message"}; 408 {"error": "timeout", "message"};
  413 {"error": "too_big", "message"} (over SQL_MAX_BYTES, or out of the engine's memory);
  503 {"error": "busy", "message"}; 403 {"error": "cross_site"}; 400 {"error": "bad_host"}
  with "format" csv/parquet the 200 body is the file instead.

Every query runs in an SQL worker process (sqlpool.py), which encodes the answer: the server
only passes the bytes on. Queries and snapshots are refused from other sites (guard.py).
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app, render_template, request

from . import export, schema_docs, setting, snapshots
from .auth import require_token
from .guard import cross_site_reason, same_origin
from .sqlsafe import DEFAULT_LIMIT, DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT, QueryError, Refused

bp = Blueprint("sql", __name__, url_prefix="/sql", template_folder="templates")
bp.before_request(require_token)

STATUS = {
    "refused": 400,
    "error": 400,
    "timeout": 408,
    "too_big": 413,
    "busy": 503,
    "replaced": 503,
}
PAGE_MAX_BYTES = 8 * 1024 * 1024  # what the console page shows at most (downloads: SQL_MAX_BYTES)

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


def max_bytes() -> int:
    from .sqlpool import parse_size

    return parse_size(setting(current_app, "SQL_MAX_BYTES", DEFAULT_MAX_BYTES))


def _limit(limit: int | None) -> int:
    max_rows = limits()[0]
    if limit is None or limit <= 0 or limit > max_rows:
        return max_rows
    return limit


def run_query(sql: str, limit: int | None = None, byte_limit: int | None = None):
    """The result as an Arrow table (the console page)."""
    timeout = limits()[1]
    return snapshots(current_app).run(
        sql, limit=_limit(limit), timeout=timeout, max_bytes=byte_limit or max_bytes()
    )


def run_encoded(sql: str, fmt: str, limit: int | None = None):
    """The result as the bytes to send (encoded by the SQL worker)."""
    timeout = limits()[1]
    return snapshots(current_app).run_encoded(
        sql, fmt, limit=_limit(limit), timeout=timeout, max_bytes=max_bytes()
    )


def _json(obj, status: int = 200) -> Response:
    return Response(export.dumps(obj), status, mimetype="application/json")


def _error(exc: QueryError) -> Response:
    resp = _json({"error": exc.kind, "message": exc.message}, STATUS.get(exc.kind, 400))
    if exc.kind in ("busy", "replaced"):
        resp.headers["Retry-After"] = "2"
    return resp


def file_response(payload, fmt: str, name: str = "query") -> Response:
    resp = Response(payload.body, 200, mimetype=export.MEDIA_TYPES[fmt])
    resp.headers["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    resp.headers["X-Truncated"] = "true" if payload.truncated else "false"
    resp.headers["X-Row-Count"] = str(payload.row_count)
    if payload.snapshot_at:
        resp.headers["X-Snapshot-At"] = payload.snapshot_at
    return resp


def result_json(result, limit: int) -> dict:
    return export.result_json(result, limit)


@bp.post("/api")
@same_origin
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
        payload = run_encoded(body["sql"], "api" if fmt == "json" else fmt, limit)
    except QueryError as exc:
        return _error(exc)
    if fmt != "json":
        return file_response(payload, fmt)
    return Response(payload.body, 200, mimetype="application/json")


@bp.get("/download.<fmt>")
@same_origin
def download(fmt: str):
    if fmt not in export.MEDIA_TYPES:
        return _json({"error": "error", "message": "format is csv, json or parquet"}, 404)
    try:
        payload = run_encoded(request.args.get("q", ""), fmt)
    except QueryError as exc:
        return _error(exc)
    name = "".join(ch for ch in request.args.get("name", "query") if ch.isalnum() or ch in "-_")
    return file_response(payload, fmt, name or "query")


@bp.post("/snapshot")
@same_origin
def snapshot():
    """Take a new snapshot of the store now (after a jobs run, or from a test)."""
    taken = snapshots(current_app).refresh()
    return _json({"snapshot_at": taken.snapshot_at})


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
    status = 200
    if sql.strip():
        reason = cross_site_reason()
        if reason is not None:  # shown in the box, not run: press Run to run it from here
            error, status = Refused(f"Not run: {reason}. Press Run to run it here."), 403
        else:
            try:
                result = run_query(sql, byte_limit=min(PAGE_MAX_BYTES, max_bytes()))
            except QueryError as exc:
                error = exc
                status = STATUS.get(exc.kind, 400)
    table_rows = export.rows(result.table) if result is not None else []
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
