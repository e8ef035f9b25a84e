"""The analyst SQL console: /sql (page), /sql/api (JSON), whole downloads, saved queries.

JSON API (what `balance sql` uses):
  POST /sql/api  {"sql": "...", "params": {"name": value}, "limit": 100 (optional, capped),
                  "format": "json"|"csv"|"parquet"}   or {"saved": "<slug>", "params": {...}}
  200 {"columns", "types", "rows", "row_count", "truncated", "elapsed_ms", "snapshot_at", "limit"}
  400 {"error": "refused"|"error", "message", "position"?}; 408 {"error": "timeout", "message"};
  413 {"error": "too_big", "message"} (over SQL_MAX_BYTES, or out of the engine's memory);
  503 {"error": "busy", "message"}; 403 {"error": "cross_site"}; 400 {"error": "bad_host"}
  with "format" csv/parquet the 200 body is the file instead (at most `limit` rows).

Downloads are the whole result, never cut: GET /sql/download.{csv,json,jsonl,parquet}?q=...
(and /sql/q/<slug>.<fmt>) stream a file the SQL worker wrote batch by batch, up to
SQL_DOWNLOAD_MAX_BYTES (64 MiB; 413 beyond, nothing sent, pointing to `balance export`).

Saved queries (saved.py): GET /sql/saved, POST /sql/saved, GET|PUT|DELETE /sql/saved/<slug>
(JSON); the page /sql/q/<slug>?<param>=<value>, its downloads and its chart's spec
/sql/q/<slug>/chart.json. Writes need a JSON body from this server's own pages or a tool (never
a cross-site form), and the token where the server requires one.

Every query runs in an SQL worker process (sqlpool.py), which encodes the answer: the server
only passes the bytes on. Queries and snapshots are refused from other sites (guard.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from flask import Blueprint, Response, current_app, render_template, request, send_file, url_for

from analysis.sql import sql_identifier

from .. import export, schema_docs, setting, snapshots
from .. import facets as facets_mod
from ..auth import require_token
from ..guard import cross_site_reason, same_origin
from . import sqlchart
from .saved import (
    LIST_MAX_PAGE,
    LIST_PAGE,
    Limits,
    Saved,
    SavedQueries,
    SaveRate,
    builtin,
    builtin_sql,
    builtins,
    check_slug,
    dashboard_url,
    from_body,
)
from .sqlparams import MissingValue, bind, prepare
from .sqlsafe import (
    DEFAULT_LIMIT,
    DEFAULT_MAX_BYTES,
    DEFAULT_TIMEOUT,
    PARAM_NAME,
    QueryError,
    Refused,
)

bp = Blueprint("sql", __name__, url_prefix="/sql", template_folder="templates")
bp.before_request(require_token)

STATUS = {
    "refused": 400,
    "error": 400,
    "timeout": 408,
    "too_big": 413,
    "busy": 503,
    "replaced": 503,
    "not_found": 404,
    "conflict": 409,
    "read_only": 403,
    "full": 409,
    "rate_limited": 429,
}
PAGE_MAX_BYTES = 8 * 1024 * 1024  # what the console page shows at most (downloads: their own)
DEFAULT_DOWNLOAD_MAX_BYTES = "64MiB"
DEFAULT_DOWNLOAD_TIMEOUT = 30.0
FACETS = ("board", "variant", "mode", "client_version", "version")
KIND_LABELS = {
    "refused": "Refused",
    "timeout": "Stopped",
    "too_big": "Too big",
    "busy": "Busy",
    "error": "Error",
    "not_found": "Not found",
    "conflict": "Conflict",
    "read_only": "Read-only",
}

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
    from ingest.storage.sizes import parse_size

    return parse_size(setting(current_app, "SQL_MAX_BYTES", DEFAULT_MAX_BYTES))


def download_limits() -> tuple[int, float]:
    """(bytes, seconds) a download may take."""
    from ingest.storage.sizes import parse_size

    size = parse_size(setting(current_app, "SQL_DOWNLOAD_MAX_BYTES", DEFAULT_DOWNLOAD_MAX_BYTES))
    return size, float(setting(current_app, "SQL_DOWNLOAD_TIMEOUT", DEFAULT_DOWNLOAD_TIMEOUT))


def _limit(limit: int | None) -> int:
    max_rows = limits()[0]
    if limit is None or limit <= 0 or limit > max_rows:
        return max_rows
    return limit


def run_query(sql: str, limit: int | None = None, byte_limit: int | None = None, params=None):
    """The result as an Arrow table (the console page)."""
    timeout = limits()[1]
    return snapshots(current_app).run(
        sql,
        limit=_limit(limit),
        timeout=timeout,
        max_bytes=byte_limit or max_bytes(),
        params=params or None,
    )


def run_encoded(sql: str, fmt: str, limit: int | None = None, params=None):
    """The result as the bytes to send (encoded by the SQL worker)."""
    timeout = limits()[1]
    return snapshots(current_app).run_encoded(
        sql, fmt, limit=_limit(limit), timeout=timeout, max_bytes=max_bytes(), params=params
    )


def saved_limits() -> Limits:
    """The saved queries' bounds: settings SAVED_MAX, SAVED_MAX_BYTES, SAVED_TOTAL_BYTES,
    SAVED_RATE (dashboard/console/saved.py)."""
    from ingest.storage.sizes import parse_size

    d = Limits()
    return Limits(
        count=int(setting(current_app, "SAVED_MAX", d.count)),
        size=parse_size(setting(current_app, "SAVED_MAX_BYTES", d.size)),
        total=parse_size(setting(current_app, "SAVED_TOTAL_BYTES", d.total)),
        rate=int(setting(current_app, "SAVED_RATE", d.rate)),
    )


def saved_queries() -> SavedQueries:
    return SavedQueries(current_app.extensions["store"], saved_limits())


def _take_save() -> None:
    """RateLimited past SAVED_RATE saves a minute from this client's address."""
    rate = current_app.extensions.get("dashboard.save_rate")
    if rate is None:
        rate = current_app.extensions.setdefault(
            "dashboard.save_rate", SaveRate(saved_limits().rate)
        )
    rate.take(request.remote_addr or "?")


