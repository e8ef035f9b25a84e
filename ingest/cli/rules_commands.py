"""`balance rules add FILE... | list | show NAME`: the ruleset registry (docs/rulesets.md).

Where it acts: a stopped store file (`--db`, default $BALANCE_DB), a lake (`--lake`, servers
running or not), or a running server (`--server URL`: the admin API with $BALANCE_TOKEN to
add; list and show need no token). Standard library only at module level (see
ingest/cli/__init__.py).

Exit codes: 0 done (added, or registered already with the same parameters); 1 refused (a
name registered with other parameters, RS1.3, or `standard`) or a server that cannot be
reached; 2 an invalid or unreadable file (the parameter named), or a store that cannot be
opened; nothing of the command's files is registered unless it exits 0.
"""

from __future__ import annotations

import json
import os
import sys

REFUSED, INVALID = 1, 2


def register(sub) -> None:
    p = sub.add_parser("rules", help="register, list and show rulesets (docs/rulesets.md)")
    rules = p.add_subparsers(dest="rules_command", required=True, metavar="ACTION")
    q = rules.add_parser("add", help="register ruleset TOML files (RS4.1; immutable once added)")
    q.add_argument(
        "files", nargs="+", metavar="FILE", help="ruleset files; may be based_on each other"
    )
    _where(q)
    q.set_defaults(run=run_add)
    q = rules.add_parser("list", help="the rulesets a store knows: standard and the registered")
    q.add_argument("--json", action="store_true", help="as JSON (the API's /v1/rulesets)")
    _where(q)
    q.set_defaults(run=run_list)
    q = rules.add_parser(
        "show", help="one ruleset: every parameter, and what differs from standard"
    )
    q.add_argument("name")
    q.add_argument("--game", choices=("slow6", "slide"), help="when both games have the name")
    _where(q)
    q.set_defaults(run=run_show)


def _where(p) -> None:
    p.add_argument("--db", help="a store file, its server stopped (default $BALANCE_DB)")
    p.add_argument("--lake", metavar="CATALOG", default=None, help="a lake (default $BALANCE_LAKE)")
    p.add_argument("--server", metavar="URL", help="a running server (adding needs $BALANCE_TOKEN)")


def _chosen(args):
    """Where the command acts (storage/where.py), or INVALID after one line on stderr."""
    from .commands import where

    chosen = where("rules", args)
    return INVALID if isinstance(chosen, int) else chosen


# -- add --------------------------------------------------------------------------------------


def run_add(args) -> int:
    files = []
    for path in args.files:
        try:
            with open(path, "rb") as f:
                files.append((path, f.read()))
        except OSError as exc:
            print(f"balance rules add: cannot read {path}: {exc.strerror}", file=sys.stderr)
            return INVALID
    chosen = _chosen(args)
    if isinstance(chosen, int):
        return chosen
    if chosen.server:
        return _add_remote(chosen.server, files)
    from ..storage.registry import Refused

    try:
        out = _stored(chosen, lambda r, con: r.register_file(con, files), lake_add=files)
    except Refused as exc:
        return _refused(exc.status, exc.message)
    if isinstance(out, int):
        return out
    _print_added(out)
    return 0


def _print_added(out: list[dict]) -> None:
    for entry in out:
        status = entry["status"]
        note = "" if status == "added" else " (registered already, the same parameters)"
        print(f"{status}: {entry['game']} ruleset {entry['name']}{note}")


def _refused(status: int, message: str) -> int:
    print(f"balance rules add: refused, nothing registered: {message}", file=sys.stderr)
    return INVALID if status == 400 else REFUSED


def _add_remote(server: str, files: list) -> int:
    body = {
        "files": [{"name": name, "toml": text.decode("utf-8", "replace")} for name, text in files]
    }
    got = _call(server, "POST", "/v1/admin/rulesets", body)
    if isinstance(got, int):
        return got
    status, payload = got
    if status in (400, 409):
        return _refused(status, payload.get("message", ""))
    if status != 200:
        print(f"balance rules add: the server refused: {status} {payload}", file=sys.stderr)
        return REFUSED
    _print_added(payload["rulesets"])
    return 0


