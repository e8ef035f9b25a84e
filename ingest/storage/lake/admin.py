"""Operating a lake: `balance lake init`, `upgrade`, `import`, `maintain` and `check`
(docs/lake.md).

- `init_lake`: the store's tables in the catalog (lake.lake_schema_sql: schema.sql without
  what DuckLake cannot express), the fence schema, the claims table and its functions
  (claims.py), and safe retention defaults for DuckLake's own cleanup.
- `upgrade_lake`: a lake made by an earlier version brought to this one (DuckLake's format,
  missing tables, the steps of UPGRADES, the claims' functions), checked against schema.sql;
- `import_store`: the games of a store file (its journal loaded first) into the lake, claims
  included, in chunks; a re-run skips what is there; counts checked per table.
- `maintain`: inlined rows flushed to Parquet, adjacent files merged, old snapshots expired,
  files scheduled for deletion and orphaned files removed, both only past an age margin of an
  hour at least (an orphan younger than that may be a file a writer has not committed yet:
  deleting it made the commit point at a missing file); fences of servers gone for
  that long dropped; stale claims of dead servers settled (lake.sweep_stale).
- `check`: every game_id once in raw_records, claims and lake in step, rows per table.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import time
import uuid
from pathlib import Path
from typing import Any

import duckdb

from .. import registry, rows
from ..shared import missing_columns
from . import staging as lake_staging
from .claims import STORED, Claims
from .connections import (
    FENCES,
    LAKE,
    LAKE_SCHEMA_VERSION,
    PG,
    LakeError,
    connect,
    conninfo,
    data_path_of,
    lake_schema_sql,
    stored_version,
)
from .loader import sweep_stale

log = logging.getLogger("ingest.lake")

MIN_MARGIN_SECONDS = 3600  # orphaned / old files younger than this are never deleted
TABLES = ("raw_records", *rows.ALL_GAME_TABLES)  # what a game stores; agg_* are the jobs'


def init_lake(catalog: str, data_path: str, inline_rows: int | None = None) -> dict:
    """Create the lake's tables, claims and options (idempotent: a second run changes
    nothing). Returns what the lake holds."""
    con = connect(catalog, data_path, create=True)
    try:
        con.execute(lake_schema_sql())
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {LAKE}.{FENCES}")
        con.execute(
            "INSERT INTO store_meta SELECT 'lake_schema_version', ? WHERE NOT EXISTS "
            "(SELECT 1 FROM store_meta WHERE key = 'lake_schema_version')",
            [LAKE_SCHEMA_VERSION],
        )
        # DuckLake's own cleanup (CHECKPOINT, or its functions called without an age) must
        # never delete a file a writer has written and not yet committed.
        con.execute(f"CALL {LAKE}.set_option('delete_older_than', '1 day')")
        con.execute(f"CALL {LAKE}.set_option('expire_older_than', '7 days')")
        if inline_rows is not None:
            con.execute(f"CALL {LAKE}.set_option('data_inlining_row_limit', {int(inline_rows)})")
        Claims(con.cursor(), PG).install()
        lake_staging.install(conninfo(catalog))
        return describe(con)
    finally:
        con.close()


def _install_claims(con: duckdb.DuckDBPyConnection) -> None:
    Claims(con.cursor(), PG).install()


def _add_columns(con: duckdb.DuckDBPyConnection) -> None:
    """The columns added to schema.sql since (store.ADDED_COLUMNS: the games' `ruleset`), each
    with its default for the games stored before, then NOT NULL."""
    for table, column, definition in missing_columns(con, LAKE):
        con.execute(f"ALTER TABLE {LAKE}.main.{table} ADD COLUMN {column} {definition}")
        try:
            con.execute(f"ALTER TABLE {LAKE}.main.{table} ALTER COLUMN {column} SET NOT NULL")
        except duckdb.Error as exc:  # DuckLake cannot on a table without stats (never written)
            log.info("%s.%s stays nullable (every writer gives it a value): %s", table, column, exc)


# version -> the step from it to the next one (on a lake connection with the catalog attached)
UPGRADES: dict[str, Any] = {
    "1": _install_claims,  # 1 -> 2: the commit gate (balance_gate, balance_claim reads it)
    "2": _add_columns,  # 2 -> 3: rulesets (the `rulesets` table is made by lake_schema_sql)
}


def upgrade_lake(catalog: str) -> dict:
    """Bring a lake made by an earlier version of this code to this one's catalog: DuckLake's
    own format migrated (AUTOMATIC_MIGRATION), tables that are missing created, the steps of
    UPGRADES from the lake's version on, the claims' functions installed again; then every
    table checked column by column (name, type, order) against schema.sql. Run it with the
    servers and the jobs runner stopped (a table's columns change under their inserts), then
    start the new version. Idempotent. Raises LakeError, changing nothing more, when a table
    differs in a way no step covers."""
    con = connect(catalog, migrate=True)
    try:
        before = stored_version(con)
        con.execute(lake_schema_sql())  # CREATE TABLE IF NOT EXISTS: the missing ones
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {LAKE}.{FENCES}")
        version = before or "1"
        steps = []
        while version != LAKE_SCHEMA_VERSION:
            step = UPGRADES.get(version)
            if step is None:
                raise LakeError(
                    f"no upgrade from lake schema version {version} to {LAKE_SCHEMA_VERSION}"
                )
            step(con)
            steps.append(version)
            version = str(int(version) + 1)
        _install_claims(con)
        differences = schema_differences(con)
        if differences:
            raise LakeError(
                "the lake's tables differ from this version's and no upgrade step covers it: "
                + "; ".join(differences)
            )
        con.execute("DELETE FROM store_meta WHERE key = 'lake_schema_version'")
        con.execute(
            "INSERT INTO store_meta VALUES ('lake_schema_version', ?)", [LAKE_SCHEMA_VERSION]
        )
        ((ducklake,),) = con.execute(
            f"SELECT value FROM {LAKE}.options() WHERE option_name = 'version'"
        ).fetchall()
        return {"from": before, "to": LAKE_SCHEMA_VERSION, "steps": steps, "ducklake": ducklake}
    finally:
        con.close()


def schema_differences(con: duckdb.DuckDBPyConnection) -> list[str]:
    """How the lake's tables differ from schema.sql's: a missing column, another type, another
    order (the servers insert by position), a column schema.sql does not have."""
    want_con = duckdb.connect()
    try:
        want_con.execute(lake_schema_sql())
        ((database,),) = want_con.execute("SELECT current_database()").fetchall()
        want = _columns(want_con, database)
    finally:
        want_con.close()
    have = _columns(con, LAKE)
    out = []
    for table, columns in sorted(want.items()):
        got = have.get(table, [])
        if got != columns:
            missing = [c for c, _ in columns if c not in dict(got)]
            extra = [c for c, _ in got if c not in dict(columns)]
            retyped = [
                f"{c} {dict(got)[c]} (not {t})"
                for c, t in columns
                if c in dict(got) and dict(got)[c] != t
            ]
            parts = [f"missing {', '.join(missing)}"] if missing else []
            parts += [f"not in schema.sql {', '.join(extra)}"] if extra else []
            parts += [f"typed {', '.join(retyped)}"] if retyped else []
            out.append(f"{table}: {'; '.join(parts) or 'columns in another order'}")
    return out


def _columns(con: duckdb.DuckDBPyConnection, database: str) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for table, column, kind in con.execute(
        "SELECT table_name, column_name, data_type FROM duckdb_columns() "
        "WHERE database_name = ? AND schema_name = 'main' ORDER BY table_name, column_index",
        [database],
    ).fetchall():
        out.setdefault(table, []).append((column, kind))
    return out


def describe(con: duckdb.DuckDBPyConnection) -> dict:
    path = data_path_of(con)
    tables = [
        t
        for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = "
            "'main' ORDER BY table_name",
            [LAKE],
        ).fetchall()
    ]
    return {"data_path": path, "tables": tables}


# -- import ----------------------------------------------------------------------------------


IMPORT_LEASE = 3600.0  # seconds: an import's claims are its own this long after each chunk


def import_store(catalog: str, db: str | Path, chunk: int = 50_000, echo=print) -> dict:
    """Move the games of the store file `db` (its server stopped) into the lake: each chunk
    claimed for the importer, its rows in every table copied in one lake commit (with the
    importer's fence row, as a server's), the claims marked stored. A game_id the lake holds
    already is skipped (the same content) or counted as a conflict (different content: the
    lake's stays). A run that was interrupted is resumed by the next: the claims of earlier
    runs on the same file are settled as a server settles a dead server's (their owner
    fenced, then looked up in the lake). Counts are checked per table: the lake holds, for
    the file's game_ids, as many rows as the file. Returns the summary."""
    import hashlib

    from ..store import Store
    from .loader import drop_fence

    db = str(db)
    if not os.path.isfile(db):
        raise FileNotFoundError(db)
    Store(db).close()  # the games a crash left in the upload journal go into the file first
    con = connect(catalog)
    prefix = "import_" + hashlib.sha1(os.path.realpath(db).encode()).hexdigest()[:16] + "_"
    owner = prefix + uuid.uuid4().hex[:12]  # this run
    fence = f"{LAKE}.{FENCES}.{owner}"
    claims = Claims(con.cursor(), PG)
    claims.register(owner, socket.gethostname(), os.getpid())
    con.execute(f"CREATE TABLE {fence} (n BIGINT, committed_at TIMESTAMP)")
    summary: dict[str, Any] = {"imported": 0, "already": 0, "conflicts": 0, "tables": {}}
    try:
        con.execute(f"ATTACH {_lit(db)} AS src (READ_ONLY)")
        # the file's rulesets first (its games were judged under them): a name the lake has
        # with other parameters stops the import, nothing of it copied (RS1.3)
        with registry.lake_lock(conninfo(catalog)):
            summary["rulesets"] = registry.register_in_transaction(
                con, registry.load(con, "src.main.rulesets")
            )
        ((total,),) = con.execute("SELECT count(*) FROM src.raw_records").fetchall()
        ids = con.cursor()  # streamed, next to the statements on `con`
        ids.execute("SELECT game_id::VARCHAR, content_hash FROM src.raw_records")
        started, done = time.perf_counter(), 0
        while part := ids.fetchmany(chunk):
            keys = [uuid.UUID(g).int for g, _ in part]
            got = claims.import_claims(keys, [h for _, h in part], owner, IMPORT_LEASE)
            mine, earlier = [], []
            for key, (_, h) in zip(keys, part, strict=True):
                claim_hash, state, who, made = got.get(key, (None, None, None, False))
                if made:
                    mine.append(key)
                elif state == "pending" and who is not None and who.startswith(prefix):
                    earlier.append((key, who))  # an earlier run's: did its commit land?
                elif state == STORED and claim_hash == h:
                    summary["already"] += 1
                else:
                    summary["conflicts"] += 1
            if earlier:
                summary["already"] += _settle_earlier(con, claims, earlier)
                again = [k for k, _ in earlier]
                hashes = dict(zip(keys, [h for _, h in part], strict=True))
                got = claims.import_claims(again, [hashes[k] for k in again], owner, IMPORT_LEASE)
                mine += [k for k in again if got.get(k, (0, "", "", False))[3]]
            if mine:
                _copy_chunk(con, [str(uuid.UUID(int=k)) for k in mine], fence)
                claims.mark_stored(mine, owner)
                summary["imported"] += len(mine)
            done += len(part)
            rate = done / max(1e-9, time.perf_counter() - started)
            echo(f"  {done}/{total} games ({rate:.0f}/s): {summary['imported']} imported")
        ids.close()
        summary["tables"] = _compare_counts(con)
        drop_fence(con, owner)
    finally:
        claims.closed(owner)
        con.close()
    return summary


def _settle_earlier(con, claims: Claims, earlier: list[tuple[int, str]]) -> int:
    """Claims of earlier runs of this import: fence each run (none of its commits can land
    from now on), mark stored what the lake holds, release the rest; how many were stored."""
    from .loader import drop_fence, lake_hashes

    for who in sorted({w for _, w in earlier}):
        drop_fence(con, who)
    landed = lake_hashes(con, [k for k, _ in earlier])
    claims.adopt([(k, w, landed[k]) for k, w in earlier if k in landed])
    absent: dict[str, list[int]] = {}
    for k, w in earlier:
        if k not in landed:
            absent.setdefault(w, []).append(k)
    for who, ks in absent.items():
        claims.release(ks, who)
    return len(landed)


def _copy_chunk(con: duckdb.DuckDBPyConnection, gids: list[str], fence: str) -> None:
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE import_ids AS SELECT unnest(?::UUID[]) AS g", [gids]
        )
        for table in TABLES:
            con.execute(
                f"INSERT INTO {LAKE}.main.{table} SELECT * FROM src.main.{table} "
                "WHERE game_id IN (SELECT g FROM import_ids)"
            )
        con.execute(f"INSERT INTO {fence} VALUES ({len(gids)}, now()::TIMESTAMP)")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _compare_counts(con: duckdb.DuckDBPyConnection) -> dict:
    """Per table: rows in the file, and rows in the lake for the file's game_ids. Raises
    if they differ."""
    out = {}
    con.execute("CREATE OR REPLACE TEMP TABLE import_all AS SELECT game_id FROM src.raw_records")
    for table in TABLES:
        ((src,),) = con.execute(f"SELECT count(*) FROM src.main.{table}").fetchall()
        ((dst,),) = con.execute(
            f"SELECT count(*) FROM {LAKE}.main.{table} "
            "WHERE game_id IN (SELECT game_id FROM import_all)"
        ).fetchall()
        out[table] = {"file": src, "lake": dst}
    wrong = {t: c for t, c in out.items() if c["file"] != c["lake"]}
    if wrong:
        raise RuntimeError(f"import: row counts differ between the file and the lake: {wrong}")
    return out


# -- maintenance -----------------------------------------------------------------------------

_INTERVAL = re.compile(r"^\s*(\d+)\s*(second|minute|hour|day|week)s?\s*$", re.I)
_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}


