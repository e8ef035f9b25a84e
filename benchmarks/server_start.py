"""What a `balance serve` costs to start and stop: CPU and wall time, and its processes.

    python -m benchmarks.server_start [--starts 5] [--workers -1] [--console]

Starts `balance serve` on a new store file `--starts` times (BALANCE_WORKERS=`--workers`;
-1 is the default, a judge process per core), each until /healthz answers 200 (with
`--console`, then until the SQL console answered its first query: a snapshot and the SQL
workers, what a first dashboard or console page pays), then stops it with SIGTERM and waits.
Prints, per start: the CPU of its processes counted when each ends (the supervisor and its
worker; not the fork server and its children, which init reaps), the wall time to the first
200 and to the end of the stop; then the median of each, and every process of the last server
while it ran with its CPU up to then, and their sum. Servers start many times in the test
suite (and once per restart in production): their start is where a test's process cost goes.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.serving import start_server
from tests.harness.processes import descendants


def _cpu() -> float:
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return c.ru_utime + c.ru_stime


def _process(pid: int) -> tuple[float, str]:
    """(CPU seconds so far, command line) of a running process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return cpu, command.strip()


def _first_query(port: int) -> float:
    """Seconds until the console answered `SELECT 42` (its snapshot and workers started)."""
    began = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    body = json.dumps({"sql": "SELECT 42 AS x"})
    conn.request("POST", "/sql/api", body, {"Content-Type": "application/json"})
    answer = conn.getresponse()
    rows = json.loads(answer.read()).get("rows") if answer.status == 200 else None
    conn.close()
    if rows != [[42]]:
        raise RuntimeError(f"the console answered {answer.status}: {rows}")
    return time.monotonic() - began


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--workers", type=int, default=-1, help="BALANCE_WORKERS")
    ap.add_argument("--console", action="store_true", help="and the console's first query")
    args = ap.parse_args()

    cpus, readies, totals, firsts = [], [], [], []
    tree: list[tuple[int, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="server-start-") as tmp:
        for k in range(args.starts):
            work = Path(tmp) / f"s{k}"
            work.mkdir()
            before, began = _cpu(), time.monotonic()
            proc, port, log = start_server(
                work / "store.duckdb", work, {"BALANCE_WORKERS": str(args.workers)}
            )
            ready = time.monotonic() - began
            tree = []
            try:
                if args.console:
                    firsts.append(_first_query(port))
                for pid in [proc.pid, *descendants(proc.pid)]:
                    try:
                        tree.append((pid, *_process(pid)))
                    except OSError:  # gone since it was listed
                        continue
            finally:  # stopped whatever happened here: no server is left behind
                proc.send_signal(signal.SIGTERM)
                code = proc.wait(60)
                log.close()
            total = time.monotonic() - began
            cpu = _cpu() - before
            if code != 0:
                print(f"start {k + 1}: balance serve exited {code}", file=sys.stderr)
                return 1
            cpus.append(cpu)
            readies.append(ready)
            totals.append(total)
            first = f"   first query {firsts[-1]:5.2f} s" if args.console else ""
            print(
                f"start {k + 1}: CPU {cpu:5.2f} s   healthy after {ready:5.2f} s{first}   "
                f"stopped after {total:5.2f} s"
            )
    median = statistics.median
    print(
        f"median of {args.starts} (BALANCE_WORKERS={args.workers}): CPU {median(cpus):.2f} s a"
        f" start and stop, healthy after {median(readies):.2f} s, stopped after"
        f" {median(totals):.2f} s; load average {os.getloadavg()[0]:.2f}"
    )
    if args.console:
        print(f"the console's first answer after {median(firsts):.2f} s (median)")
    print("the last server's processes while it ran (CPU up to then):")
    for pid, cpu, command in tree:
        print(f"  {pid:>8} {cpu:5.2f} s  {command[:110]}")
    print(f"  in all   {sum(cpu for _, cpu, _ in tree):5.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
