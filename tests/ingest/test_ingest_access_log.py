"""The access log under a flood from one client: refusal lines are rate-limited per status, and
what was left out is counted in the log itself (ingest/server/accesslog.py). Before, every 503 of a
flood was a line: 15 MB in 100 s."""

from __future__ import annotations

import http.client
import re
import time
from collections import Counter

import pytest
from support import JSON, Server, dumps, fresh_slow6

PER_SECOND = 5


@pytest.mark.slow
def test_a_flood_of_refusals_writes_a_few_lines_a_second_and_counts_the_rest(tmp_path):
    env = {
        "BALANCE_RATE_LIMIT": "1",
        "BALANCE_RATE_BURST": "1",
        "BALANCE_ACCESS_LOG_REFUSALS": str(PER_SECOND),
    }
    server = Server(tmp_path / "srv", env=env).start()
    try:
        conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
        statuses = Counter()
        body = dumps(fresh_slow6())
        for _ in range(400):
            conn.request("POST", "/v1/games", body, {"Content-Type": JSON})
            resp = conn.getresponse()
            resp.read()
            statuses[resp.status] += 1
        conn.close()
        time.sleep(1.1)  # into the next second: the last one's count is logged then
        assert server.get("/healthz").status == 200
        log = server.output()
    finally:
        server.stop()
    refused = statuses[429]
    assert refused >= 300, statuses  # the flood was refused
    lines = [line for line in log.splitlines() if "POST /v1/games 429" in line]
    suppressed = [int(m.group(1)) for m in re.finditer(r"suppressed (\d+) more 429 lines", log)]
    assert len(lines) + sum(suppressed) == refused  # every refusal logged or counted
    assert len(lines) < refused / 4
    per_second = Counter(line[:19] for line in lines)  # "YYYY-MM-DD HH:MM:SS"
    assert max(per_second.values()) <= 2 * PER_SECOND  # (the limiter's seconds straddle two)
    # the other lines are all there
    assert "GET /healthz 200" in log
    assert log.count("POST /v1/games 200") == statuses[200]
