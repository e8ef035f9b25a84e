"""One vocabulary: replays/vocabulary.py is what the JSON Schema's enums and the spec's text list,
and every other module takes its values from it (weighted simulator tables by name)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from replays import vocabulary as v

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "replays" / "schema" / "upload-v1.schema.json").read_text())
DEFS = SCHEMA["$defs"]
SPEC = Path(__file__).resolve().parents[1] / "spec"
UPLOAD = (SPEC / "upload-format.md").read_text()
RULES = (SPEC / "slow6-rules.md").read_text()


# -- the JSON Schema -----------------------------------------------------------------------------


def _int_range(prop: dict) -> tuple[int, ...]:
    return tuple(range(prop["minimum"], prop["maximum"] + 1))


def _one_square_enum() -> list[str]:
    # the turn's conditional whose `then` makes the target one square
    (enum,) = [
        rule["if"]["properties"]["power"]["enum"]
        for rule in DEFS["slow6_turn"]["allOf"]
        if "enum" in rule["if"]["properties"].get("power", {})
    ]
    return enum


def test_the_schema_enums_are_the_vocabulary():
    slow6 = DEFS["slow6"]["properties"]
    assert DEFS["schema"]["const"] == v.SCHEMA_VERSION
    assert tuple(DEFS["game"]["enum"]) == v.GAMES
    assert tuple(DEFS["client"]["properties"]["platform"]["enum"]) == v.PLATFORMS
    assert tuple(DEFS["mode"]["enum"]) == v.MODES
    assert tuple(DEFS["slow6_rules"]["properties"]["board"]["enum"]) == v.BOARDS
    assert _int_range(slow6["ai"]["properties"]["level"]) == v.AI_LEVELS
    assert tuple(DEFS["power_id"]["enum"]) == v.POWERS
    assert tuple(_one_square_enum()) == v.ONE_SQUARE_POWERS
    assert tuple(DEFS["slow6_result"]["properties"]["reason"]["enum"]) == v.REASONS
    assert _int_range(DEFS["slide"]["properties"]["players"]) == v.SLIDE_PLAYERS
    side = DEFS["slide_round"]["properties"]["slides"]["items"]["properties"]["side"]
    assert tuple(side["enum"]) == v.EDGES


# -- the spec's text -----------------------------------------------------------------------------


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def _row(heading: str, field: str) -> str:
    """The type and meaning cells of a field's row in a section's table."""
    for line in _section(UPLOAD, heading).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == f"`{field}`":
            return " | ".join(cells[1:])
    raise AssertionError(f"no row for {field!r} under {heading!r}")


def _words(text: str) -> tuple[str, ...]:
    return tuple(re.findall(r'`"?([a-z0-9]+)"?`', text))


def _ints(text: str) -> tuple[int, ...]:
    lo, hi = re.search(r"(\d+)\.\.(\d+)", text).groups()
    return tuple(range(int(lo), int(hi) + 1))


def test_the_spec_text_lists_the_vocabulary():
    assert _row("Common fields", "schema").startswith(f"integer, `{v.SCHEMA_VERSION}` |")
    assert _words(_row("Common fields", "game").split("|")[0]) == v.GAMES
    platforms = _row("Common fields", "client").split("platform is one of", 1)[1]
    assert _words(platforms) == v.PLATFORMS
    assert _words(_row("Common fields", "mode").split("|")[0]) == v.MODES

    rules = _row("Slow6", "rules")
    assert tuple(int(n) for n in re.search(r'"board": (\d+) or (\d+)', rules).groups()) == v.BOARDS
    assert _ints(re.search(r'"level": [\d.]+', _row("Slow6", "ai")).group(0)) == v.AI_LEVELS
    reasons = _row("Slow6", "result").split("`reason` is", 1)[1].split(";")[0]
    assert _words(reasons) == v.REASONS

    # a turn's `target`: "`dash`, `leap`, ...: the square of ...; `swap`: a list of two ...; ..."
    one_square = []
    for clause in _row("Slow6", "target").split("|")[1].split(";"):
        names, what = clause.split(":", 1)
        if what.strip().startswith("the "):
            one_square += _words(names)
    assert tuple(one_square) == v.ONE_SQUARE_POWERS

    r82 = re.search(r"- R8\.2 (.*?)\n- R8\.3", RULES, re.S).group(1)
    assert _words(r82) == v.POWERS
    r11 = re.search(r"- R1\.1 (.*?)\n- R1\.2", RULES, re.S).group(1)
    assert tuple(int(n) for n in re.findall(r"N = (\d+)", r11)) == v.BOARDS

    assert _ints(_row("Slide", "players")) == v.SLIDE_PLAYERS
    # (the row's cell holds `"left"|"right"|...`: read the section, not the split row)
    edges = re.search(r'"side": ("[a-z]+"(?:\|"[a-z]+")*)', _section(UPLOAD, "Slide")).group(1)
    assert tuple(e.strip('"') for e in edges.split("|")) == v.EDGES


# -- modules that use it -------------------------------------------------------------------------


def test_the_vocabulary_imports_nothing():
    tree = ast.parse(Path(v.__file__).read_text())
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [n.module for n in imports] == ["__future__"]


def test_every_copy_is_the_vocabulary_itself():
    from analysis import frames, load, synthetic
    from dashboard import filters, pages
    from replays import _wf_common
    from replays.slow6 import board, bots

    for module in (bots, frames, load, synthetic, pages):
        assert module.POWERS is v.POWERS, module.__name__
    assert board.BOARDS is v.BOARDS
    assert pages.REASONS is v.REASONS
    assert filters.PLATFORMS is v.PLATFORMS
    assert filters.MODES == ("human", *v.MODES)
    assert filters.BOARDS == tuple(map(str, v.BOARDS))
    assert filters.AI_LEVELS == tuple(map(str, v.AI_LEVELS))
    assert filters.PLAYERS == tuple(map(str, v.SLIDE_PLAYERS))
    for name in ("PLATFORMS", "MODES", "REASONS", "POWERS", "ONE_SQUARE_POWERS", "EDGES"):
        assert getattr(_wf_common, name) == frozenset(getattr(v, name)), name


def _names(table) -> tuple[str, ...]:
    return tuple(name for name, _weight in table)


@pytest.mark.parametrize("module", ["replays.slow6.simulate", "analysis.synthetic"])
def test_weighted_tables_name_exactly_the_vocabulary(module):
    import importlib

    m = importlib.import_module(module)
    assert _names(m.MODES) == v.MODES
    assert _names(m.PLATFORMS) == v.PLATFORMS
    if module == "analysis.synthetic":
        assert _names(m.REASONS_DECISIVE) == v.REASONS
        # a draw is a wipe-out of both sides or equal points (R6.2, R6.3)
        assert _names(m.REASONS_DRAW) == ("points", "wipeout")


def test_slide_weighted_tables_are_in_the_vocabulary():
    from replays.slide import simulate

    assert _names(simulate.PLATFORMS) == v.PLATFORMS
    # the Slide simulator plays no challenge or tutorial games: a subset, in the same order
    modes = _names(simulate.MODES)
    assert modes == tuple(m for m in v.MODES if m in modes)
