"""A deliberately simple, spec-literal Slow6 referee (a test oracle).

It is written from ``tests/spec/slow6-rules.md`` (rules R1-R10) and ``tests/spec/upload-format.md``
alone and shares no code with the product's rules engine. It is meant to be read next to the spec:
every rule is a plain, named function whose docstring cites the rule it implements.

Rulesets (``tests/spec/rulesets.md``): :func:`judge` takes the parameters of the ruleset the
record is judged under as a plain dict of RS3's names (the ones left out keep their ``standard``
value, written here from RS3's table). The referee does not resolve ruleset names (RS5.1 is the
caller's), and it reads the parameters as RS3 and RS7 say: T of the board everywhere T appears
(RS7.7), ``crown_points`` only in R6.3's totals (RS7.8), picks as rules (RS7.3), a dashing crown
moves 1..``dash_reach`` (RS7.4), a leap is any move to an empty square within ``leap_reach``
(RS7.5), ``surge_rest = 0`` no rest at all (RS7.6), and "its owner's next K turns" by R2.3.

Public entry point: :func:`judge`. Its input is a Slow6 record that is already well-formed per the
upload format (types, required fields, enum strings, square syntax ``[a-g][1-7]``, at most two
moves per turn, ``hidden`` implies ``powers: false`` ...). It returns ``("valid", None, None)`` or
``("invalid", rule_id, turn_index)``: the first rule broken (R10), with the 0-based index into
``record["turns"]`` of the turn where it broke, or ``None`` for a fault of the record as a whole
(results, points, lineups, picks, challenge position, mode fields).

Data structures: ``Game.board`` is a dict from square name (``"c3"``) to a small :class:`Piece`;
per-side state is kept in plain lists indexed by side. Time is the global 0-based turn index ``g``
of the log (turn ``g`` is played by ``first`` when ``g`` is even, by the other side when odd), so
"immobile during the owner's next K turns" is stored as the last global turn index at which the
piece is still immobile (``immobile_through``), and a stun as the last global turn index at which
the crown is still catchable (``catchable_through``).

AMBIGUOUS readings chosen (each is also marked ``# AMBIGUOUS:`` at the place in the code):

- FORMAT/ai: an ``ai`` object outside ``computer`` mode (or ``null`` in ``computer`` mode) is not in
  the "well-formed means" list, so it is treated as invalid; no R-rule covers it, so the verdict
  names the pseudo rule ``"format.ai"``, turn None.
- R9.1: a ``challenge`` object outside ``challenge`` mode, or ``null`` in ``challenge`` mode, breaks
  R9.1 (a challenge game starts from a set position), turn None.
- R1.3/R1.4: lineups that are not a permutation of 1..N (or not N long) should already be
  malformed; if they reach the referee anyway they break R1.3, turn None.
- R8.1: ``powers`` picks given (non-null) in a game without powers, or ``null`` in a game with
  powers, break R8.1, turn None (as do duplicate picks, per R10).
- R10 order: record-level faults that exist before the first turn (mode fields, lineups, picks,
  challenge position) are reported before any turn fault; result faults (reason, winner, points)
  are only reported when every turn was legal.
- R10 order inside a move: the R2.2 ownership check comes first, then R2.3 (an immobile piece cannot
  move at all), then the R2.2 geometry checks.
- R8.3 vs R2.3: the second move of a double by the crown that made the first is R8.3 even if that
  crown is also immobile (e.g. trapped by the first move).
- R2.1 vs R6.5 / R2.2: a turn listing two moves without ``double`` is R2.1 at that turn, before
  any of its moves is played (also when its first move is illegal or ends the game).
- R8.11 vs R2.2: with a leap pending, a move onto an enemy piece within the leap's reach that is
  no legal straight move is R8.11 ("It cannot attack with a leap"), not R2.2.
- R8.3: a ``target`` given with ``double`` (the format says "omitted") breaks R8.3 at that turn.
- R8.4/R8.10/R8.11 vs R2.3: the kind of target (own piece; not a crown for leap/surge) is checked
  before its immobility, so a leap on a stunned crown is R8.11, not R2.3.
- R8.8 move logging: the written move (``c5-c3``) must itself be a legal R2.2 move ignoring the
  trap (no own piece on ``c3``, nothing jumped before ``c3``); only then is it cut short.
- R8.12 trade (THE TEXT AND THE EXAMPLES DISAGREE): in an equal-rank trade a shielded attacker
  "is not removed: it stays on the square where it stood before the fight" (its origin; R8.15:
  "an attacker that a shield sends back (its own or the defender's)"). Six games of
  slow6-valid.ndjson, which must be accepted, have it stand on the defender's (now empty) square
  like a winner (R3.2), and four invalid records build on them. The examples' reading is
  followed, so that the product's contract holds; the conflict is reported for the spec.
- R8.8 + R8.15: an attacker that a shield sends back to its own square, and that square holds an
  enemy trap (it was put there by Swap or Recall), has "ended a move on that square" and is trapped.
- R8.10 + R8.12: a surge win against a shielded defender is still "won only because of the surge",
  so the attacker rests even though it stays on its own square.
- R8.12 + R4.3: a stunned crown saved by its shield stays stunned (catchable) for the rest of the
  stun; nothing in the spec ends the stun early.
- R5.1 + R8.11: a leap is a move, so a leap that ends on the far-row square of the piece's lane
  promotes (R5.1 says "by a plain move or by a won attack"; R5.2 excludes only Swap and Shove).
- R9.1/R9.2: a challenge piece whose rank differs from ``lineups[side][file of start]`` is not
  checked (R9.2 does not list it); its given rank is used in play, the lineup rank for Recall.
  A stunned crown that is not marked wounded is accepted as given. Negative ``turns_taken`` are
  treated as inconsistent (R9.1).
- R8.7: "removed during the side's own previous turn or the other side's turn since" is read as the
  two global turns g-2 and g-1 before the Recall at turn g (none exist before a challenge position).
- R6.3: when ``result.points`` is given it is compared with the true totals at the end of the log
  (for timeout/resign: the pieces left when the log stops). A wrong winner is reported before wrong
  points when both are wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

POWER_IDS = (
    "double",
    "dash",
    "leap",
    "shield",
    "freeze",
    "swap",
    "recall",
    "trap",
    "shove",
    "surge",
)
POWER_IDS_ALL = POWER_IDS

NATURAL_REASON_RULE = {"home": "R6.1", "wipeout": "R6.2", "points": "R6.3"}

# The eight directions of R2.2 as (file step, row step).
DIRECTIONS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))


# RS3, Slow6: every parameter a ruleset may change, with its ``standard`` value
STANDARD_RULES = {
    "turn_limit_5": 15,  # R2.5: T on 5x5 (also R6.3, R9.2)
    "turn_limit_7": 21,  # R2.5: T on 7x7
    "reach": 2,  # R2.2: a non-crown moves 1..reach squares
    "crown_reach": 1,  # R2.2: a crown moves 1..crown_reach squares
    "crown_points": None,  # R6.3: what a crown counts; None means N+1
    "powers": POWER_IDS_ALL,  # R8.1: the powers a side may pick
    "picks": 3,  # R8.1: each side picks exactly this many different powers
    "dash_reach": 3,  # R8.4
    "leap_reach": 2,  # R8.11: at most this far in each of file and row
    "freeze_turns": 2,  # R8.5: the owner's next K turns
    "trap_turns": 2,  # R8.8
    "surge_rest": 1,  # R8.10: 0 = it does not rest
}


class Breach(Exception):
    """A rule breach: the rule id, the 0-based turn index (None: the record as a whole), why."""

    def __init__(self, rule: str, turn: int | None, message: str):
        super().__init__(f"{rule} at turn {turn}: {message}")
        self.rule = rule
        self.turn = turn
        self.message = message


@dataclass(eq=False)
class Piece:
    """One piece on the board (R1.3). ``rank`` is 1..N, or N+1 once it is a crown (R1.5)."""

    side: int
    rank: int
    start: str
    crown: bool = False
    wounded: bool = False
    immobile_through: int = -1  # last global turn index during which it cannot move (R2.3)
    catchable_through: int = -1  # last global turn index during which it is stunned (R4.2)
    dash: bool = False  # R8.4 pending
    leap: bool = False  # R8.11 pending
    surge: bool = False  # R8.10 pending
    shield: bool = False  # R8.12 pending


class Game:
    """The whole game state: board, per-side state, and how the game ended (if it did)."""

    def __init__(self, record: dict, params: dict | None = None):
        rules = record["rules"]
        # the ruleset's parameters (RS3), the others at their standard value
        self.p: dict = {**STANDARD_RULES, **(params or {})}
        self.n: int = rules["board"]
        self.k: int = (self.n - 1) // 2
        self.t_limit: int = self.p["turn_limit_5"] if self.n == 5 else self.p["turn_limit_7"]
        self.powers_on: bool = bool(rules.get("powers"))
        self.lineups: list[list[int]] = record["lineups"]
        self.picks = record.get("powers")
        self.first: int = record["first"]
        self.board: dict[str, Piece] = {}
        self.turns_taken: list[int] = [0, 0]
        self.used_powers: list[set[str]] = [set(), set()]
        self.traps: list[str | None] = [None, None]  # traps[s]: square of side s's trap
        self.removed_at: dict[tuple[int, str], int] = {}  # (side, start square) -> turn index
        self.over: bool = False
        self.end_reason: str | None = None
        self.winner: int | None = None

    def side_of_turn(self, g: int) -> int:
        """R1.6: ``first`` takes the first turn; after that turns alternate."""
        return self.first if g % 2 == 0 else 1 - self.first

    def end(self, reason: str, winner: int | None) -> None:
        self.over = True
        self.end_reason = reason
        self.winner = winner


# ---------------------------------------------------------------------------------------------
# Squares (R1.1)
# ---------------------------------------------------------------------------------------------


def parse_square(name) -> tuple[int, int] | None:
    """R1.1: a square is written file+row (``a1``); returns (file index 0.., row 1..) or None."""
    if not isinstance(name, str) or len(name) != 2:
        return None
    f = ord(name[0]) - ord("a")
    if not name[1].isdigit() or f < 0 or f > 25:
        return None
    return f, int(name[1])


def square_name(f: int, r: int) -> str:
    return f"{chr(ord('a') + f)}{r}"


def on_board(game: Game, name) -> bool:
    """R1.1: files ``a``.. and rows ``1``..N. Off-board squares are rule errors (R2.6)."""
    p = parse_square(name)
    return p is not None and 0 <= p[0] < game.n and 1 <= p[1] <= game.n


def back_row(game: Game, side: int) -> int:
    """R1.2: side 0's back row is row 1, side 1's back row is row N."""
    return 1 if side == 0 else game.n


def far_row(game: Game, side: int) -> int:
    """R1.2: the far row of a side is the other side's back row."""
    return back_row(game, 1 - side)


