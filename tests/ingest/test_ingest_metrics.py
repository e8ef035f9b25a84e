"""The Prometheus histograms of /metrics: a value lands in the first bucket whose bound holds it
(Prometheus buckets are cumulative, `le` = less than or equal), past the last bound only +Inf."""

from __future__ import annotations

from ingest.server.metrics import Histogram


def buckets(hist: Histogram) -> dict[str, int]:
    out = {}
    for line in hist.lines("h"):
        if line.startswith("h_bucket"):
            bound = line.split('le="')[1].split('"')[0]
            out[bound] = int(line.rsplit(" ", 1)[1])
    return out


def test_a_value_on_a_bound_counts_in_that_bucket_and_every_later_one():
    hist = Histogram((1, 5, 10))
    for value in (0.5, 1, 1.0001, 5, 10, 10.5, 99):
        hist.observe(value)
    assert buckets(hist) == {"1": 2, "5": 4, "10": 5, "+Inf": 7}
    lines = hist.lines("h")
    assert "h_count 7" in lines and f"h_sum {0.5 + 1 + 1.0001 + 5 + 10 + 10.5 + 99!r}" in lines


def test_an_empty_histogram_says_zero_everywhere():
    assert buckets(Histogram((0.1, 1.0))) == {"0.1": 0, "1": 0, "+Inf": 0}


# -- label cardinality: methods and routes are fixed sets -------------------------------------


def test_methods_outside_the_fixed_set_and_unmatched_routes_count_as_other():
    from ingest.server.metrics import Metrics

    m = Metrics()
    for i in range(100):
        m.observe_request("other", f"M{i}", 405, 0.001)
    m.observe_request("/healthz", "GET", 200, 0.001)
    lines = [x for x in m.exposition().splitlines() if x.startswith("balance_http_requests_total")]
    assert lines == [
        'balance_http_requests_total{route="/healthz",method="GET",status="200"} 1',
        'balance_http_requests_total{route="other",method="other",status="405"} 100',
    ]


def series(text: str) -> set[str]:
    return {line.rsplit(" ", 1)[0] for line in text.splitlines() if line and line[0] != "#"}


def test_a_thousand_invented_methods_and_paths_add_no_series(app_server):
    """`curl -X M1 ...` a thousand times added a thousand series to /metrics."""
    # in-process: the methods and paths reach the app as the server hands them over
    for i in range(1000):
        method, path = (f"M{i}", "/healthz") if i % 2 else ("GET", f"/nowhere/{i}")
        app_server.request(method, path)
    text = app_server.get("/metrics").body.decode()
    requests = {s for s in series(text) if s.startswith("balance_http_requests_total")}
    requests.discard('balance_http_requests_total{route="/healthz",method="GET",status="200"}')
    assert requests == {
        'balance_http_requests_total{route="other",method="other",status="405"}',
        'balance_http_requests_total{route="other",method="GET",status="404"}',
    }
    assert 'balance_http_requests_total{route="other",method="other",status="405"} 500' in text
    assert len(series(text)) < 150  # every series of the exposition, whatever came in
    assert "M1" not in text and "nowhere" not in text
    log = app_server.output()
    assert "M1" not in log and "nowhere" not in log  # nor in the log
