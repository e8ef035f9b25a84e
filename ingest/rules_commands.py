"""`balance rules add FILE... | list | show NAME`: the ruleset registry (docs/rulesets.md).

Where it acts: a stopped store file (`--db`, default $BALANCE_DB), a lake (`--lake`, servers
running or not), or a running server (`--server URL`: the admin API with $BALANCE_TOKEN to
add; list and show need no token). Standard library only at module level (see ingest/cli.py).

Exit codes: 0 done (added, or registered already with the same parameters); 1 refused (a
name registered with other parameters, RS1.3, or `standard`) or a server that cannot be
reached; 2 an invalid or unreadable file (the parameter named), or a store that cannot be
opened; nothing of the command's files is registered unless it exits 0.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

from . import config as settings
from . import lake_commands

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


def _db(args) -> str:
    return args.db or os.environ.get("BALANCE_DB") or str(settings.SETTINGS["BALANCE_DB"][0])


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
    if args.server:
        return _add_remote(args.server, files)
    from .storage.registry import Refused

    try:
        out = _stored(args, lambda r, con: r.register_file(con, files), lake_add=files)
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
    body = json.dumps(
        {"files": [{"name": name, "toml": text.decode("utf-8", "replace")} for name, text in files]}
    ).encode()
    token = os.environ.get("BALANCE_TOKEN", "")
    req = urllib.request.Request(
        server.rstrip("/") + "/v1/admin/rulesets",
        method="POST",
        data=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    got = _call(server, req)
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


def _call(server: str, req) -> tuple[int, dict] | int:
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read())
        except ValueError:
            return exc.code, {}
    except urllib.error.URLError as exc:
        print(f"balance rules: cannot reach {server}: {exc.reason}", file=sys.stderr)
        return REFUSED


# -- list and show ----------------------------------------------------------------------------


def _listing(args) -> list[dict] | int:
    if args.server:
        got = _call(args.server, urllib.request.Request(args.server.rstrip("/") + "/v1/rulesets"))
        if isinstance(got, int):
            return got
        status, payload = got
        if status != 200:
            print(f"balance rules: the server answered {status} {payload}", file=sys.stderr)
            return REFUSED
        return payload["rulesets"]
    return _stored(args, lambda r, con: r.stored_listing(con))


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


def _stored(args, action, lake_add: list | None = None):
    """action(ingest.rulesets, con) on the lake (`--lake`) or the stopped store file; an exit
    code when the store cannot be opened."""
    from . import rulesets as r

    catalog = lake_commands.catalog_of(args) if not args.db else None
    if catalog:
        from .storage.lake import LakeError, LakeUnavailable

        try:
            if lake_add is not None:
                return r.register_lake(catalog, lake_add)
            return r.on_lake(catalog, lambda con: action(r, con))
        except (LakeError, LakeUnavailable) as exc:
            print(f"balance rules: {exc}", file=sys.stderr)
            return INVALID
    import duckdb

    db = _db(args)
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
