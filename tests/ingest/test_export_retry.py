"""`balance export --server` waits out a busy server (503 + Retry-After, a reset connection)
instead of failing on its first refusal, a bounded number of times; and each client address
has its share of the console's downloads (dashboard/slots.py)."""

from __future__ import annotations

import threading

from support import AppClient, balance, demo_copy


def test_export_from_a_server_whose_downloads_are_all_taken_retries_until_one_frees(
    tmp_path, demo_db
):
    work = tmp_path / "srv"
    app = AppClient(work, env={"SQL_WORKERS": 1}, db=demo_copy(demo_db, work)).start()
    app.serve_http()
    from dashboard import snapshots

    downloads = snapshots(app.app)._downloads
    others = [f"192.0.2.{i}" for i in range(downloads.slots)]
    for key in others:  # other clients' downloads hold every slot
        assert downloads.take(key) is None
    refused_first = threading.Event()

    def free_after_the_first_refusal():
        for _ in range(600):
            if "/sql/download.<fmt> 503" in app.output():
                refused_first.set()
                break
            threading.Event().wait(0.1)
        for key in others:
            downloads.give(key)

    watcher = threading.Thread(target=free_after_the_first_refusal, daemon=True)
    watcher.start()
    try:
        r = balance("export", "--server", app.url, "--out", str(tmp_path / "out"))
        watcher.join(60)
    finally:
        app.stop()
    assert refused_first.is_set()  # it was refused, then retried
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "SHA256SUMS").exists()


def test_one_address_has_its_share_of_the_downloads():
    from dashboard.slots import Shares

    downloads = Shares(4)  # BALANCE_SQL_DOWNLOADS' default: one address may hold two
    assert [downloads.take("198.51.100.7") for _ in range(3)] == [None, None, "share"]
    assert downloads.take("203.0.113.9") is None


def test_the_first_requests_at_once_share_one_snapshot_manager(tmp_path):
    """Two managers made by the first requests at once each cleared the other's download
    files: 2 of 4 first downloads were 500 (FileNotFoundError) on a fresh server."""
    from dashboard import snapshots

    app = AppClient(tmp_path / "app").start()
    try:
        got, start = [], threading.Barrier(8)

        def first():
            start.wait()
            got.append(snapshots(app.app))

        threads = [threading.Thread(target=first) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert len(got) == 8 and all(s is got[0] for s in got)
    finally:
        app.stop()
