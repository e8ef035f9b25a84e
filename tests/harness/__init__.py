"""The test harness: what tests and benchmarks use to reach the product for real.

    records    the spec's example records, fresh copies, wire forms, `query` on a stopped store
    app        AppClient: the app in this process, through Flask's test client
    server     Server: a real `balance serve` subprocess on a loopback port
    http       Response and the requests both share
    cli        balance(...): the command line in this process
    browser    Browser: headless Chromium over the DevTools protocol
    demo       the demo store, its pages and agg_* tables
    lake       a throwaway PostgreSQL cluster and real lake servers
    snapshots  the dashboard's snapshot manager over a plain connection
    engines    engines with a planted bug
    processes  a process's children, free ports, free bytes on a disk
    wait       wait_for(predicate, within, what): wait for a state, never for a time
    duckdb_threads  one DuckDB thread per database in the test processes (tests/conftest.py)
    census     a pytest plugin writing each test's CPU (benchmarks/suite_time.py loads it)

Tests import it as `harness` (tests/ is on pytest's path); benchmarks, run from the checkout
as `python -m benchmarks.NAME`, as `tests.harness`. Its modules import each other relatively,
so both work. Nothing here imports pytest or the app at module level.
"""
