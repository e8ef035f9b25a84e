"""The game viewer's frames (replays.slow6.frames): one per turn, each with what the turn did,
the same events the stored facts count (game_turns)."""

from __future__ import annotations

import random

from replays.slow6.frames import frames
from replays.slow6.simulate import simulate_game
from replays.slow6.verify import replay


def test_every_turn_has_a_frame_with_the_events_the_stored_facts_count():
    rng = random.Random(7)
    checked = 0
    for _ in range(12):
        record = simulate_game(rng, board=7, powers=True, levels=(1, 1), quit_rate=0.0)
        verdict, facts = replay(record, collect=True)
        assert verdict.ok
        view = frames(record)
        turns = view["frames"][1:]  # the first is the set-up position
        assert [f["turn"] for f in turns] == list(range(len(record["turns"])))
        columns = facts.turn_columns
        for i, frame in enumerate(turns):
            counted = {k: getattr(columns, k)[i] for k in frame["events"]}
            assert frame["events"] == counted
            assert all(getattr(columns, k)[i] == 0 for k in
                       ("fights", "removed", "stuns", "catches", "promotions", "trapped")
                       if k not in frame["events"])  # fmt: skip
        checked += sum(bool(f["events"]) for f in turns)
        assert view["error"] is None
    assert checked > 20  # games with fights and promotions, longer than their piece count
