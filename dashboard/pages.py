"""The designer dashboard: /dashboard pages, chart CSVs, the JS bundle, the game explorer."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlencode

from flask import Blueprint, Response, abort, current_app, render_template, request, url_for

from analysis.sql import sql_literal
from replays.vocabulary import POWERS, REASONS

from . import EXT_BUNDLE, export, snapshots
from . import assets as assets_mod
from . import facets as facets_mod
from .auth import require_token
from .console.sqlsafe import QueryError
from .filters import (
    AI_LEVELS,
    ALL,
    BOARDS,
    KEYS,
    LABELS,
    MODES,
    PLATFORMS,
    PLAYERS,
    SLOW6_SELECTS,
    VARIANTS,
    VERSION,
    Filters,
)
from .render import Ctx, build, console_link, table_of

bp = Blueprint(
    "dashboard",
    __name__,
    url_prefix="/dashboard",
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)
bp.before_request(require_token)

GZIP_MIN = 1024  # bytes: smaller pages are sent as they are


@bp.after_request
def _compress(resp: Response) -> Response:
    """gzip the HTML pages (100+ KB of chart specs each, ~10x smaller) for clients that take it;
    the JS bundle has its own (pre-compressed) answer."""
    resp.vary.add("Accept-Encoding")
    if (
        resp.mimetype == "text/html"
        and not resp.direct_passthrough
        and "Content-Encoding" not in resp.headers
        and "gzip" in request.headers.get("Accept-Encoding", "")
        and resp.status_code == 200
    ):
        body = resp.get_data()
        if len(body) >= GZIP_MIN:
            import gzip

            resp.set_data(gzip.compress(body, compresslevel=5))
            resp.headers["Content-Encoding"] = "gzip"
    return resp


def _catalog():
    from . import catalog

    return catalog


def _ctx(with_defaults: bool = True, page=None) -> Ctx:
    """The request's filters; analytic pages default to the balance cut when none is given
    (the live client version of the page's game: Slide has its own)."""
    catalog = _catalog()
    ctx = Ctx(Filters(), snapshots(current_app))
    ctx.params["explorer"] = url_for("dashboard.explorer")  # each rate point's link (render.drill)
    table = page.versions_table if page is not None else "agg_games_daily"
    ctx.params["versions"] = catalog.client_versions(ctx, table)
    defaults = None
    if with_defaults:  # a page's own cut (catalog.defaults: Page.cut)
        ctx.params["live"] = catalog.live(ctx, page)
        defaults = catalog.defaults(ctx.params["live"], page)
    ctx.filters = Filters.from_args(request.args, defaults)
    versions = ctx.params["versions"]
    if with_defaults:
        _pin(ctx, request.args.get("live"), versions)
    version = ctx.filters.values.get("client_version")
    if version and versions and version not in versions and "client_version" in request.args:
        ctx.filters.errors.append(
            f"Client version: {version!r} has no games in this store, so every chart is empty; "
            f"choose one of {', '.join(versions)}"
        )
    if page is not None and page.prepare is not None:
        page.prepare(ctx, request.args)
    return ctx


def _pin(ctx: Ctx, pinned: str | None, versions: list[str]) -> None:
    """A URL that left the client version to the page names the live version it showed
    (`live=`, written into the address bar by dashboard.js): the same link next month shows
    that release again, and says that the live release has moved since."""
    if "client_version" not in ctx.filters.defaulted_keys:
        return
    now = ctx.filters.values["client_version"]
    ctx.params["pin"] = now
    pinned = (pinned or "").strip()
    if not pinned or pinned == now:
        return
    if VERSION.fullmatch(pinned) and pinned in versions:
        ctx.filters.values["client_version"] = ctx.params["pin"] = pinned
        ctx.params["moved"] = (pinned, now)
    else:
        ctx.filters.errors.append(
            f"This link showed the live release of its day, {pinned!r}, which has no games in "
            f"this store now: showing today's live release, {now}"
        )


@bp.app_context_processor
def _nav():
    from flask import g

    if request.blueprint not in ("dashboard", "sql"):
        return {}
    f = Filters.from_args(request.args)
    return {
        "nav_pages": [(key, page.title) for key, page in _catalog().PAGES.items()],
        "nav_query": f.url_query(),
        "bundle_url": url_for("dashboard.bundle", filename=assets_mod.FILENAME),
        "simulated": simulated_games(),
        "_g": g,
    }


SIMULATED = "%+sim"  # the build label the demo's client versions carry (replays/demoset.py)
_SIMULATED: dict = {}


def simulated_games() -> int:
    """How many stored games (Slow6 and Slide) are simulated, per snapshot: the banner's."""
    try:
        snaps = snapshots(current_app)
        key = snaps.current().path  # the snapshot's file, as render.Ctx.columns keys it
        if key not in _SIMULATED:
            like = sql_literal(SIMULATED)
            sql = (
                f"SELECT (SELECT count(*) FROM games WHERE client_version LIKE {like}) + "
                f"(SELECT count(*) FROM slide_games WHERE client_version LIKE {like})"
            )
            result = snaps.run(sql, limit=1, timeout=5)
            _SIMULATED.clear()
            _SIMULATED[key] = int(result.table.column(0)[0].as_py() or 0)
        return _SIMULATED[key]
    except Exception:  # no snapshot or no tables yet: no banner
        return 0


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
        "rulesets": list(_catalog().rulesets(ctx, page))
        if page is None or page.version_select
        else [],
        "defaulted": ctx.filters.defaulted,
        "cut_line": _cut_line(ctx, page),
        "pin": ctx.params.get("pin"),
        "moved": ctx.params.get("moved"),
        "balance_query": _balance_query(ctx, page),
        "live": ctx.params.get("live") if page is None or page.version_select else None,
        "version_select": page is None or page.version_select,
        "dates": page is None or page.dates,
        "extra": ctx.params.get("form_extra", []),  # a page's own selects (Page.prepare)
        "extra_line": ctx.params.get("form_line"),
    }


