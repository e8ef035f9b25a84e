"""`balance export`: the public dataset of verified games, in the shape 17lands publishes its own.

    balance export --out DIR [--from DATE] [--to DATE] [--format parquet|csv]
                   [--db FILE | --server URL | --lake CATALOG [--data-path DIR]]

One row a game (`games`: its lineups, power picks as a list and one column per power and side,
result, client version and week; 17lands' game data has a row a game and a column a card) and
one row a turn (`turns`), and the same for Slide (`slide_games`, `slide_seats`, `slide_rounds`:
a row a round per seat). Only verified games: the store's game tables hold nothing else.
Nothing personal is in the store (the upload format has no field for it), and nothing of the
server's: no receive time, no raw record.

DIR gets a Hive-style partition per table and week (`games/week=2024-01-01/part-0.parquet`;
the week is the Monday of the game's `ended_at`, UTC), a `README.md` data dictionary generated
from the documented columns (docs/tables.md, the store's schema.sql comments, and this module
for the columns it derives), a `manifest.json` (row counts, bytes and SHA-256 of every file,
the source and the snapshot it read) and `SHA256SUMS` (for `sha256sum -c`). The same games give
the same bytes, whichever source they are read from: rows in a fixed order, Parquet row groups
of a fixed size.

Sources: a stopped store (`--db FILE`, opened read-only) or a running server (`--server URL`:
each partition is a whole download of the console, /sql/download.parquet, split by days when
a week is over the server's download limit; every part must come from one snapshot, else the
export starts again) or a lake (`--lake CATALOG`, docs/lake.md: attached read-only, the
extensions loaded offline from their wheels, every query in one transaction, so one lake
snapshot, whose id and time the manifest records).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from analysis import csvsafe, export_dir, settings
from analysis.sql import sql_literal
from replays.vocabulary import POWERS

if TYPE_CHECKING:
    import duckdb

FORMAT_VERSION = 1
ROW_GROUP = 128 * 1024  # rows per Parquet row group (a fixed size: the same rows, the same bytes)
FORMATS = ("parquet", "csv")


# -- what is published ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    name: str
    source: str  # the store table its columns are documented under (docs/tables.md)
    doc: str
    sql: str  # with {lo} and {hi}: the ended_at range, as TIMESTAMP literals
    derived: dict[str, str] = field(default_factory=dict)  # column -> doc, for columns it makes


WEEK = "CAST(date_trunc('week', g.ended_at) AS DATE) AS week"
RANGE = "g.ended_at >= {lo} AND g.ended_at < {hi}"
PICKS = ",\n       ".join(
    f"coalesce(list_contains(g.powers_{side}, {sql_literal(p)}), false) AS pick_{side}_{p}"
    for side in (0, 1)
    for p in POWERS
)

DATASETS = (
    Dataset(
        "games",
        "games",
        "One row a verified Slow6 game: its rules, mode, client, lineups, power picks, result.",
        f"""SELECT CAST(g.game_id AS VARCHAR) AS game_id, {WEEK},
       CAST(g.ended_at AS DATE) AS day,
       g.board, g.variant, g.mode, g.ai_level, g.challenge_id, g.platform, g.client_version,
       g.ruleset, g.first, g.lineup_0, g.lineup_1,
       array_to_string(g.powers_0, ' ') AS powers_0, array_to_string(g.powers_1, ' ') AS powers_1,
       {PICKS},
       g.winner, g.winner IS NULL AS draw, g.reason, g.points_0, g.points_1, g.turns
FROM games g
WHERE {RANGE}
ORDER BY g.ended_at, g.game_id""",
        {
            "week": "Monday of the week of `ended_at` (client clock, UTC): the partition",
            "day": "the day of `ended_at` (client clock, UTC); the time of day is not published",
            "powers_0": "side 0's three power picks (R8.2 ids), space separated, in pick "
            "order; NULL without powers",
            "powers_1": "side 1's three power picks, as `powers_0`",
            "draw": "no winner (`winner` is NULL)",
            **{
                f"pick_{side}_{p}": f"side {side} picked the power `{p}` (false without powers)"
                for side in (0, 1)
                for p in POWERS
            },
        },
    ),
    Dataset(
        "turns",
        "game_turns",
        "One row a turn of a verified Slow6 game; join to `games` on `game_id`.",
        f"""SELECT CAST(t.game_id AS VARCHAR) AS game_id, {WEEK}, t.turn, t.side, t.power,
       t.move_1, t.move_2, t.fights, t.removed, t.stuns, t.catches, t.promotions, t.trapped