def interval_seconds(text: str) -> int:
    """'90 minutes', '1 hour', '7 days' -> seconds."""
    m = _INTERVAL.match(text)
    if not m:
        raise ValueError(f"not an interval: {text!r} (say e.g. '2 hours', '7 days')")
    return int(m.group(1)) * _SECONDS[m.group(2).lower()]


def maintain(
    catalog: str,
    *,
    older_than: str = "1 hour",
    expire_older_than: str = "1 day",
    echo=print,
) -> dict:
    """One maintenance pass (safe next to running servers; run one at a time). `older_than`
    (at least an hour) guards the deletion of orphaned and old files; snapshots older than
    `expire_older_than` are expired (time travel ends there)."""
    margin = interval_seconds(older_than)
    if margin < MIN_MARGIN_SECONDS:
        raise ValueError(
            "older_than must be at least 1 hour: a younger orphan may be a file a running "
            "writer has not committed yet"
        )
    expire = interval_seconds(expire_older_than)
    if expire < margin:
        raise ValueError("expire_older_than must be at least older_than")
    con = connect(catalog)
    out: dict = {}
    try:
        files_before = _file_count(con)
        steps = [
            ("flushed", f"CALL ducklake_flush_inlined_data('{LAKE}')"),
            ("merged", f"CALL ducklake_merge_adjacent_files('{LAKE}')"),
            (
                "expired",
                f"CALL ducklake_expire_snapshots('{LAKE}', "
                f"older_than => now() - INTERVAL '{expire} seconds')",
            ),
            (
                "cleaned",
                f"CALL ducklake_cleanup_old_files('{LAKE}', "
                f"older_than => now() - INTERVAL '{margin} seconds')",
            ),
            (
                "orphans",
                f"CALL ducklake_delete_orphaned_files('{LAKE}', "
                f"older_than => now() - INTERVAL '{margin} seconds')",
            ),
        ]
        for name, sql in steps:
            began = time.perf_counter()
            out[name] = len(_retry(con, sql))
            echo(f"  {name}: {out[name]} ({time.perf_counter() - began:.1f} s)")
        out["stale_claims"] = sweep_stale(con, Claims(con.cursor(), PG))
        out["fences_dropped"] = _drop_dead_fences(con, margin)
        out["files"] = {"before": files_before, "after": _file_count(con)}
    finally:
        con.close()
    return out


