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


@dataclass
class Filters:
    values: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    defaulted: bool = False  # no filter was in the URL: the defaults were applied

    @classmethod
    def from_args(cls, args, defaults: dict[str, str] | None = None) -> Filters:
        """Filters from a GET query. With no filter key in it at all, `defaults` apply (an
        explicit empty value, "all", is a choice and turns the default off)."""
        f = cls()
        if defaults and not any(k in args for k in KEYS):
            args = {k: v for k, v in defaults.items() if v}
            f.defaulted = True
        choices = {
            "board": BOARDS,
            "variant": VARIANTS,
            "mode": MODES,
            "ai_level": AI_LEVELS,
            "players": PLAYERS,
            "platform": PLATFORMS,
        }
        for key in KEYS:
            raw = (args.get(key) or "").strip()
            if not raw:
                continue
            ok = True
            if key in choices:
                ok = raw in choices[key]
            elif key == "client_version":
                ok = bool(VERSION.fullmatch(raw))
            elif key == "ruleset":
                ok = bool(RULESET.fullmatch(raw))
            else:
                try:
                    date.fromisoformat(raw)
                except ValueError:
                    ok = False
            if ok:
                f.values[key] = raw
            else:
                f.errors.append(f"{LABELS[key]}: {raw!r} is not a valid value (ignored)")
        mode = f.values.get("mode")
        if "ai_level" in f.values and mode not in (None, "computer"):
            f.errors.append(
                f"AI level: only computer games have one, so no {mode} game matches it (the "
                "charts whose tables have no AI level still count them)"
            )
        return f

    def get(self, key: str) -> str | None:
        return self.values.get(key)

    def query_string(self, **extra) -> str:
        items = {**self.values, **{k: v for k, v in extra.items() if v not in (None, "")}}
        return ("?" + urlencode(items)) if items else ""

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
