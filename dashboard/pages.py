"""The designer dashboard: /dashboard pages, chart CSVs, the JS bundle, the game explorer."""

from __future__ import annotations

import re
from urllib.parse import urlencode

from flask import Blueprint, Response, abort, current_app, render_template, request, url_for

from analysis.sql import sql_literal
from replays.vocabulary import POWERS, REASONS

from . import EXT_BUNDLE, export, snapshots
from . import assets as assets_mod
from .auth import require_token
from .filters import (
    AI_LEVELS,
    BOARDS,
    KEYS,
    LABELS,
    MODES,
    PLATFORMS,
    PLAYERS,
    SLOW6_SELECTS,
    VARIANTS,
    Filters,
)
from .render import Ctx, build, console_link, table_of
from .sqlsafe import QueryError

bp = Blueprint(
    "dashboard",
    __name__,
    url_prefix="/dashboard",
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)
bp.before_request(require_token)


def _catalog():
    from . import catalog

    return catalog


def _ctx(with_defaults: bool = True, page=None) -> Ctx:
    """The request's filters; analytic pages default to the balance cut when none is given
    (the latest client version of the page's game: Slide has its own)."""
    catalog = _catalog()
    ctx = Ctx(Filters(), snapshots(current_app))
    table = page.versions_table if page is not None else "agg_games_daily"
    versions = catalog.client_versions(ctx, table)
    ctx.params["versions"] = versions
    ctx.filters = Filters.from_args(
        request.args, catalog.defaults(versions) if with_defaults else None
    )
    return ctx


@bp.app_context_processor
def _nav():
    from flask import g

    if request.blueprint not in ("dashboard", "sql"):
        return {}
    f = Filters.from_args(request.args)
    return {
        "nav_pages": [(key, page.title) for key, page in _catalog().PAGES.items()],
        "nav_query": f.query_string(),
        "bundle_url": url_for("dashboard.bundle", filename=assets_mod.FILENAME),
        "_g": g,
    }


def _freshness(ctx: Ctx, page=None) -> dict:
    return _catalog().freshness(ctx, page)


def _filter_form(ctx: Ctx, page=None) -> dict:
    table = page.versions_table if page is not None else "agg_games_daily"
    versions = ctx.params.get("versions") or _catalog().client_versions(ctx, table)
    return {
        "selects": page.selects if page is not None else SLOW6_SELECTS,
        "game_label": page.game_label if page is not None else "",
        "labels": LABELS,
        "keys": KEYS,
        "values": ctx.filters.values,
        "errors": ctx.filters.errors,
        "choices": {
            "board": list(BOARDS),
            "variant": list(VARIANTS),
            "mode": list(MODES),
            "ai_level": list(AI_LEVELS),
            "players": list(PLAYERS),
            "platform": list(PLATFORMS),
        },
        "versions": versions,
        "defaulted": ctx.filters.defaulted,
    }


def render_page(name: str):
    catalog = _catalog()
    page = catalog.PAGES.get(name)
    if page is None:
        abort(404)
    ctx = _ctx(page=page)
    views = [build(chart, ctx) for chart in page.charts]
    html = render_template(
        "page.html",
        page=page,
        name=name,
        active=name,
        views=views,
        form=_filter_form(ctx, page),
        fresh=_freshness(ctx, page),
        coverage=catalog.coverage(ctx, page),
        console_link=console_link,
        query=ctx.filters.query_string(),
        title=page.title,
    )
    return Response(html, mimetype="text/html")


@bp.get("/")
def index():
    return render_page("overview")


@bp.get("/p/<name>")
def page(name: str):
    return render_page(name)


@bp.get("/chart/<chart_id>.<fmt>")
def chart_data(chart_id: str, fmt: str):
    """The table behind one chart, under the page's filters, as CSV/JSON/Parquet."""
    catalog = _catalog()
    ctx = _ctx(page=catalog.page_of(chart_id))
    chart = catalog.chart(ctx, chart_id)
    if chart is None or fmt not in export.MEDIA_TYPES:
        abort(404)
    try:
        sql, frame, truncated = table_of(chart, ctx)
    except QueryError as exc:
        return Response(
            export.dumps({"error": exc.kind, "message": exc.message}),
            400,
            mimetype="application/json",
        )
    body = export.to_bytes(frame.to_arrow(), fmt)
    resp = Response(body, mimetype=export.MEDIA_TYPES[fmt])
    resp.headers["Content-Disposition"] = f'attachment; filename="{chart_id}.{fmt}"'
    resp.headers["X-Truncated"] = "true" if truncated else "false"
    return resp