def _retry(con: duckdb.DuckDBPyConnection, sql: str, tries: int = 10) -> list:
    for attempt in range(tries):
        try:
            return con.execute(sql).fetchall()
        except duckdb.Error as exc:
            if "conflict" not in str(exc).lower() or attempt == tries - 1:
                raise
            time.sleep(0.2 * (attempt + 1))
    return []


def _file_count(con: duckdb.DuckDBPyConnection) -> int:
    total = 0
    for table in TABLES:
        ((n,),) = con.execute(
            f"SELECT count(*) FROM ducklake_list_files('{LAKE}', '{table}')"
        ).fetchall()
        total += n
    return total


def _drop_dead_fences(con: duckdb.DuckDBPyConnection, margin: int) -> int:
    """Drop the fence of each server closed or not seen for `margin` seconds that holds no
    pending claim (a dead server with pending claims is fenced by whoever takes them over)."""
    claims = Claims(con.cursor(), PG)
    fences = {
        t
        for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = ?",
            [LAKE, FENCES],
        ).fetchall()
    }
    owners = {o: (seen, closed) for o, _, _, seen, closed in claims.owners()}
    dropped, gone = 0, []
    for owner, (seen, closed) in owners.items():
        if not closed and seen < margin:
            continue
        if claims.pending_of(owner):
            continue
        if owner in fences:
            con.execute(f"DROP TABLE IF EXISTS {LAKE}.{FENCES}.{owner}")
            dropped += 1
        gone.append(owner)
    claims.forget_owners(gone)
    return dropped