def chebyshev(a: str, b: str) -> int:
    pa, pb = parse_square(a), parse_square(b)
    return max(abs(pa[0] - pb[0]), abs(pa[1] - pb[1]))


def owner_turns_through(game: Game, owner: int, g: int, count: int) -> int:
    """R2.3: "can't move for K turns" counts the owner's turns, starting with its next turn;
    immobility that starts during the owner's own turn also covers the rest of that turn.
    Returns the last global turn index of that span."""
    if game.side_of_turn(g) == owner:
        return g + 2 * count
    return g + 2 * count - 1


def make_immobile(piece: Piece, through: int) -> None:
    """R2.3: overlapping immobilities do not add up; the piece is immobile during their union."""
    piece.immobile_through = max(piece.immobile_through, through)


def is_immobile(piece: Piece, g: int) -> bool:
    """R2.3: stunned, frozen, trapped, resting or recalled pieces cannot move."""
    return g <= piece.immobile_through


def is_stunned(piece: Piece, g: int) -> bool:
    """R4.2: a stunned crown stays catchable until the end of the attacking side's next turn."""
    return piece.crown and g <= piece.catchable_through


def points_totals(game: Game) -> list[int]:
    """R6.3: each side adds up the ranks of its pieces left; a crown counts N+1, or the
    ruleset's ``crown_points`` (RS7.8: only here)."""
    worth = game.n + 1 if game.p["crown_points"] is None else game.p["crown_points"]
    totals = [0, 0]
    for piece in game.board.values():
        totals[piece.side] += worth if piece.crown else piece.rank
    return totals


