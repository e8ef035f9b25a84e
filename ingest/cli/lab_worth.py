"""`balance lab worth [--power P | --all]`: what each power is worth to a bot of one level, by
restricted play (replays/lab_worth.py), stored as a lab run whose rows are the `power_worth`
family (docs/lab.md), and shown on the Powers page beside the observed pick effect.

Played in worker processes (`--jobs`), never in a server's request thread; Ctrl-C stops it
with nothing stored (a worth run is minutes: it is played again, not resumed).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from itertools import islice
from typing import Any

from .lab_commands import CANCELLED, _fail, _registered, _ruleset, _store, resolved

WORTH_PREFIX = "worth-"  # a worth run's id starts so (a comparison's is a digest)


def register(lab) -> None:
    q = lab.add_parser(
        "worth",
        help="what each power is worth to a bot: restricted play against free play, same seeds",
    )
    which = q.add_mutually_exclusive_group(required=True)
    which.add_argument("--power", metavar="P", help="one power (R8.2)")
    which.add_argument("--all", action="store_true", help="every power the ruleset offers")
    q.add_argument(
        "--rules",
        default="standard",
        metavar="NAME|FILE",
        help="the ruleset played (a registered name or a TOML file; standard)",
    )
    q.add_argument("--games", type=int, default=300, metavar="N",
                   help="pairs a power (default 300)")  # fmt: skip
    q.add_argument("--level", type=int, default=2, choices=(1, 2, 3, 4),
                   help="the bot level of both sides (default 2)")  # fmt: skip
    q.add_argument("--board", type=int, choices=(5, 7), default=5)
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    q.add_argument("--min-effect", type=float, default=0.02,
                   help="the smallest worth in points of score that matters")  # fmt: skip
    q.add_argument("--json", action="store_true", help="one JSON object per power")
    q.add_argument("--db", help="the store file (default $BALANCE_DB)")
    q.add_argument("--lake", metavar="CATALOG", help="a lake instead (default $BALANCE_LAKE)")
    q.set_defaults(run=resolved(run_worth))


_ARGS: tuple = ()


def _init(args: tuple) -> None:
    import signal

    global _ARGS
    _ARGS = args
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's


def _play(task: tuple[str, int]) -> tuple[str, dict[str, Any]]:
    from replays.lab_worth import restricted_pair

    seed, rules, board, level = _ARGS
    power, index = task
    return power, restricted_pair(seed, index, rules, board, level, power)


def run_worth(args) -> int:
    from analysis import lab as predictions
    from replays import rulesets as R
    from replays.lab_worth import settings
    from replays.vocabulary import POWERS

    if not 1 <= args.games <= 100_000:
        return _fail("--games must be 1..100,000")
    if not 0 <= args.min_effect < 1:
        return _fail("--min-effect is a change of score: 0 up to 1")
    try:
        rules = _ruleset(args.rules, _registered(args), "slow6")
    except R.RulesetError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot read a ruleset file: {exc}")
    if rules.game != "slow6":
        return _fail("the lab plays Slow6 only (its bots): the ruleset must be slow6")
    offered = list(rules.params["powers"])
    if args.power is not None and args.power not in POWERS:
        return _fail(f"--power {args.power!r}: no such power; the powers are "
                     f"{', '.join(POWERS)} (R8.2)")  # fmt: skip
    if args.power is not None and args.power not in offered:
        return _fail(f"--power {args.power!r}: ruleset {rules.name!r} does not offer it "
                     "(powers, R8.1)")  # fmt: skip
    if len(offered) <= int(rules.params["picks"]):
        return _fail(f"ruleset {rules.name!r} offers no more powers than a side picks: a "
                     "barred side would have nothing else to pick")  # fmt: skip
    powers = [args.power] if args.power else offered
    tasks = [
        (p, i)
        for p in powers
        for i in islice(settings(args.seed, rules, args.board, args.level, p), args.games)
    ]
    key = hashlib.sha256(
        json.dumps(
            {
                "rules": rules.to_json(),
                "board": args.board,
                "level": args.level,
                "seed": args.seed,
                "powers": powers,
                "engine": _engine(),
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()[:16]
    start = time.monotonic()
    found: dict[str, list[dict[str, Any]]] = {p: [] for p in powers}
    try:
        with ProcessPoolExecutor(
            max(1, args.jobs),
            initializer=_init,
            initargs=((args.seed, rules, args.board, args.level),),
        ) as pool:
            for done, (power, pair) in enumerate(pool.map(_play, tasks, chunksize=8), 1):
                found[power].append(pair)
                if done % 200 == 0 or done == len(tasks):
                    rate = done / (time.monotonic() - start)
                    print(f"lab worth: {done}/{len(tasks)} pairs ({rate:.1f} pairs/s)",
                          file=sys.stderr)  # fmt: skip
    except KeyboardInterrupt:
        print("\nbalance lab worth: cancelled; nothing stored", file=sys.stderr)
        return CANCELLED
    rows = predictions.worth(found, min_effect=args.min_effect, seed=args.seed)
    run = {
        "id": f"{WORTH_PREFIX}{key}-{args.games}"
        + ("" if args.min_effect == 0.02 else f"-m{args.min_effect:g}"),
        "game": "slow6", "base": rules.to_json(),
        "candidate": {**rules.to_json(), "description": "restricted play: one side barred "
                      "from the power it would pick"},
        "board": args.board, "powers": True, "levels": [args.level], "games": args.games,
        "seed": args.seed, "engine_version": _engine(), "min_effect": args.min_effect,
        "picks_differ": len(tasks), "seconds": time.monotonic() - start,
    }  # fmt: skip
    note = _store(args, run, rows)
    if args.json:
        for r in rows:
            print(json.dumps({"power": r["row"], "worth": _neg(r["change"]),
                              "lo": _neg(r["hi"]), "hi": _neg(r["lo"]), "n": r["n"],
                              "level": args.level, "confident": r["confident"]}))  # fmt: skip
    else:
        print(table(run, rows))
    print(note, file=sys.stderr)
    return 0


def table(run: dict, rows: list) -> str:
    """A worth run as `lab worth` and `lab show` print it: the most valuable power first."""
    out = [f"lab run {run['id']}: what each power is worth to a level-{run['levels'][0]} bot "
           f"under {run['base']['name']!r} ({run['board']}x{run['board']}), restricted play, "
           f"{run['games']} pairs a power, seed {run['seed']}: the score a side loses when "
           "barred from the power it would pick (it takes its next preferred one), 95% paired "
           "interval; * clear of the minimum effect"]  # fmt: skip
    for r in sorted(rows, key=lambda r: r["change"] if r["change"] is not None else 0):
        if r["change"] is None:
            out.append(f"  {r['row']:8} -")
            continue
        sure = "  *" if r["confident"] else ""
        out.append(f"  {r['row']:8} {-r['change']:+.3f} [{-r['hi']:+.3f}, {-r['lo']:+.3f}]  "
                   f"n={r['n']}{sure}")  # fmt: skip
    return "\n".join(out)


def _neg(x: float | None) -> float | None:
    return None if x is None else -x


def _engine() -> str:
    from replays import lab

    return lab.ENGINE_VERSION