# -- what runs: the text, its bound values, the facet filters ----------------------------------


@dataclass
class Run:
    """A query as the console runs it: `text` is the analyst's `sql` with `:name` written
    `$name`, inside the facet filters' wrapper when there are any (`lead` characters of it
    before the analyst's text); `params` are the values DuckDB binds."""

    sql: str
    text: str
    params: dict = field(default_factory=dict)
    shown: dict = field(default_factory=dict)  # the parameters' values as the form shows them
    names: list[str] = field(default_factory=list)
    filters: list[tuple[str, str | None]] = field(default_factory=list)
    lead: int = 0
    prepared_len: int = 0

    def position(self, exc: QueryError) -> int | None:
        """Where the error points in the analyst's `sql` (None: not in it)."""
        at = exc.position
        if at is None:
            return None
        at -= self.lead
        return at if 0 <= at <= self.prepared_len else None


def _filters_of(args) -> list[tuple[str, str | None]]:
    out = []
    for key, value in args.items(multi=True) if hasattr(args, "items") else []:
        if key.startswith("f."):
            col, val = key[2:], value
        elif key.startswith("null."):
            col, val = key[5:], None
        else:
            continue
        if PARAM_NAME.fullmatch(col):
            out.append((col, val))
    return out[:8]


def make_run(sql: str, values: dict, shown: dict, filters) -> Run:
    text, names = prepare(sql)
    body = text.rstrip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    run = Run(sql, body, dict(values), dict(shown), names, list(filters), 0, len(text))
    if filters:
        conds = []
        for i, (col, val) in enumerate(filters):
            if val is None:
                conds.append(f"{sql_identifier(col)} IS NULL")
            else:
                conds.append(f"{sql_identifier(col)} = $_f{i}")
                run.params[f"_f{i}"] = val
        head = "SELECT * FROM (\n"
        run.text = f"{head}{body}\n) AS _result\nWHERE " + " AND ".join(conds)
        run.lead = len(head)
    return run