VALUES_SHOWN = 200  # rows of a chart's "values as a table" (its CSV has them all)


def _cut_line(ctx: Ctx, page) -> str | None:
    """What the page shows when the URL left its cut to the page, and why (None: the URL
    chose every filter of the cut itself)."""
    if page is None or not ctx.filters.defaulted:
        return None
    if page.cut_why:
        live = ctx.params.get("live")
        version = ctx.filters.values.get("client_version") or "every version"
        why = page.cut_why.format(version=version if live is None else f"{version} ({live.reason})")
        return f"This page opens on {why}."
    return None


def _balance_query(ctx: Ctx, page) -> str | None:
    """The link from a page opened on its own cut to the balance cut (None: it is on it)."""
    live = ctx.params.get("live")
    if page is None or page.cut not in ("records", "human") or live is None:
        return None
    return "?" + urlencode({"mode": "human", "client_version": live.version or "all"})


def render_page(name: str):
    catalog = _catalog()
    page = catalog.PAGES.get(name)
    if page is None:
        abort(404)
    ctx = _ctx(page=page)
    views = [build(chart, ctx) for chart in page.charts]
    for v in views:  # each chart says which ruleset(s) it covers (rulesets.md RS6.1)
        v.covers = (  # a page that compares sides says it itself (Versions: what changed)
            ctx.params["covers"]
            if "covers" in ctx.params
            else catalog.covers(ctx, page, v.chart.table)
        )
    coverage, partial = _coverage(ctx, page, views)
    html = render_template(
        "page.html",
        page=page,
        name=name,
        active=name,
        views=views,
        form=_filter_form(ctx, page),
        fresh=_freshness(ctx, page),
        coverage=coverage,
        partial=partial,
        console_link=console_link,
        values_shown=VALUES_SHOWN,
        pages_titles={k: p.title for k, p in catalog.PAGES.items()},
        query=ctx.filters.query_string(
            () if page.version_select else ("client_version",), **ctx.params.get("query", {})
        ),
        title=page.title,
        brand=f"{page.game_label} balance" if page.game_label else None,
    )
    return Response(html, mimetype="text/html")


