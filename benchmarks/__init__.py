"""Scripts that print speed and memory figures (targets are met here, not in unit tests).

Run one from the checkout's root as a module, `python -m benchmarks.NAME [ARGS]`: the
checkout's packages are then the ones measured, and a benchmark imports its neighbours
(`benchmarks.ingest_pool`) and the test harness (`tests.harness`: servers, the PostgreSQL
cluster, the spec's records) as packages, with no path of its own to set.
"""
