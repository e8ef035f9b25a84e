"""The default cut's version is the live game: the newest release with enough human games,
never a pre-release or a handful of games on a newer build (analysis/live_version.py)."""

from __future__ import annotations

from analysis.live_version import MIN_GAMES, is_prerelease, live_version


def test_a_few_games_on_a_newer_release_do_not_take_over():
    # 3 computer games on 3.2.0 are not human games; 3 human ones are too few
    lv = live_version({"3.0.0": 2000, "3.2.0": 3})
    assert lv.version == "3.0.0"
    assert "3.2.0 (3)" in lv.reason


def test_a_pre_release_never_is_the_default():
    assert live_version({"3.0.0": 2000, "3.1.0-beta.2": 5}).version == "3.0.0"
    assert live_version({"3.0.0": 2000, "3.1.0-beta.2": 50_000}).version == "3.0.0"


def test_the_newest_release_with_enough_games_wins():
    counts = {"2.5.3": 5000, "3.0.0": 2000, "3.0.1": MIN_GAMES}
    assert live_version(counts).version == "3.0.1"
    counts["3.0.1"] = MIN_GAMES - 1
    assert live_version(counts).version == "3.0.0"


def test_build_metadata_is_not_a_pre_release():
    assert not is_prerelease("3.0.0+sim")
    assert is_prerelease("3.1.0-beta.3+sim")
    assert live_version({"3.0.0+sim": 3000, "3.1.0-beta.3+sim": 210}).version == "3.0.0+sim"


def test_without_enough_games_anywhere_the_release_with_most():
    lv = live_version({"2.4.0": 40, "2.5.0": 90, "3.0.0": 10, "3.1.0-rc.1": 500})
    assert lv.version == "2.5.0" and "most" in lv.reason


def test_no_release_at_all_means_every_version():
    assert live_version({"3.1.0-beta.2": 100}).version is None
    assert live_version({}).version is None