# -- check -----------------------------------------------------------------------------------


def check(catalog: str) -> dict:
    """The lake's consistency. Errors (`ok` False): a game_id stored twice, a raw record with
    no claim at all (a retry would store it again), a stored claim without its raw record (a
    game answered `duplicate` that is not there). Not errors: pending claims; among them the
    games a server committed and died before marking (`pending_in_lake`: a server's sweep or
    `maintain` marks them stored, any upload of them is answered from the lake)."""
    con = connect(catalog)
    try:
        claims = Claims(con.cursor(), PG)
        ((dups,),) = con.execute(
            "SELECT count(*) FROM (SELECT game_id FROM raw_records GROUP BY game_id "
            "HAVING count(*) > 1)"
        ).fetchall()
        con.execute(
            "CREATE OR REPLACE TEMP TABLE all_claims AS SELECT game_id::UUID AS game_id, state "
            f"FROM postgres_query('{PG}', 'SELECT game_id, state FROM balance_claims')"
        )
        ((unclaimed, pending_in_lake),) = con.execute(
            "SELECT count(*) FILTER (WHERE c.state IS NULL), "
            "count(*) FILTER (WHERE c.state = 'pending') "
            "FROM raw_records r LEFT JOIN all_claims c USING (game_id)"
        ).fetchall()
        # staged games (acknowledged, not loaded yet) are stored too; a group both staged and
        # in the lake is one a loader committed and has not deleted yet (not an error)
        con.execute(
            "CREATE OR REPLACE TEMP TABLE staged AS SELECT game_id::UUID AS game_id "
            f"FROM postgres_query('{PG}', 'SELECT unnest(game_ids) AS game_id FROM "
            f"{lake_staging.SCHEMA}.groups')"
        )
        ((missing,),) = con.execute(
            "SELECT count(*) FROM all_claims c WHERE c.state = 'stored' AND c.game_id NOT IN "
            "(SELECT game_id FROM raw_records) AND c.game_id NOT IN (SELECT game_id FROM staged)"
        ).fetchall()
        ((staged, loaded_staged),) = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE game_id IN (SELECT game_id FROM "
            "raw_records)) FROM staged"
        ).fetchall()
        counts = {
            t: con.execute(f"SELECT count(*) FROM {LAKE}.main.{t}").fetchall()[0][0] for t in TABLES
        }
        return {
            "duplicate_game_ids": dups,
            "stored_without_claim": unclaimed,
            "claimed_not_stored": missing,
            "pending_in_lake": pending_in_lake,
            "staged": staged,
            "staged_and_in_lake": loaded_staged,
            "claims": claims.counts(),
            "rows": counts,
            "ok": dups == 0 and unclaimed == 0 and missing == 0,
        }
    finally:
        con.close()


