"""Saved queries of the SQL console: a name, a description, parameters and a stable URL.

They live in the store's `saved_queries` table (ingest/storage/schema.sql, docs/tables.md), so
they outlast restarts and `balance reverify`, which only rewrites game tables. The server writes
them on its calls thread (`store.submit`, one transaction each: on a file a slug is unique
because every write is checked and made there, one at a time) and reads them with a reader
cursor (a saved query is listed as soon as it is saved, not at the next snapshot).

On a lake several servers write the table and DuckLake has no unique keys: two servers may
insert one slug at once. Every read takes the first row of a slug (the lowest rowid: the
first committed), and `create` reads its slug back after the commit: a server that finds
another's query there lost the race, removes its own row and takes the next free slug (or,
for a slug the client chose, answers 409).

Nothing about a saved query runs anything the console would not: its text is checked by the
console's allow-list when it is saved (a refused text is never stored) and again each time it
runs, through the same engine as a typed query; its parameters are values DuckDB binds
(sqlparams.py), never text in the query.

Bounded, so that no client can fill the store or the server's memory with them: at most
SAVED_MAX queries a store (1,000), SAVED_MAX_BYTES a query (64 KiB of title, description,
text, parameters and chart), SAVED_TOTAL_BYTES in all (16 MiB), and SAVED_RATE saves (creates
and changes) a minute from one client address (30); past these a save is refused (409, 413,
429) and nothing is written. The list (`GET /sql/saved`) comes in pages of at most
LIST_MAX_PAGE (500; LIST_PAGE, 100, by default) without the queries' texts, so a list costs
the same whatever the store holds.

The dashboard's own chart queries are listed too, read-only, as `dashboard-<chart id>`: their
parameters are the page's filters (checked against the filters' vocabularies, as on the page),
and their text is the chart's SQL for those filters, generated the way the page generates it.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import orjson

from .sqlparams import Param, declare
from .sqlsafe import MAX_SQL_CHARS, QueryError, Refused

SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
BUILTIN = "dashboard-"  # the dashboard's chart queries; no saved query takes the prefix
MAX_TITLE = 200
MAX_DESCRIPTION = 5000
COLUMNS = "slug, title, description, sql, params, chart, created_at, updated_at, version"
# saved_queries with one row a slug: the first committed (see the module docstring)
FIRST = (
    "(SELECT * FROM saved_queries QUALIFY row_number() OVER (PARTITION BY slug ORDER BY rowid) = 1)"
)
_RACES = 5  # slugs tried by one create that keeps losing the race for them
# what a list page shows of each (no text: a text may be 64 KiB, a page 500 queries)
SUMMARY = "slug, title, description, params, chart, created_at, updated_at, version"
# bytes a row takes, as the size limits count them
ROW_BYTES = (
    "strlen(title) + strlen(description) + strlen(sql) + strlen(params) "
    "+ coalesce(strlen(chart), 0)"
)
LIST_PAGE = 100
LIST_MAX_PAGE = 500


@dataclass(frozen=True)
class Limits:
    """Bounds of the saved queries (settings SAVED_MAX, SAVED_MAX_BYTES, SAVED_TOTAL_BYTES,
    SAVED_RATE)."""

    count: int = 1000
    size: int = 64 * 1024
    total: int = 16 * 1024 * 1024
    rate: int = 30  # saves a minute from one client address


class Full(QueryError):
    """The store holds as many saved queries (or bytes of them) as it may."""

    kind = "full"


class TooLarge(QueryError):
    kind = "too_big"


class RateLimited(QueryError):
    kind = "rate_limited"

    def __init__(self, message: str, retry_after: float):
        super().__init__(message)
        self.retry_after = retry_after


class SaveRate:
    """At most `per_minute` saves a minute from one client address (a token bucket each; the
    table of addresses is pruned of full buckets, so it stays as small as the busy ones)."""

    def __init__(self, per_minute: int):
        self.per_minute = per_minute
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, address: str) -> None:
        if self.per_minute <= 0:
            return
        rate = self.per_minute / 60.0
        now = time.monotonic()
        with self._lock:
            tokens, at = self._buckets.get(address, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - at) * rate)
            if tokens < 1.0:
                self._buckets[address] = (tokens, now)
                wait = (1.0 - tokens) / rate
                raise RateLimited(
                    f"At most {self.per_minute} saves a minute from one client: try again in "
                    f"{wait:.0f} s.",
                    wait,
                )
            self._buckets[address] = (tokens - 1.0, now)
            if len(self._buckets) > 10_000:
                full = now - 60.0
                self._buckets = {a: v for a, v in self._buckets.items() if v[1] > full}


class NotFound(QueryError):
    kind = "not_found"


class Conflict(QueryError):
    kind = "conflict"


class ReadOnly(QueryError):
    kind = "read_only"


class Unavailable(QueryError):
    """The store cannot be read or written now (a full disk, closing)."""

    kind = "busy"


@dataclass
class Saved:
    slug: str
    title: str
    description: str
    sql: str  # as written: `:name` marks a parameter
    params: list[Param] = field(default_factory=list)
    chart: dict | None = None
    created_at: str | None = None
    updated_at: str | None = None
    version: int = 0
    builtin: bool = False
    page: str | None = None  # a dashboard chart's page key
    chart_id: str | None = None

    @property
    def url(self) -> str:
        return f"/sql/q/{self.slug}"

    def as_json(self, text: bool = True) -> dict:
        """Everything; without `text`, all but the query's text (a list's entry)."""
        return {
            "slug": self.slug,
            "title": self.title,
            "description": self.description,
            **({"sql": self.sql} if text else {}),
            "params": [p.as_json() for p in self.params],
            "chart": self.chart,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "version": self.version,
            "read_only": self.builtin,
            "url": self.url,
        }


def _text(body: dict, key: str, limit: int, required: bool = False) -> str:
    value = body.get(key)
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise Refused(f"{key} is text.")
    value = value.strip()
    if required and not value:
        raise Refused(f"Give the query a {key}.")
    if len(value) > limit:
        raise Refused(f"The {key} is longer than {limit:,} characters.")
    return value


def slug_of(title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60].strip("-")
    return slug or "query"


def check_slug(slug) -> str:
    if not isinstance(slug, str) or not SLUG.fullmatch(slug):
        raise Refused(
            "A slug (the query's URL) is 1 to 64 lower-case letters, digits and -, "
            "starting with a letter or digit."
        )
    if slug.startswith(BUILTIN):
        raise ReadOnly(f"Slugs starting with {BUILTIN} are the dashboard's own queries.")
    return slug


def from_body(body, check_sql) -> dict:
    """The fields of a saved query from a JSON body, each checked; `check_sql(text)` raises
    unless the console's allow-list passes the text (with `$name` parameters)."""
    from . import sqlchart

    if not isinstance(body, dict):
        raise Refused('Send JSON {"title": ..., "sql": ..., "params": [...], "chart": {...}}.')
    title = _text(body, "title", MAX_TITLE, required=True)
    description = _text(body, "description", MAX_DESCRIPTION)
    sql = body.get("sql")
    if not isinstance(sql, str) or not sql.strip():
        raise Refused("Give the query's SQL.")
    if len(sql) > MAX_SQL_CHARS:
        raise Refused(f"The query text is longer than {MAX_SQL_CHARS:,} characters.")
    raw_params = body.get("params") or []
    if not isinstance(raw_params, list):
        raise Refused("params is a list of {name, type, default}.")
    text, params = declare(sql, [Param.of(p) for p in raw_params])
    check_sql(text)  # refused texts are never stored
    chart = sqlchart.checked(body.get("chart"))
    return {
        "title": title,
        "description": description,
        "sql": sql.strip(),
        "params": params,
        "chart": chart,
    }