@bp.get("/assets/<filename>")
def bundle(filename: str):
    if filename != assets_mod.FILENAME:
        abort(404)
    b = current_app.extensions[EXT_BUNDLE]
    gz = "gzip" in request.headers.get("Accept-Encoding", "")
    body = b.body(gz)
    if request.if_none_match and b.etag in request.if_none_match:
        resp = Response(status=304)
    else:
        resp = Response(body, mimetype="text/javascript")
        if gz:
            resp.headers["Content-Encoding"] = "gzip"
    resp.headers["Vary"] = "Accept-Encoding"
    resp.headers["ETag"] = f'"{b.etag}"'
    # The URL carries the vl-convert version: the content never changes under it.
    resp.headers["Cache-Control"] = "public, max-age=31536000, immutable"
    return resp


# -- game explorer ----------------------------------------------------------------------------

UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def explorer_sql(args) -> tuple[str, dict]:
    """The explorer's query: verified and quarantined Slow6 games in one shape, newest first.

    Each branch filters and keeps its newest 200 before the union; quarantined records are
    decoded (raw_json) only after the filters their own columns can take."""
    chosen: dict[str, str] = {}
    f = Filters.from_args(args)
    chosen.update(f.values)
    played: list[str] = []  # need the game itself: games columns, or the quarantined record
    lineup = (args.get("lineup") or "").strip()
    if re.fullmatch(r"[1-7]{5}|[1-7]{7}", lineup):
        chosen["lineup"] = lineup
        lit = sql_literal(lineup)
        played.append(f"(lineup_0 = {lit} OR lineup_1 = {lit})")
    power = args.get("power") or ""
    if power in POWERS:
        chosen["power"] = power
        lit = sql_literal(power)
        played.append(f"(list_contains(powers_0, {lit}) OR list_contains(powers_1, {lit}))")
    reason = args.get("reason") or ""
    if reason in REASONS:
        chosen["reason"] = reason
        played.append(f"reason = {sql_literal(reason)}")
    rule = (args.get("rule") or "").strip()
    if re.fullmatch(r"[RS]\d{1,2}(\.\d{1,2})?", rule):
        chosen["rule"] = rule
    status = args.get("status") or ""
    if status in ("verified", "quarantined"):
        chosen["status"] = status
    # mode, platform, client version and dates are columns of both games and quarantine
    common, _ = f.conditions({"mode", "platform", "client_version", "ended_at"}, "ended_at")
    rules_of_play, _ = f.conditions({"board", "variant", "ai_level"})
    played += rules_of_play

    def where(conds: list[str]) -> str:
        return ("WHERE " + "\n    AND ".join(conds)) if conds else ""

    branches = []
    if status != "quarantined" and not rule:
        branches.append(f"""  SELECT game_id, 'verified' AS status, board, variant, mode, ai_level,
         platform, client_version, lineup_0, lineup_1, powers_0, powers_1, winner, reason, turns,
         NULL::VARCHAR AS rule, NULL::INTEGER AS broken_turn, ended_at
  FROM games
  {where(common + played)}
  ORDER BY ended_at DESC LIMIT 200""")
    if status != "verified":
        qconds = ["game = 'slow6'", *common] + ([f"rule = {sql_literal(rule)}"] if rule else [])
        early = "" if played else " ORDER BY ended_at DESC LIMIT 200"
        branches.append(f"""  SELECT * FROM (
    SELECT q.game_id, 'quarantined' AS status, (j->>'$.rules.board')::INTEGER AS board,
           CASE WHEN (j->>'$.rules.hidden')::BOOLEAN THEN 'hidden'
                WHEN (j->>'$.rules.powers')::BOOLEAN THEN 'powers' ELSE 'classic' END AS variant,
           q.mode, (j->>'$.ai.level')::INTEGER AS ai_level, q.platform, q.client_version,
           array_to_string(CAST(j->'$.lineups[0]' AS INTEGER[]), '') AS lineup_0,
           array_to_string(CAST(j->'$.lineups[1]' AS INTEGER[]), '') AS lineup_1,
           CAST(j->'$.powers[0]' AS VARCHAR[]) AS powers_0,
           CAST(j->'$.powers[1]' AS VARCHAR[]) AS powers_1,
           (j->>'$.result.winner')::INTEGER AS winner, j->>'$.result.reason' AS reason,
           json_array_length(j->'$.turns') AS turns, q.rule, q.turn AS broken_turn, q.ended_at
    FROM (SELECT * FROM quarantine {where(qconds)}{early}) q
    JOIN (SELECT game_id, record, codec FROM raw_records WHERE status = 'quarantined') r
      USING (game_id),
    LATERAL (SELECT raw_json(r.record, r.codec)::JSON AS j)
  )
  {where(played)}
  ORDER BY ended_at DESC LIMIT 200""")
    if not branches:
        branches.append("  SELECT NULL::UUID AS game_id, NULL::TIMESTAMP AS ended_at WHERE false")
    union = "\n  UNION ALL BY NAME\n".join(f"(\n{b}\n)" for b in branches)
    sql = f"""SELECT * FROM (
{union}
)
ORDER BY ended_at DESC
LIMIT 200"""
    return sql, chosen