def remove_piece(game: Game, square: str, g: int) -> None:
    """R8.13: power effects on a piece are lost when it is removed (the object is dropped).
    The removal time is kept for Recall (R8.7)."""
    piece = game.board.pop(square)
    game.removed_at[(piece.side, piece.start)] = g


# ---------------------------------------------------------------------------------------------
# Record-level checks (turn None)
# ---------------------------------------------------------------------------------------------


def check_mode_fields(record: dict) -> None:
    """upload-format: ``ai`` is "an object exactly in ``computer`` mode ... null in every other
    mode"; ``challenge`` is "an object exactly in ``challenge`` mode ... null otherwise"."""
    mode = record.get("mode")
    # AMBIGUOUS: the ai/mode pairing is stated in the field table but not in the "well-formed
    # means" list, so it may be a schema (rejected) or a replay (quarantined) question. Literal
    # reading: not in the well-formed list, hence invalid; no R-rule exists, so "format.ai".
    if (mode == "computer") != (record.get("ai") is not None):
        raise Breach("format.ai", None, f"ai {record.get('ai')!r} in mode {mode!r}")
    # AMBIGUOUS: same for challenge/mode; R9.1 is the rule about a challenge's set position.
    if (mode == "challenge") != (record.get("challenge") is not None):
        raise Breach("R9.1", None, f"challenge {record.get('challenge')!r} in mode {mode!r}")


def check_r1_3_lineups(game: Game) -> None:
    """R1.3/R1.4: each side has N pieces ranked 1..N; a lineup is the list of N ranks by file,
    and any permutation of 1..N is legal (and only those)."""
    # AMBIGUOUS: a non-permutation should already be malformed; if not, it breaks R1.3.
    lineups = game.lineups
    if not isinstance(lineups, list) or len(lineups) != 2:
        raise Breach("R1.3", None, "two lineups expected")
    for side, lineup in enumerate(lineups):
        if not isinstance(lineup, list) or sorted(lineup) != list(range(1, game.n + 1)):
            raise Breach("R1.3", None, f"lineup {lineup!r} of side {side} is not a permutation")


def check_r8_1_picks(game: Game) -> None:
    """R8.1: before the first turn each side picks ``picks`` (3) different powers of those the
    ruleset offers (the 10 of R8.2); R10: duplicate picks name R8.1; RS7.3: a count or an id
    off the ruleset is R8.1, no turn, whether or not the power is used."""
    picks = game.picks
    # AMBIGUOUS: picks in a game without powers, or none in a game with powers: R8.1, no turn.
    if not game.powers_on:
        if picks is not None:
            raise Breach("R8.1", None, "power picks in a game without powers")
        return
    if not isinstance(picks, list) or len(picks) != 2:
        raise Breach("R8.1", None, "a game with powers needs both sides' picks")
    for side, side_picks in enumerate(picks):
        count = game.p["picks"]
        if not isinstance(side_picks, list) or len(side_picks) != count:
            raise Breach("R8.1", None, f"side {side} must pick {count} powers")
        if any(p not in POWER_IDS or p not in game.p["powers"] for p in side_picks):
            raise Breach("R8.1", None, f"side {side} picks a power not on offer")
        if len(set(side_picks)) != count:
            raise Breach("R8.1", None, f"side {side} picks a power twice: {side_picks}")


def setup_r1_start(game: Game) -> None:
    """R1.3: each side has N pieces ranked 1..N, one on each square of its back row;
    ``lineup[0]`` is the rank on file ``a``."""
    for side in (0, 1):
        row = back_row(game, side)
        for f, rank in enumerate(game.lineups[side]):
            sq = square_name(f, row)
            game.board[sq] = Piece(side=side, rank=rank, start=sq)


def check_r9_2_position(game: Game, record: dict) -> None:
    """R9.2: a position must be consistent, or the record breaks R9.1 (turn none): ``first``
    equals ``to_move``; each side has pieces; squares are distinct and on the board; each start
    square is a distinct square of the piece's own back row; only crowns are wounded or stunned;
    ``turns_taken`` are at most T each, not both T, and equal or with the side to move one
    behind."""
    position = record["challenge"].get("position")
    if not isinstance(position, dict):
        raise Breach("R9.1", None, "no position")
    to_move = position.get("to_move")
    if to_move not in (0, 1) or record["first"] != to_move:
        raise Breach("R9.1", None, f"first {record['first']} != to_move {to_move!r}")
    pieces = position.get("pieces")
    if not isinstance(pieces, list):
        raise Breach("R9.1", None, "no pieces")
    squares: set[str] = set()
    starts: set[str] = set()
    sides_present: set[int] = set()
    for p in pieces:
        if not isinstance(p, dict):
            raise Breach("R9.1", None, f"piece {p!r} is not an object")
        side, rank, sq, start = p.get("side"), p.get("rank"), p.get("square"), p.get("start")
        if side not in (0, 1):
            raise Breach("R9.1", None, f"piece side {side!r}")
        sides_present.add(side)
        if not isinstance(rank, int) or isinstance(rank, bool) or not 1 <= rank <= game.n + 1:
            raise Breach("R9.1", None, f"rank {rank!r} not in 1..N+1")
        if not on_board(game, sq) or sq in squares:
            raise Breach("R9.1", None, f"square {sq!r} off the board or used twice")
        squares.add(sq)
        if not on_board(game, start) or start in starts:
            raise Breach("R9.1", None, f"start {start!r} off the board or used twice")
        if parse_square(start)[1] != back_row(game, side):
            raise Breach("R9.1", None, f"start {start} is not on side {side}'s back row")
        starts.add(start)
        if rank != game.n + 1 and (p.get("wounded") or p.get("stunned")):
            raise Breach("R9.1", None, f"non-crown on {sq} is wounded or stunned")
    if sides_present != {0, 1}:
        raise Breach("R9.1", None, "each side must have pieces")
    taken = position.get("turns_taken")
    if (
        not isinstance(taken, list)
        or len(taken) != 2
        or not all(isinstance(t, int) and not isinstance(t, bool) for t in taken)
    ):
        raise Breach("R9.1", None, f"turns_taken {taken!r}")
    # AMBIGUOUS: negative counts are not mentioned; they cannot be consistent, so R9.1.
    if min(taken) < 0 or max(taken) > game.t_limit or taken == [game.t_limit] * 2:
        raise Breach("R9.1", None, f"turns_taken {taken} against T={game.t_limit}")
    mover, other = taken[to_move], taken[1 - to_move]
    if not (mover == other or mover == other - 1):
        raise Breach("R9.1", None, f"turns_taken {taken} with side {to_move} to move")


