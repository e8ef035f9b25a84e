"""Well-formedness of a Slow6 record (upload-format.md, "Well-formed means").

Fastest first: a record written compactly in the format's field order (as orjson writes what
the bots and clients build) is proved well-formed from its text alone, by one regex over the
whole line (`text_proves`). Otherwise the parsed record is checked field by field (`check`),
which also names the fault. There the turn list is the hot part: it is matched as one piece
against its orjson serialization (exact for JSON types: 5.0, true and 5 serialize differently),
and only when that misses is every turn checked on its own, which also covers other key orders.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

import orjson

from replays._wf_common import (
    BOARDS,
    CLIENT_KEYS,
    ENDED_AT_PATTERN,
    MAX_ID,
    MAX_PICKS,
    MAX_VERSION,
    MIN_PICKS,
    MISSING,
    MODES,
    MOVES,
    ONE_SQUARE_POWERS,
    PLATFORMS,
    POWERS,
    REASONS,
    RULESET_PATTERN,
    SQUARES,
    UUID_PATTERN,
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
        "schema", "game_id", "game", "client", "mode", "ended_at", "rules", "ai",
        "challenge", "first", "lineups", "powers", "turns", "result",
    }
)  # fmt: skip
ORDER = (
    "schema", "game_id", "game", "client", "mode", "ended_at", "rules", "ai", "challenge",
    "first", "lineups", "powers", "turns", "result",
)  # fmt: skip
_RULES = frozenset({"board", "powers", "hidden"})
_RULES_ORDER = ("board", "powers", "hidden")
_AI = frozenset({"side", "level"})
_AI_ORDER = ("side", "level")
_CHALLENGE = frozenset({"id", "position"})
_CHALLENGE_ORDER = ("id", "position")
_POSITION = frozenset({"to_move", "turns_taken", "pieces"})
_POSITION_ORDER = ("to_move", "turns_taken", "pieces")
_PIECE_ORDER = ("side", "rank", "square", "start", "wounded", "stunned")
_PIECE = frozenset(_PIECE_ORDER)
_TURN_OPTIONAL = frozenset({"power", "target"})
_MOVES_ONLY = frozenset({"moves"})
_RESULT = frozenset({"winner", "reason"})
_RESULT_OPTIONAL = frozenset({"points"})
_RESULT_ORDER = ("winner", "reason")
_RESULT_ALL = _RESULT | _RESULT_OPTIONAL

_RANKS = {n: list(range(1, n + 1)) for n in BOARDS}
# Every lineup of each board, as orjson writes it: a type-exact permutation test in one lookup.
_LINEUPS = {
    n: frozenset(orjson.dumps(list(p)) for p in itertools.permutations(range(1, n + 1)))
    for n in BOARDS
}

_SQ = "[a-g][1-7]"
_MOVE = f'"{_SQ}-{_SQ}"'
# (list alternatives, not optional groups: sre runs a `(...)?` as a repeat, which costs)
_MOVES_PART = f'"moves":\\[(?:\\]|{_MOVE}(?:\\]|,{_MOVE}\\]))'
_POWER_PART = (
    f'"power":"(?:{"|".join(sorted(ONE_SQUARE_POWERS))})","target":"{_SQ}"'
    f'|"power":"swap","target":\\["{_SQ}","{_SQ}"\\]'
    '|"power":"double"'
)
# One turn object as orjson writes it, without its braces. Sound by construction: each
# alternative is a valid turn, and a dict cannot repeat a key.
_TURN_BODY_RE = re.compile(
    f"{_MOVES_PART}|(?:{_POWER_PART}),{_MOVES_PART}|{_MOVES_PART},(?:{_POWER_PART})".encode()
)


def _turn_bodies() -> frozenset[bytes]:
    """The common turn bodies with every rank digit written 1 (about 10,000 of them)."""
    squares = [f'"{f}1"' for f in "abcdefg"]
    moves = [f'"{a}1-{b}1"' for a in "abcdefg" for b in "abcdefg"]
    up_to_one = ["[]"] + [f"[{m}]" for m in moves]
    two = [f"[{a},{b}]" for a in moves for b in moves]
    out = [f'"moves":{m}' for m in up_to_one + two]
    out += [f'"power":"double","moves":{m}' for m in up_to_one + two]
    out += [
        f'"power":"{p}","target":{t},"moves":{m}'
        for p in ONE_SQUARE_POWERS
        for t in squares
        for m in up_to_one
    ]
    out += [
        f'"power":"swap","target":[{a},{b}],"moves":{m}'
        for a in squares
        for b in squares
        for m in up_to_one
    ]
    return frozenset(body.encode() for body in out)


# Ranks 1-7 all written 1: only squares hold digits in a valid turn, so a translated body in
# _TURN_BODIES means the original body is the same turn with some ranks 1-7, also valid.
_RANKS_AS_1 = bytes.maketrans(b"1234567", b"1111111")
_TURN_BODIES = _turn_bodies()


def _record_pattern() -> re.Pattern[bytes]:
    """The text of a well-formed record as orjson writes it: no space, fields in the format's
    order, strings printable ASCII without escapes. Built from the same vocabularies and
    patterns as `check`; each part admits only values `check` accepts, and the key sequence is
    fixed, so no key repeats and the nesting is the format's own. The ties between fields are
    left to `text_proves`: ai and challenge are objects exactly in their modes, a challenge
    piece's rank is at most the board's crown, and each lineup is a permutation of the
    board's ranks."""

    def one_of(words: Iterable[str]) -> str:
        return "(?:" + "|".join(sorted(words)) + ")"

    integer = "-?(?:0|[1-9][0-9]*)"
    points = rf"\[{integer},{integer}\]"
    power = f'"{one_of(POWERS)}"'
    # standard's three picks first, as a plain sequence (a counted repeat costs more in sre)
    picks = (
        rf"\[(?:{power},{power},{power}|{power}(?:,{power}){{{MIN_PICKS - 1},{MAX_PICKS - 1}}})\]"
    )
    lineup = r"\[[1-7](?:,[1-7]){4,6}\]"
    # the most common turn first, on its own: one move, no power (the rest: any turn)
    turn = rf'\{{(?:"moves":\[{_MOVE}\]\}}|(?:{_TURN_BODY_RE.pattern.decode()})\}})'
    ascii_ = r"[ !#-\[\]-~]"  # printable ASCII but quote and backslash
    square = f'"{_SQ}"'
    piece = (
        rf'\{{"side":[01],"rank":[1-8],"square":{square},"start":{square},'
        r'"wounded":(?:true|false),"stunned":(?:true|false)\}'
    )
    challenge = (
        rf'\{{"id":"{ascii_}{{0,{MAX_ID}}}","position":\{{"to_move":[01],'
        rf'"turns_taken":\[{integer},{integer}\],"pieces":\[(?:\]|{piece}(?:,{piece})*+\])\}}\}}'
    )
    text = (
        rf'\{{"schema":1,"game_id":"{UUID_PATTERN[1:-1]}","game":"slow6",'
        rf'"client":\{{"platform":"{one_of(PLATFORMS)}",'
        rf'"version":"{ascii_}{{0,{MAX_VERSION}}}"\}},'
        rf'"mode":"(?P<mode>{one_of(MODES)})",'
        rf'"ended_at":"{ENDED_AT_PATTERN[1:-1]}",'
        rf'(?:"ruleset":"{RULESET_PATTERN[1:-1]}",|)'
        r'"rules":\{"board":(?P<board>[57]),'
        r'"powers":(?:true,"hidden":false|false,"hidden":(?:true|false))\},'
        r'"ai":(?P<ai>null|\{"side":[01],"level":[1-4]\}),'
        rf'"challenge":(?P<challenge>null|{challenge}),"first":[01],'
        rf'"lineups":\[(?P<lineup0>{lineup}),(?P<lineup1>{lineup})\],'
        rf'"powers":(?:null|\[{picks},{picks}\]),'
        rf'"turns":\[(?:\]|{turn}(?:,{turn})*+\]),'
        r'"result":\{"winner":(?:[01]|null),'
        rf'(?:"reason":"{one_of(REASONS - {"points"})}"(?:,"points":(?:null|{points}))?'
        rf'|"reason":"points","points":{points})\}}\}}'
    )
    # (*+: a list's items are never given back, which no match needs: sre then keeps no
    # backtracking state an item, which made a 38-turn game's match twice as slow)
    return re.compile(text.encode())


