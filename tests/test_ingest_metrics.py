"""The Prometheus histograms of /metrics: a value lands in the first bucket whose bound holds it
(Prometheus buckets are cumulative, `le` = less than or equal), past the last bound only +Inf."""

from __future__ import annotations

from ingest.metrics import Histogram


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
