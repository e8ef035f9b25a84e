"""Rulesets: named, immutable sets of rule parameters (rulesets.md RS1-RS4).

A record names the ruleset it was played under (top-level `ruleset`, default `standard`); the
engines replay it under that ruleset's parameters. `standard` is built in for both games (the
numbers of slow6-rules.md and slide-rules.md); every other ruleset is registered by an operator
from a TOML file (RS4.1) and never changes afterwards (RS1.3).

The TOML format (RS4.1):

    name = "2027.01"             # RS1.1: 1-64 of a-z 0-9 . _ -, starting with a letter or digit
    game = "slow6"               # or "slide"
    based_on = "standard"        # optional: another ruleset of the same game (default standard)
    description = "Freeze lasts one turn"   # optional, free text
    [params]                     # optional: what differs from `based_on`
    freeze_turns = 1
    dash_reach = 4

Parameters (RS3), with their `standard` value and range:

    slow6  turn_limit_5 15 (5..40)  turn_limit_7 21 (5..40)  reach 2 (1..3)  crown_reach 1 (1..2)
           crown_points null (null, written as an absent key, or 0..20)
           powers the ten ids of R8.2 (a non-empty list of distinct ids of R8.2)
           picks 3 (1..5, at most len(powers))  dash_reach 3 (2..5, more than reach)
           leap_reach 2 (1..3)  freeze_turns 2 (1..4)  trap_turns 2 (1..4)  surge_rest 1 (0..3)
    slide  min_group 2 (2..4)  match_target 100 (20..1000)

TOML has no null: `crown_points` is null when neither the file nor its `based_on` sets it.
`based_on` is resolved when the file is parsed (through a lookup), so the ruleset holds its full
parameter set. Any fault raises `RulesetError` whose `param` names the parameter or field.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .vocabulary import POWERS

GAMES = ("slow6", "slide")
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}\Z")  # RS1.1 (fullmatch; no trailing \n)
STANDARD_NAME = "standard"


class RulesetError(ValueError):
    """An invalid ruleset; `param` names the offending parameter or field (None: the file)."""

    def __init__(self, param: str | None, message: str) -> None:
        super().__init__(f"{param}: {message}" if param else message)
        self.param = param
        self.message = message


@dataclass(frozen=True)
class _Param:
    default: Any
    low: int
    high: int
    rule: str
    nullable: bool = False


# RS3, in the order of its tables (changes_from and first_difference follow it)
PARAMS: Mapping[str, Mapping[str, _Param]] = MappingProxyType(
    {
        "slow6": MappingProxyType(
            {
                "turn_limit_5": _Param(15, 5, 40, "R2.5"),
                "turn_limit_7": _Param(21, 5, 40, "R2.5"),
                "reach": _Param(2, 1, 3, "R2.2"),
                "crown_reach": _Param(1, 1, 2, "R2.2"),
                "crown_points": _Param(None, 0, 20, "R6.3", nullable=True),
                "powers": _Param(POWERS, 1, len(POWERS), "R8.1"),
                "picks": _Param(3, 1, 5, "R8.1"),
                "dash_reach": _Param(3, 2, 5, "R8.4"),
                "leap_reach": _Param(2, 1, 3, "R8.11"),
                "freeze_turns": _Param(2, 1, 4, "R8.5"),
                "trap_turns": _Param(2, 1, 4, "R8.8"),
                "surge_rest": _Param(1, 0, 3, "R8.10"),
            }
        ),
        "slide": MappingProxyType(
            {
                "min_group": _Param(2, 2, 4, "S3.2"),
                "match_target": _Param(100, 20, 1000, "S3.4"),
            }
        ),
    }
)
_TOP_KEYS = ("name", "game", "based_on", "description", "params")


@dataclass(frozen=True)
class Ruleset:
    """One ruleset of one game: `params` is its full, resolved parameter set (read-only)."""

    name: str
    game: str
    params: Mapping[str, object]
    description: str = ""
    _key: tuple[Any, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # validate and freeze whatever the caller passed (a dict, a list for powers)
        _check_name(self.name)
        _check_game(self.game)
        full = _resolve(self.game, STANDARD_PARAMS.get(self.game, {}), self.params)
        object.__setattr__(self, "params", MappingProxyType(full))
        object.__setattr__(self, "_key", (self.game, self.name, tuple(full.values())))

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ruleset):
            return NotImplemented
        return self._key == other._key and self.description == other.description

    def to_json(self) -> dict[str, Any]:
        params = {k: list(v) if isinstance(v, tuple) else v for k, v in self.params.items()}
        return {
            "name": self.name,
            "game": self.game,
            "description": self.description,
            "params": params,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Ruleset:
        """The inverse of `to_json`, validated as `parse_toml` validates (a partial `params`
        takes the `standard` value for the rest). `standard` itself comes back as the built-in
        one, and only with the built-in parameters."""
        if not isinstance(obj, Mapping):
            raise RulesetError(None, "a ruleset is a JSON object")
        for key in obj:
            if key not in ("name", "game", "description", "params"):
                raise RulesetError(str(key), f"unknown field {key!r}")
        game = _check_game(obj.get("game"))
        name = _check_name(obj.get("name"))
        description = _check_description(obj.get("description", ""))
        params = obj.get("params", {})
        if not isinstance(params, Mapping):
            raise RulesetError("params", "params is an object of parameters")
        if name == STANDARD_NAME:
            builtin = STANDARD[game]
            if _resolve(game, STANDARD_PARAMS[game], params) != dict(builtin.params):
                raise RulesetError("name", "standard is built in and cannot be changed (RS1.2)")
            return builtin
        return cls(name, game, params, description)

    def changes_from(self, other: Ruleset) -> list[tuple[str, object, object]]:
        """(param, other's value, self's value) for each parameter that differs, in RS3 order."""
        out = []
        for name, value in self.params.items():
            before = other.params.get(name)
            if before != value:
                out.append((name, before, value))
        return out

    def first_difference(self, other: Ruleset) -> str | None:
        """The first field that differs (RS1.3 names it when refusing a re-registration):
        `game`, then each parameter in RS3 order, then `description`; None when equal."""
        if self.game != other.game:
            return "game"
        changes = self.changes_from(other)
        if changes:
            return changes[0][0]
        if self.description != other.description:
            return "description"
        return None


RulesetLookup = Callable[[str, str], "Ruleset | None"]  # (game, name) -> Ruleset or None


def _check_name(name: object) -> str:
    if not isinstance(name, str):
        raise RulesetError("name", f"name is a string (RS1.1), got {name!r}")
    if NAME_PATTERN.fullmatch(name) is None:
        raise RulesetError(
            "name",
            f"{name!r} is not a ruleset name: 1-64 characters of a-z, 0-9, '.', '_', '-', "
            "starting with a letter or digit (RS1.1)",
        )
    return name


def _check_game(game: object) -> str:
    if game not in GAMES:
        raise RulesetError("game", f"game is slow6 or slide (RS1.2), got {game!r}")
    return str(game)


def _check_description(text: object) -> str:
    if not isinstance(text, str):
        raise RulesetError("description", f"description is a string, got {text!r}")
    return text


def _other_game(game: str) -> str:
    return "slide" if game == "slow6" else "slow6"


def _resolve(game: str, base: Mapping[str, object], given: Mapping[str, object]) -> dict[str, Any]:
    """`base` with `given` applied, every value checked (RS3), in RS3 order."""
    table = PARAMS[game]
    for name in given:
        if name not in table:
            if name in PARAMS[_other_game(game)]:
                raise RulesetError(
                    name, f"{name} is a parameter of {_other_game(game)}, not of {game} (RS3)"
                )
            raise RulesetError(name, f"unknown parameter {name!r} for {game} (RS3)")
    full: dict[str, Any] = {}
    for name, spec in table.items():
        value = given[name] if name in given else base.get(name, spec.default)
        full[name] = _check_value(name, spec, value)
    if game == "slow6":
        if full["picks"] > len(full["powers"]):
            raise RulesetError(
                "picks",
                f"picks {full['picks']} is more than the {len(full['powers'])} powers "
                "offered (RS3)",
            )
        if full["dash_reach"] <= full["reach"]:
            raise RulesetError(
                "dash_reach",
                f"dash_reach {full['dash_reach']} must be more than reach {full['reach']} (RS3)",
            )
    return full


def _check_value(name: str, spec: _Param, value: object) -> object:
    if name == "powers":
        return _check_powers(value)
    if value is None and spec.nullable:
        return None
    if type(value) is not int:  # (not bool, not float)
        allowed = "null or an integer" if spec.nullable else "an integer"
        raise RulesetError(name, f"{name} is {allowed} {spec.low}..{spec.high}, got {value!r}")
    if not spec.low <= value <= spec.high:
        raise RulesetError(
            name, f"{name} = {value} is outside its range {spec.low}..{spec.high} ({spec.rule})"
        )
    return value


def _check_powers(value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(type(p) is str for p in value):
        raise RulesetError("powers", f"powers is a list of power ids (R8.2), got {value!r}")
    if not value:
        raise RulesetError("powers", "powers must offer at least one power (RS3)")
    for p in value:
        if p not in POWERS:
            raise RulesetError("powers", f"{p!r} is not a power id of R8.2")
    if len(set(value)) != len(value):
        raise RulesetError("powers", f"powers lists a power twice: {list(value)}")
    return tuple(p for p in POWERS if p in value)  # R8.2 order


STANDARD_PARAMS: Mapping[str, Mapping[str, object]] = MappingProxyType(
    {g: MappingProxyType({k: p.default for k, p in PARAMS[g].items()}) for g in GAMES}
)
STANDARD: Mapping[str, Ruleset] = MappingProxyType(
    {g: Ruleset(STANDARD_NAME, g, STANDARD_PARAMS[g], "the rules of the spec pages") for g in GAMES}
)


def builtin_lookup(game: str, name: str) -> Ruleset | None:
    """Only the built-in `standard` of each game."""
    return STANDARD.get(game) if name == STANDARD_NAME else None


def parse_toml(text: str | bytes, lookup: RulesetLookup | None = None) -> Ruleset:
    """RS4.1: parse and validate one ruleset file; `based_on` resolved through `lookup`
    (standard always known). Raises RulesetError naming the parameter."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise RulesetError(None, f"a ruleset file is UTF-8 text: {e}") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RulesetError(None, f"not a TOML file: {e}") from None
    for key in doc:
        if key not in _TOP_KEYS:
            if key in PARAMS["slow6"] or key in PARAMS["slide"]:
                raise RulesetError(key, f"{key} belongs in the [params] table")
            raise RulesetError(key, f"unknown field {key!r} (RS4.1: {', '.join(_TOP_KEYS)})")
    if "name" not in doc:
        raise RulesetError("name", "missing field name (RS4.1)")
    if "game" not in doc:
        raise RulesetError("game", "missing field game (RS4.1)")
    name = _check_name(doc["name"])
    game = _check_game(doc["game"])
    if name == STANDARD_NAME:
        raise RulesetError("name", "standard is built in: it cannot be registered (RS1.2)")
    description = _check_description(doc.get("description", ""))
    based_on = doc.get("based_on", STANDARD_NAME)
    if not isinstance(based_on, str) or NAME_PATTERN.fullmatch(based_on) is None:
        raise RulesetError("based_on", f"based_on is a ruleset name (RS1.1), got {based_on!r}")
    base = builtin_lookup(game, based_on)
    if base is None and lookup is not None:
        base = lookup(game, based_on)
    if base is None or base.game != game:
        raise RulesetError(
            "based_on", f"based_on names {based_on!r}, which is not a known {game} ruleset"
        )
    params = doc.get("params", {})
    if not isinstance(params, dict):
        raise RulesetError("params", "params is a TOML table ([params])")
    for key, value in params.items():
        if isinstance(value, dict):  # a sub-table: [params.x] is no parameter
            raise RulesetError(key, f"{key} is a table, not a parameter value")
    return Ruleset(name, game, _resolve(game, base.params, params), description)