def console_run(args) -> Run:
    """A typed query: `q`, its parameters `p.<name>` (text: DuckDB casts them where they go),
    and the facet filters `f.<column>=<value>` / `null.<column>=1`."""
    sql = args.get("q", "")
    _, names = prepare(sql)
    shown = {n: args.get(f"p.{n}", "") for n in names}
    missing = [n for n in names if shown[n] == ""]
    values = {n: v for n, v in shown.items() if v != ""}
    run = make_run(sql, values, shown, _filters_of(args))
    if missing and sql.strip():
        raise _Missing(run, f"Give a value for {', '.join(':' + n for n in missing)}.")
    return run


class _Missing(MissingValue):
    def __init__(self, run: Run, message: str):
        super().__init__(message)
        self.run = run


def saved_run(saved: Saved, args) -> tuple[Run, list[str]]:
    """A saved query for the values in `args` (its defaults for the rest): (run, notes)."""
    notes: list[str] = []
    if saved.builtin:
        sql, shown, notes = builtin_sql(saved, args, snapshots(current_app))
        return make_run(sql, {}, shown, _filters_of(args)), notes
    values, shown = bind(saved.params, args)
    return make_run(saved.sql, values, shown, _filters_of(args)), notes


def find_saved(slug: str) -> Saved:
    from .saved import NotFound

    found = builtin(slug) if slug.startswith("dashboard-") else saved_queries().get(slug)
    if found is None:
        raise NotFound(f"No saved query {slug}.")
    return found


# -- answers ----------------------------------------------------------------------------------


def _json(obj, status: int = 200) -> Response:
    return Response(export.dumps(obj), status, mimetype="application/json")


def _error_body(exc: QueryError, run: Run | None = None) -> dict:
    body: dict[str, object] = {"error": exc.kind, "message": exc.message}
    at = run.position(exc) if run is not None else exc.position
    if at is not None:
        where = locate(run.sql if run is not None else "", at)
        where.pop("before_cr")
        body["position"] = where
    return body


def _error(exc: QueryError, run: Run | None = None) -> Response:
    resp = _json(_error_body(exc, run), STATUS.get(exc.kind, 400))
    if exc.kind in ("busy", "replaced"):
        resp.headers["Retry-After"] = "2"
    elif exc.kind == "rate_limited":
        resp.headers["Retry-After"] = str(max(1, round(getattr(exc, "retry_after", 2))))
    return resp


def _wants_html() -> bool:
    best = request.accept_mimetypes.best_match(["application/json", "text/html"])
    return best == "text/html" and request.accept_mimetypes["text/html"] > 0


def _download_error(exc: QueryError, run: Run | None) -> Response:
    """A download that was not made: JSON for tools, a page for a browser's link."""
    if not _wants_html():
        return _error(exc, run)
    html = render_template(
        "sql_error.html",
        error=exc,
        label=KIND_LABELS.get(exc.kind, "Error"),
        back=request.referrer if request.referrer and cross_site_reason() is None else "/sql",
        active="sql",
    )
    resp = Response(html, STATUS.get(exc.kind, 400), mimetype="text/html")
    if exc.kind in ("busy", "replaced"):
        resp.headers["Retry-After"] = "2"
    return resp


def locate(text: str, offset: int) -> dict:
    """{offset, line, column (1-based), text (that line)} of a character offset in `text`."""
    offset = max(0, min(offset, len(text)))
    before = text[:offset]
    line = before.count("\n") + 1
    start = before.rfind("\n") + 1
    end = text.find("\n", offset)
    return {
        "offset": offset,
        "before_cr": before.count("\r"),  # a browser sends CRLF line ends, shows LF
        "line": line,
        "column": offset - start + 1,
        "text": text[start : end if end >= 0 else len(text)].rstrip("\r"),
    }


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


def _file_name(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum() or ch in "-_")[:80] or "query"