def _summary(row) -> Saved:
    slug, title, description, params, chart, created, updated, version = row
    return _row((slug, title, description, "", params, chart, created, updated, version))


def _row(row) -> Saved:
    slug, title, description, sql, params, chart, created, updated, version = row
    return Saved(
        slug,
        title,
        description,
        sql,
        [Param.of(p) for p in orjson.loads(params)],
        orjson.loads(chart) if chart else None,
        _iso(created),
        _iso(updated),
        int(version),
    )


def _iso(value) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None


class SavedQueries:
    """The saved_queries table of the server's store (ingest.storage.Store)."""

    def __init__(self, store, limits: Limits | None = None):
        self.store = store
        self.limits = limits or Limits()

    def _read(self, sql: str, params=()) -> list[tuple]:
        try:
            cur = self.store.reader()
        except Exception as exc:  # storage failing, or closing: say so, do not fail the page
            raise Unavailable(f"Saved queries cannot be read now: {exc}") from None
        try:
            return cur.execute(sql, list(params)).fetchall()
        except Exception as exc:
            if "saved_queries" in str(exc):  # a store opened read-only, before the table
                return []
            raise Unavailable(f"Saved queries cannot be read now: {exc}") from None
        finally:
            cur.close()

    def _write(self, fn):
        try:
            return self.store.submit(fn).result(timeout=60)
        except QueryError:
            raise
        except Exception as exc:
            raise Unavailable(f"The query could not be saved now: {exc}") from None

    def list(self, limit: int = LIST_PAGE, offset: int = 0) -> tuple[list[Saved], int]:
        """A page of the saved queries (by title), without their texts, and how many there
        are in all."""
        limit = max(0, min(int(limit), LIST_MAX_PAGE))
        rows = self._read(
            f"SELECT {SUMMARY} FROM {FIRST} ORDER BY lower(title), slug LIMIT ? OFFSET ?",
            [limit, max(0, int(offset))],
        )
        total = self._read("SELECT count(DISTINCT slug) FROM saved_queries")
        return [_summary(r) for r in rows], int(total[0][0]) if total else 0

    def _size(self, fields: dict) -> int:
        size = sum(len(v.encode()) for v in _values(fields) if v)
        if size > self.limits.size:
            raise TooLarge(
                f"A saved query is at most {self.limits.size:,} bytes (title, description, "
                f"text, parameters and chart); this one is {size:,}."
            )
        return size

    def _room(self, con, size: int, replacing: str | None = None) -> None:
        """Full unless the store has room for one more query of `size` bytes (or for
        `replacing`'s new version): runs in the writing transaction, so saves never race."""
        count, total = con.execute(
            f"SELECT count(DISTINCT slug), coalesce(sum({ROW_BYTES}), 0) FROM saved_queries"
        ).fetchone()
        if replacing is None and count >= self.limits.count:
            raise Full(
                f"The store holds {count:,} saved queries, the most it may "
                f"({self.limits.count:,}): delete some first."
            )
        if replacing is not None:
            (old,) = con.execute(
                f"SELECT coalesce(sum({ROW_BYTES}), 0) FROM saved_queries WHERE slug = ?",
                [replacing],
            ).fetchone()
            total -= old
        if total + size > self.limits.total:
            raise Full(
                f"The saved queries would take {total + size:,} bytes, more than the "
                f"{self.limits.total:,} the store keeps for them: delete some first."
            )

    def get(self, slug: str) -> Saved | None:
        rows = self._read(f"SELECT {COLUMNS} FROM {FIRST} WHERE slug = ?", [slug])
        return _row(rows[0]) if rows else None

    def _written(self, slug: str) -> Saved:
        """The query just written, read back (NotFound: another request deleted it since)."""
        saved = self.get(slug)
        if saved is None:
            raise NotFound(f"No saved query {slug}.")
        return saved

    def create(self, fields: dict, slug: str | None = None) -> Saved:
        explicit = slug is not None
        base = check_slug(slug) if explicit else check_slug(slug_of(fields["title"]))
        lost: set[str] = set()  # slugs another server took meanwhile (a lake)
        size = self._size(fields)

        def write(con) -> tuple[str, datetime]:
            self._room(con, size)
            taken = lost | {
                s
                for (s,) in con.execute(
                    "SELECT slug FROM saved_queries WHERE slug = ? OR slug LIKE ?",
                    [base, base + "-%"],
                ).fetchall()
            }
            chosen = base
            if chosen in taken:
                if explicit:
                    raise Conflict(f"A saved query {base} exists already: change it with PUT.")
                n = 2
                while f"{base[:58]}-{n}" in taken:
                    n += 1
                chosen = f"{base[:58]}-{n}"
            now = datetime.now(UTC).replace(tzinfo=None)
            con.execute(
                f"INSERT INTO saved_queries ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)",
                [chosen, *_values(fields), now, now],
            )
            return chosen, now

        for _ in range(_RACES):
            chosen, made = self._write(write)
            saved = self._written(chosen)
            if saved.created_at == _iso(made) and _same(saved, fields):
                return saved
            self._write(lambda con, c=chosen, m=made: _remove_loser(con, c, m, fields))
            if explicit:
                raise Conflict(f"A saved query {base} was saved meanwhile: change it with PUT.")
            lost.add(chosen)
        raise Unavailable("The query could not be saved now: other servers kept taking its slug.")

    def update(self, slug: str, fields: dict, version: int | None = None) -> Saved:
        check_slug(slug)
        size = self._size(fields)

        def write(con) -> None:
            row = con.execute("SELECT version FROM saved_queries WHERE slug = ?", [slug]).fetchone()
            if row is None:
                raise NotFound(f"No saved query {slug}.")
            self._room(con, size, replacing=slug)
            if version is not None and int(row[0]) != version:
                raise Conflict(
                    f"{slug} was changed meanwhile (version {row[0]}, not {version}): "
                    f"reload it and change it again."
                )
            now = datetime.now(UTC).replace(tzinfo=None)
            con.execute(
                "UPDATE saved_queries SET title = ?, description = ?, sql = ?, params = ?, "
                "chart = ?, updated_at = ?, version = version + 1 WHERE slug = ?",
                [*_values(fields), now, slug],
            )

        self._write(write)
        return self._written(slug)

    def delete(self, slug: str) -> None:
        check_slug(slug)

        def write(con) -> None:
            found = con.execute("SELECT 1 FROM saved_queries WHERE slug = ?", [slug]).fetchone()
            if found is None:
                raise NotFound(f"No saved query {slug}.")
            con.execute("DELETE FROM saved_queries WHERE slug = ?", [slug])

        self._write(write)