def _coverage(ctx: Ctx, page, views) -> tuple[int | None, dict | None]:
    """Games under the filters, and, when some charts of the page cannot take a chosen filter
    (their table has no such column), the games those charts count: the filters they do take.
    So "0 games" above charts full of data says why: e.g. AI level, which only computer games
    have, next to charts whose tables carry no AI level."""
    catalog = _catalog()
    ctx.params["_skipped"] = set()
    games = catalog.coverage(ctx, page)
    if games is None:
        return None, None
    own = ctx.params.get("_skipped", set())  # filters the count itself could not take
    chosen = ctx.filters.values
    skipped = sorted({k for v in views for k in v.skipped if k in chosen} - own)
    if not skipped:
        return games, None
    reduced = Ctx(Filters({k: v for k, v in chosen.items() if k not in skipped}), ctx.snapshots)
    wider = catalog.coverage(reduced, page)
    return games, {"labels": [LABELS[k] for k in skipped], "games": wider}


@bp.get("/")
def index():
    return render_page("overview")


@bp.get("/p/<name>")
def page(name: str):
    return render_page(name)


IMAGE_TYPES = {"svg": "image/svg+xml", "png": "image/png"}


def chart_image(chart, ctx: Ctx, fmt: str) -> Response:
    """The chart as the page draws it, rendered here by vl-convert (no browser, no network:
    no data URL is allowed), titled with the cut it shows so that the file says it alone."""
    import vl_convert

    ctx.params.pop("explorer", None)  # a file's points link nowhere
    view = build(chart, ctx)
    if view.error or view.spec is None:
        message = view.error or "Nothing to draw under these filters."
        return Response(export.dumps({"error": "empty", "message": message}), 404,
                        mimetype="application/json")  # fmt: skip
    cut = ", ".join(f"{LABELS[k].lower()} {v}" for k, v in ctx.filters.values.items())
    spec = {**view.spec, "title": {"text": chart.title, "subtitle": cut or "every game"}}
    if fmt == "svg":
        body: bytes = vl_convert.vegalite_to_svg(spec, allowed_base_urls=[]).encode()
    else:
        body = vl_convert.vegalite_to_png(spec, scale=2, allowed_base_urls=[])
    resp = Response(body, mimetype=IMAGE_TYPES[fmt])
    resp.headers["Content-Disposition"] = f'attachment; filename="{chart.id}.{fmt}"'
    return resp


@bp.get("/chart/<chart_id>.<fmt>")
def chart_data(chart_id: str, fmt: str):
    """The table behind one chart, under the page's filters, as CSV/JSON/Parquet; or the
    chart itself as SVG/PNG."""
    catalog = _catalog()
    ctx = _ctx(page=catalog.page_of(chart_id))
    chart = catalog.chart(ctx, chart_id)
    if chart is None or fmt not in {**export.MEDIA_TYPES, **IMAGE_TYPES}:
        abort(404)
    if fmt in IMAGE_TYPES:
        return chart_image(chart, ctx, fmt)
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


PER_PAGE = 200
GAME_ID_PREFIX = re.compile(r"[0-9a-f]{4}[0-9a-f-]{0,32}")
RULE_RE = re.compile(r"[RS]\d{1,2}(\.\d{1,2})?")


def _lineup_ok(text: str) -> bool:
    """A lineup of a board: ranks 1..N, each once (N = 5 or 7)."""
    return len(text) in (5, 7) and sorted(text) == [str(i) for i in range(1, len(text) + 1)]


