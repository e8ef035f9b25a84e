"""Engines with a planted bug, for tests of what happens when the verifier is fixed."""

from __future__ import annotations

from types import SimpleNamespace


def buggy_verifier(bad_ids: set[str]):
    """An 'engine with a bug': quarantines these ids, judges the rest like the real one."""

    from replays import verdict as V
    from replays import verifier as real

    def replay_record(record):
        if record["game_id"] in bad_ids:
            return V.invalid(record["game_id"], "R2.2", 3, "buggy engine"), None
        return real.replay_record(record)

    return SimpleNamespace(replay_record=replay_record)