_RECORD_RE = _record_pattern()
_CROWN_7 = re.compile(b'"rank":[78]')  # a rank past the crown of a 5x5 board
# A real game is at most a few KB; past ~20 KB (hundreds of turns) the field-by-field check is
# the faster of the two (benchmarks/wellformed.py), so the regex is kept for what games are.
_TEXT_PROOF_MAX = 16 * 1024


def text_proves(data: bytes) -> bool:
    """True: the JSON text `data` is a well-formed Slow6 record, proved from the text alone
    (then `check` of its parse passes, and the text has no duplicate key and nests as the
    format does). False: it may still be well-formed (another layout, an escape): check it."""
    if len(data) > _TEXT_PROOF_MAX:
        return False
    match = _RECORD_RE.fullmatch(data)
    if match is None:
        return False
    mode, challenge, board = match["mode"], match["challenge"], int(match["board"])
    if (mode == b"computer") == (match["ai"] == b"null"):
        return False
    if challenge != b"null":
        if mode != b"challenge" or board == 5 and _CROWN_7.search(challenge):
            return False
    elif mode == b"challenge":
        return False
    valid = _LINEUPS[board]  # (the text of a lineup is orjson's own)
    return match["lineup0"] in valid and match["lineup1"] in valid


def check(record: Record) -> int | None:
    """The Slow6 part of a record whose keys and common fields are already checked. Returns the
    colons of its orjson text (see `colons`), or None when they did not come cheap."""
    rules = record["rules"]
    if type(rules) is not dict:
        raise Malformed(
            "rules", f"rules must be an object {{board, powers, hidden}}, got {kind(rules)}"
        )
    if rules.keys() != _RULES:
        check_keys(rules, _RULES, _RULES_ORDER, "rules.")
    board = rules["board"]
    if not (type(board) is int and (board == 5 or board == 7)):
        raise Malformed("rules.board", f"the board size is the integer 5 or 7, got {show(board)}")
    with_powers = rules["powers"]
    if type(with_powers) is not bool:
        raise Malformed("rules.powers", f"rules.powers is true or false, got {show(with_powers)}")
    hidden = rules["hidden"]
    if type(hidden) is not bool:
        raise Malformed("rules.hidden", f"rules.hidden is true or false, got {show(hidden)}")
    if hidden and with_powers:
        raise Malformed(
            "rules", "hidden: true (the hidden-information variant) goes with powers: false"
        )

    mode = record["mode"]
    ai = record["ai"]
    if mode == "computer":
        _check_ai(ai)
    else:
        if ai is not None:
            raise Malformed(
                "ai", f"ai is null outside computer mode (mode is {mode}), got {show(ai)}"
            )
    challenge = record["challenge"]
    if mode == "challenge":
        _check_challenge(challenge, board)
    else:
        if challenge is not None:
            raise Malformed(
                "challenge",
                f"challenge is null outside challenge mode (mode is {mode}), got {show(challenge)}",
            )

    first = record["first"]
    if not (type(first) is int and (first == 0 or first == 1)):
        raise Malformed("first", f"first is the side 0 or 1, got {show(first)}")
    _check_lineups(record["lineups"], board)
    _check_powers(record["powers"])
    turns_text = _check_turns(record["turns"])
    _check_result(record["result"])
    return colons(record, turns_text) if turns_text is not None else None


