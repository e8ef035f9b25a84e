"""Re-judge every stored raw record (after an engine fix) and move games between the
verified tables and the quarantine, rebuilding their rows. Works on any writable connection:
the server's (POST /v1/admin/reverify, through Store.submit) or the file's own with the server
stopped (`balance reverify --db PATH`)."""

from __future__ import annotations

import contextlib
import functools
import random
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import duckdb
import orjson
import pyarrow as pa

from ..storage import QUARANTINED, VERIFIED, codec, insert_tables, registry, rows
from ..storage.interface import GameStore
from ..storage.shared import rollback
from .pipeline import Judge

_CHUNK = 2000


def reverify(
    con: duckdb.DuckDBPyConnection,
    judge: Judge | None = None,
    *,
    rebuild: bool = False,
    echo: Callable[[str], None] = lambda line: None,
    apply: Callable[[duckdb.DuckDBPyConnection, dict], None] | None = None,
) -> dict:
    """Judge every raw record again; returns counts and the per-game changes. With `rebuild`,
    verified games that stay verified get their rows rebuilt too (facts may have changed).
    Runs inside the caller's transaction if one is open. `apply(con, plan)` writes a batch's
    changes (default: in the caller's transaction; a lake: apply_retrying)."""
    apply = apply or _apply
    if judge is None:  # judged by the rulesets registered in this store (RS5.1 records too)
        judge = Judge(registry=registry.Registry(lambda: registry.load(con)))
        judge.registry.reload()
    old_q = {
        g: (r, t, s, m)
        for g, r, t, s, m in con.execute(
            "SELECT game_id::VARCHAR, rule, turn, seat, message FROM quarantine"
        ).fetchall()
    }
    counts: Counter = Counter()
    changes: list[dict] = []
    reader = con.cursor()  # a snapshot to stream from while `con` writes
    # a cursor starts on the default database: on a lake connection (USE lake) follow it there
    database, schema = con.execute("SELECT current_database(), current_schema()").fetchall()[0]
    reader.execute(f'USE "{database}"."{schema}"')
    try:
        batches = reader.execute(
            "SELECT game_id::VARCHAR, game, status, codec, record, received_at FROM raw_records "
            "ORDER BY received_at, game_id"
        ).to_arrow_reader(_CHUNK)
        for batch in batches:
            apply(con, _judge_batch(batch, judge, old_q, rebuild, counts, changes, echo))
    finally:
        reader.close()
    return {"checked": counts.pop("checked", 0), "counts": dict(counts), "changes": changes}


def reverify_lake(
    con: duckdb.DuckDBPyConnection,
    judge: Judge | None = None,
    *,
    rebuild: bool = False,
    echo: Callable[[str], None] = lambda line: None,
) -> dict:
    """`reverify` on a lake beside running servers: a transaction a batch, applied again while
    the servers' appends conflict with its deletes and then with their commits paused
    (apply_retrying's gate). `con`: a lake connection with the catalog attached."""
    # here, not at the top: a file server never loads the lake (nor PostgreSQL's driver)
    from ..storage.lake import PG, commits_paused, staged_loaded
    from ..storage.lake.claims import Claims

    gated = functools.partial(apply_retrying, gate=lambda: commits_paused(con))
    # the games acknowledged before it starts are judged again too: loaded into the lake first
    if not staged_loaded(Claims(con.cursor(), PG), 120.0):
        echo("the lake's loader is behind: games staged in the last 120 s are not re-judged")
    return reverify(con, judge, rebuild=rebuild, echo=echo, apply=gated)


def reverify_running(store: GameStore, judge: Judge, *, rebuild: bool = False) -> dict:
    """A running server's reverify (POST /v1/admin/reverify). The file store: on its calls
    thread, in one transaction (this server's uploads wait meanwhile). A lake: on a
    connection of its own (`reverify_lake`), so that every server, this one included, keeps
    storing games between its batches."""
    store.registry.reload()  # a lake: what other servers registered (RS5.1 records)
    if store.shared_writers:
        con = store.reader()
        try:
            return reverify_lake(con, judge, rebuild=rebuild)
        finally:
            con.close()
    return store.submit(lambda con: reverify(con, judge, rebuild=rebuild)).result()