@dataclass
class Explorer:
    """The explorer's query under its filters: the listing SQL (a page of games, newest first),
    the totals SQL (how many match, and W/D/L of the verified ones), what was chosen (as typed,
    so the form keeps it) and what was not understood."""

    sql: str
    totals_sql: str
    chosen: dict
    errors: list[str]
    page: int
    perspective: str | None  # whose W/D/L the totals give ("the side with lineup 31524")
    facets_sql: str | None = None  # counts of every matching game by EXPLORER_FACETS
    applied: dict = field(default_factory=dict)  # facet column -> the filter's value in effect


def explorer_query(args) -> Explorer:
    """Verified and quarantined Slow6 games in one shape, newest first, `PER_PAGE` a page.

    Each branch filters and keeps its newest page * PER_PAGE before the union; quarantined
    records are decoded (raw_json) only after the filters their own columns can take."""
    f = Filters.from_args(args)
    chosen: dict[str, str] = dict(f.values)
    errors = list(f.errors)
    played: list[str] = []  # need the game itself: games columns, or the quarantined record
    verified_only: list[str] = []
    sides: list[tuple[str, str]] = []  # per filter, its condition on side 0 and on side 1
    who: list[str] = []

    lineup = (args.get("lineup") or "").strip()
    if lineup:
        chosen["lineup"] = lineup
        if _lineup_ok(lineup):
            lit = sql_literal(lineup)
            played.append(f"(lineup_0 = {lit} OR lineup_1 = {lit})")
            sides.append((f"lineup_0 = {lit}", f"lineup_1 = {lit}"))
            who.append(f"lineup {lineup}")
        else:
            errors.append(
                f"Lineup: {lineup!r} is not a lineup (the ranks 1..5 or 1..7 by file, each once: "
                "31524) (ignored)"
            )
    power = (args.get("power") or "").strip().lower()
    if power:
        chosen["power"] = power
        if power in POWERS:
            lit = sql_literal(power)
            played.append(f"(list_contains(powers_0, {lit}) OR list_contains(powers_1, {lit}))")
            sides.append((f"list_contains(powers_0, {lit})", f"list_contains(powers_1, {lit})"))
            who.append(f"power {power}")
        else:
            errors.append(f"Power: {power!r} is not a power ({', '.join(POWERS)}) (ignored)")
    reason = (args.get("reason") or "").strip().lower()
    if reason:
        chosen["reason"] = reason
        if reason in REASONS:
            played.append(f"reason = {sql_literal(reason)}")
        else:
            errors.append(f"Reason: {reason!r} is not an end reason (ignored)")
    rule = (args.get("rule") or "").strip().upper()
    rule_cond = None
    if rule:
        chosen["rule"] = rule
        if RULE_RE.fullmatch(rule):
            # "R8" is every rule of R8 (R8, R8.1, R8.11, ...); "R8.1" is that one only
            rule_cond = (
                f"rule = {sql_literal(rule)}"
                if "." in rule
                else f"(rule = {sql_literal(rule)} OR rule LIKE {sql_literal(rule + '.%')})"
            )
        else:
            errors.append(
                f"Rule: {rule!r} is not a rule (R2.2, or R8 for every rule of R8; S2.4) (ignored)"
            )
            rule = ""
    status = (args.get("status") or "").strip().lower()
    if status:
        chosen["status"] = status
        if status not in ("verified", "quarantined"):
            errors.append(f"Status: {status!r} is not verified or quarantined (ignored)")
            status = ""
    game_id = (args.get("game_id") or "").strip().lower()
    id_cond = None
    if game_id:
        chosen["game_id"] = game_id
        if GAME_ID_PREFIX.fullmatch(game_id):
            id_cond = f"CAST(game_id AS VARCHAR) LIKE {sql_literal(game_id + '%')}"
        else:
            errors.append(
                f"Game id: {game_id!r} is not a game id or its start (4 or more hex digits) "
                "(ignored)"
            )
    page = 1
    raw_page = (args.get("page") or "").strip()
    if raw_page:
        if raw_page.isdigit() and 1 <= int(raw_page) <= 10_000:
            page = int(raw_page)
        else:
            errors.append(f"Page: {raw_page!r} is not a page number (ignored)")
    game = (args.get("game") or "").strip().lower()
    if game:
        chosen["game"] = game
        if game not in ("slow6", "slide", ALL):
            errors.append(f"Game: {game!r} is not one of all, slow6, slide (ignored)")
        if game not in ("slow6", "slide"):
            game = ""
    # mode, platform, client version and dates are columns of both games and quarantine
    common, _ = f.conditions({"mode", "platform", "client_version", "ended_at"}, "ended_at")
    if id_cond:
        common.append(id_cond)
    rules_of_play, _ = f.conditions({"board", "variant", "ai_level"})
    played += rules_of_play
    keep = page * PER_PAGE
    # Slide games have no board, lineup, power or end reason, Slow6 games no table size; a
    # rule's letter says its game (R: Slow6, S: Slide)
    players = f.values.get("players")
    with_slow6 = game != "slide" and not players and not rule.startswith("S")
    with_slide = game != "slow6" and not played and not rule.startswith("R")

    def where(conds: list[str]) -> str:
        return ("WHERE " + "\n    AND ".join(conds)) if conds else ""

    verified = None
    if with_slow6 and status != "quarantined" and not rule:
        verified = f"FROM games\n  {where(common + played + verified_only)}"
    slide_verified = None
    slide_conds = [f"players = {int(players)}"] if players else []
    if with_slide and status != "quarantined" and not rule:
        slide_verified = f"FROM slide_games\n  {where(common + slide_conds)}"
    slide_quarantined = None
    if with_slide and status != "verified":
        sq = ["game = 'slide'", *common] + ([rule_cond] if rule_cond else [])
        slide_quarantined = f"""FROM (
    SELECT q.game_id, 'slide' AS game, 'quarantined' AS status, q.mode, q.platform,
           q.client_version, (j->>'$.players')::INTEGER AS players, q.rule,
           q.turn AS broken_turn, q.ended_at
    FROM (SELECT * FROM quarantine {where(sq)}) q
    JOIN (SELECT game_id, record, codec FROM raw_records WHERE status = 'quarantined') r
      USING (game_id),
    LATERAL (SELECT raw_json(r.record, r.codec)::JSON AS j)
  )
  {where(slide_conds)}"""
    quarantined = None
    if with_slow6 and status != "verified":
        qconds = ["game = 'slow6'", *common] + ([rule_cond] if rule_cond else [])
        quarantined = f"""FROM (
    SELECT q.game_id, 'slow6' AS game, 'quarantined' AS status,
           (j->>'$.rules.board')::INTEGER AS board,
           CASE WHEN (j->>'$.rules.hidden')::BOOLEAN THEN 'hidden'
                WHEN (j->>'$.rules.powers')::BOOLEAN THEN 'powers' ELSE 'classic' END AS variant,
           q.mode, (j->>'$.ai.level')::INTEGER AS ai_level, q.platform, q.client_version,
           array_to_string(CAST(j->'$.lineups[0]' AS INTEGER[]), '') AS lineup_0,
           array_to_string(CAST(j->'$.lineups[1]' AS INTEGER[]), '') AS lineup_1,
           CAST(j->'$.powers[0]' AS VARCHAR[]) AS powers_0,
           CAST(j->'$.powers[1]' AS VARCHAR[]) AS powers_1,
           (j->>'$.result.winner')::INTEGER AS winner, j->>'$.result.reason' AS reason,
           json_array_length(j->'$.turns') AS turns, q.rule, q.turn AS broken_turn, q.ended_at
    FROM (SELECT * FROM quarantine {where(qconds)}{{early}}) q
    JOIN (SELECT game_id, record, codec FROM raw_records WHERE status = 'quarantined') r
      USING (game_id),
    LATERAL (SELECT raw_json(r.record, r.codec)::JSON AS j)
  )
  {where(played)}"""

    branches = []
    if verified:
        branches.append(f"""  SELECT game_id, 'slow6' AS game, 'verified' AS status, board, variant,
         mode, ai_level, platform, client_version, lineup_0, lineup_1, powers_0, powers_1,
         winner, reason, turns, NULL::VARCHAR AS rule, NULL::INTEGER AS broken_turn, ended_at
  {verified}
  ORDER BY ended_at DESC LIMIT {keep}""")
    if quarantined:
        early = "" if played else f" ORDER BY ended_at DESC LIMIT {keep}"
        branches.append(f"""  SELECT * {quarantined.replace("{early}", early)}
  ORDER BY ended_at DESC LIMIT {keep}""")
    if slide_verified:
        branches.append(f"""  SELECT game_id, 'slide' AS game, 'verified' AS status, mode, platform,
         client_version, players, winners, rounds AS turns, ended_at
  {slide_verified}
  ORDER BY ended_at DESC LIMIT {keep}""")
    if slide_quarantined:
        branches.append(f"""  SELECT * {slide_quarantined}
  ORDER BY ended_at DESC LIMIT {keep}""")
    if not branches:
        branches.append("  SELECT NULL::UUID AS game_id, NULL::TIMESTAMP AS ended_at WHERE false")
    union = "\n  UNION ALL BY NAME\n".join(f"(\n{b}\n)" for b in branches)
    offset = f" OFFSET {(page - 1) * PER_PAGE}" if page > 1 else ""
    sql = f"""SELECT * FROM (
{union}
)
ORDER BY ended_at DESC
LIMIT {PER_PAGE}{offset}"""

    # the totals: every game that matches, and W/D/L of the verified ones, seen from the side
    # the lineup / power filters pick (else side 0 against side 1)
    if sides:
        s0 = " AND ".join(a for a, _ in sides)
        s1 = " AND ".join(b for _, b in sides)
        wdl = (
            f"count(*) FILTER (WHERE {s0} AND winner = 0) + "
            f"count(*) FILTER (WHERE {s1} AND winner = 1) AS wins, "
            f"count(*) FILTER (WHERE {s0} AND winner IS NULL) + "
            f"count(*) FILTER (WHERE {s1} AND winner IS NULL) AS draws, "
            f"count(*) FILTER (WHERE {s0} AND winner = 1) + "
            f"count(*) FILTER (WHERE {s1} AND winner = 0) AS losses"
        )
        perspective = "the side with " + " and ".join(who)
    else:
        wdl = (
            "count(*) FILTER (WHERE winner = 0) AS wins, "
            "count(*) FILTER (WHERE winner IS NULL) AS draws, "
            "count(*) FILTER (WHERE winner = 1) AS losses"
        )
        perspective = None
    v_totals = (
        f"(SELECT count(*) AS verified, {wdl} {verified})"
        if verified
        else "(SELECT 0 AS verified, 0 AS wins, 0 AS draws, 0 AS losses)"
    )
    q_totals = (
        f"(SELECT count(*) AS quarantined {quarantined.replace('{early}', '')})"
        if quarantined
        else "(SELECT 0 AS quarantined)"
    )
    s_verified = f"(SELECT count(*) FROM (SELECT 1 {slide_verified}))" if slide_verified else "0"
    s_quarantined = (
        f"(SELECT count(*) FROM (SELECT 1 {slide_quarantined}))" if slide_quarantined else "0"
    )
    # W/D/L are Slow6's (side 0 against side 1): a Slide game has no sides to count
    totals_sql = (
        f"SELECT v.verified + {s_verified} AS verified, v.verified AS slow6_verified, "
        f"v.wins, v.draws, v.losses, q.quarantined + {s_quarantined} AS quarantined "
        f"FROM {v_totals} v, {q_totals} q"
    )

    # the facets: every matching game (no page, no LIMIT), only the columns they count
    facet_cols = "board, variant, mode, client_version"
    matched = []
    if verified:
        matched.append(
            f"SELECT 'verified' AS status, 'slow6' AS game, {facet_cols}, NULL::VARCHAR AS rule "
            f"{verified}"
        )
    if quarantined:
        matched.append(
            f"SELECT status, game, {facet_cols}, rule {quarantined.replace('{early}', '')}"
        )
    if slide_verified:
        matched.append(
            "SELECT 'verified' AS status, 'slide' AS game, NULL::INTEGER AS board, "
            f"NULL::VARCHAR AS variant, mode, client_version, NULL::VARCHAR AS rule "
            f"{slide_verified}"
        )
    if slide_quarantined:
        matched.append(
            "SELECT status, game, NULL::INTEGER AS board, NULL::VARCHAR AS variant, mode, "
            f"client_version, rule {slide_quarantined}"
        )
    facets_sql = (
        facets_mod.counts_sql("\nUNION ALL BY NAME\n".join(matched), EXPLORER_FACETS)
        if matched
        else None
    )
    applied = {k: v for k, v in f.values.items() if k in EXPLORER_FACETS}
    if game:
        applied["game"] = game
    if status:
        applied["status"] = status
    if rule:
        applied["rule"] = rule
    return Explorer(sql, totals_sql, chosen, errors, page, perspective, facets_sql, applied)