def setup_r9_position(game: Game, record: dict) -> None:
    """R9.1: a challenge starts from the set position; R9.3: a stunned crown of the side to move
    is immobile on the first turn and catchable through the second; a stunned crown of the other
    side is catchable on the first turn only. Picks start unused, nothing pending."""
    position = record["challenge"]["position"]
    to_move = position["to_move"]
    game.turns_taken = list(position["turns_taken"])
    # AMBIGUOUS: R9.2 does not require a piece's rank to equal lineups[side][file of start], nor a
    # stunned crown to be wounded: both are taken as given (the lineup rank is used for Recall).
    for p in position["pieces"]:
        crown = p["rank"] == game.n + 1
        piece = Piece(
            side=p["side"],
            rank=p["rank"],
            start=p["start"],
            crown=crown,
            wounded=bool(p.get("wounded")),
        )
        if crown and p.get("stunned"):
            if piece.side == to_move:
                piece.immobile_through = 0
                piece.catchable_through = 1
            else:
                piece.catchable_through = 0
        game.board[p["square"]] = piece


# ---------------------------------------------------------------------------------------------
# Moves (R2)
# ---------------------------------------------------------------------------------------------


def parse_move(text, g: int) -> tuple[str, str]:
    """R2.2: a move is written from-to, ``"c1-c3"``."""
    if not isinstance(text, str) or text.count("-") != 1:
        raise Breach("R2.2", g, f"move {text!r} is not from-to")
    frm, to = text.split("-")
    return frm, to


def check_r2_2_own_piece(game: Game, side: int, frm: str, g: int) -> Piece:
    """R2.2: a move takes one of the side's own pieces from its square."""
    if not on_board(game, frm):
        raise Breach("R2.2", g, f"{frm} is off the board")
    piece = game.board.get(frm)
    if piece is None:
        raise Breach("R2.2", g, f"no piece on {frm}")
    if piece.side != side:
        raise Breach("R2.2", g, f"{frm} holds an enemy piece")
    return piece


def check_r2_3_mobile(piece: Piece, square: str, g: int) -> None:
    """R2.3: a piece that is immobile (stunned R4.2, frozen R8.5, trapped R8.8, resting R8.10,
    recalled R8.7) cannot move."""
    if is_immobile(piece, g):
        raise Breach("R2.3", g, f"{square} is immobile")


def straight_path(frm: str, to: str) -> list[str] | None:
    """R2.2: the squares passed over by a straight move along one of the 8 directions
    (excluding both ends), or None if ``to`` is not on such a line."""
    (f0, r0), (f1, r1) = parse_square(frm), parse_square(to)
    df, dr = f1 - f0, r1 - r0
    if not (df == 0 or dr == 0 or abs(df) == abs(dr)):
        return None
    dist = max(abs(df), abs(dr))
    sf = (df > 0) - (df < 0)
    sr = (dr > 0) - (dr < 0)
    return [square_name(f0 + sf * i, r0 + sr * i) for i in range(1, dist)]


def check_r2_2_move_shape(game: Game, piece: Piece, frm: str, to: str, g: int):
    """R2.2: along one of the 8 directions in a straight line: 1 or 2 squares for a non-crown,
    exactly 1 for a crown (R8.4: 1 to 3 with a dash pending); every square passed over must be
    empty; the destination must be on the board and empty or hold an enemy piece. R2.6: a move
    from a square to itself is not a move. R8.11: with a leap pending, a move to an empty square
    at most 2 away in each of file and row is the leap and passes over nothing.
    Returns ("leap", []) or ("line", squares passed over)."""
    if frm == to:
        raise Breach("R2.2", g, f"{frm}-{to} is not a move (R2.6)")
    if not on_board(game, to):
        raise Breach("R2.2", g, f"{to} is off the board")
    target = game.board.get(to)
    if target is not None and target.side == piece.side:
        raise Breach("R2.2", g, f"{frm}-{to} lands on an own piece")
    if piece.leap and target is None and chebyshev(frm, to) <= game.p["leap_reach"]:
        return "leap", []
    try:
        return _straight_move(game, piece, frm, to, g)
    except Breach:
        # AMBIGUOUS: with a leap pending, a move onto an enemy piece within the leap's reach
        # that is no legal straight move (a knight-like attack, a jump) could only be a leap:
        # R8.11 "It cannot attack with a leap" is the rule that forbids it (the other reading:
        # R2.2, the move is not a straight line). Settled so with the product's engine.
        if piece.leap and target is not None and chebyshev(frm, to) <= game.p["leap_reach"]:
            raise Breach("R8.11", g, f"{frm}-{to}: a leap cannot attack") from None
        raise


def _straight_move(game: Game, piece: Piece, frm: str, to: str, g: int):
    """R2.2 for a move along a line: ("line", squares passed over)."""
    path = straight_path(frm, to)
    if path is None:
        raise Breach("R2.2", g, f"{frm}-{to} is not a straight line")
    dist = len(path) + 1
    limit = move_limit(game, piece)
    if dist > limit:
        raise Breach("R2.2", g, f"{frm}-{to} is {dist} squares, at most {limit} allowed")
    for sq in path:
        if sq in game.board:
            raise Breach("R2.2", g, f"{frm}-{to} jumps over {sq}")
    return "line", path


def move_limit(game: Game, piece: Piece) -> int:
    """R2.2 and R8.4 under the ruleset: ``reach`` squares, a crown ``crown_reach``, any piece
    with a dash pending ``dash_reach`` (RS7.4: crowns included)."""
    if piece.dash:
        return game.p["dash_reach"]
    return game.p["crown_reach"] if piece.crown else game.p["reach"]


def piece_has_legal_move(game: Game, frm: str, piece: Piece) -> bool:
    """R2.2/R8.4/R8.11: does this (mobile) piece have any legal move?"""
    limit = move_limit(game, piece)
    f0, r0 = parse_square(frm)
    for sf, sr in DIRECTIONS:
        for i in range(1, limit + 1):
            sq = square_name(f0 + sf * i, r0 + sr * i)
            if not on_board(game, sq):
                break
            other = game.board.get(sq)
            if other is None:
                return True
            if other.side != piece.side:
                return True  # an attack (R3) is a legal move
            break  # own piece: blocked
    if piece.leap:
        reach = game.p["leap_reach"]
        for df in range(-reach, reach + 1):
            for dr in range(-reach, reach + 1):
                sq = square_name(f0 + df, r0 + dr)
                if (df or dr) and on_board(game, sq) and sq not in game.board:
                    return True
    return False