def colons(record: Record, turns_text: bytes) -> int:
    """The colons `orjson.dumps(record)` writes for a well-formed record, from the text of its
    turns (a turn's strings hold no colon, so those are its keys): every key once, and the
    colons inside the only strings that may hold them (version, ended_at, challenge id)."""
    keys: int = (
        len(KEYS) + ("ruleset" in record) + len(CLIENT_KEYS) + len(_RULES) + len(record["result"])
    )
    keys += turns_text.count(b":")
    if record["ai"] is not None:
        keys += len(_AI)
    challenge = record["challenge"]
    if challenge is not None:
        pieces = challenge["position"]["pieces"]
        keys += len(_CHALLENGE) + len(_POSITION) + len(_PIECE) * len(pieces)
        keys += challenge["id"].count(":")
    keys += record["client"]["version"].count(":") + record["ended_at"].count(":")
    return keys


def _check_ai(ai: object) -> None:
    if type(ai) is not dict:
        raise Malformed("ai", f"computer mode needs ai {{side, level}}, got {show(ai)}")
    if ai.keys() != _AI:
        check_keys(ai, _AI, _AI_ORDER, "ai.")
    side, level = ai["side"], ai["level"]
    if not (type(side) is int and (side == 0 or side == 1)):
        raise Malformed("ai", f"ai.side is 0 or 1, got {show(side)}")
    if not (type(level) is int and 1 <= level <= 4):
        raise Malformed("ai", f"ai.level is an integer 1..4, got {show(level)}")