def _same(saved: Saved, fields: dict) -> bool:
    """`saved` is the row `fields` were written as (not another server's of the same slug)."""
    title, description, sql, params, chart = _values(fields)
    mine = (title, description, sql, orjson.loads(params), orjson.loads(chart) if chart else None)
    theirs = saved.as_json()
    got = (theirs["title"], theirs["description"], theirs["sql"], theirs["params"])
    return got == mine[:4] and (theirs.get("chart") or None) == mine[4]


def _remove_loser(con, slug: str, made: datetime, fields: dict) -> None:
    """Delete this create's row of `slug`, which another server's row came before."""
    title, _, sql, _, _ = _values(fields)
    con.execute(
        "DELETE FROM saved_queries WHERE slug = ? AND created_at = ? AND title = ? AND sql = ? "
        "AND rowid <> (SELECT min(rowid) FROM saved_queries WHERE slug = ?)",
        [slug, made, title, sql, slug],
    )


def _values(fields: dict) -> list:
    chart = fields.get("chart")
    return [
        fields["title"],
        fields["description"],
        fields["sql"],
        orjson.dumps([p.as_json() for p in fields["params"]]).decode(),
        orjson.dumps(chart).decode() if chart else None,
    ]


# -- the dashboard's chart queries ----------------------------------------------------------------