def side_has_legal_move(game: Game, side: int, g: int, exclude: Piece | None = None) -> bool:
    """R2.4: a side with no legal move passes. Immobile pieces (R2.3) have no moves; ``exclude``
    is the crown that already made the first move of a double (R8.3)."""
    for sq, piece in list(game.board.items()):
        if piece.side != side or piece is exclude or is_immobile(piece, g):
            continue
        if piece_has_legal_move(game, sq, piece):
            return True
    return False


# ---------------------------------------------------------------------------------------------
# Fights (R3, R4) and shields (R8.12)
# ---------------------------------------------------------------------------------------------


def fight_r3_non_crowns(game: Game, a: int, d: int, surge: bool) -> tuple[bool, bool, bool]:
    """R3: a = d both removed; (a-d) mod N in 1..k the attacker wins; otherwise the defender wins.
    R8.10: with a surge the attacker also beats the rank for which (a-d) mod N = k+1.
    Returns (attacker loses, defender loses, won only because of the surge)."""
    diff = (a - d) % game.n
    if diff == 0:
        return True, True, False  # R3.1
    if 1 <= diff <= game.k:
        return False, True, False  # R3.2
    if surge and diff == game.k + 1:
        return False, True, True  # R8.10
    return True, False, False  # R3.3


def fight_r4_crowns(attacker: Piece, defender: Piece, g: int) -> tuple[bool, bool, bool]:
    """R4.1 a crown attacking a non-crown wins. R4.2 a non-crown attacking a crown that is not
    stunned loses and stuns+wounds it. R4.3 any piece attacking a stunned crown wins.
    R4.4 crown attacks crown (not stunned): if exactly one is wounded the fresh one wins,
    otherwise both are removed. Returns (attacker loses, defender loses, stun the defender)."""
    if defender.crown and is_stunned(defender, g):
        return False, True, False  # R4.3
    if attacker.crown and defender.crown:
        if attacker.wounded != defender.wounded:  # R4.4, exactly one wounded
            return attacker.wounded, defender.wounded, False
        return True, True, False  # R4.4, both fresh or both wounded
    if attacker.crown:
        return False, True, False  # R4.1
    return True, False, True  # R4.2


def resolve_attack(game: Game, attacker: Piece, frm: str, to: str, surge: bool, g: int) -> str:
    """R3/R4 fight of ``attacker`` (on ``frm``) onto the enemy on ``to``, with R8.12 shields.
    R8.12: a piece that would be removed in a fight (loss, trade, caught while stunned) and has a
    shield stays on the square where it stood before the fight, and the shield is used up; an
    attacker that wins against a shielded defender stays on its own square; R4.2 still stuns a
    crown that a shielded attacker hits. Returns the attacker's final square ("" if removed)."""
    defender = game.board[to]
    surge_won = False
    stun = False
    if attacker.crown or defender.crown:
        att_loses, def_loses, stun = fight_r4_crowns(attacker, defender, g)
    else:
        att_loses, def_loses, surge_won = fight_r3_non_crowns(
            game, attacker.rank, defender.rank, surge
        )
    defender_removed = False
    if def_loses:
        if defender.shield:
            # AMBIGUOUS: a stunned crown saved by its shield (R4.3) keeps its stun: nothing in
            # the spec ends it early (the other reading would clear it with the shield).
            defender.shield = False  # R8.12: stays where it stood
        else:
            remove_piece(game, to, g)
            defender_removed = True
    if stun:
        apply_r4_2_stun(game, defender, g)
    if surge_won:
        apply_r8_10_rest(game, attacker, g)
    if att_loses:
        if attacker.shield:
            attacker.shield = False
            if defender_removed:
                # AMBIGUOUS: an equal-rank trade with a shielded attacker. R8.12's text says the
                # shielded piece "stays on the square where it stood before the fight" (its own
                # square); six games of slow6-valid.ndjson, which must be accepted, move it onto
                # the defender's square, now empty, as a winner does (R3.2). The examples' reading
                # is chosen (the product must accept them); the conflict is reported for the spec.
                del game.board[frm]
                game.board[to] = attacker
                return to
            return frm  # R8.12/R8.15: sent back to its own square (the defender stays)
        remove_piece(game, frm, g)
        return ""
    if defender_removed:
        del game.board[frm]
        game.board[to] = attacker
        return to
    return frm  # R8.12: won against a shielded defender, stays on its own square


def apply_r4_2_stun(game: Game, crown: Piece, g: int) -> None:
    """R4.2: the crown becomes stunned and wounded. It cannot move during its owner's next turn,
    and stays catchable until the end of the attacking side's next turn (R8.3: already during the
    second move of a double)."""
    crown.wounded = True
    crown.catchable_through = max(crown.catchable_through, g + 2)
    make_immobile(crown, owner_turns_through(game, crown.side, g, 1))


def apply_r8_10_rest(game: Game, piece: Piece, g: int) -> None:
    """R8.10: if the fight was won only because of the surge, that piece rests: it cannot move
    during its owner's next ``surge_rest`` turns (R2.3: and the rest of this turn; RS7.6: with 0
    it does not rest at all)."""
    # AMBIGUOUS: a surge "win" against a shielded defender (which stays) still counts as won.
    if game.p["surge_rest"]:
        make_immobile(piece, owner_turns_through(game, piece.side, g, game.p["surge_rest"]))


# ---------------------------------------------------------------------------------------------
# Applying a move: traps (R8.8), promotion (R5), end of game (R6.1, R6.2)
# ---------------------------------------------------------------------------------------------


def spring_r8_8_trap(game: Game, piece: Piece, trap_owner: int, g: int) -> None:
    """R8.8: the trap is used up and that piece cannot move during its owner's next
    ``trap_turns`` (two) turns (R2.3: a trap sprung during the owner's own turn also covers the
    rest of that turn)."""
    game.traps[trap_owner] = None
    make_immobile(piece, owner_turns_through(game, piece.side, g, game.p["trap_turns"]))