FROM game_turns t JOIN games g USING (game_id)
WHERE {RANGE}
ORDER BY g.ended_at, t.game_id, t.turn""",
        {"week": "the week of the game (see `games.week`): the partition"},
    ),
    Dataset(
        "slide_games",
        "slide_games",
        "One row a verified Slide game: table size, who led, match, mode, client, winners.",
        f"""SELECT CAST(g.game_id AS VARCHAR) AS game_id, {WEEK},
       CAST(g.ended_at AS DATE) AS day,
       g.players, g.first, g.match_id, g.match_game, g.mode, g.platform, g.client_version,
       g.ruleset, array_to_string(g.winners, ' ') AS winners, g.shared, g.best_score, g.rounds
FROM slide_games g
WHERE {RANGE}
ORDER BY g.ended_at, g.game_id""",
        {
            "week": "Monday of the week of `ended_at` (client clock, UTC): the partition",
            "day": "the day of `ended_at` (client clock, UTC); the time of day is not published",
            "winners": "the winning seats, space separated, sorted (several: a shared victory)",
        },
    ),
    Dataset(
        "slide_seats",
        "slide_seats",
        "One row a seat of a verified Slide game; join to `slide_games` on `game_id`.",
        f"""SELECT CAST(s.game_id AS VARCHAR) AS game_id, {WEEK}, s.seat, s.seat_from_first,
       s.score, s.cards_left, s.won, s.groups_removed, s.cards_removed,
       CAST(to_json(s.groups) AS VARCHAR) AS groups
FROM slide_seats s JOIN slide_games g USING (game_id)
WHERE {RANGE}
ORDER BY g.ended_at, s.game_id, s.seat""",
        {
            "week": "the week of the game (see `slide_games.week`): the partition",
            "groups": 'each group it cancelled at the end, as JSON: [{"value": 7, "size": 3}]',
        },
    ),
    Dataset(
        "slide_rounds",
        "slide_rounds",
        "One row a round per seat of a verified Slide game (its turn); join on `game_id`.",
        f"""SELECT CAST(r.game_id AS VARCHAR) AS game_id, {WEEK}, r.round, r.seat,
       r.take_order, r.revealed, r.reveal_row, r.reveal_col, r.took, r.had_choice,
       array_to_string(r.available, ' ') AS available, r.side
