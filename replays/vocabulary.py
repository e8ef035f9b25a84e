"""The upload format's vocabulary: every fixed set of values a record may hold, in one place.

Tuples, in the order the spec lists them (a power's order is its bit in an analysis mask).
The checker, the engines, the jobs and the dashboard all take their values from here, and
tests/replays/test_vocabulary.py holds these equal to the JSON Schema's enums and to the spec's
text.
Imports nothing: analysis, dashboard and ingest import it, never the other way round.
"""

from __future__ import annotations

SCHEMA_VERSION = 1
"""The format version every record carries (upload-format.md, Common fields: `schema`)."""

GAMES = ("slow6", "slide")
"""Which game a record is (upload-format.md, Common fields: `game`)."""

PLATFORMS = ("ios", "android", "web", "desktop", "bot")
"""The client's platform (upload-format.md, Common fields: `client.platform`)."""

MODES = ("online", "friend", "computer", "challenge", "tutorial")
"""How a game was set up (upload-format.md, Common fields: `mode`)."""

BOARDS = (5, 7)
"""Slow6 board sizes N (slow6-rules.md R1.1; upload-format.md, Slow6: `rules.board`)."""

AI_LEVELS = (1, 2, 3, 4)
"""Computer levels, 1 careful .. 4 hard (upload-format.md, Slow6: `ai.level`)."""

POWERS = ("double", "dash", "leap", "shield", "freeze", "swap", "recall", "trap", "shove", "surge")
"""Slow6 power ids in their canonical order (slow6-rules.md R8.2; upload-format.md, `powers`)."""

ONE_SQUARE_POWERS = ("dash", "leap", "surge", "shield", "freeze", "shove", "recall", "trap")
"""Powers whose `target` is one square (upload-format.md, Slow6 turn object: `target`)."""

REASONS = ("home", "wipeout", "points", "timeout", "resign")
"""How a Slow6 game ended (upload-format.md, Slow6: `result.reason`; slow6-rules.md R6)."""

SLIDE_PLAYERS = (2, 3, 4, 5, 6)
"""Slide table sizes (upload-format.md, Slide: `players`; slide-rules.md S1.1)."""

EDGES = ("left", "right", "top", "bottom")
"""Edges a Slide card enters from (slide-rules.md S2.4; upload-format.md, Slide: `rounds`)."""