def apply_r5_promotion(game: Game, piece: Piece, square: str) -> None:
    """R5.1: side s's piece of rank r promotes in the file where the other side's rank r started;
    when it ends a move on the far-row square of that lane it becomes a fresh crown at once.
    R8.13: a pending shield is kept."""
    # AMBIGUOUS: R5.1 names "a plain move or a won attack"; a leap (R8.11) is a move and R5.2
    # excludes only Swap and Shove, so a leap onto the lane's far-row square promotes too.
    if piece.crown:
        return
    other_lineup = game.lineups[1 - piece.side]
    if piece.rank not in other_lineup:
        return
    lane = other_lineup.index(piece.rank)
    if square == square_name(lane, far_row(game, piece.side)):
        piece.crown = True
        piece.rank = game.n + 1
        piece.wounded = False
        piece.catchable_through = -1


def check_r6_1_home(game: Game, piece: Piece, square: str) -> None:
    """R6.1: a crown of side s ends a move on the square where that same piece started the
    game: side s wins at once."""
    if piece.crown and square == piece.start:
        game.end("home", piece.side)


def check_r6_2_wipeout(game: Game) -> None:
    """R6.2: a side with no pieces left loses; if both lose their last pieces in the same fight,
    the game is a draw."""
    has = [False, False]
    for piece in game.board.values():
        has[piece.side] = True
    if not has[0] and not has[1]:
        game.end("wipeout", None)
    elif not has[0]:
        game.end("wipeout", 1)
    elif not has[1]:
        game.end("wipeout", 0)


def play_move(game: Game, side: int, text, g: int) -> Piece | None:
    """One move (R2.2) with its consequences, in the order of R6: the move (traps R8.8, fight
    R3/R4), promotion R5 first, then R6.1, then R6.2. Returns the moving piece (None if it was
    removed in its fight)."""
    frm, to = parse_move(text, g)
    piece = check_r2_2_own_piece(game, side, frm, g)
    # AMBIGUOUS: R2.3 (cannot move at all) is checked before the R2.2 geometry of the move.
    check_r2_3_mobile(piece, frm, g)
    kind, path = check_r2_2_move_shape(game, piece, frm, to, g)
    surge = piece.surge
    # R8.4/R8.10/R8.11: dash, surge and leap are used up by the piece's next move.
    piece.dash = piece.leap = piece.surge = False
    trap_owner = 1 - side  # R8.8: own pieces ignore their own trap
    trap = game.traps[trap_owner]
    # R8.8: a move through the trap ends there (an attack through it ends there without a
    # fight); a leap passes over nothing.
    # AMBIGUOUS: the written move (e.g. c5-c3) must be legal in full before it is cut short.
    stop = None
    if trap is not None and kind == "line" and trap in path:
        stop = trap
    if stop is not None:
        del game.board[frm]
        game.board[stop] = piece
        final = stop
    elif to in game.board:
        final = resolve_attack(game, piece, frm, to, surge, g)
    else:
        del game.board[frm]
        game.board[to] = piece
        final = to
    if final:
        # R8.8: an enemy piece that ends a move on the trap square is trapped.
        # AMBIGUOUS: this includes an attacker sent back by a shield onto its own square when an
        # enemy trap lies there (R8.15 says it "has ended its move on its own square").
        if game.traps[trap_owner] is not None and game.traps[trap_owner] == final:
            spring_r8_8_trap(game, piece, trap_owner, g)
        apply_r5_promotion(game, piece, final)
        check_r6_1_home(game, piece, final)
    if not game.over:
        check_r6_2_wipeout(game)
    return piece if final else None


# ---------------------------------------------------------------------------------------------
# Powers (R8)
# ---------------------------------------------------------------------------------------------


def check_r8_1_power_use(game: Game, side: int, power, g: int) -> None:
    """R8.1: each picked power is used at most once per game, at most one per turn; a power that
    was not picked cannot be used. R2.1/R10: a power in a game without powers is R8.1."""
    if not game.powers_on:
        raise Breach("R8.1", g, f"power {power!r} in a game without powers")
    if power not in POWER_IDS or power not in game.picks[side]:
        raise Breach("R8.1", g, f"power {power!r} was not picked by side {side}")
    if power in game.used_powers[side]:
        raise Breach("R8.1", g, f"power {power!r} used twice")
    game.used_powers[side].add(power)


def target_square(game: Game, turn: dict, rule: str, g: int) -> str:
    """The single-square target of a power; an off-board or missing target is that power's
    error (R2.6)."""
    target = turn.get("target")
    if not isinstance(target, str) or not on_board(game, target):
        raise Breach(rule, g, f"target {target!r} is not a square on the board")
    return target


def own_piece_target(game: Game, side: int, turn: dict, rule: str, g: int) -> Piece:
    sq = target_square(game, turn, rule, g)
    piece = game.board.get(sq)
    if piece is None or piece.side != side:
        raise Breach(rule, g, f"{sq} does not hold an own piece")
    return piece


def check_r2_3_power_subject(piece: Piece, g: int) -> None:
    """R2.3/R10: an immobile piece cannot be the subject of Dash, Leap or Surge (rule R2.3)."""
    if is_immobile(piece, g):
        raise Breach("R2.3", g, "power on an immobile piece")


def apply_r8_3_double(game: Game, side: int, turn: dict, g: int) -> None:
    """R8.3: ``double`` has no target (upload format: "double: omitted")."""
    # AMBIGUOUS: a target sent with double is not listed as malformed; read it as an R8.3 error.
    if "target" in turn:
        raise Breach("R8.3", g, "double takes no target")


def apply_r8_4_dash(game: Game, side: int, turn: dict, g: int) -> None:
    """R8.4 ``dash`` (target: one own piece): its next move may travel 1 to 3 squares in a
    straight line (crowns included). R2.3: not on an immobile piece."""
    # AMBIGUOUS: target kind (R8.4) is checked before immobility (R2.3).
    piece = own_piece_target(game, side, turn, "R8.4", g)
    check_r2_3_power_subject(piece, g)
    piece.dash = True


def apply_r8_11_leap(game: Game, side: int, turn: dict, g: int) -> None:
    """R8.11 ``leap`` (target: one own non-crown piece): on its next move it may land on any
    empty square at most 2 away in each of file and row. R2.3: not on an immobile piece."""
    piece = own_piece_target(game, side, turn, "R8.11", g)
    if piece.crown:
        raise Breach("R8.11", g, "leap on a crown")
    check_r2_3_power_subject(piece, g)
    piece.leap = True