EXPLORER_FACETS = ("game", "status", "board", "variant", "mode", "client_version", "rule")
FACET_LABELS = {**LABELS, "status": "Status", "rule": "Rule broken", "game": "Game"}
FACET_OK = {  # what the explorer's filter takes: a value it would refuse gets no link
    "game": lambda v: v in ("slow6", "slide"),
    "status": lambda v: v in ("verified", "quarantined"),
    "board": lambda v: v in BOARDS,
    "variant": lambda v: v in VARIANTS,
    "mode": lambda v: v in MODES,
    "client_version": lambda v: bool(VERSION.fullmatch(v)),
    "rule": lambda v: bool(RULE_RE.fullmatch(v)),
}


def explorer_facets(q: Explorer, rows) -> list[dict]:
    """The facet boxes of the explorer from the rows of `q.facets_sql`: each value a link to
    the same filters with that value for its column (and page 1)."""
    counts = facets_mod.ranked(rows, EXPLORER_FACETS)
    # no value: a verified game has no rule, a Slide game no board or variant
    counts = {c: [(v, n) for v, n in vs if v is not None] for c, vs in counts.items()}
    kept = [(k, v) for k, v in request.args.items(multi=True) if k != "page"]

    def url(column: str, value: str | None) -> str:
        args = [(k, v) for k, v in kept if k != column]
        if value is not None:
            args.append((column, value))
        return url_for("dashboard.explorer") + ("?" + urlencode(args) if args else "")

    def link(column: str, value: str | None) -> str | None:
        return url(column, value) if value is not None and FACET_OK[column](value) else None

    boxes = facets_mod.facet_list(
        counts, link, q.applied, FACET_LABELS, unlink=lambda c: url(c, None)
    )
    return [b for b in boxes if b["values"]]