CHECK_MARK = "balance_check_mark"  # where the last clean check got to (one row)
_CHECK_CHUNK = 10_000  # game_ids a claims look-up asks PostgreSQL for at once
# claims made this long before the last check's start are checked again: one pending then
# (its server committing) is stored by now, and its game in the lake
_CHECK_OVERLAP = "1 hour"


def check_since(catalog: str) -> dict:
    """`check`, incrementally: only the raw records the lake took in since the last clean
    check (its snapshot, kept in CHECK_MARK) and the claims made since shortly before it. No
    mark yet: the whole `check`, which sets it. Neither copies every claim into this process:
    the new game_ids' claims are asked for in chunks, and PostgreSQL filters the recent ones.
    A clean result moves the mark; one with errors leaves it, so the next run sees them too."""
    con = connect(catalog)
    try:
        claims = Claims(con.cursor(), PG)
        claims.execute(
            f"CREATE TABLE IF NOT EXISTS {CHECK_MARK} (id integer PRIMARY KEY CHECK (id = 1), "
            "snapshot bigint NOT NULL, claims_since timestamptz NOT NULL, "
            "checked_at timestamptz NOT NULL DEFAULT now())"
        )
        ((pg_now,),) = claims._query("SELECT now()::text")
        ((snapshot,),) = con.execute(f"SELECT id FROM {LAKE}.current_snapshot()").fetchall()
        mark = claims._query(f"SELECT snapshot, claims_since::text FROM {CHECK_MARK}")
        out = None
        if mark:
            try:
                out = _check_from(con, claims, int(mark[0][0]), mark[0][1], int(snapshot))
            except duckdb.Error as exc:  # its snapshot expired since (`lake maintain`)
                if "snapshot" not in str(exc).lower():
                    raise
                log.warning("lake check: the last check's snapshot is gone; checking all")
        if out is None:
            out = check(catalog)
            out["since_snapshot"] = None
        if out["ok"]:
            claims.execute(
                f"INSERT INTO {CHECK_MARK} (id, snapshot, claims_since) VALUES (1, "
                f"{int(snapshot)}, {_lit(pg_now)}::timestamptz - interval '{_CHECK_OVERLAP}') "
                "ON CONFLICT (id) DO UPDATE SET snapshot = EXCLUDED.snapshot, "
                "claims_since = EXCLUDED.claims_since, checked_at = now()"
            )
        out["to_snapshot"] = int(snapshot)
        return out
    finally:
        con.close()


