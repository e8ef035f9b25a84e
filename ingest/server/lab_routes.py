"""Starting a lab run from the dashboard's Lab page (docs/lab.md): only with the token, in a
process of its own (ingest/server/lab_jobs.py), its progress a small JSON answer the page polls.

    POST /dashboard/lab/runs               {"candidate": TOML text or a registered name, "base",
                                            "games", "levels", "board", "powers", "seed",
                                            "min_effect"} -> 202 the job
    GET  /dashboard/lab/runs               the server's jobs
    GET  /dashboard/lab/runs/<job>         one job: status, done, total, rate, run_id
    POST /dashboard/lab/runs/<job>/cancel  stop it (its finished pairs are kept)

Starting and cancelling need `Authorization: Bearer <BALANCE_TOKEN>` (or the dashboard's token
cookie) on every server, loopback included: a run takes a core for minutes. Reading a job's
progress is a dashboard read, open as the dashboard is (dashboard/auth.py).
"""

from __future__ import annotations

import hmac
from pathlib import Path

from flask import Blueprint, current_app, request

from dashboard.auth import COOKIE, cookie_value, require_token
from dashboard.guard import same_origin

from .lab_jobs import Busy, LabJobs, Running
from .responses import error, json_response

bp = Blueprint("lab_runs", __name__)
bp.before_request(require_token)
EXT = "lab_jobs"
MAX_PAGE_GAMES = 100_000  # pairs a run started from the page may ask for


def init_app(app, store, conf: dict) -> None:
    if store.shared_writers:  # a lake: the servers' shared work folder
        root = Path(conf["BALANCE_LAKE_WORKDIR"] or "balance-lab") / "lab"
    else:
        root = Path(str(conf["BALANCE_DB"]) + ".lab")
    app.extensions[EXT] = LabJobs(store, root, conf["BALANCE_LAB_RUNS"])
    app.register_blueprint(bp)


def _jobs() -> LabJobs:
    return current_app.extensions[EXT]


def _refused():
    """None when the request carries the server's token; else the answer (403: the server
    has none; 401: not sent or wrong)."""
    token = current_app.config.get("BALANCE_TOKEN") or ""
    if not token:
        return error(403, "starting a lab run needs BALANCE_TOKEN set on the server")
    sent = request.headers.get("Authorization", "")
    if hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
        return None
    if hmac.compare_digest(request.cookies.get(COOKIE, "").encode(),
                           cookie_value(token).encode()):  # fmt: skip
        return None
    why = "starting or cancelling a lab run needs the token: send Authorization: Bearer <token>"
    return error(401, why, {"WWW-Authenticate": "Bearer"})


@bp.post("/dashboard/lab/runs")
@same_origin
def start_run():
    denied = _refused()
    if denied is not None:
        return denied
    from replays import rulesets as R

    from .lab_runner import LabRun, parse_levels

    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return error(400, "send a JSON object: candidate, and base, games, levels, ...")
    try:
        games = int(body.get("games", 1000))
        seed = int(body.get("seed", 0))
        board = int(body.get("board", 5))
        min_effect = float(body.get("min_effect", 0.02))
    except (TypeError, ValueError):
        return error(400, "games, seed and board are integers, min_effect a number")
    levels = parse_levels(str(body.get("levels", "1,2")))
    if levels is None:
        return error(400, "levels: bot levels 1..4, comma-separated")
    if not 1 <= games <= MAX_PAGE_GAMES or board not in (5, 7) or not 0 <= min_effect < 1:
        return error(400, f"games 1..{MAX_PAGE_GAMES:,}, board 5 or 7, min_effect 0 up to 1")
    lookup = _jobs().store.registry.lookup
    candidate_text = str(body.get("candidate") or "").strip()
    try:
        base = lookup("slow6", str(body.get("base") or "standard"))
        if base is None:
            raise R.RulesetError(None, f"no registered ruleset {body.get('base')!r} (RS5.1)")
        if "\n" in candidate_text or "=" in candidate_text:  # a ruleset file's text
            candidate = R.parse_toml(candidate_text.encode(), lookup)
        else:
            candidate = lookup("slow6", candidate_text)
            if candidate is None:
                why = f"no registered ruleset {candidate_text!r} (RS5.1)"
                raise R.RulesetError(None, why)
    except R.RulesetError as exc:
        return error(400, str(exc))
    if candidate.game != "slow6":
        return error(400, "the lab plays Slow6 only (its bots): the candidate must be slow6")
    run = LabRun(base, candidate, board, bool(body.get("powers", True)), levels, seed, games)
    try:
        job = _jobs().start(run, min_effect)
    except Busy as exc:
        return error(429, str(exc), {"Retry-After": "30"})
    except Running as exc:
        return error(409, str(exc))
    except OSError as exc:
        return error(507, f"cannot start the run: {exc}")
    return json_response(job.view(), 202)


@bp.get("/dashboard/lab/runs")
def list_runs():
    return json_response({"jobs": [j.view() for j in _jobs().jobs.values()],
                          "limit": _jobs().limit})  # fmt: skip


@bp.get("/dashboard/lab/runs/<job_id>")
def run_status(job_id: str):
    job = _jobs().jobs.get(job_id)
    if job is None:
        return error(404, f"no lab job {job_id!r} on this server")
    return json_response(job.view())


@bp.post("/dashboard/lab/runs/<job_id>/cancel")
@same_origin
def cancel_run(job_id: str):
    denied = _refused()
    if denied is not None:
        return denied
    job = _jobs().cancel(job_id)
    if job is None:
        return error(404, f"no lab job {job_id!r} on this server")
    return json_response(job.view())