def _check_challenge(challenge: object, board: int) -> None:
    if type(challenge) is not dict:
        raise Malformed(
            "challenge", f"challenge mode needs challenge {{id, position}}, got {show(challenge)}"
        )
    check_keys(challenge, _CHALLENGE, _CHALLENGE_ORDER, "challenge.")
    check_string(challenge["id"], MAX_ID, "challenge.id", "challenge.id")
    position = challenge["position"]
    where = "challenge.position"
    if type(position) is not dict:
        raise Malformed(
            where,
            f"the position is an object {{to_move, turns_taken, pieces}}, got {kind(position)}",
        )
    check_keys(position, _POSITION, _POSITION_ORDER, f"{where}.")
    to_move = position["to_move"]
    if not (type(to_move) is int and (to_move == 0 or to_move == 1)):
        raise Malformed(f"{where}.to_move", f"to_move is the side 0 or 1, got {show(to_move)}")
    check_int_list(position["turns_taken"], 2, f"{where}.turns_taken", "turns_taken")
    pieces = position["pieces"]
    if type(pieces) is not list:
        raise Malformed(f"{where}.pieces", f"pieces must be a list, got {kind(pieces)}")
    crown = board + 1
    for i, piece in enumerate(pieces):
        at = f"{where}.pieces[{i}]"
        if type(piece) is not dict:
            raise Malformed(at, f"a piece is an object, got {kind(piece)}")
        check_keys(piece, _PIECE, _PIECE_ORDER, f"{at}.")
        side, rank = piece["side"], piece["rank"]
        if not (type(side) is int and (side == 0 or side == 1)):
            raise Malformed(at, f"side is 0 or 1, got {show(side)}")
        if not (type(rank) is int and 1 <= rank <= crown):
            raise Malformed(
                at, f"rank is an integer 1..{crown} on a {board}x{board} board, got {show(rank)}"
            )
        for name in ("square", "start"):
            square = piece[name]
            if not (type(square) is str and square in SQUARES):
                raise Malformed(at, f"{name} is a square a1..g7, got {show(square)}")
        for name in ("wounded", "stunned"):
            if type(piece[name]) is not bool:
                raise Malformed(at, f"{name} is true or false, got {show(piece[name])}")


def _check_lineups(lineups: object, board: int) -> None:
    valid = _LINEUPS[board]
    if type(lineups) is list and len(lineups) == 2:
        a, b = lineups
        if type(a) is list and type(b) is list and dumps(a) in valid and dumps(b) in valid:
            return
    if type(lineups) is not list or len(lineups) != 2:
        raise Malformed("lineups", f"lineups are two lists (side 0, side 1), got {show(lineups)}")
    for side, lineup in enumerate(lineups):
        if type(lineup) is not list or len(lineup) != board:
            raise Malformed(
                "lineups",
                f"lineup of side {side} must list {board} ranks on a {board}x{board} board, "
                f"got {show(lineup)}",
            )
        if not all(type(rank) is int for rank in lineup) or sorted(lineup) != _RANKS[board]:
            raise Malformed(
                "lineups",
                f"lineup of side {side} must be a permutation of 1..{board}, got {show(lineup)}",
            )


def _check_powers(powers: object) -> None:
    if powers is None:
        return
    if _powers_fast_ok(powers):
        return
    if type(powers) is not list or len(powers) != 2:
        raise Malformed(
            "powers",
            f"powers are null or two lists of {MIN_PICKS} to {MAX_PICKS} power ids, "
            f"got {show(powers)}",
        )
    for side, picks in enumerate(powers):
        # (how many a side must pick is a rule, R8.1 under the record's ruleset: RS7.3)
        if type(picks) is not list or not MIN_PICKS <= len(picks) <= MAX_PICKS:
            raise Malformed(
                f"powers[{side}]",
                f"side {side} picks a list of {MIN_PICKS} to {MAX_PICKS} power ids, "
                f"got {show(picks)}",
            )
        for pick in picks:
            if type(pick) is not str or pick not in POWERS:
                raise Malformed("powers", f"{show(pick)} is not a power id (R8.2)")


def _powers_fast_ok(powers: object) -> bool:
    """Whether `powers` is two lists of 1-5 power ids, in one set test per side (False: look
    closer). Only these strings equal a power id among JSON values; a list or dict among them
    is unhashable, which also means look closer."""
    if type(powers) is not list or len(powers) != 2:
        return False
    a, b = powers
    if not (
        type(a) is list
        and type(b) is list
        and MIN_PICKS <= len(a) <= MAX_PICKS
        and MIN_PICKS <= len(b) <= MAX_PICKS
    ):
        return False
    try:
        return POWERS.issuperset(a) and POWERS.issuperset(b)
    except TypeError:
        return False