def _judge_batch(batch, judge, old_q, rebuild, counts, changes, echo) -> dict:
    plan: dict[str, list[Any]] = {
        "delete_games": [],
        "delete_quarantine": [],
        "status": [],
        "rows": [],
    }
    cols = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
    for gid, _game, status, codec_id, blob, received in zip(*cols, strict=True):
        counts["checked"] += 1
        text = codec.decode(codec_id, blob)
        judged = judge.judge(0, text, received)
        new, table_rows, verdict = _outcome(judged, gid, text, received)
        q_new = (
            verdict.get("rule"),
            verdict.get("turn"),
            verdict.get("seat"),
            verdict.get("message"),
        )
        if new == status == VERIFIED and not rebuild:
            counts["unchanged"] += 1
            continue
        if new == status == QUARANTINED and old_q.get(gid) == q_new:
            counts["unchanged"] += 1
            continue
        kind = (
            f"{status}->{new}"
            if new != status
            else "rebuilt"
            if new == VERIFIED
            else "requarantined"
        )
        counts[kind] += 1
        if kind != "rebuilt":
            line = f"{gid} {status} -> {new}"
            if new == QUARANTINED:
                line += f" {q_new[0]} turn {q_new[1]}: {q_new[3]}"
            echo(line)
            changes.append(
                {
                    "game_id": gid,
                    "from": status,
                    "to": new,
                    "rule": q_new[0],
                    "turn": q_new[1],
                    "message": q_new[3],
                }
            )
        # drop whatever rows the game had, then write the rows it has now
        (plan["delete_games"] if status == VERIFIED else plan["delete_quarantine"]).append(gid)
        if new != status:
            plan["status"].append((gid, new))
        plan["rows"].append(table_rows)
    return plan


def _outcome(judged, gid: str, text: bytes, received):
    """(new status, rows, verdict fields) of a re-judged record."""
    pending = judged.pending
    if pending is not None:
        res = judged.result
        return pending.status, pending.rows, res if pending.status == QUARANTINED else {}
    # no longer well-formed (a stricter checker): keep it, but out of the analysis
    res = judged.result
    message = f"{res['field']}: {res['message']}"
    verdict = {"rule": "format", "turn": None, "seat": None, "message": message}
    record = orjson.loads(text)
    client = record.get("client") if isinstance(record.get("client"), dict) else {}
    row = (
        gid,
        str(record.get("game")),
        "format",
        None,
        None,
        message,
        str(client.get("platform")),
        str(client.get("version")),
        str(record.get("mode")),
        _time(record.get("ended_at"), received),
        received,
        rows.ruleset_of(record),
    )
    return QUARANTINED, {"quarantine": [row]}, verdict


def _time(text, fallback):
    try:
        return rows.parse_time(text)
    except (TypeError, ValueError):
        return fallback


def _apply(con: duckdb.DuckDBPyConnection, plan: dict) -> None:
    for key, tables in (
        ("delete_games", rows.GAME_TABLES["slow6"] + rows.GAME_TABLES["slide"]),
        ("delete_quarantine", ("quarantine",)),
    ):
        if not plan[key]:
            continue
        con.register("_reverify_ids", pa.table({"g": pa.array(plan[key], pa.string())}))
        try:
            for table in tables:
                con.execute(
                    f"DELETE FROM {table} WHERE game_id IN (SELECT g::UUID FROM _reverify_ids)"
                )
        finally:
            con.unregister("_reverify_ids")
    if plan["status"]:
        gids, statuses = zip(*plan["status"], strict=True)
        con.register("_reverify_status", pa.table({"g": list(gids), "s": list(statuses)}))
        try:
            con.execute(
                "UPDATE raw_records SET status = u.s FROM _reverify_status u "
                "WHERE raw_records.game_id = u.g::UUID"
            )
        finally:
            con.unregister("_reverify_status")
    insert_tables(con, rows.tables_of(plan["rows"]))


def apply_retrying(
    con: duckdb.DuckDBPyConnection,
    plan: dict,
    tries: int = 40,
    *,
    gate: Callable[[], contextlib.AbstractContextManager] | None = None,
    ungated: int = 3,
) -> None:
    """A batch's changes in a transaction of their own, tried again while it conflicts. On a
    lake a delete fails at commit when another server inserted into the same table since
    the transaction began (DuckLake's rule): the servers only append new games, so the plan
    still holds and is simply applied again on the newer snapshot. After `ungated` conflicts
    each try runs inside `gate()` (lake.commits_paused: the servers' new games wait), so a
    batch finishes under continuous uploads. Each batch is whole or not at all; an
    interrupted reverify is finished by running it again."""
    if not any(plan.values()):
        return
    for attempt in range(tries):
        paused = gate() if gate is not None and attempt >= ungated else contextlib.nullcontext()
        with paused:
            con.begin()
            try:
                _apply(con, plan)
                con.commit()
                return
            except duckdb.TransactionException as exc:
                rollback(con)
                if "conflict" not in str(exc).lower() or attempt == tries - 1:
                    raise
            except BaseException:
                rollback(con)
                raise
        time.sleep(min(0.05 * 2**attempt, 2.0) * random.uniform(0.5, 1.0))
