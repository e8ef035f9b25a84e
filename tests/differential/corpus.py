"""Records for the differential run: simulated games (every bot level and the random player,
both boards, every variant and mode, challenges) and single-fault mutations of them, each
played under a ruleset (rulesets.md): `standard` or a random valid one, which the record names.

The base games come from the product's simulator, so they are legal by the engine's account;
the referee checks that. Mutations are written here from the upload format alone (squares,
turns, powers, results), never from the engine, and keep a record well-formed where they can.
"""

from __future__ import annotations

import copy
import random
import uuid
from collections.abc import Iterator

from replays.rulesets import PARAMS, Ruleset
from replays.slow6.simulate import random_game_settings, simulate_game

FILES = "abcdefg"
POWER_IDS = ("double", "dash", "leap", "shield", "freeze", "swap", "recall", "trap", "shove",
             "surge")  # fmt: skip
LEVELS = (0, 1, 2, 3, 4)
# Relative cost of a game by its stronger player's level (measured: 800, 30, 27, 8, 0.9 games/s
# on 5x5), so the mix spends comparable time on every level rather than the same game count.
LEVEL_WEIGHTS = {0: 60, 1: 20, 2: 15, 3: 4, 4: 1}


STANDARD_SHARE = 0.3  # of base games played under `standard`; the rest under a random ruleset


def random_ruleset(rng: random.Random) -> Ruleset:
    """A random valid Slow6 ruleset (RS3's ranges and cross-checks), named for its draw. Turn
    limits are kept at 25 or less (longer games cost time, not coverage)."""
    p: dict = {}
    for name in ("crown_reach", "leap_reach", "freeze_turns", "trap_turns", "surge_rest"):
        spec = PARAMS["slow6"][name]
        p[name] = rng.randint(spec.low, spec.high)
    p["turn_limit_5"] = rng.randint(5, 25)
    p["turn_limit_7"] = rng.randint(5, 25)
    p["reach"] = rng.randint(1, 3)
    p["dash_reach"] = rng.randint(max(2, p["reach"] + 1), 5)
    p["crown_points"] = None if rng.random() < 0.4 else rng.randint(0, 20)
    offered = [x for x in POWER_IDS if rng.random() < 0.6] or [rng.choice(POWER_IDS)]
    p["powers"] = offered
    p["picks"] = rng.randint(1, min(5, len(offered)))
    return Ruleset(f"rs-{rng.getrandbits(32):08x}", "slow6", p)


def _gid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def base_game(rng: random.Random, rules: Ruleset | None = None) -> dict:
    """One simulated game under `rules` (None: standard): a level pair where the stronger
    side's level is drawn by LEVEL_WEIGHTS, any board, variant and mode (challenges and
    computer games included)."""
    top = rng.choices(LEVELS, [LEVEL_WEIGHTS[lv] for lv in LEVELS])[0]
    other = rng.randrange(0, top + 1)
    settings = random_game_settings(rng)
    if top >= 3 and rng.random() < 0.8:
        settings["board"] = 5  # 7x7 at level 3-4 costs ten times more; keep some
    levels = (top, other) if rng.random() < 0.5 else (other, top)
    settings["levels"] = levels
    if settings["ai"] is not None:
        side = settings["ai"]["side"]
        settings["ai"] = {"side": side, "level": max(1, levels[side])}
    if settings["mode"] == "tutorial":
        settings.update(board=5, powers=False, hidden=False)
    return simulate_game(rng, quit_rate=0.06, rules=rules, **settings)


# --- mutations: each returns a new record or None when it does not apply ----------------------


def _square(rng: random.Random, n: int, near: str | None = None, on_board: float = 0.95) -> str:
    if near is not None and rng.random() < 0.8:
        f, r = FILES.index(near[0]), int(near[1]) - 1
        for _ in range(20):
            df, dr = rng.randint(-3, 3), rng.randint(-3, 3)
            x, y = f + df, r + dr
            if (
                (df or dr)
                and 0 <= x < 7
                and 0 <= y < 7
                and (x < n and y < n or rng.random() > on_board)
            ):
                return f"{FILES[x]}{y + 1}"
    lim = n if rng.random() < on_board else 7
    return f"{FILES[rng.randrange(lim)]}{rng.randrange(lim) + 1}"


def _turns_with(rec: dict, pred) -> list[int]:
    return [i for i, t in enumerate(rec["turns"]) if pred(t)]


def move_to(rec, rng):
    idx = _turns_with(rec, lambda t: t["moves"])
    if not idx:
        return None
    i = rng.choice(idx)
    j = rng.randrange(len(rec["turns"][i]["moves"]))
    frm, to = rec["turns"][i]["moves"][j].split("-")
    rec["turns"][i]["moves"][j] = f"{frm}-{_square(rng, rec['rules']['board'], to)}"
    return rec