def _check_turns(turns: object) -> bytes | None:
    """Raises at the first bad turn; returns orjson's text of the turns when the fast path
    proved them (None when each was checked on its own)."""
    if type(turns) is not list:
        raise Malformed("turns", f"turns must be a list of turn objects, got {show(turns)}")
    if not turns:
        return b"[]"
    text = dumps(turns)
    if _turns_fast_ok(text):
        return text
    for i, turn in enumerate(turns):
        _check_turn(turn, i)
    return None


def _turns_fast_ok(text: bytes) -> bool:
    """Whether orjson's text of a non-empty list is a list of valid turns (False: look closer).

    The text is "[{" + bodies joined by "},{" + "}]"; if every piece between those marks is a
    valid turn body, the text is a list of valid turns, however a string inside was split."""
    if text[:2] != b"[{" or text[-2:] != b"}]":
        return False
    bodies = text[2:-2].translate(_RANKS_AS_1).split(b"},{")
    if _TURN_BODIES.issuperset(bodies):
        return True
    originals = text[2:-2].split(b"},{")  # same cuts: the marks hold no digit
    return all(
        ranked in _TURN_BODIES or _TURN_BODY_RE.fullmatch(body) is not None
        for body, ranked in zip(originals, bodies, strict=True)
    )


def _check_turn(turn: object, i: int) -> None:
    at = f"turns[{i}]"
    if type(turn) is not dict:
        raise Malformed(at, f"a turn is an object {{moves, power?, target?}}, got {show(turn)}")
    if turn.keys() != _MOVES_ONLY:
        check_keys(turn, _MOVES_ONLY, ("moves",), f"{at}.", _TURN_OPTIONAL)
    moves = turn["moves"]
    if not (type(moves) is list and len(moves) <= 2):
        raise Malformed(at, f"moves is a list of at most two moves, got {show(moves)}")
    for move in moves:
        if not (type(move) is str and move in MOVES):
            raise Malformed(at, f'a move is written from-to like "c1-c3", got {show(move)}')
    power = turn.get("power", MISSING)
    target = turn.get("target", MISSING)
    if power is MISSING:
        if target is not MISSING:
            raise Malformed(at, "a target without a power: target goes with the power used")
        return
    if not (type(power) is str and power in POWERS):
        raise Malformed(at, f"{show(power)} is not a power id (R8.2)")
    if power in ONE_SQUARE_POWERS:
        if target is MISSING:
            raise Malformed(f"{at}.target", f"{power} needs its target square")
        if not (type(target) is str and target in SQUARES):
            raise Malformed(
                at, f'the target of {power} is one square like "c3", got {show(target)}'
            )
    elif power == "swap":
        if target is MISSING:
            raise Malformed(f"{at}.target", "swap needs its two target squares")
        if not (
            type(target) is list
            and len(target) == 2
            and all(type(sq) is str and sq in SQUARES for sq in target)
        ):
            raise Malformed(
                at,
                f'the target of swap is two squares like ["b1", "d1"], got {show(target)}',
            )
    else:  # double
        if target is not MISSING:
            raise Malformed(at, "double has no target")


def _check_result(result: object) -> None:
    if type(result) is not dict:
        raise Malformed(
            "result", f"result is an object {{winner, reason, points}}, got {show(result)}"
        )
    if result.keys() != _RESULT_ALL:
        check_keys(result, _RESULT, _RESULT_ORDER, "result.", _RESULT_OPTIONAL)
    winner = result["winner"]
    if not (winner is None or (type(winner) is int and (winner == 0 or winner == 1))):
        raise Malformed(
            "result", f"winner is the side 0 or 1, or null for a draw; got {show(winner)}"
        )
    reason = result["reason"]
    if not (type(reason) is str and reason in REASONS):
        raise Malformed(
            "result", f"reason is one of home, wipeout, points, timeout, resign; got {show(reason)}"
        )
    points = result.get("points", MISSING)
    if reason == "points":
        if points is MISSING:
            raise Malformed("result.points", "points is required when the reason is points")
        if points is None:
            raise Malformed("result", "points [int, int] is required when the reason is points")
    if points is not MISSING and points is not None:
        if type(points) is not list or len(points) != 2 or not all(type(p) is int for p in points):
            raise Malformed("result", f"points is [int, int] (side 0, side 1), got {show(points)}")
