"""The rulesets over HTTP (rulesets.md RS4): GET /v1/rulesets and /v1/rulesets/<game>/<name>
(public: a client may read which rulesets exist), POST /v1/admin/rulesets (registering is an
operator's act: the bearer token, as the other admin routes)."""

from __future__ import annotations

import logging
import time

import orjson
from flask import Blueprint, current_app, request

from replays import rulesets as R

from ..storage import StorageUnavailable
from ..storage.registry import Refused
from . import rulesets
from .admin import refused
from .responses import error, json_response

bp = Blueprint("rulesets", __name__)
log = logging.getLogger("ingest.rulesets")

FRESH = 1.0  # seconds a lake server's list may lag another server's registration
MAX_FILES, MAX_BYTES = 100, 1024 * 1024  # a registration request's TOML files


def _registry():
    """The server's store, its registry read again if older than FRESH (a lake: what other
    servers registered); no store query otherwise, however many clients ask."""
    store = current_app.extensions["ingest"].store
    try:
        store.registry.refresh(time.time() - FRESH)
    except Exception as exc:  # the lake unreadable now: what this server judges by
        log.warning("rulesets not read again for GET /v1/rulesets: %s", type(exc).__name__)
    return store


@bp.get("/v1/rulesets")
def list_rulesets():
    store = _registry()
    times = store.registry.snapshot.registered_at
    return json_response({"rulesets": rulesets.listing(store.registry.all(), times)})


@bp.get("/v1/rulesets/<game>/<name>")
def show_ruleset(game: str, name: str):
    store = _registry()
    found = store.registry.lookup(game, name) if game in R.GAMES else None
    if found is None:
        return error(404, f"no {game} ruleset {name!r} is registered (RS5.1)")
    at = store.registry.snapshot.registered_at.get((game, name))
    return json_response(rulesets.describe(found, at))


@bp.post("/v1/admin/rulesets")
def register_rulesets():
    """Register the rulesets of a request: one TOML file (application/toml), or several as
    JSON {"files": [{"name": "freeze-1.toml", "toml": "..."}, ...]} (they may be based_on
    each other). 200 with each one's status (added | unchanged); 400 (an invalid file) or
    409 (RS1.3: a name registered with other parameters, or `standard`) naming the parameter,
    nothing registered."""
    denied = refused()
    if denied is not None:
        return denied
    state = current_app.extensions["ingest"]
    if (request.content_length or 0) > MAX_BYTES:
        return error(413, f"a registration is at most {MAX_BYTES} bytes of TOML")
    body = request.stream.read(MAX_BYTES + 1)
    if len(body) > MAX_BYTES:
        return error(413, f"a registration is at most {MAX_BYTES} bytes of TOML")
    files = _files(request.mimetype, body)
    if isinstance(files, str):
        return error(400, files, param=None)
    try:
        out = rulesets.register_running(state.store, files)
    except Refused as exc:
        return error(exc.status, exc.message, param=exc.param, file=exc.source)
    except StorageUnavailable as exc:
        return error(503, f"storage unavailable: {exc.reason}", {"Retry-After": "5"})
    except Exception as exc:  # the store or the lake's catalog failing: retrying is safe
        log.error("ruleset registration failed: %r", exc)
        return error(
            503,
            f"the store could not be written ({type(exc).__name__}): retry (registering the "
            "same files again is a no-op once they are in)",
            {"Retry-After": "5"},
        )
    return json_response({"rulesets": out})


def _files(mimetype: str, body: bytes) -> list[tuple[str, str | bytes]] | str:
    """The request's (name, TOML text) files, or why there are none."""
    if mimetype in ("application/toml", "text/plain", "text/x-toml"):
        return [("request", body)] if body.strip() else "the body holds no ruleset file"
    if mimetype != "application/json":
        return 'send one ruleset file as application/toml, or JSON {"files": [...]}'
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return "the body is not JSON"
    entries = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries or len(entries) > MAX_FILES:
        return f'send {{"files": [{{"name": ..., "toml": ...}}]}}: 1 to {MAX_FILES} files'
    out: list[tuple[str, str | bytes]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("toml"), str):
            return f'files[{i}] is not {{"name": ..., "toml": "..."}}'
        name = entry.get("name")
        out.append((name if isinstance(name, str) and name else f"files[{i}]", entry["toml"]))
    return out