def _finished():
    from .. import finished
    from ..snapshot import DOWNLOAD_RESERVE

    ext = current_app.extensions
    if "balance.finished" not in ext:
        ext["balance.finished"] = finished.Finished(
            snapshots(current_app).downloads_dir.parent / "kept", DOWNLOAD_RESERVE
        )
    return ext["balance.finished"]


def whole_download(run: Run, fmt: str, name: str) -> Response:
    """The whole result as a file, from the file the SQL worker wrote. It is kept a while
    (dashboard/finished.py), so that a request for a byte range of it (`Range`, as a notebook
    reading the URL sends) gets the bytes of that same file: 206, or 416 past its end."""
    from .. import finished as finished_mod

    kept_files = _finished()
    key = finished_mod.key_of(fmt, run.text, run.params)
    ranged = "Range" in request.headers or request.method == "HEAD"
    kept = kept_files.get(key) if ranged else None
    if kept is None:
        size, timeout = download_limits()
        try:
            meta, download = snapshots(current_app).write_file(
                run.text,
                fmt,
                timeout=timeout,
                max_bytes=size,
                params=run.params or None,
                client=request.remote_addr or "",
            )
        except QueryError as exc:
            return _download_error(exc, run)
        try:
            kept = kept_files.keep(key, download.file, download.size, meta)
        except BaseException:
            download.close()
            raise
        if kept is None:  # not kept (too big, or the disk is short): streamed, whole only
            download.file.seek(0)
            media = export.MEDIA_TYPES[fmt]
            resp = Response(download, 200, mimetype=media, direct_passthrough=True)
            resp.content_length = download.size
            resp.call_on_close(download.close)
            return _download_headers(resp, meta, fmt, name)
        download.close()
    resp = send_file(
        kept.path,
        mimetype=export.MEDIA_TYPES[fmt],
        as_attachment=True,
        download_name=f"{_file_name(name)}.{fmt}",
        conditional=True,
        etag=kept.etag,
        max_age=0,
    )
    return _download_headers(resp, kept.meta, fmt, name)


def _download_headers(resp: Response, meta: dict, fmt: str, name: str) -> Response:
    resp.headers["Content-Disposition"] = f'attachment; filename="{_file_name(name)}.{fmt}"'
    resp.headers["X-Truncated"] = "false"  # a download is the whole result, or none
    resp.headers["X-Row-Count"] = str(meta.get("row_count", 0))
    if meta.get("snapshot_at"):
        resp.headers["X-Snapshot-At"] = meta["snapshot_at"]
    return resp


# -- the JSON API and downloads -----------------------------------------------------------------