FROM slide_rounds r JOIN slide_games g USING (game_id)
WHERE {RANGE}
ORDER BY g.ended_at, r.game_id, r.round, r.seat""",
        {
            "week": "the week of the game (see `slide_games.week`): the partition",
            "available": "values in the middle when it took, sorted, space separated",
        },
    ),
)
BY_NAME = {d.name: d for d in DATASETS}
GAME_TABLES = {"games": "games", "turns": "games", "slide_games": "slide_games"}
GAME_TABLES.update({"slide_seats": "slide_games", "slide_rounds": "slide_games"})


def weeks_sql(lo: str, hi: str) -> str:
    union = "\nUNION ".join(
        f"SELECT DISTINCT CAST(date_trunc('week', g.ended_at) AS DATE) AS week FROM {t} g "
        f"WHERE {RANGE.format(lo=lo, hi=hi)}"
        for t in ("games", "slide_games")
    )
    return f"SELECT week FROM ({union}) ORDER BY week"


def _ts(d: date | None) -> str:
    """The bound as a TIMESTAMP literal; None: no upper bound (a game may say it ended on
    9999-12-31, past the end of any Python date's week)."""
    if d is None:
        return "TIMESTAMP 'infinity'"
    return f"TIMESTAMP {sql_literal(d.isoformat() + ' 00:00:00')}"


def _next_day(d: date) -> date | None:
    try:
        return d + timedelta(days=1)
    except OverflowError:  # 9999-12-31
        return None


def _week_end(week: date, hi: date | None) -> date | None:
    """The end of `week` within the export's bound `hi` (None: unbounded)."""
    try:
        end: date | None = week + timedelta(days=7)
    except OverflowError:  # the last week of 9999
        end = None
    if hi is None:
        return end
    return hi if end is None else min(end, hi)


# -- where the rows come from ---------------------------------------------------------------------


class ExportError(Exception):
    """The export cannot be made (the reason is for a person); exit status 1 or 2."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


class SnapshotChanged(Exception):
    """The server's snapshot changed between two parts: start again."""


class Source:
    """Rows for SQL over the store's tables, one consistent state for a whole export."""

    kind = "?"
    snapshot_at: str | None = None
    snapshot_id: int | None = None  # a lake's snapshot: its number

    def tables(self, sql: str, lo: date, hi: date | None) -> Iterator[pa.Table]:
        """The result of `sql` (a Dataset's, for ended_at in [lo, hi); hi None: no upper
        bound) as one or more tables."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class _DuckDBConnection(Source):
    """A source read through a DuckDB connection of its own (`con`), in one transaction."""

    con: duckdb.DuckDBPyConnection

    def tables(self, sql: str, lo: date, hi: date | None) -> Iterator[pa.Table]:
        query = sql.format(lo=_ts(lo), hi=_ts(hi))
        reader = self.con.execute(query).to_arrow_reader(64 * 1024)
        for batch in reader:
            yield pa.Table.from_batches([batch])

    def close(self) -> None:
        self.con.close()


def open_stopped_store(path: str) -> duckdb.DuckDBPyConnection:
    """A store file opened read-only, or ExportError (code 2) saying why not: missing, or
    held by a running server (then its SQL console is the way: --server URL)."""
    import duckdb

    if not os.path.isfile(path):
        raise ExportError(f"no store at {path}", 2)
    try:
        return duckdb.connect(path, read_only=True)
    except duckdb.Error as exc:
        if "lock" in str(exc).lower():
            raise ExportError(
                f"{path} is open in another process (a running balance serve?): stop it, "
                f"or use --server URL",
                2,
            ) from None
        raise ExportError(f"cannot open {path}: {exc}", 2) from None


class DuckDBSource(_DuckDBConnection):
    """A stopped store, opened read-only (no server may hold the file)."""

    kind = "db"

    def __init__(self, path: str):
        self.con = open_stopped_store(path)
        self.con.execute("BEGIN TRANSACTION")  # one state for every query of the export
        self.snapshot_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class LakeSource(_DuckDBConnection):
    """A lake, attached read-only (a catalog user that may only read is enough): the tables
    have the file store's columns and types, so the same SQL gives the same rows. One
    transaction for the whole export: every query reads the snapshot it started on."""

    kind = "lake"

    def __init__(self, catalog: str, data_path: str | None = None):
        import duckdb

        from ingest.storage.lake import LAKE, LakeError, LakeUnavailable, connect

        try:
            self.con = connect(catalog, data_path, read_only=True, claims=False)
        except (LakeError, LakeUnavailable) as exc:
            raise ExportError(str(exc), 2) from None
        except duckdb.Error as exc:  # the catalog unreachable, refused, not a lake
            raise ExportError(f"cannot attach the lake: {exc}", 2) from None
        try:
            self.con.execute("BEGIN TRANSACTION")
            ((self.snapshot_id,),) = self.con.execute(
                f"SELECT id FROM {LAKE}.current_snapshot()"
            ).fetchall()
            ((at,),) = self.con.execute(  # as seconds: a TIMESTAMPTZ to Python needs pytz
                f"SELECT epoch(snapshot_time) FROM ducklake_snapshots('{LAKE}') "
                "WHERE snapshot_id = ?",
                [self.snapshot_id],
            ).fetchall()
        except BaseException:
            self.con.close()
            raise
        self.snapshot_at = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ServerSource(Source):
    """A running server: each part is a whole download of its SQL console, in Parquet."""

    kind = "server"

    def __init__(self, url: str, token: str | None = None, timeout: float = 300.0):
        from ingest.storage.remote import Api

        self.api = Api(url, token, timeout)
        self.base = self.api.base
        self.snapshot_at = None

    def _get(self, sql: str) -> tuple[int, dict, bytes]:
        """One download, retried while the server is busy (503 or 429: after its Retry-After)
        or the connection is reset, with growing waits (the client's RETRIES times at most):
        a server under load (its download slots taken) answers busy for a while, and an
        export is long."""
        from ingest.storage.remote import RemoteError

        query = urllib.parse.urlencode({"q": sql, "name": "export"})
        try:
            got = self.api.request("GET", f"/sql/download.parquet?{query}", retry_busy=True)
        except RemoteError as exc:
            raise ExportError(str(exc), exc.code) from None
        return got.status, got.headers, got.body

    def tables(self, sql: str, lo: date, hi: date | None) -> Iterator[pa.Table]:
        status, headers, body = self._get(sql.format(lo=_ts(lo), hi=_ts(hi)))
        span = ((hi or date.max) - lo).days + (hi is None)
        if status == 413 and span > 1:  # over the download limit: by halves
            mid = lo + timedelta(days=span // 2)
            yield from self.tables(sql, lo, mid)
            yield from self.tables(sql, mid, hi)
            return
        if status != 200:
            try:
                detail = orjson.loads(body)
                message = f"{detail.get('error', status)}: {detail.get('message', '')}"
            except orjson.JSONDecodeError:
                message = f"HTTP {status}"
            if status == 413:
                message += " (one day of games is over the server's download limit: export "
                message += "from the stopped store with --db)"
            raise ExportError(f"the server refused a part of the export: {message}")
        at = {k.lower(): v for k, v in headers.items()}.get("x-snapshot-at")
        if self.snapshot_at is None:
            self.snapshot_at = at
        elif at != self.snapshot_at:
            raise SnapshotChanged
        yield pq.read_table(io.BytesIO(body))


# -- writing --------------------------------------------------------------------------------------


class _Part:
    """One partition's file: fixed-size Parquet row groups, or CSV (Polars' writer, as the
    console's downloads), whatever the sizes of the tables handed in."""

    def __init__(self, path: Path, fmt: str):
        self.path = path
        self.fmt = fmt
        self.rows = 0
        self.schema: pa.Schema | None = None
        self._file = open(path, "wb")
        self._parquet = None
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def write(self, table: pa.Table) -> None:
        if self.schema is None:
            self.schema = table.schema
            if self.fmt == "parquet":
                self._parquet = pq.ParquetWriter(self._file, self.schema)
        elif table.schema != self.schema:
            table = table.cast(self.schema)
        if not table.num_rows:
            return
        if self.fmt == "csv":
            import polars as pl

            buf = io.BytesIO()
            csvsafe.write_csv(pl.DataFrame(table), buf, include_header=self.rows == 0)
            self._file.write(buf.getvalue())
            self.rows += table.num_rows
            return
        assert self._parquet is not None  # made at the first write of a parquet part
        self.rows += table.num_rows
        self._pending.append(table)
        self._pending_rows += table.num_rows
        while self._pending_rows >= ROW_GROUP:
            whole = pa.concat_tables(self._pending)
            self._parquet.write_table(whole.slice(0, ROW_GROUP), row_group_size=ROW_GROUP)
            rest = whole.slice(ROW_GROUP)
            self._pending, self._pending_rows = [rest], rest.num_rows

    def close(self) -> None:
        if self.fmt == "parquet" and self._parquet is not None:
            if self._pending_rows:
                whole = pa.concat_tables(self._pending)
                self._parquet.write_table(whole, row_group_size=ROW_GROUP)
            self._parquet.close()
        self._file.close()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _type(t: pa.DataType) -> str:
    names = {
        "string": "VARCHAR",
        "large_string": "VARCHAR",
        "bool": "BOOLEAN",
        "date32[day]": "DATE",
        "uint8": "UTINYINT",
        "uint16": "USMALLINT",
        "uint32": "UINTEGER",
        "int8": "TINYINT",
        "int16": "SMALLINT",
        "int32": "INTEGER",
        "int64": "BIGINT",
        "double": "DOUBLE",
    }
    return names.get(str(t), str(t).upper())


def export(
    source: Source,
    out: str | Path,
    *,
    date_from: date | None = None,
    date_to: date | None = None,
    fmt: str = "parquet",
    docs_dir: str | None = None,
    echo: Callable[[str], None] = lambda line: None,
) -> dict:
    """Write the public dataset into `out` (an empty or absent folder, or an earlier export,
    which it replaces: export_dir.py); returns the manifest. ExportError (one line for a
    person) when `out` holds anything else or cannot be written."""
    if fmt not in FORMATS:
        raise ExportError(f"--format is parquet or csv, not {fmt}", 2)
    if date_from and date_to and date_to < date_from:
        raise ExportError("--to is before --from", 2)
    out = Path(out)
    try:
        old_files = export_dir.check_out(out)
    except export_dir.Refused as exc:
        raise ExportError(str(exc), 2) from None
    except OSError as exc:  # unreadable: no permission
        raise ExportError(f"cannot read {exc.filename or out}: {exc.strerror or exc}", 2) from None
    # every verified game when no bound is given: the client's clock may say 0001 or 9999
    lo = date_from or date.min
    hi = _next_day(date_to) if date_to else None
    try:
        tmp = export_dir.partial(out)
    except OSError as exc:  # the parent folder not writable, no room for a folder
        raise ExportError(f"cannot write in {out.parent}: {exc.strerror or exc}", 1) from None
    try:
        for attempt in range(3):
            try:
                manifest = _write_all(source, tmp, lo, hi, fmt, echo)
                break
            except SnapshotChanged:
                source.snapshot_at = None
                echo("the server took a new snapshot meanwhile: starting again")
                if attempt == 2:
                    raise ExportError("the server's snapshot kept changing; try again") from None
                export_dir.discard(tmp)
                tmp.mkdir()
        manifest.update(
            {
                "from": date_from.isoformat() if date_from else None,
                "to": date_to.isoformat() if date_to else None,
            }
        )
        docs = column_docs(docs_dir)
        text = readme(manifest, docs).encode()
        (tmp / "README.md").write_bytes(text)
        # so that a later export knows the README is still the one it wrote (export_dir.py)
        manifest["readme_sha256"] = hashlib.sha256(text).hexdigest()
        (tmp / "manifest.json").write_bytes(
            orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
        )
        files = [f for t in manifest["tables"].values() for f in t["files"]]
        sums = [f"{f['sha256']}  {f['path']}" for f in files]
        (tmp / "SHA256SUMS").write_text("\n".join(sums) + ("\n" if sums else ""), encoding="utf-8")
        export_dir.put_in_place(tmp, out, old_files)
    except OSError as exc:  # a full disk, a file or folder in the way: nothing left behind
        export_dir.discard(tmp)
        where = exc.filename or out
        raise ExportError(f"cannot write {where}: {exc.strerror or exc}; nothing written") from None
    except BaseException:
        export_dir.discard(tmp)
        raise
    return manifest


def _write_all(source: Source, tmp: Path, lo: date, hi: date | None, fmt: str, echo) -> dict:
    weeks = []
    for table in source.tables(weeks_sql("{lo}", "{hi}"), lo, hi):
        weeks += table.column("week").to_pylist()
    weeks = sorted(set(weeks))
    tables = {}
    for ds in DATASETS:
        files, total, schema = [], 0, None
        for week in weeks:
            start, end = max(week, lo), _week_end(week, hi)
            folder = tmp / ds.name / f"week={week.isoformat()}"
            folder.mkdir(parents=True, exist_ok=True)
            part = _Part(folder / f"part-0.{fmt}", fmt)
            try:
                for piece in source.tables(ds.sql, start, end):
                    part.write(piece)
            finally:
                part.close()
            schema = schema or part.schema
            if not part.rows:
                part.path.unlink()
                folder.rmdir()
                continue
            rel = part.path.relative_to(tmp).as_posix()
            files.append(
                {
                    "path": rel,
                    "week": week.isoformat(),
                    "rows": part.rows,
                    "bytes": part.path.stat().st_size,
                    "sha256": _sha256(part.path),
                }
            )
            total += part.rows
        if (tmp / ds.name).exists() and not any((tmp / ds.name).iterdir()):
            (tmp / ds.name).rmdir()
        tables[ds.name] = {
            "rows": total,
            "files": files,
            "columns": [{"name": f.name, "type": _type(f.type)} for f in schema] if schema else [],
        }
        echo(f"{ds.name}: {total:,} rows in {len(files)} files")
    return {
        "dataset": export_dir.DATASET,
        "written_by": export_dir.WRITTEN_BY,  # how the next export knows it may replace this
        "format_version": FORMAT_VERSION,
        "format": fmt,
        "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": _source(source),
        "weeks": [w.isoformat() for w in weeks],
        "tables": tables,
    }


def _source(source: Source) -> dict:
    out: dict[str, object] = {"kind": source.kind, "snapshot_at": source.snapshot_at}
    if source.snapshot_id is not None:
        out["snapshot_id"] = source.snapshot_id
    return out


# -- the data dictionary --------------------------------------------------------------------------


def _docs_dirs(explicit: str | None) -> list[Path]:
    dirs = [Path(explicit)] if explicit else []
    env = settings.value("DOCS_DIR")
    if env:
        dirs.append(Path(env))
    return dirs + [Path(__file__).resolve().parents[1] / "docs", Path.cwd() / "docs"]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse_tables_md(text: str) -> dict[str, dict[str, str]]:
    """table -> column -> meaning, from docs/tables.md ("## name — ...", then a markdown table
    whose first cell names the column (or several: "a, b") and whose last cell describes it)."""
    docs: dict[str, dict[str, str]] = {}
    table = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            m = re.match(r"#+\s*`?([A-Za-z_]\w*)`?", s)
            table = m.group(1) if m else None
            continue
        if table and s.startswith("|"):
            cells = _cells(s)
            if len(cells) < 2 or set(cells[0]) <= set("-: ") or cells[0] == "column":
                continue
            names = [n.strip().strip("`") for n in cells[0].split(",")]
            if all(re.fullmatch(r"[A-Za-z_]\w*", n) for n in names):
                for n in names:
                    docs.setdefault(table, {}).setdefault(n, cells[-1])
    return docs


def _schema_comments() -> dict[str, dict[str, str]]:
    from ingest.storage import schema_sql

    docs: dict[str, dict[str, str]] = {}
    table = None
    for line in schema_sql().splitlines():
        m = re.match(r"CREATE TABLE IF NOT EXISTS (\w+)", line)
        if m:
            table = m.group(1)
            continue
        c = re.match(r"\s+([a-z_]\w*)\s+[A-Z][^-]*--\s*(.+?)\s*$", line)
        if table and c:
            docs.setdefault(table, {}).setdefault(c.group(1), c.group(2))
    return docs


def column_docs(docs_dir: str | None = None) -> dict[str, dict[str, str]]:
    """dataset -> column -> meaning, for every column published."""
    source: dict[str, dict[str, str]] = {}
    for d in _docs_dirs(docs_dir):
        path = d / "tables.md"
        if path.is_file():
            for t, cols in parse_tables_md(path.read_text(encoding="utf-8")).items():
                for c, doc in cols.items():
                    if doc:
                        source.setdefault(t, {}).setdefault(c, doc)
            break
    for t, cols in _schema_comments().items():
        for c, doc in cols.items():
            source.setdefault(t, {}).setdefault(c, doc)
    out = {}
    for ds in DATASETS:
        cols = dict(source.get(ds.source, {}))
        for other in ("games", "slide_games", "slide_seats"):  # the same column elsewhere
            for name, doc in source.get(other, {}).items():  # (slide_games.platform is
                cols.setdefault(name, doc)  # games.platform, slide_rounds.seat slide_seats')
        cols["game_id"] = "the game's id (a UUID, as text): the same game in every table"
        cols.update(ds.derived)
        out[ds.name] = cols
    return out


SOURCE_NAMES = {"db": "a stopped store", "server": "a running server", "lake": "the lake"}


def _snapshot(source: dict) -> str:
    if source.get("snapshot_id") is not None:
        return f"{source['snapshot_id']}, {source['snapshot_at']}"
    return str(source["snapshot_at"])


def readme(manifest: dict, docs: dict[str, dict[str, str]]) -> str:
    span = f"ended from {manifest.get('from') or 'the first'} to {manifest.get('to') or 'the last'}"
    lines = [
        "# Slow6 and Slide: public dataset of verified games",
        "",
        f"Every game the server verified by replaying it against the rules, {span} (client "
        f"clock, UTC). Generated {manifest['generated_at']} by `balance export` from "
        f"{SOURCE_NAMES.get(manifest['source']['kind'], 'a running server')} "
        f"(snapshot {_snapshot(manifest['source'])}). Format: {manifest['format']}.",
        "",
        "In the shape 17lands publishes its game data: one row a game, its choices (lineups, "
        "power picks: a list and a column per power and side) and its result, and one row a "
        "turn. Quarantined records (games that broke a rule) are not in it; nothing personal "
        "is (clients send none), nor anything of the server's.",
        "",
        *(
            [
                "CSV cells: a text cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage "
                "return is written with a leading `'` (so no spreadsheet reads it as a formula: "
                "uploads are anonymous); drop that `'` to get the stored text. Numbers are "
                "written as they are.",
                "",
            ]
            if manifest["format"] == "csv"
            else []
        ),
        "Layout: `<table>/week=<Monday>/part-0.<format>` (Hive-style partitions: DuckDB, "
        "Polars, pandas and Spark read the directory as one table with its `week`). "
        "`manifest.json` has every file's rows, bytes and SHA-256; `sha256sum -c SHA256SUMS` "
        "checks them.",
        "",
        "```sql",
        "-- DuckDB",
        f"SELECT board, variant, count(*) FROM read_{manifest['format']}"
        f"('games/*/*.{manifest['format']}', hive_partitioning = true) GROUP BY ALL;",
        "```",
        "",
    ]
    for ds in DATASETS:
        table = manifest["tables"].get(ds.name, {"rows": 0, "files": [], "columns": []})
        lines += [
            f"## {ds.name}",
            "",
            f"{ds.doc} {table['rows']:,} rows in {len(table['files'])} files.",
            "",
            "| column | type | meaning |",
            "|---|---|---|",
        ]
        cols = table["columns"] or [{"name": c, "type": ""} for c in docs.get(ds.name, {})]
        for col in cols:
            meaning = docs.get(ds.name, {}).get(col["name"], "").replace("|", "\\|")
            lines.append(f"| {col['name']} | {col['type']} | {meaning} |")
        lines.append("")
    return "\n".join(lines)


# -- the command ----------------------------------------------------------------------------------


def _date(text: str | None, flag: str) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ExportError(f"{flag} is a date, YYYY-MM-DD, not {text!r}", 2) from None


def _where(args):
    """Where to read (ingest/storage/where.py); ExportError (exit 2) when mistaken."""
    from ingest.storage.where import WhereError, of_args

    try:
        return of_args("export", args)
    except WhereError as exc:
        raise ExportError(str(exc), 2) from None


def run_export(args) -> int:
    """`balance export` (registered by analysis/commands.py)."""
    try:
        date_from, date_to = _date(args.date_from, "--from"), _date(args.date_to, "--to")
        chosen = _where(args)
        if chosen.data_path is None and getattr(args, "data_path", None):
            raise ExportError("--data-path goes with --lake (the lake's data path)", 2)
        if chosen.server:
            source: Source = ServerSource(chosen.server)
        elif chosen.lake:
            source = LakeSource(chosen.lake, chosen.data_path)
        else:
            source = DuckDBSource(str(chosen.db))
        try:
            manifest = export(
                source,
                args.out,
                date_from=date_from,
                date_to=date_to,
                fmt=args.format,
                echo=lambda line: print(line, flush=True),
            )
        finally:
            source.close()
    except ExportError as exc:
        print(f"balance export: {exc}", file=sys.stderr)
        return exc.code
    tables = manifest["tables"]
    print(
        f"wrote {args.out}: "
        + ", ".join(f"{name} {t['rows']:,} rows" for name, t in tables.items())
        + f"; {len(manifest['weeks'])} weeks"
    )
    return 0