def _filter_params(page) -> list[Param]:
    from ..filters import LABELS

    own = ["client_version"] if page.version_select else list(page.params)
    keys = [*page.selects, *own, "date_from", "date_to"]
    return [
        Param(k, "date" if k.startswith("date_") else "text", None, LABELS.get(k, k)) for k in keys
    ]


def builtins() -> list[Saved]:
    from .. import catalog

    out = []
    for key, page in catalog.PAGES.items():
        for chart in page.charts:
            out.append(
                Saved(
                    f"{BUILTIN}{chart.id}",
                    f"{page.title}: {chart.title}",
                    f"The query behind the chart \u201c{chart.title}\u201d on the dashboard's "
                    f"{page.title} page, for the filters given (none: the page's default cut). "
                    f"It sums {chart.table}; the page then adds rates and intervals "
                    f"(analysis.views). Read-only.",
                    "",
                    _filter_params(page),
                    builtin=True,
                    page=key,
                    chart_id=chart.id,
                )
            )
    return out


def builtin(slug: str) -> Saved | None:
    return next((s for s in builtins() if s.slug == slug), None)


def builtin_sql(saved: Saved, args, snapshots) -> tuple[str, dict[str, str], list[str]]:
    """(the chart's SQL for the filters in `args`, the filter values applied, the filters'
    complaints) the way its page makes them; with no filter in `args`, the page's defaults."""
    from .. import catalog
    from ..filters import KEYS, Filters
    from ..render import Ctx

    if saved.page is None or saved.chart_id is None:
        raise ValueError(f"{saved.slug} is not a dashboard chart: it has no page's SQL")
    page = catalog.PAGES[saved.page]
    chart = catalog.CHARTS[saved.chart_id]
    ctx = Ctx(Filters(), snapshots)
    defaults = catalog.defaults(catalog.live(ctx, page), page)
    given = {k: args.get(k) for k in KEYS if k in args}
    ctx.filters = Filters.from_args(given, defaults)
    if page.prepare is not None:  # the page's own filters (the Versions page's A and B)
        page.prepare(ctx, {k: v for k, v in args.items() if k in page.params})
    if not ctx.has(chart.table):
        raise Refused(
            f"No data yet: the table {chart.table} is not in the snapshot "
            "(the analysis jobs write it: balance jobs run)."
        )
    shown = {**ctx.filters.values, **ctx.params.get("query", {})}
    return chart.sql(ctx), shown, list(ctx.filters.errors)


def dashboard_url(saved: Saved, values: dict[str, str]) -> str:
    from urllib.parse import urlencode

    base = "/dashboard/" if saved.page == "overview" else f"/dashboard/p/{saved.page}"
    return base + ("?" + urlencode(values) if values else "")
