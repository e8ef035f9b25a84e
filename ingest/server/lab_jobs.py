"""Lab runs started from the dashboard (docs/lab.md): each in a process of its own, never in a
request thread, at most BALANCE_LAB_RUNS at a time per server.

The server writes the job's settings to `<job dir>/spec.json` and starts
`python -m ingest.server.lab_jobs <job dir>` in a new session. That process plays the pairs with the
lab's runner (appending each to the run's file, named by the run's key as `balance lab run`
names it, so a cancelled run started again, from the page or the command line, continues),
writes its progress to `progress.json` as it goes and its result to `result.json` at the end.
A thread of the server waits for it and stores the result through the server's own writer
(the store file is the server's: no other process may write it). Cancelling stops the
process; the pairs it finished stay in the run file.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, path)  # (a reader sees the old file or the new one, never half of one)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


@dataclass
class Job:
    id: str
    key: str  # the run's key: one job per key at a time (they would share its file)
    dir: Path
    total: int
    label: str
    proc: subprocess.Popen | None = None
    status: str = "running"  # running | storing | done | failed | cancelled
    run_id: str | None = None
    message: str = ""
    started: float = field(default_factory=time.time)
    progress: dict | None = None  # the last progress, once its directory is gone

    def view(self) -> dict[str, Any]:
        progress = self.progress or _read_json(self.dir / "progress.json") or {}
        return {"id": self.id, "status": self.status, "run": self.label,
                "done": progress.get("done", 0), "total": self.total,
                "rate": progress.get("rate", 0.0), "run_id": self.run_id,
                "message": self.message, "started": self.started}  # fmt: skip


KEPT = 50  # ended jobs a server still answers for


class Busy(Exception):
    """As many lab runs as the server allows are running."""


class Running(Exception):
    """This very run (its key) is running already."""


class LabJobs:
    def __init__(self, store, root: Path, limit: int) -> None:
        self.store = store
        self.root = root
        self.limit = max(0, limit)
        self.jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def start(self, run, min_effect: float) -> Job:
        """Start `run` (ingest.server.lab_runner.LabRun) in a process of its own; raises Busy or
        Running."""
        with self._lock:
            active = [j for j in self.jobs.values() if j.status in ("running", "storing")]
            if len(active) >= self.limit:
                raise Busy(f"{len(active)} lab run(s) running, the most this server allows "
                           f"(BALANCE_LAB_RUNS={self.limit}): wait for one to finish or "
                           "cancel it")  # fmt: skip
            same = next((j for j in active if j.key == run.key), None)
            if same is not None:
                raise Running(f"this run is running already (job {same.id})")
            self._forget()
            job_id = secrets.token_hex(6)
            job_dir = self.root / "jobs" / job_id
            job_dir.mkdir(parents=True)
            spec = {"settings": run.settings(), "games": run.games, "min_effect": min_effect,
                    "pairs": str(self.root / f"{run.key}.ndjson")}  # fmt: skip
            _write_json(job_dir / "spec.json", spec)
            label = f"{run.candidate.name} vs {run.base.name}, {run.games} pairs"
            job = Job(job_id, run.key, job_dir, run.games, label)
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                filter(None, [str(Path(__file__).resolve().parent.parent),
                              os.environ.get("PYTHONPATH")]))}  # fmt: skip
            with open(job_dir / "stderr.log", "wb") as err:
                job.proc = subprocess.Popen(
                    [sys.executable, "-m", "ingest.server.lab_jobs", str(job_dir)],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                    start_new_session=True, env=env,
                )  # fmt: skip
            self.jobs[job_id] = job
        threading.Thread(target=self._watch, args=(job,), daemon=True,
                         name=f"lab-job-{job_id}").start()  # fmt: skip
        return job

    def _forget(self) -> None:
        """Keep the newest KEPT ended jobs (a server that runs for months starts many)."""
        ended = [j for j in self.jobs.values() if j.status not in ("running", "storing")]
        for job in sorted(ended, key=lambda j: j.started)[: max(0, len(ended) - KEPT)]:
            del self.jobs[job.id]

    def _watch(self, job: Job) -> None:
        assert job.proc is not None
        code = job.proc.wait()
        if job.status == "cancelled":
            return
        result = _read_json(job.dir / "result.json") if code == 0 else None
        if result is None:
            tail = (job.dir / "stderr.log").read_bytes()[-400:].decode("utf-8", "replace")
            job.status, job.message = "failed", f"the run's process ended ({code}): {tail}"
            return
        job.status = "storing"
        try:
            new = self._save(result["run"], result["rows"])
        except Exception as exc:  # (a full disk, a lake made before the lab)
            job.status, job.message = "failed", f"not stored ({exc}); its pairs are kept"
            return
        Path(json.loads((job.dir / "spec.json").read_text())["pairs"]).unlink(missing_ok=True)
        job.run_id = result["run"]["id"]
        job.message = "stored" if new else "stored already (the same run)"
        job.progress = _read_json(job.dir / "progress.json")
        job.status = "done"
        shutil.rmtree(job.dir, ignore_errors=True)  # (a failed job's stays: its stderr.log)

    def _save(self, run: dict, rows: list) -> bool:
        from ..storage.lab_runs import save

        # the token: on a lake, two servers storing the same run meet no other's commit
        stored = self.store.submit(lambda con: save(con, run, rows, transaction=False), token=True)
        return bool(stored.result())

    def cancel(self, job_id: str) -> Job | None:
        job = self.jobs.get(job_id)
        if job is None or job.proc is None:
            return job
        if job.status == "running":
            job.status = "cancelled"
            job.message = "cancelled; its finished pairs are kept: the same run continues"
            _stop(job.proc)
        return job

    def close(self) -> None:
        """Stop every running job (the server is stopping); their pairs stay."""
        for job in list(self.jobs.values()):
            self.cancel(job.id)


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(5)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


# -- the run's own process --------------------------------------------------------------------


def main(job_dir: str) -> int:
    from analysis import lab as predictions
    from replays.rulesets import Ruleset

    from .lab_runner import LabRun, play

    where = Path(job_dir)
    spec = json.loads((where / "spec.json").read_text())
    s = spec["settings"]
    run = LabRun(Ruleset.from_json(s["base"]), Ruleset.from_json(s["candidate"]), s["board"],
                 s["powers"], tuple(s["levels"]), s["seed"], spec["games"])  # fmt: skip
    if run.engine_version != s["engine_version"]:
        print("the engine changed since the run was asked for", file=sys.stderr)
        return 2
    last = [0.0]

    def progress(done: int, total: int, rate: float) -> None:
        now = time.monotonic()
        if now - last[0] >= 0.5 or done == total:
            last[0] = now
            _write_json(where / "progress.json", {"done": done, "total": total, "rate": rate})

    start = time.monotonic()
    pairs = play(run, Path(spec["pairs"]), 1, progress)
    rows = predictions.predict(pairs, powers=run.powers, levels=run.levels,
                               min_effect=spec["min_effect"], seed=run.seed)  # fmt: skip
    stored = {
        "id": run.run_id + ("" if spec["min_effect"] == 0.02 else f"-m{spec['min_effect']:g}"),
        "game": "slow6", "base": run.base.to_json(), "candidate": run.candidate.to_json(),
        "board": run.board, "powers": run.powers, "levels": list(run.levels),
        "games": run.games, "seed": run.seed, "engine_version": run.engine_version,
        "min_effect": spec["min_effect"],
        "picks_differ": sum(p["base"]["picks"] != p["candidate"]["picks"] for p in pairs),
        "seconds": time.monotonic() - start,
    }  # fmt: skip
    _write_json(where / "result.json", {"run": stored, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