def apply_r8_10_surge(game: Game, side: int, turn: dict, g: int) -> None:
    """R8.10 ``surge`` (target: one own non-crown piece). R2.3: not on an immobile piece."""
    piece = own_piece_target(game, side, turn, "R8.10", g)
    if piece.crown:
        raise Breach("R8.10", g, "surge on a crown")
    check_r2_3_power_subject(piece, g)
    piece.surge = True


def apply_r8_12_shield(game: Game, side: int, turn: dict, g: int) -> None:
    """R8.12 ``shield`` (target: one own piece)."""
    piece = own_piece_target(game, side, turn, "R8.12", g)
    piece.shield = True


def apply_r8_5_freeze(game: Game, side: int, turn: dict, g: int) -> None:
    """R8.5 ``freeze`` (target: one enemy piece): it cannot move during its owner's next two
    turns."""
    sq = target_square(game, turn, "R8.5", g)
    piece = game.board.get(sq)
    if piece is None or piece.side == side:
        raise Breach("R8.5", g, f"{sq} does not hold an enemy piece")
    make_immobile(piece, owner_turns_through(game, piece.side, g, game.p["freeze_turns"]))


def apply_r8_6_swap(game: Game, side: int, turn: dict, g: int) -> None:
    """R8.6 ``swap`` (targets: two own pieces): they exchange squares. Neither piece may be
    immobile. A swap never promotes and never wins (R5.2, R6.1); traps stay (R8.8)."""
    target = turn.get("target")
    if not isinstance(target, list) or len(target) != 2:
        raise Breach("R8.6", g, f"swap target {target!r} is not two squares")
    a, b = target
    if not (on_board(game, a) and on_board(game, b)) or a == b:
        raise Breach("R8.6", g, f"swap {a!r}/{b!r} are not two squares on the board")
    pa, pb = game.board.get(a), game.board.get(b)
    if pa is None or pb is None or pa.side != side or pb.side != side:
        raise Breach("R8.6", g, f"swap {a}/{b} are not two own pieces")
    if is_immobile(pa, g) or is_immobile(pb, g):
        raise Breach("R8.6", g, "swap with an immobile piece")
    game.board[a], game.board[b] = pb, pa


def apply_r8_7_recall(game: Game, side: int, turn: dict, g: int) -> None:
    """R8.7 ``recall`` (target: the start square of one own piece that was removed during the
    side's own previous turn or the other side's turn since): it returns to its start square,
    which must be empty, with its original rank (not a crown, fresh, no power effects). It cannot
    move this turn. R9.1: the original rank is ``lineups[side][file of its start]``. R9.3:
    pieces removed before a challenge position cannot be recalled."""
    sq = target_square(game, turn, "R8.7", g)
    # AMBIGUOUS: "own previous turn or the other side's turn since" = global turns g-2 and g-1.
    removed = game.removed_at.get((side, sq))
    if removed is None or removed not in (g - 1, g - 2):
        raise Breach("R8.7", g, f"no own piece from {sq} was removed since the last own turn")
    if any(p.side == side and p.start == sq for p in game.board.values()):
        raise Breach("R8.7", g, f"the piece from {sq} is on the board")
    if sq in game.board:
        raise Breach("R8.7", g, f"start square {sq} is not empty")
    rank = game.lineups[side][parse_square(sq)[0]]
    piece = Piece(side=side, rank=rank, start=sq)
    piece.immobile_through = g  # "It cannot move this turn."
    game.board[sq] = piece
    del game.removed_at[(side, sq)]


def apply_r8_8_trap(game: Game, side: int, turn: dict, g: int) -> None:
    """R8.8 ``trap`` (target: one empty square), hidden from the other side."""
    sq = target_square(game, turn, "R8.8", g)
    if sq in game.board:
        raise Breach("R8.8", g, f"trap on occupied square {sq}")
    game.traps[side] = sq


def apply_r8_9_shove(game: Game, side: int, turn: dict, g: int) -> None:
    """R8.9 ``shove`` (target: one enemy piece orthogonally or diagonally next to one of the
    side's pieces): it is pushed one square straight towards its own back row, same file, onto a
    square that must be empty. No fight, never promotes or wins. R8.8: a piece shoved onto the
    shover's trap is trapped."""
    sq = target_square(game, turn, "R8.9", g)
    piece = game.board.get(sq)
    if piece is None or piece.side == side:
        raise Breach("R8.9", g, f"{sq} does not hold an enemy piece")
    if not any(p.side == side and chebyshev(s, sq) == 1 for s, p in game.board.items()):
        raise Breach("R8.9", g, f"{sq} is not next to an own piece")
    f, r = parse_square(sq)
    dest = square_name(f, r - 1 if piece.side == 0 else r + 1)
    if not on_board(game, dest) or dest in game.board:
        raise Breach("R8.9", g, f"shove from {sq} onto {dest}: not an empty square")
    del game.board[sq]
    game.board[dest] = piece
    if game.traps[side] == dest:
        spring_r8_8_trap(game, piece, side, g)


POWER_FUNCTIONS = {
    "double": apply_r8_3_double,
    "dash": apply_r8_4_dash,
    "leap": apply_r8_11_leap,
    "shield": apply_r8_12_shield,
    "freeze": apply_r8_5_freeze,
    "swap": apply_r8_6_swap,
    "recall": apply_r8_7_recall,
    "trap": apply_r8_8_trap,
    "shove": apply_r8_9_shove,
    "surge": apply_r8_10_surge,
}


# ---------------------------------------------------------------------------------------------
# Turns (R2.1, R2.4, R2.5, R8.3, R6.3, R6.5)
# ---------------------------------------------------------------------------------------------


def check_r6_5_not_over(game: Game, g: int) -> None:
    """R6.5: nothing may be logged after the game has ended."""
    if game.over:
        raise Breach("R6.5", g, f"logged after the game ended ({game.end_reason})")


def check_r2_4_pass(game: Game, side: int, g: int) -> None:
    """R2.4: a side with no legal move passes; a side that has a legal move may not pass
    (R8.14: after its power)."""
    if side_has_legal_move(game, side, g):
        raise Breach("R2.4", g, "pass while a legal move existed")


