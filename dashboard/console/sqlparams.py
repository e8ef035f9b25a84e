"""Query parameters: `:name` (or `$name`) in the text, a value bound by DuckDB, never spliced.

`prepare(sql)` finds the parameters of a query and writes each `:name` as DuckDB's `$name`
(one character for one, so an error's position is the same in both texts). Only a `:` that
starts a word after a blank, an opening bracket, a comma or an operator is a parameter: not
`::` casts, not anything in a string, a quoted name or a comment, not `x[a:b]` slices, not a
struct's `{'k':v}`, not `lambda x:x`.

A saved query declares each parameter's type (`Param`); `Param.value` checks a value given as
text (a URL's query string) and turns it into what DuckDB binds: an int, a float, a bool, an
ISO date as text, or text. The value only ever reaches DuckDB as a bound value (sqlsafe
`Engine.run(params=...)`), so no value can change the statement the allow-list checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from .sqlsafe import MAX_PARAM_CHARS, PARAM_NAME, Refused

TYPES = ("text", "integer", "number", "date", "boolean")
BEFORE_PARAM = set(" \t\r\n(,=<>+-*/|%!")
# query-string keys of the console and the saved-query pages: no parameter may take them
RESERVED = frozenset({"q", "token", "name", "limit", "format", "saved"})


class MissingValue(Refused):
    """A parameter without a value (and without a default): ask for it, nothing ran."""


def prepare(sql: str) -> tuple[str, list[str]]:
    """(the text with `:name` written `$name`, the parameter names in order of appearance)."""
    out = list(sql)
    names: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif ch == "/" and sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch in "'\"":
            i = _skip_quoted(sql, i, ch, escapes=ch == "'" and sql[i - 1 : i] in ("e", "E"))
        elif ch == "$":
            m = re.compile(r"\$([A-Za-z_]\w*)?\$").match(sql, i)
            if m:  # a dollar-quoted string: $$...$$ or $tag$...$tag$
                end = sql.find(m.group(0), m.end())
                i = n if end < 0 else end + len(m.group(0))
                continue
            m = PARAM_NAME.match(sql, i + 1)
            if m and (i == 0 or sql[i - 1] in BEFORE_PARAM):
                _add(names, m.group(0))
                i = m.end()
            else:
                i += 1
        elif ch == ":":
            if sql.startswith("::", i):
                i += 2
                continue
            m = PARAM_NAME.match(sql, i + 1)
            if m and (i == 0 or sql[i - 1] in BEFORE_PARAM):
                out[i] = "$"
                _add(names, m.group(0))
                i = m.end()
            else:
                i += 1
        else:
            i += 1
    return "".join(out), names


def _add(names: list[str], name: str) -> None:
    name = name.lower()  # DuckDB's parameter names do not depend on case
    if name not in names:
        names.append(name)


def _skip_quoted(sql: str, i: int, quote: str, escapes: bool) -> int:
    j = i + 1
    while j < len(sql):
        c = sql[j]
        if escapes and c == "\\":
            j += 2
            continue
        if c == quote:
            if sql.startswith(quote * 2, j):  # a doubled quote inside
                j += 2
                continue
            return j + 1
        j += 1
    return len(sql)


@dataclass(frozen=True)
class Param:
    name: str
    type: str = "text"
    default: str | None = None  # as text, the way a form sends it; None: the value is required
    label: str = ""

    @classmethod
    def of(cls, raw) -> Param:
        """A declaration from JSON ({"name", "type", "default", "label"}), checked."""
        if isinstance(raw, str):
            raw = {"name": raw}
        if not isinstance(raw, dict):
            raise Refused('Each parameter is {"name": ..., "type": ..., "default": ...}.')
        name = raw.get("name")
        if not isinstance(name, str) or not PARAM_NAME.fullmatch(name):
            raise Refused(f"{str(name)[:40]!r} is not a parameter name (letters, digits, _).")
        name = name.lower()
        if name.lower() in RESERVED or name.startswith("_"):
            raise Refused(
                f"The parameter name {name} is taken by the console "
                f"({', '.join(sorted(RESERVED))} and names starting with _): pick another."
            )
        kind = raw.get("type") or "text"
        if kind not in TYPES:
            raise Refused(f"The type of {name} is one of {', '.join(TYPES)}, not {kind!r}.")
        default = raw.get("default")
        if default is not None:
            if isinstance(default, bool):
                default = "true" if default else "false"
            if not isinstance(default, (str, int, float)):
                raise Refused(f"The default of {name} is text or a number.")
            default = str(default)
        label = raw.get("label") or ""
        if not isinstance(label, str) or len(label) > 200:
            raise Refused(f"The label of {name} is text of at most 200 characters.")
        param = cls(name, kind, default, label)
        if default not in (None, ""):
            param.value(default)  # a default that could never run is refused now
        return param

    def as_json(self) -> dict:
        return {"name": self.name, "type": self.type, "default": self.default, "label": self.label}

    def value(self, text):
        """What DuckDB binds for `text` (a form's value), or Refused saying why not."""
        if text is None:
            return None
        if not isinstance(text, str):
            text = str(text)
        if len(text) > MAX_PARAM_CHARS or "\x00" in text:
            raise Refused(f"The value of {self.name} is too long or holds a NUL character.")
        t = text.strip()
        if self.type == "text":
            return text
        if self.type == "integer":
            if not re.fullmatch(r"[-+]?\d{1,18}", t):
                raise Refused(f"{self.name} is a whole number, not {text[:40]!r}.")
            return int(t)
        if self.type == "number":
            try:
                number = float(t)
            except ValueError:
                raise Refused(f"{self.name} is a number, not {text[:40]!r}.") from None
            if number != number or number in (float("inf"), float("-inf")):
                raise Refused(f"{self.name} is a finite number.")
            return number
        if self.type == "date":
            try:
                return date.fromisoformat(t).isoformat()
            except ValueError:
                raise Refused(f"{self.name} is a date, YYYY-MM-DD, not {text[:40]!r}.") from None
        if t.lower() in ("true", "1", "yes", "on"):
            return True
        if t.lower() in ("false", "0", "no", "off"):
            return False
        raise Refused(f"{self.name} is true or false, not {text[:40]!r}.")


def declare(sql: str, declared: list[Param]) -> tuple[str, list[Param]]:
    """A saved query's parameters: those declared, in the order the text uses them, plus a text
    parameter for each one the text uses without a declaration. A declared one the text does
    not use is refused (it would be a form field that changes nothing)."""
    text, names = prepare(sql)
    by_name = {p.name: p for p in declared}
    if len(by_name) != len(declared):
        raise Refused("A parameter is declared twice.")
    unused = [p.name for p in declared if p.name not in names]
    if unused:
        raise Refused(f"Declared but not in the query: {', '.join(unused)}.")
    params = [by_name.get(name) or Param.of({"name": name}) for name in names]
    return text, params


def bind(params: list[Param], given) -> tuple[dict, dict[str, str]]:
    """(the values DuckDB binds, the text shown in the form) for the values `given` (a mapping
    of name -> text: a query string), the defaults filling the rest; Refused when one is
    missing or wrong. Names that are not parameters are ignored."""
    values, shown, missing = {}, {}, []
    for p in params:
        raw = given.get(p.name) if given is not None else None
        if raw is None or raw == "":
            raw = p.default
        if raw is None or (raw == "" and p.type != "text"):
            missing.append(p.name)
            continue
        values[p.name] = p.value(raw)
        shown[p.name] = str(raw)
    if missing:
        raise MissingValue(f"Give a value for {', '.join(missing)}.")
    return values, shown