def chain_lookup(*lookups: RulesetLookup | None) -> RulesetLookup:
    """A lookup asking each of `lookups` in turn (None entries skipped); standard first."""
    chain = [builtin_lookup, *(lk for lk in lookups if lk is not None)]

    def lookup(game: str, name: str) -> Ruleset | None:
        for lk in chain:
            found = lk(game, name)
            if found is not None and found.game == game:
                return found
        return None

    return lookup


def parse_files(
    texts: Mapping[str, str | bytes], lookup: RulesetLookup | None = None
) -> dict[tuple[str, str], Ruleset]:
    """Parse several ruleset files that may be `based_on` each other in any order (the CLI's
    `--rules FILE...`): each is parsed once its base is known. `texts` maps a label (a file
    name, for messages) to its text. Returns (game, name) -> Ruleset; raises RulesetError
    (its message names the file) on a fault, a cycle, or two files for one name."""
    known: dict[tuple[str, str], Ruleset] = {}

    def local(game: str, name: str) -> Ruleset | None:
        return known.get((game, name))

    combined = chain_lookup(local, lookup)
    pending = dict(texts)
    while pending:
        progressed = False
        last: tuple[str, RulesetError] | None = None
        for label, text in list(pending.items()):
            try:
                rs = parse_toml(text, combined)
            except RulesetError as fault:
                if fault.param == "based_on":
                    last = (label, fault)  # perhaps its base is a later file
                    continue
                raise RulesetError(fault.param, f"{label}: {fault.message}") from None
            if (rs.game, rs.name) in known and known[(rs.game, rs.name)] != rs:
                raise RulesetError("name", f"{label}: a second, different ruleset {rs.name!r}")
            known[(rs.game, rs.name)] = rs
            del pending[label]
            progressed = True
        if not progressed and last is not None:
            label, stuck = last
            raise RulesetError(stuck.param, f"{label}: {stuck.message}")
    return known