def explorer_sql(args) -> tuple[str, dict]:
    """The listing query and the chosen filters (see `explorer_query`)."""
    q = explorer_query(args)
    return q.sql, q.chosen


@bp.get("/games")
def explorer():
    ctx = _ctx(with_defaults=False)
    q = explorer_query(request.args)
    rows, error = [], None
    columns: list[str] = []
    totals = None
    try:
        snaps = snapshots(current_app)
        result = snaps.run(q.sql, limit=PER_PAGE, timeout=10)
        columns = result.columns
        rows = [dict(zip(columns, r, strict=False)) for r in export.rows(result.table)]
        t = snaps.run(q.totals_sql, limit=1, timeout=10)
        totals = dict(zip(t.columns, export.rows(t.table)[0], strict=False))
    except QueryError as exc:
        error = exc.message
    facets, facets_error = [], None
    if error is None and q.facets_sql is not None:
        try:
            counted = snaps.run(q.facets_sql, limit=facets_mod.MAX_GROUPS, timeout=10)
            facets = explorer_facets(q, export.rows(counted.table))
        except QueryError as exc:  # a help: the listing and the totals stand without them
            facets_error = exc.message
    matched = (totals["verified"] + totals["quarantined"]) if totals else len(rows)
    pages = max(1, -(-matched // PER_PAGE))
    args = {k: v for k, v in request.args.items() if k != "page"}

    def page_url(n: int) -> str:
        return url_for("dashboard.explorer") + "?" + urlencode({**args, "page": n})

    form = _filter_form(ctx)
    form["errors"] = q.errors
    html = render_template(
        "explorer.html",
        active="games",
        title="Games",
        rows=rows,
        columns=columns,
        error=error,
        sql=q.sql,
        totals=totals,
        facets=facets,
        facets_error=facets_error,
        perspective=q.perspective,
        page=q.page,
        pages=pages,
        per_page=PER_PAGE,
        first_row=(q.page - 1) * PER_PAGE + 1,
        prev_url=page_url(q.page - 1) if q.page > 1 else None,
        next_url=page_url(q.page + 1) if q.page < pages else None,
        chosen=q.chosen,
        form=form,
        fresh=_freshness(ctx),
        reasons=REASONS,
        powers=POWERS,
        console_link=console_link,
        back_query="?" + urlencode(list(request.args.items(multi=True))) if request.args else "",
    )
    return Response(html, mimetype="text/html")


def _back(status: str) -> str:
    """The viewer's way back: the explorer with the filters it was opened from (the game's
    link carries them), else the explorer on the game's status."""
    kept = [(k, v) for k, v in request.args.items(multi=True)]
    return url_for("dashboard.explorer") + "?" + urlencode(kept or [("status", status)])


def load_record(game_id: str):
    """(record, status, quarantine row) of one game from the snapshot."""
    import orjson

    if not UUID_RE.fullmatch(game_id):
        abort(404)
    sql = (
        "SELECT raw_json(r.record, r.codec), r.status, q.rule, q.turn, q.message, q.seat "
        "FROM raw_records r "
        "LEFT JOIN quarantine q USING (game_id) "
        f"WHERE r.game_id = {sql_literal(game_id.lower())}::UUID"
    )
    result = snapshots(current_app).run(sql, limit=1, timeout=10)
    rows = export.rows(result.table)
    if not rows:
        abort(404)
    raw, status, rule, turn, message, seat = rows[0]
    record = orjson.loads(raw)
    quarantine = {"rule": rule, "turn": turn, "message": message, "seat": seat} if rule else None
    return record, status, quarantine


@bp.get("/games/<game_id>")
def game(game_id: str):
    from .frames import frames

    record, status, quarantine = load_record(game_id)
    if record.get("game") == "slide":
        return slide_game(game_id, record, status, quarantine)
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
        back=_back(status),
    )
    return Response(html, mimetype="text/html")


def slide_game(game_id: str, record: dict, status: str, quarantine: dict | None):
    """A Slide game: each round's plays and every seat's grid, up to a broken rule."""
    from .frames import slide_rounds

    replay = slide_rounds(record)
    html = render_template(
        "game_slide.html",
        active="games",
        title=f"Slide game {game_id}",
        game_id=game_id,
        record=record,
        status=status,
        quarantine=quarantine,
        replay=replay,
        fresh=_freshness(_ctx(with_defaults=False)),
        back=_back(status),
        brand="Slide balance",
    )
    return Response(html, mimetype="text/html")