def move_from(rec, rng):
    idx = _turns_with(rec, lambda t: t["moves"])
    if not idx:
        return None
    i = rng.choice(idx)
    j = rng.randrange(len(rec["turns"][i]["moves"]))
    frm, to = rec["turns"][i]["moves"][j].split("-")
    rec["turns"][i]["moves"][j] = f"{_square(rng, rec['rules']['board'], frm)}-{to}"
    return rec


def target_moved(rec, rng):
    idx = _turns_with(rec, lambda t: "target" in t)
    if not idx:
        return None
    t = rec["turns"][rng.choice(idx)]
    n = rec["rules"]["board"]
    if isinstance(t["target"], list):
        k = rng.randrange(2)
        t["target"][k] = _square(rng, n, t["target"][k])
    else:
        t["target"] = _square(rng, n, t["target"])
    return rec


def drop_turn(rec, rng):
    if not rec["turns"]:
        return None
    del rec["turns"][rng.randrange(len(rec["turns"]))]
    return rec


def swap_turns(rec, rng):
    if len(rec["turns"]) < 2:
        return None
    i = rng.randrange(len(rec["turns"]) - 1)
    k = i + rng.choice((1, 2)) if i + 2 < len(rec["turns"]) else i + 1
    rec["turns"][i], rec["turns"][k] = rec["turns"][k], rec["turns"][i]
    return rec


def pass_turn(rec, rng):
    idx = _turns_with(rec, lambda t: t["moves"])
    if not idx:
        return None
    rec["turns"][rng.choice(idx)]["moves"] = []
    return rec


def extra_move(rec, rng):
    idx = _turns_with(rec, lambda t: len(t["moves"]) == 1)
    if not idx:
        return None
    t = rec["turns"][rng.choice(idx)]
    frm = t["moves"][0].split("-")[1] if rng.random() < 0.5 else t["moves"][0].split("-")[0]
    t["moves"].append(f"{frm}-{_square(rng, rec['rules']['board'], frm)}")
    return rec


def add_power(rec, rng):
    if not rec["turns"]:
        return None
    t = rec["turns"][rng.randrange(len(rec["turns"]))]
    picks = rec["powers"]
    side_picks = None
    if picks is not None and rng.random() < 0.85:
        side_picks = picks[rng.randrange(2)]
    power = rng.choice(side_picks or POWER_IDS)
    n = rec["rules"]["board"]
    t["power"] = power
    t.pop("target", None)
    near = t["moves"][0].split("-")[0] if t["moves"] else None
    if power == "swap":
        t["target"] = [_square(rng, n, near), _square(rng, n, near)]
    elif power != "double":
        t["target"] = _square(rng, n, near)
    return rec


def drop_power(rec, rng):
    idx = _turns_with(rec, lambda t: "power" in t)
    if not idx:
        return None
    t = rec["turns"][rng.choice(idx)]
    t.pop("power")
    t.pop("target", None)
    return rec


def change_power(rec, rng):
    idx = _turns_with(rec, lambda t: "power" in t)
    if not idx:
        return None
    t = rec["turns"][rng.choice(idx)]
    new = rng.choice(POWER_IDS)
    old = t["power"]
    t["power"] = new
    target = t.pop("target", None)
    if new == "double":
        return rec
    if new == "swap":
        base = target[0] if isinstance(target, list) else target or "c3"
        t["target"] = [base, _square(rng, rec["rules"]["board"], base)]
    elif target is not None:
        t["target"] = target[0] if isinstance(target, list) else target
    else:
        t["target"] = _square(rng, rec["rules"]["board"])
    del old
    return rec


def result_altered(rec, rng):
    res = rec["result"]
    choice = rng.randrange(5)
    if choice == 0:
        options = [w for w in (0, 1, None) if w != res["winner"]]
        res["winner"] = rng.choice(options)
    elif choice == 1:
        reasons = [
            r for r in ("home", "wipeout", "points", "timeout", "resign") if r != res["reason"]
        ]
        res["reason"] = rng.choice(reasons)
        if res["reason"] == "points" and res.get("points") is None:
            res["points"] = [rng.randrange(0, 30), rng.randrange(0, 30)]
    elif choice == 2:
        if res.get("points") is None:
            res["points"] = [rng.randrange(0, 30), rng.randrange(0, 30)]
        else:
            k = rng.randrange(2)
            res["points"][k] = max(0, res["points"][k] + rng.choice((-2, -1, 1, 2)))
    elif choice == 3:
        res.pop("points", None) if res["reason"] != "points" else None
        res["winner"] = rng.choice((0, 1, None))
    else:
        if res["reason"] == "points":
            return None
        res["points"] = None
        res["reason"] = rng.choice(("timeout", "resign"))
    return rec


