"""Well-formedness of a Slide record (upload-format.md; counts per seat follow `players`).

Grids and rounds are matched whole against per-P regexes over their orjson serialization (exact
for JSON types), and checked piece by piece only when that misses, to accept other key orders
or name the fault. Card values outside 1..10 (S1.3) and a round count other than 16 (S3.1,
S4.2) are rule questions for the verifier, not format faults.
"""

from __future__ import annotations

import re

from replays._wf_common import (
    EDGES,
    MAX_ID,
    Malformed,
    check_int_list,
    check_keys,
    check_string,
    dumps,
    kind,
    show,
)
from replays.verdict import Record

KEYS = frozenset(
    {
        "schema", "game_id", "game", "client", "mode", "ended_at", "players", "match", "first",
        "grids", "rounds", "result",
    }
)  # fmt: skip
ORDER = (
    "schema", "game_id", "game", "client", "mode", "ended_at", "players", "match", "first",
    "grids", "rounds", "result",
)  # fmt: skip
_MATCH = frozenset({"id", "game"})
_MATCH_ORDER = ("id", "game")
_ROUND_ORDER = ("reveals", "takes", "slides")
_ROUND = frozenset(_ROUND_ORDER)
_SLIDE = frozenset({"side"})
_RESULT_ORDER = ("scores", "cards_left", "winners")
_RESULT = frozenset(_RESULT_ORDER)

_INT = "-?[0-9]+"  # orjson writes every float with "." or "e"


def _times(item: str, n: int) -> str:
    return item + f"(?:,{item}){{{n - 1}}}"


def _round(p: int) -> str:
    position = "\\[[0-3],[0-3]\\]"
    edge = '\\{"side":"(?:left|right|top|bottom)"\\}'
    return (
        f'\\{{"reveals":\\[{_times(position, p)}\\],"takes":\\[{_times(_INT, p)}\\],'
        f'"slides":\\[{_times(edge, p)}\\]\\}}'
    )


_GRID = "\\[" + _times(_INT, 16) + "\\]"
_GRIDS_RE = {p: re.compile(("\\[" + _times(_GRID, p) + "\\]").encode()) for p in range(2, 7)}
_ROUNDS_RE = {
    p: re.compile(("\\[(?:" + _round(p) + "(?:," + _round(p) + ")*)?\\]").encode())
    for p in range(2, 7)
}


def check(record: Record) -> None:  # (no colon count: see wellformed._check)
    """The Slide part of a record whose keys and common fields are already checked."""
    players = record["players"]
    if not (type(players) is int and 2 <= players <= 6):
        raise Malformed("players", f"players is an integer 2..6, got {show(players)}")
    _check_match(record["match"])
    first = record["first"]
    if not (type(first) is int and 0 <= first < players):
        raise Malformed("first", f"first is a seat 0..{players - 1}, got {show(first)}")
    _check_grids(record["grids"], players)
    _check_rounds(record["rounds"], players)
    _check_result(record["result"], players)


def _check_match(match: object) -> None:
    if match is None:
        return
    if type(match) is not dict:
        raise Malformed("match", f"match is null or {{id, game}}, got {show(match)}")
    check_keys(match, _MATCH, _MATCH_ORDER, "match.")
    ident, game = match["id"], match["game"]
    if type(ident) is not str:
        raise Malformed("match", f"match.id is a string, got {show(ident)}")
    check_string(ident, MAX_ID, "match.id", "match.id")  # a limit names its field
    if not (type(game) is int and game >= 1):
        raise Malformed("match", f"match.game is an integer from 1, got {show(game)}")


def _check_grids(grids: object, players: int) -> None:
    if _GRIDS_RE[players].fullmatch(dumps(grids)):
        return
    if not (type(grids) is list and len(grids) == players):
        raise Malformed("grids", f"grids are {players} lists, one per seat, got {show(grids)}")
    for i, grid in enumerate(grids):
        at = f"grids[{i}]"
        if type(grid) is not list:
            raise Malformed(at, f"a grid is a list of 16 cards, got {show(grid)}")
        if len(grid) != 16:
            raise Malformed(at, f"a grid holds 16 cards, got {len(grid)}")
        check_int_list(grid, 16, at, f"the grid of seat {i}")


def _check_rounds(rounds: object, players: int) -> None:
    if _ROUNDS_RE[players].fullmatch(dumps(rounds)):
        return
    if type(rounds) is not list:
        raise Malformed("rounds", f"rounds must be a list of round objects, got {kind(rounds)}")
    for i, rnd in enumerate(rounds):
        _check_round(rnd, f"rounds[{i}]", players)


def _check_round(rnd: object, at: str, players: int) -> None:
    if type(rnd) is not dict:
        raise Malformed(at, f"a round is an object {{reveals, takes, slides}}, got {show(rnd)}")
    check_keys(rnd, _ROUND, _ROUND_ORDER, f"{at}.")
    reveals = rnd["reveals"]
    if not (type(reveals) is list and len(reveals) == players):
        raise Malformed(
            f"{at}.reveals",
            f"reveals are {players} positions [row, col], one per seat, got {show(reveals)}",
        )
    for j, pos in enumerate(reveals):
        if not (
            type(pos) is list and len(pos) == 2 and all(type(x) is int and 0 <= x <= 3 for x in pos)
        ):
            raise Malformed(
                f"{at}.reveals[{j}]",
                f"a position is [row, col] with integers 0..3, got {show(pos)}",
            )
    check_int_list(rnd["takes"], players, f"{at}.takes", f"takes ({players} values)")
    slides = rnd["slides"]
    if not (type(slides) is list and len(slides) == players):
        raise Malformed(
            f"{at}.slides", f"slides are {players} edges, one per seat, got {show(slides)}"
        )
    for j, edge in enumerate(slides):
        where = f"{at}.slides[{j}]"
        if type(edge) is not dict:
            raise Malformed(where, f'an edge is {{"side": ...}}, got {show(edge)}')
        check_keys(edge, _SLIDE, ("side",), f"{where}.")
        side = edge["side"]
        if not (type(side) is str and side in EDGES):
            raise Malformed(where, f"side is left, right, top or bottom, got {show(side)}")


def _check_result(result: object, players: int) -> None:
    if type(result) is not dict:
        raise Malformed(
            "result", f"result is an object {{scores, cards_left, winners}}, got {show(result)}"
        )
    check_keys(result, _RESULT, _RESULT_ORDER, "result.")
    check_int_list(result["scores"], players, "result", f"scores ({players} values)")
    check_int_list(result["cards_left"], players, "result", f"cards_left ({players} values)")
    winners = result["winners"]
    check_int_list(winners, None, "result", "winners")
    for seat in winners:
        if not (0 <= seat < players):
            raise Malformed("result", f"winners are seats 0..{players - 1}, got {seat}")
