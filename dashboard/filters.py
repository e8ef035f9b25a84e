"""The filter form every dashboard page shows, and the SQL WHERE it turns into.

Values are checked against fixed vocabularies or strict patterns before they are written into
SQL as literals (they must be literals: the same SQL text is shown, downloaded and opened in the
console). The SQL runs on the read-only snapshot engine anyway, so a bad value could at worst
fail a query, never change data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from urllib.parse import urlencode

from analysis.cuts import HUMAN_MODES, VARIANTS
from analysis.sql import sql_literal
from replays import vocabulary

# A form value is text: numbers are chosen as their digits.
BOARDS = tuple(str(n) for n in vocabulary.BOARDS)
MODES = ("human", *vocabulary.MODES)  # "human": the modes of the default cut (HUMAN_MODES)
AI_LEVELS = tuple(str(n) for n in vocabulary.AI_LEVELS)
PLATFORMS = vocabulary.PLATFORMS
PLAYERS = tuple(str(n) for n in vocabulary.SLIDE_PLAYERS)  # Slide table sizes
VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z._+-]{0,63}")
RULESET = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")  # rulesets.md RS1.1

LABELS = {
    "board": "Board",
    "variant": "Variant",
    "mode": "Mode",
    "ai_level": "AI level",
    "players": "Players",
    "platform": "Platform",
    "client_version": "Client version",
    "ruleset": "Ruleset",
    "date_from": "From",
    "date_to": "To",
}
KEYS = tuple(LABELS)
# the select fields each game's pages show (a filter a table cannot take is still named under it)
SLOW6_SELECTS = ("board", "variant", "mode", "ai_level", "platform")
SLIDE_SELECTS = ("players", "mode", "platform")


CUT_KEYS = ("mode", "client_version", "ruleset")  # the filters a page's default cut sets
ALL = "all"  # what the form's "all" option sends (an empty value means the same)
CHOICES = {
    "board": BOARDS,
    "variant": VARIANTS,
    "mode": MODES,
    "ai_level": AI_LEVELS,
    "players": PLAYERS,
    "platform": PLATFORMS,
}


@dataclass
class Filters:
    values: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    # the filters the URL left out that took the page's default value
    defaulted_keys: list[str] = field(default_factory=list)
    # the URL left the cut (CUT_KEYS) to the page: some of it came from the page's defaults
    relied: bool = False
    paged: bool = False  # read with a page's defaults
    # the URL's own filters as the form shows them ("all" for an explicit every-value)
    explicit: dict[str, str] = field(default_factory=dict)

    @property
    def defaulted(self) -> bool:
        return self.relied

    @classmethod
    def from_args(cls, args, defaults: dict[str, str] | None = None) -> Filters:
        """Filters from a GET query, one rule for every key: a key left out of the URL takes
        the page's default (`defaults`, when given), "all" (or an empty value: what the form
        sends for its "all") is every value, anything else must be a value the form can show.
        A value that is not one is ignored and said so (the default applies then)."""
        f = cls()
        f.paged = defaults is not None
        f.relied = defaults is not None and any(k not in args for k in CUT_KEYS)
        defaults = {k: v for k, v in (defaults or {}).items() if v}
        for key in KEYS:
            given = key in args
            raw = (args.get(key) or "").strip() if given else ""
            if given and raw.lower() in ("", ALL):
                if key in CUT_KEYS:  # (elsewhere "all" is what leaving it out means)
                    f.explicit[key] = ALL
                continue
            if given:
                problem = _problem(key, raw)
                if problem is None:
                    f.values[key] = f.explicit[key] = raw
                    continue
                fallback = defaults.get(key)
                f.errors.append(
                    f"{LABELS[key]}: {raw!r} {problem} (ignored: "
                    + (f"the default, {fallback}, applies)" if fallback else "every value counts)")
                )
            if key in defaults:
                f.values[key] = defaults[key]
                f.defaulted_keys.append(key)
        mode = f.values.get("mode")
        if "ai_level" in f.values and mode not in (None, "computer"):
            f.errors.append(
                f"AI level: only computer games have one, so no {mode} game matches it (the "
                "charts whose tables have no AI level still count them); choose Mode: computer"
            )
        start, stop = f.values.get("date_from"), f.values.get("date_to")
        if start and stop and start > stop:
            f.errors.append(f"From {start} is after To {stop}: no game ended in between; swap them")
        return f

    def get(self, key: str) -> str | None:
        return self.values.get(key)

    def query_string(self, without: tuple[str, ...] = (), **extra) -> str:
        """The filters in effect as a query: every value applied (defaults included) and each
        explicit "all", so the link shows the same cut."""
        chosen = {**self.explicit, **self.values}
        if self.paged:  # a page's cut in full: a link must not fall back on any default
            chosen = {**dict.fromkeys(CUT_KEYS, ALL), **chosen}
        items = {k: chosen[k] for k in KEYS if k in chosen and k not in without}  # form order
        items.update({k: v for k, v in extra.items() if v not in (None, "")})
        return ("?" + urlencode(items)) if items else ""

    def url_query(self) -> str:
        """The URL's own filters only (nav links carry them: each page applies its own
        defaults to the rest)."""
        return ("?" + urlencode(self.explicit)) if self.explicit else ""

    def conditions(
        self,
        columns: set[str] | frozenset[str],
        date_column: str | None = None,
        override: dict[str, str] | None = None,
    ) -> tuple[list[str], list[str]]:
        """SQL conditions for the filters this table has columns for, and the filters it cannot
        take (shown on the page as 'not applied here'). `override` replaces chosen values (the
        computer-opponents charts are about computer games whatever the mode filter says)."""
        conds, skipped = [], []
        values = {**self.values, **(override or {})}
        for key, value in values.items():
            if key in ("date_from", "date_to"):
                col = date_column if date_column in columns else None
                if col is None:
                    skipped.append(key)
                    continue
                if col == "week":  # weekly tables: the whole weeks the dates fall in
                    op = ">=" if key == "date_from" else "<="
                    conds.append(f"{col} {op} date_trunc('week', DATE {sql_literal(value)})")
                elif key == "date_from":
                    conds.append(f"{col} >= DATE {sql_literal(value)}")
                else:
                    end = date.fromisoformat(value) + timedelta(days=1)
                    conds.append(f"{col} < DATE {sql_literal(end.isoformat())}")
                continue
            if key == "mode" and value == "human":
                if "mode" in columns:
                    conds.append(f"mode IN ({', '.join(map(sql_literal, HUMAN_MODES))})")
                else:
                    skipped.append(key)
                continue
            if key not in columns:
                skipped.append(key)
                continue
            if key in ("board", "ai_level", "players"):
                conds.append(f"{key} = {int(value)}")
            else:
                conds.append(f"{key} = {sql_literal(value)}")
        return conds, skipped

    def where(self, columns, date_column=None, extra: list[str] | None = None, override=None):
        conds, skipped = self.conditions(columns, date_column, override)
        conds = list(extra or []) + conds
        return ("WHERE " + "\n  AND ".join(conds)) if conds else "", skipped


def _problem(key: str, raw: str) -> str | None:
    """Why `raw` is not a value of filter `key` (None: it is one)."""
    if key in CHOICES:
        if raw in CHOICES[key]:
            return None
        return f"is not one of all, {', '.join(CHOICES[key])}"
    if key == "client_version":
        return None if VERSION.fullmatch(raw) else "is not a client version (like 3.0.1)"
    if key == "ruleset":
        return None if RULESET.fullmatch(raw) else "is not a ruleset name (rulesets.md RS1.1)"
    try:
        date.fromisoformat(raw)
    except ValueError:
        return "is not a date (YYYY-MM-DD)"
    return None