def truncate(rec, rng):
    """Cut the log and claim a timeout or resignation (legal when the side to move loses), or
    keep the natural reason claimed (illegal: the log stops before the end)."""
    if len(rec["turns"]) < 2:
        return None
    k = rng.randrange(1, len(rec["turns"]))
    rec["turns"] = rec["turns"][:k]
    to_move = rec["first"] if k % 2 == 0 else 1 - rec["first"]
    if rng.random() < 0.7:
        rec["result"] = {"winner": 1 - to_move, "reason": rng.choice(("timeout", "resign")),
                         "points": None}  # fmt: skip
    return rec


def duplicate_pick(rec, rng):
    if rec["powers"] is None:
        return None
    s = rng.randrange(2)
    k = len(rec["powers"][s])
    rec["powers"][s][rng.randrange(k)] = rec["powers"][s][rng.randrange(k)]
    return rec


def picks_changed(rec, rng):
    """One pick more, one fewer (1 to 5 stay well-formed), or one replaced by another id:
    legal only when the ruleset's picks and powers allow it (RS7.3)."""
    if rec["powers"] is None:
        return None
    side = rec["powers"][rng.randrange(2)]
    spare = [p for p in POWER_IDS if p not in side]
    choice = rng.randrange(3)
    if choice == 0 and len(side) < 5 and spare:
        side.insert(rng.randrange(len(side) + 1), rng.choice(spare))
    elif choice == 1 and len(side) > 1:
        del side[rng.randrange(len(side))]
    elif spare:
        side[rng.randrange(len(side))] = rng.choice(spare)
    else:
        return None
    return rec


def challenge_altered(rec, rng):
    ch = rec["challenge"]
    if ch is None:
        return None
    pos = ch["position"]
    n = rec["rules"]["board"]
    choice = rng.randrange(5)
    pieces = pos["pieces"]
    p = rng.choice(pieces)
    if choice == 0:
        p["square"] = _square(rng, n, p["square"])
    elif choice == 1:
        p["stunned"] = not p["stunned"]
    elif choice == 2:
        p["wounded"] = not p["wounded"]
    elif choice == 3:
        k = rng.randrange(2)
        pos["turns_taken"][k] = max(0, pos["turns_taken"][k] + rng.choice((-1, 1, 2)))
    else:
        p["start"] = _square(rng, n, p["start"])
    return rec


MUTATIONS = {
    "move_to": (move_to, 6),
    "move_from": (move_from, 3),
    "target_moved": (target_moved, 4),
    "drop_turn": (drop_turn, 3),
    "swap_turns": (swap_turns, 3),
    "pass_turn": (pass_turn, 2),
    "extra_move": (extra_move, 2),
    "add_power": (add_power, 4),
    "drop_power": (drop_power, 2),
    "change_power": (change_power, 2),
    "result_altered": (result_altered, 3),
    "truncate": (truncate, 3),
    "duplicate_pick": (duplicate_pick, 1),
    "picks_changed": (picks_changed, 1),
    "challenge_altered": (challenge_altered, 2),
}
_NAMES = list(MUTATIONS)
_WEIGHTS = [MUTATIONS[k][1] for k in _NAMES]


def mutant(rec: dict, rng: random.Random) -> tuple[str, dict] | None:
    """One single-fault mutation of `rec` (a deep copy with a new game_id), or None."""
    kind = rng.choices(_NAMES, _WEIGHTS)[0]
    out = MUTATIONS[kind][0](copy.deepcopy(rec), rng)
    if out is None:
        return None
    out["game_id"] = _gid(rng)
    return kind, out


def corpus(
    seed: int, bases: int, mutants_per_base: int, rulesets: bool = True
) -> Iterator[tuple[str, dict, Ruleset | None]]:
    """(kind, record, ruleset): each base game ("simulated"), then its mutants, with the
    ruleset they are played under (None: standard). `rulesets`: also random valid rulesets
    (else standard only)."""
    rng = random.Random(seed)
    for _ in range(bases):
        rules = None
        if rulesets and rng.random() >= STANDARD_SHARE:
            rules = random_ruleset(rng)
        rec = base_game(rng, rules)
        yield "simulated", rec, rules
        made = tries = 0
        while made < mutants_per_base and tries < 4 * mutants_per_base:
            tries += 1
            m = mutant(rec, rng)
            if m is not None:
                made += 1
                yield (*m, rules)