def check_r6_3_turn_limit(game: Game) -> None:
    """R6.3 (with R2.5, R2.7): when both sides have taken T turns, at the end of a turn, the
    higher total of ranks left wins; equal totals draw."""
    if game.over or min(game.turns_taken) < game.t_limit:
        return
    totals = points_totals(game)
    if totals[0] == totals[1]:
        game.end("points", None)
    else:
        game.end("points", 0 if totals[0] > totals[1] else 1)


def play_turn(game: Game, turn: dict, g: int) -> None:
    """R2.1: on its turn a side may use one power and then makes one move (two after
    ``double``, R8.3), or passes iff it has no legal move at that point (R2.4)."""
    check_r6_5_not_over(game, g)
    side = game.side_of_turn(g)
    power = turn.get("power")
    if power is not None:
        check_r8_1_power_use(game, side, power, g)
        POWER_FUNCTIONS[power](game, side, turn, g)
    moves = turn.get("moves") or []
    # AMBIGUOUS: a turn that lists two moves without double breaks R2.1 as a turn (its shape:
    # "one power and then one move"), before any of its moves is played; so also when the first
    # move is illegal or ends the game (the other reading: R2.2 for that first move, or R6.5
    # for a second move "logged after the end"). R10's table cites R2.1 for "two moves without
    # double". Settled so with the product's engine in the differential run.
    if len(moves) >= 2 and power != "double":
        raise Breach("R2.1", g, "two moves without double")
    if len(moves) > 2:
        raise Breach("R2.1", g, "more than two moves")
    if not moves:
        check_r2_4_pass(game, side, g)
    else:
        first_mover = play_move(game, side, moves[0], g)
        if len(moves) == 2:
            check_r6_5_not_over(game, g)  # the double's first move ended the game
            check_r8_3_second_move_piece(game, first_mover, moves[1], g)
            play_move(game, side, moves[1], g)
        elif power == "double" and not game.over:
            check_r8_3_second_move_missing(game, side, first_mover, g)
    game.turns_taken[side] += 1
    check_r6_3_turn_limit(game)


def check_r8_3_second_move_piece(game: Game, first_mover: Piece | None, text, g: int) -> None:
    """R8.3: the two moves may be by the same piece, unless it is a crown (a crown makes at most
    one of the two; a piece that promoted with the first move is a crown for the second)."""
    # AMBIGUOUS: this is checked before R2.3, so it wins over "immobile" for that crown.
    if first_mover is None or not first_mover.crown:
        return
    if not isinstance(text, str) or text.count("-") != 1:
        return
    frm = text.split("-")[0]
    if game.board.get(frm) is first_mover:
        raise Breach("R8.3", g, f"the crown on {frm} makes both moves of a double")


def check_r8_3_second_move_missing(
    game: Game, side: int, first_mover: Piece | None, g: int
) -> None:
    """R8.3: if the first move ends the game there is no second; if the side has no legal move
    for the second, it makes only one; otherwise one move after a double is an R8.3 error."""
    exclude = first_mover if first_mover is not None and first_mover.crown else None
    if side_has_legal_move(game, side, g, exclude=exclude):
        raise Breach("R8.3", g, "only one move after double while a second was possible")


# ---------------------------------------------------------------------------------------------
# The result (R6, R10)
# ---------------------------------------------------------------------------------------------


def check_r6_result(game: Game, record: dict, n_turns: int) -> None:
    """R6.1-R6.4 and R10: a claimed reason that did not happen names the claimed reason's rule;
    a wrong winner names the rule of the reason that really ended the game (R6.4 for
    timeout/resign); wrong points name R6.3; a log that stops before the end with a natural reason
    names that reason's rule; timeout/resign claimed although the log reached a natural end names
    R6.4. All with no turn."""
    result = record["result"]
    reason = result.get("reason")
    winner = result.get("winner")
    if game.over:
        if reason not in NATURAL_REASON_RULE:
            raise Breach(
                "R6.4", None, f"{reason!r} claimed but the game ended by {game.end_reason}"
            )
        if reason != game.end_reason:
            raise Breach(
                NATURAL_REASON_RULE[reason],
                None,
                f"{reason!r} claimed but the game ended by {game.end_reason}",
            )
        if winner != game.winner:
            raise Breach(
                NATURAL_REASON_RULE[game.end_reason], None, f"winner {winner!r} != {game.winner!r}"
            )
    else:
        if reason in NATURAL_REASON_RULE:
            raise Breach(NATURAL_REASON_RULE[reason], None, f"{reason!r} but the game did not end")
        # R6.4: the game ends with the side whose turn it is losing.
        loser = game.side_of_turn(n_turns)
        if winner != 1 - loser:
            raise Breach("R6.4", None, f"winner {winner!r}, but side {loser} was to move")
    points = result.get("points")
    # AMBIGUOUS: the points are checked after the winner (a record with both wrong names the
    # winner's rule), against the totals when the log stops (for timeout/resign too).
    # upload-format: "If result.points is given for another reason it must still be the true
    # totals (R6.3)."
    if points is not None and (not isinstance(points, list) or points != points_totals(game)):
        raise Breach("R6.3", None, f"points {points} != {points_totals(game)}")


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def referee(record: dict, params: dict | None = None) -> None:
    """Replay the whole record under the ruleset ``params`` (RS3 names; None: standard),
    raising the first :class:`Breach` (R10)."""
    # AMBIGUOUS: faults of the record as a whole that exist before the first turn are reported
    # before any turn fault; result faults only once every turn was legal.
    game = Game(record, params)
    check_mode_fields(record)
    check_r1_3_lineups(game)
    check_r8_1_picks(game)
    if record.get("challenge") is not None:
        check_r9_2_position(game, record)
        setup_r9_position(game, record)
    else:
        setup_r1_start(game)
    turns = record.get("turns") or []
    for g, turn in enumerate(turns):
        play_turn(game, turn, g)
    check_r6_result(game, record, len(turns))


def judge(record: dict, params: dict | None = None) -> tuple[str, str | None, int | None]:
    """``("valid", None, None)`` or ``("invalid", rule_id, turn_index)`` for a well-formed
    Slow6 record (turn_index None for a fault of the record as a whole), judged under the
    ruleset whose RS3 parameters are ``params`` (None: standard)."""
    try:
        referee(record, params)
    except Breach as breach:
        return "invalid", breach.rule, breach.turn
    return "valid", None, None