@bp.get("/games")
def explorer():
    ctx = _ctx(with_defaults=False)
    sql, chosen = explorer_sql(request.args)
    rows, error = [], None
    columns: list[str] = []
    try:
        result = snapshots(current_app).run(sql, limit=200, timeout=10)
        columns = result.columns
        rows = [dict(zip(columns, r, strict=False)) for r in export.rows(result.table)]
    except QueryError as exc:
        error = exc.message
    html = render_template(
        "explorer.html",
        active="games",
        title="Games",
        rows=rows,
        columns=columns,
        error=error,
        sql=sql,
        chosen=chosen,
        form=_filter_form(ctx),
        fresh=_freshness(ctx),
        reasons=REASONS,
        powers=POWERS,
        console_link=console_link,
    )
    return Response(html, mimetype="text/html")


def load_record(game_id: str):
    """(record, status, quarantine row) of one game from the snapshot."""
    import orjson

    if not UUID_RE.fullmatch(game_id):
        abort(404)
    sql = (
        "SELECT raw_json(r.record, r.codec), r.status, q.rule, q.turn, q.message "
        "FROM raw_records r "
        "LEFT JOIN quarantine q USING (game_id) "
        f"WHERE r.game_id = {sql_literal(game_id.lower())}::UUID"
    )
    result = snapshots(current_app).run(sql, limit=1, timeout=10)
    rows = export.rows(result.table)
    if not rows:
        abort(404)
    raw, status, rule, turn, message = rows[0]
    record = orjson.loads(raw)
    quarantine = {"rule": rule, "turn": turn, "message": message} if rule else None
    return record, status, quarantine


@bp.get("/games/<game_id>")
def game(game_id: str):
    from .frames import frames

    record, status, quarantine = load_record(game_id)
    try:
        replay = frames(record)
    except ValueError as exc:
        replay = {"frames": [], "error": {"rule": None, "turn": None, "message": str(exc)}}
    # A quarantined game opens at the turn that broke the rule: the viewer's step after the last
    # good frame shows that turn's moves on the board they were tried on.
    err = replay.get("error") or quarantine
    nframes = len(replay["frames"])
    if err and err.get("turn") is not None:
        start = nframes
    elif err:
        start = max(nframes - 1, 0)
    else:
        start = 0
    html = render_template(
        "game.html",
        active="games",
        title=f"Game {game_id}",
        game_id=game_id,
        record=record,
        status=status,
        quarantine=quarantine,
        replay=replay,
        start=start,
        fresh=_freshness(_ctx(with_defaults=False)),
        back=url_for("dashboard.explorer") + "?" + urlencode({"status": status}),
    )
    return Response(html, mimetype="text/html")