def _check_from(con, claims: Claims, since: int, claims_since: str, snapshot: int) -> dict:
    """The checks of `check` for the raw records inserted after snapshot `since` up to
    `snapshot` and the claims made from `claims_since` on."""
    if snapshot > since:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE new_ids AS SELECT DISTINCT game_id FROM "
            f"ducklake_table_insertions('{LAKE}', 'main', 'raw_records', {since + 1}, "
            f"{snapshot})"
        )
    else:  # no commit since
        con.execute("CREATE OR REPLACE TEMP TABLE new_ids (game_id UUID)")
    ((dups,),) = con.execute(
        "SELECT count(*) FROM (SELECT game_id FROM raw_records WHERE game_id IN "
        "(SELECT game_id FROM new_ids) GROUP BY game_id HAVING count(*) > 1)"
    ).fetchall()
    con.execute("CREATE OR REPLACE TEMP TABLE new_claims (game_id UUID, state VARCHAR)")
    ids = [g for (g,) in con.execute("SELECT game_id::VARCHAR FROM new_ids").fetchall()]
    for start in range(0, len(ids), _CHECK_CHUNK):
        chunk = ",".join(f"'{uuid.UUID(g)}'" for g in ids[start : start + _CHECK_CHUNK])
        sql = (
            "SELECT game_id, state FROM balance_claims "
            f"WHERE game_id = ANY (ARRAY[{chunk}]::uuid[])"
        )
        con.execute(
            "INSERT INTO new_claims SELECT game_id::UUID, state FROM postgres_query(?, ?)",
            [PG, sql],
        )
    ((unclaimed, pending_in_lake),) = con.execute(
        "SELECT count(*) FILTER (WHERE c.state IS NULL), "
        "count(*) FILTER (WHERE c.state = 'pending') "
        "FROM new_ids n LEFT JOIN new_claims c USING (game_id)"
    ).fetchall()
    recent = (
        "SELECT game_id FROM balance_claims WHERE state = 'stored' "
        f"AND claimed_at >= {_lit(claims_since)}::timestamptz"
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE recent_stored AS SELECT game_id::UUID AS game_id "
        "FROM postgres_query(?, ?)",
        [PG, recent],
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE staged AS SELECT game_id::UUID AS game_id "
        f"FROM postgres_query('{PG}', 'SELECT unnest(game_ids) AS game_id FROM "
        f"{lake_staging.SCHEMA}.groups')"
    )
    ((missing,),) = con.execute(
        "SELECT count(*) FROM recent_stored c WHERE c.game_id NOT IN "
        "(SELECT game_id FROM raw_records WHERE game_id IN (SELECT game_id FROM recent_stored)) "
        "AND c.game_id NOT IN (SELECT game_id FROM staged)"
    ).fetchall()
    ((staged, loaded_staged),) = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE game_id IN (SELECT game_id FROM "
        "raw_records WHERE game_id IN (SELECT game_id FROM staged))) FROM staged"
    ).fetchall()
    return {
        "since_snapshot": since,
        "new_raw_records": len(ids),
        "recent_stored_claims": con.execute("SELECT count(*) FROM recent_stored").fetchall()[0][0],
        "duplicate_game_ids": dups,
        "stored_without_claim": unclaimed,
        "claimed_not_stored": missing,
        "pending_in_lake": pending_in_lake,
        "staged": staged,
        "staged_and_in_lake": loaded_staged,
        "ok": dups == 0 and unclaimed == 0 and missing == 0,
    }


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