@bp.post("/api")
@same_origin
def api():
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or not (
        isinstance(body.get("sql"), str) or isinstance(body.get("saved"), str)
    ):
        return _json({"error": "error", "message": 'Send JSON {"sql": "SELECT ..."}.'}, 400)
    fmt = body.get("format", "json")
    if fmt not in ("json", "csv", "parquet"):
        return _json({"error": "error", "message": "format is json, csv or parquet"}, 400)
    limit = body.get("limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        return _json({"error": "error", "message": "limit must be an integer"}, 400)
    given = body.get("params") or {}
    if not isinstance(given, dict):
        return _json({"error": "error", "message": "params is {name: value}"}, 400)
    run = None
    try:
        if isinstance(body.get("saved"), str):
            run, _ = saved_run(find_saved(body["saved"]), _Args(given))
        else:
            run = make_run(body["sql"], given, {}, [])
        payload = run_encoded(run.text, "api" if fmt == "json" else fmt, limit, run.params)
    except QueryError as exc:
        return _error(exc, run)
    if fmt != "json":
        return file_response(payload, fmt)
    return Response(payload.body, 200, mimetype="application/json")


class _Args(dict):
    """A plain mapping of values as a query string would give them (text)."""

    def get(self, key, default=None):
        value = super().get(key, default)
        if isinstance(value, bool):
            return "true" if value else "false"
        return value if value is None or isinstance(value, str) else str(value)

    def items(self, multi=False):
        return super().items()


@bp.get("/download.<fmt>")
@same_origin
def download(fmt: str):
    if fmt not in export.MEDIA_TYPES:
        return _json({"error": "error", "message": "format is csv, json, jsonl or parquet"}, 404)
    run = None
    try:
        run = console_run(request.args)
    except _Missing as exc:
        return _download_error(exc, exc.run)
    except QueryError as exc:
        return _download_error(exc, None)
    return whole_download(run, fmt, request.args.get("name", "query"))


def _chart_response(run: Run, chart: dict | None, name: str) -> Response:
    if chart is None:
        return _json({"error": "error", "message": "choose a chart: chart.mark, chart.x, ..."}, 400)
    try:
        result = run_query(run.text, byte_limit=min(PAGE_MAX_BYTES, max_bytes()), params=run.params)
        spec = sqlchart.spec(chart, result.columns, result.types, sqlchart.table_rows(result.table))
    except QueryError as exc:
        return _error(exc, run)
    resp = _json(spec)
    resp.headers["Content-Disposition"] = f'attachment; filename="{_file_name(name)}.vl.json"'
    resp.headers["X-Truncated"] = "true" if result.truncated else "false"
    return resp


@bp.get("/chart.json")
@same_origin
def chart_json():
    """The Vega-Lite spec (with its rows) of the chart chosen for a query."""
    try:
        run = console_run(request.args)
        chart = sqlchart.from_args(request.args)
    except QueryError as exc:
        return _error(exc, getattr(exc, "run", None))
    return _chart_response(run, chart, request.args.get("name", "chart"))


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


# -- saved queries: JSON ----------------------------------------------------------------------


def _json_body():
    """The body of a write: JSON only (an HTML form on another site cannot send it), or None."""
    if not request.is_json:
        return None
    return request.get_json(silent=True)


def _check_sql(text: str) -> None:
    snapshots(current_app).check(text, timeout=limits()[1])


@bp.get("/saved")
def saved_list():
    """A page of the saved queries (`limit`, LIST_PAGE by default, at most LIST_MAX_PAGE;
    `offset`), without their texts (GET /sql/saved/<slug> has it); `next` is the next page."""
    try:
        limit = int(request.args.get("limit", LIST_PAGE))
        offset = int(request.args.get("offset", 0))
        if limit < 1 or offset < 0:
            raise ValueError
    except ValueError:
        return _json({"error": "error", "message": "limit is a number from 1, offset from 0."}, 400)
    limit = min(limit, LIST_MAX_PAGE)
    try:
        page, total = saved_queries().list(limit, offset)
    except QueryError as exc:
        return _error(exc)
    more = offset + len(page) < total
    return _json(
        {
            "saved": [s.as_json(text=False) for s in page],
            "total": total,
            "limit": limit,
            "offset": offset,
            "next": url_for("sql.saved_list", limit=limit, offset=offset + limit) if more else None,
            "dashboard": [s.as_json() for s in builtins()],
        }
    )


@bp.post("/saved")
@same_origin
def saved_create():
    body = _json_body()
    if body is None:
        return _json(
            {"error": "error", "message": "Send JSON (Content-Type: application/json)."}, 415
        )
    try:
        _take_save()
        fields = from_body(body, _check_sql)
        slug = body.get("slug") or None
        created = saved_queries().create(fields, slug)
    except QueryError as exc:
        return _error(exc)
    resp = _json(created.as_json(), 201)
    resp.headers["Location"] = created.url
    return resp


@bp.get("/saved/<slug>")
def saved_get(slug: str):
    try:
        return _json(find_saved(slug).as_json())
    except QueryError as exc:
        return _error(exc)


@bp.put("/saved/<slug>")
@same_origin
def saved_update(slug: str):
    body = _json_body()
    if body is None:
        return _json(
            {"error": "error", "message": "Send JSON (Content-Type: application/json)."}, 415
        )
    try:
        check_slug(slug)
        _take_save()
        version = body.get("version")
        if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
            raise Refused("version is the number the query had when you read it.")
        fields = from_body(body, _check_sql)
        updated = saved_queries().update(slug, fields, version)
    except QueryError as exc:
        return _error(exc)
    return _json(updated.as_json())


@bp.delete("/saved/<slug>")
@same_origin
def saved_delete(slug: str):
    try:
        saved_queries().delete(slug)
    except QueryError as exc:
        return _error(exc)
    return Response(status=204)


# -- saved queries: the page, downloads, the chart's spec -------------------------------------


@bp.get("/q/<slug>.<fmt>")
@same_origin
def saved_download(slug: str, fmt: str):
    if fmt not in export.MEDIA_TYPES:
        return _json({"error": "error", "message": "format is csv, json, jsonl or parquet"}, 404)
    run = None
    try:
        run, _ = saved_run(find_saved(slug), request.args)
    except QueryError as exc:
        return _download_error(exc, run)
    return whole_download(run, fmt, slug)


@bp.get("/q/<slug>/chart.json")
@same_origin
def saved_chart(slug: str):
    try:
        saved = find_saved(slug)
        run, _ = saved_run(saved, request.args)
        chart = sqlchart.from_args(request.args) or saved.chart
    except QueryError as exc:
        return _error(exc)
    return _chart_response(run, chart, slug)


@bp.get("/q/<slug>")
def saved_page(slug: str):
    try:
        saved = find_saved(slug)
    except QueryError as exc:
        return _download_error(exc, None) if _wants_html() else _error(exc)
    run, error = None, None
    notes: list[str] = []
    try:
        run, notes = saved_run(saved, request.args)
    except MissingValue as exc:
        notes = [exc.message]
    except QueryError as exc:
        error = exc
    chart = None
    try:
        chart = sqlchart.from_args(request.args) or saved.chart
    except QueryError as exc:
        error = error or exc
    return _page(run, saved=saved, error=error, chart=chart, notes=notes, run_it=error is None)


# -- the console page -----------------------------------------------------------------------------


def _facets(run: Run, columns: list[str]) -> list[dict]:
    """Counts of the whole result (not only the rows shown) by board, variant, mode, version."""
    chosen = [c for c in FACETS if c in columns]
    if not chosen:
        return []
    try:
        result = run_query(
            facets_mod.counts_sql(run.text, chosen), limit=facets_mod.MAX_GROUPS, params=run.params
        )
    except QueryError:
        return []  # facets are a help: a result too big or slow to count just has none
    counts = facets_mod.ranked(export.rows(result.table), chosen)
    return facets_mod.facet_list(counts, _with_filter, dict(run.filters))


def _args_list(drop=lambda k: False) -> list[tuple[str, str]]:
    return [(k, v) for k, v in request.args.items(multi=True) if not drop(k)]


def _with_filter(col: str, value) -> str:
    args = _args_list(lambda k: k in (f"f.{col}", f"null.{col}"))
    args.append((f"f.{col}", value) if value is not None else (f"null.{col}", "1"))
    return request.path + "?" + urlencode(args)


def _without_filter(col: str) -> str:
    args = _args_list(lambda k: k in (f"f.{col}", f"null.{col}"))
    return request.path + ("?" + urlencode(args) if args else "")


def _links(run: Run | None, saved: Saved | None, chart: dict | None) -> dict:
    """URLs of the downloads and the chart's spec, with the same query, values and filters."""
    if run is None:
        return {}
    keep = _args_list(lambda k: k.startswith("chart.") or k == "token")
    if saved is None:
        base = {fmt: url_for("sql.download", fmt=fmt) for fmt in export.MEDIA_TYPES}
        chart_url = url_for("sql.chart_json")
    else:
        base = {
            fmt: url_for("sql.saved_download", slug=saved.slug, fmt=fmt)
            for fmt in export.MEDIA_TYPES
        }
        chart_url = url_for("sql.saved_chart", slug=saved.slug)
    query = "?" + urlencode(keep) if keep else ""
    links = {fmt: url + query for fmt, url in base.items()}
    if chart:
        chart_query = urlencode(keep + list(sqlchart.query_args(chart).items()))
        links["chart"] = chart_url + "?" + chart_query
        plain = _args_list(lambda k: k.startswith("chart."))
        if len(plain) < len(_args_list()):  # a chart chosen in the URL (a saved one stays)
            links["no_chart"] = request.path + ("?" + urlencode(plain) if plain else "")
    return links


def _saved_lists() -> tuple[tuple[list[Saved], int], list[Saved], str | None]:
    """(the first page of saved queries, how many in all), the dashboard's, an error."""
    try:
        return saved_queries().list(LIST_PAGE), builtins(), None
    except QueryError as exc:
        return ([], 0), builtins(), exc.message


def _page(
    run: Run | None,
    *,
    saved: Saved | None = None,
    error: QueryError | None = None,
    chart: dict | None = None,
    notes=(),
    run_it: bool = True,
) -> Response:
    max_rows, timeout = limits()
    download_bytes, download_timeout = download_limits()
    result = spec = None
    facets: list[dict] = []
    chart_error = None
    status = 200
    if run is not None and run_it and run.sql.strip():
        reason = cross_site_reason()
        if reason is not None:  # shown in the box, not run: press Run to run it from here
            error, status = Refused(f"Not run: {reason}. Press Run to run it here."), 403
        else:
            try:
                result = run_query(
                    run.text, byte_limit=min(PAGE_MAX_BYTES, max_bytes()), params=run.params
                )
            except QueryError as exc:
                error = exc
    if error is not None and status == 200:
        status = STATUS.get(error.kind, 400)
    if result is not None and run is not None:  # a result is of a run
        facets = _facets(run, result.columns)
        if chart:
            try:
                spec = sqlchart.spec(
                    chart, result.columns, result.types, sqlchart.table_rows(result.table)
                )
            except QueryError as exc:
                chart_error = exc.message
    where = None
    if error is not None and run is not None:
        at = run.position(error)
        if at is not None:
            where = locate(run.sql, at)
    (mine, mine_total), dashboard_queries, saved_error = _saved_lists()
    if saved is not None:
        values = dict(run.shown) if run is not None and saved.builtin else {}
        for p in saved.params:
            values.setdefault(p.name, request.args.get(p.name, p.default or ""))
    else:
        values = dict(run.shown) if run is not None else {}
    sql = run.sql if run is not None else (saved.sql if saved else request.args.get("q", ""))
    editing = None
    if saved is None and request.args.get("saved"):
        try:
            editing = find_saved(request.args["saved"])
        except QueryError:
            editing = None
    html = render_template(
        "sql_saved.html" if saved is not None else "sql.html",
        sql=sql,
        run=run,
        saved=saved,
        editing=editing if editing is not None and not editing.builtin else None,
        result=result,
        rows=export.rows(result.table) if result is not None else [],
        error=error,
        error_label=KIND_LABELS.get(error.kind, "Error") if error is not None else "",
        where=where,
        notes=list(notes),
        values=values,
        chart=chart,
        spec=spec,
        chart_error=chart_error,
        marks=sqlchart.MARKS,
        facets=facets,
        filters=[(c, v, _without_filter(c)) for c, v in (run.filters if run else [])],
        links=_links(run, saved, chart) if result is not None else {},
        dashboard_link=dashboard_url(saved, run.shown if run else {})
        if saved and saved.builtin
        else None,
        tables=schema_tables(),
        examples=EXAMPLES,
        mine=mine,
        mine_total=mine_total,
        dashboard_queries=dashboard_queries,
        saved_error=saved_error,
        max_rows=max_rows,
        timeout=timeout,
        download_mb=download_bytes / (1024 * 1024),
        download_timeout=download_timeout,
        snapshot_at=snapshots(current_app).snapshot_at,
        active="sql",
    )
    return Response(html, status, mimetype="text/html")


@bp.get("")
@bp.get("/")
def console():
    run, error, notes = None, None, []
    try:
        run = console_run(request.args)
    except _Missing as exc:  # the form asks for the values; nothing runs
        run, notes = exc.run, [exc.message]
    except QueryError as exc:
        error = exc
    try:
        chart = sqlchart.from_args(request.args)
    except QueryError as exc:
        chart, error = None, error or exc
    return _page(run, error=error, chart=chart, notes=notes, run_it=error is None and not notes)