def _call(server: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict] | int:
    """(status, JSON body) of the server's answer ({} when it is not JSON), or REFUSED after
    one line on stderr when the server cannot be reached."""
    from ..storage.remote import Api, RemoteError

    try:
        answer = Api(server, timeout=120).request(method, path, json_body=body)
    except RemoteError as exc:
        print(f"balance rules: {exc}", file=sys.stderr)
        return REFUSED
    try:
        payload = json.loads(answer.body)
    except ValueError:
        payload = {}
    return answer.status, payload if isinstance(payload, dict) else {}


# -- list and show ----------------------------------------------------------------------------


def _listing(args) -> list[dict] | int:
    chosen = _chosen(args)
    if isinstance(chosen, int):
        return chosen
    if chosen.server:
        got = _call(chosen.server, "GET", "/v1/rulesets")
        if isinstance(got, int):
            return got
        status, payload = got
        if status != 200:
            print(f"balance rules: the server answered {status} {payload}", file=sys.stderr)
            return REFUSED
        return payload["rulesets"]
    return _stored(chosen, lambda r, con: r.stored_listing(con))


def run_list(args) -> int:
    listing = _listing(args)
    if isinstance(listing, int):
        return listing
    if args.json:
        print(json.dumps({"rulesets": listing}, indent=2))
        return 0
    from replays import rulesets as R

    for entry in listing:
        ruleset = R.Ruleset.from_json(
            {k: entry[k] for k in ("name", "game", "params", "description")}
        )
        changes = ", ".join(
            f"{p} {_value(old)} -> {_value(new)}"
            for p, old, new in ruleset.changes_from(R.STANDARD[ruleset.game])
        )
        kind = "built in" if entry.get("builtin") else f"registered {entry.get('registered_at')}"
        print(f"{entry['game']:6} {entry['name']:24} {kind}: {changes or 'the standard rules'}")
    return 0


def run_show(args) -> int:
    listing = _listing(args)
    if isinstance(listing, int):
        return listing
    found = [
        e
        for e in listing
        if e["name"] == args.name and (args.game is None or e["game"] == args.game)
    ]
    if not found:
        where = f"{args.game} " if args.game else ""
        print(f"balance rules show: no {where}ruleset {args.name!r} is registered", file=sys.stderr)
        return REFUSED
    from replays import rulesets as R

    for entry in found:
        ruleset = R.Ruleset.from_json(
            {k: entry[k] for k in ("name", "game", "params", "description")}
        )
        entry = dict(entry)
        entry["changes_from_standard"] = [
            {"param": p, "standard": old, "value": new}
            for p, old, new in ruleset.changes_from(R.STANDARD[ruleset.game])
        ]
        print(json.dumps(entry, indent=2, default=list))
    return 0


def _value(value) -> str:
    if isinstance(value, list | tuple):
        return "[" + ", ".join(map(str, value)) + "]"
    return "null" if value is None else str(value)


# -- a store of one's own ---------------------------------------------------------------------


def _stored(chosen, action, lake_add: list | None = None):
    """action(ingest.server.rulesets, con) on the lake or the stopped store file `chosen` names; an
    exit code when the store cannot be opened."""
    from ..server import rulesets as r

    catalog = chosen.lake
    if catalog:
        from ..storage.lake import LakeError, LakeUnavailable

        try:
            if lake_add is not None:
                return r.register_lake(catalog, lake_add)
            return r.on_lake(catalog, lambda con: action(r, con))
        except (LakeError, LakeUnavailable) as exc:
            print(f"balance rules: {exc}", file=sys.stderr)
            return INVALID
    import duckdb

    db = str(chosen.db)
    if lake_add is None and not os.path.exists(db):  # list / show: nothing to create
        print(f"balance rules: no store at {db} (give --db, --lake or --server)", file=sys.stderr)
        return INVALID
    try:
        return r.on_file(db, lambda con: action(r, con))
    except duckdb.IOException as exc:
        if "lock" not in str(exc).lower():
            raise
        print(
            "balance rules: the store is open in another process (a running `balance serve`?): "
            "use --server URL (adding needs $BALANCE_TOKEN), or stop it",
            file=sys.stderr,
        )
        return INVALID
