"""`balance lab run | list | show`: the balance lab (docs/lab.md), a candidate ruleset tried
on bots against a base ruleset before it ships.

`lab run` plays the pairs in worker processes (ingest/server/lab_runner.py: resumable, cancellable),
predicts each balance row's change (analysis/lab.py) and stores the run in the store file
(`lab_runs`, `lab_rows`). Standard library only at module level (see ingest/cli/__init__.py).

Exit codes: 0 done; 1 cancelled (Ctrl-C: the finished pairs are kept, the same command goes
on from them) or no such stored run; 2 a wrong argument (an unknown or invalid ruleset,
levels, a run file of another run).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

INVALID, CANCELLED = 2, 1
MAX_GAMES = 1_000_000  # (days of bot play; the pairs to play are listed up front)


def register(sub) -> None:
    p = sub.add_parser("lab", help="try a candidate ruleset on bots against a base (docs/lab.md)")
    lab = p.add_subparsers(dest="lab_command", required=True, metavar="ACTION")
    q = lab.add_parser("run", help="play N paired games under both rulesets; predict changes")
    q.add_argument(
        "--base",
        default="standard",
        metavar="NAME|FILE",
        help="the ruleset now live: a registered name or a TOML file (standard)",
    )
    q.add_argument(
        "--candidate",
        required=True,
        metavar="FILE|NAME",
        help="the ruleset to try: a TOML file (need not be registered) or a name",
    )
    q.add_argument("--games", type=int, default=1000, metavar="N", help="pairs (default 1000)")
    q.add_argument(
        "--levels",
        default="1,2",
        metavar="L,L",
        help="bot levels standing in for players, 1..4; each side's level is drawn "
        "per game from the list (default 1,2)",
    )
    q.add_argument("--board", type=int, choices=(5, 7), default=5)
    q.add_argument("--powers", action="store_true", help="play with powers (R8)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="worker processes (default 1: the pairs are played in this process)",
    )
    q.add_argument(
        "--min-effect",
        type=float,
        default=0.02,
        help="the smallest change of score (or share of games) that matters",
    )
    q.add_argument("--json", action="store_true", help="one JSON object per predicted row")
    q.add_argument(
        "--run-dir",
        metavar="DIR",
        help="where the finished pairs are kept while it runs (default: DB.lab/)",
    )
    q.add_argument("--db", help="the store file (default $BALANCE_DB): rulesets, stored runs")
    q.add_argument("--lake", metavar="CATALOG", help="a lake instead (default $BALANCE_LAKE)")
    q.set_defaults(run=resolved(run_run))  # fmt: skip
    q = lab.add_parser("list", help="the stored lab runs, newest first")
    q.add_argument("--json", action="store_true")
    q.add_argument("--db", help="the store file (default $BALANCE_DB)")
    q.add_argument("--lake", metavar="CATALOG", help="a lake instead (default $BALANCE_LAKE)")
    q.set_defaults(run=resolved(run_list))
    q = lab.add_parser(
        "check",
        help="a stored run's predictions against what players did under the two rulesets",
    )
    q.add_argument("id", help="the run's id (or a prefix of it)")
    q.add_argument("--before", metavar="NAME", help="the ruleset before (default: the base's)")
    q.add_argument("--after", metavar="NAME", help="the ruleset after (default: the candidate's)")
    q.add_argument("--json", action="store_true", help="one JSON object per predicted row")
    q.add_argument("--db", help="the store file (default $BALANCE_DB)")
    q.add_argument("--lake", metavar="CATALOG", help="a lake instead (default $BALANCE_LAKE)")
    q.set_defaults(run=resolved(run_check))
    q = lab.add_parser("show", help="one stored lab run with its predicted rows")
    q.add_argument("id", help="the run's id (or a prefix of it)")
    q.add_argument("--json", action="store_true", help="one JSON object per predicted row")
    q.add_argument("--db", help="the store file (default $BALANCE_DB)")
    q.add_argument("--lake", metavar="CATALOG", help="a lake instead (default $BALANCE_LAKE)")
    q.set_defaults(run=resolved(run_show))
    from .lab_worth import register as register_worth

    register_worth(lab)


def resolved(run):
    """`run`, once the shared resolver (storage/where.py) has chosen the store as for every
    command: --db or --lake (both: one line, exit 2), else $BALANCE_LAKE, then $BALANCE_DB,
    else the default file."""

    @functools.wraps(run)
    def chosen_then_run(args) -> int:
        from .commands import where

        chosen = where("lab", args)
        if isinstance(chosen, int):
            return chosen
        args.chosen = chosen
        return run(args)

    return chosen_then_run


def _db(args) -> str:
    from ..storage.where import DEFAULT_DB

    return args.chosen.db or DEFAULT_DB


def _fail(message: str, code: int = INVALID) -> int:
    print(f"balance lab: {message}", file=sys.stderr)
    return code


def _catalog(args) -> str | None:
    """The lake to use, or None for the store file."""
    return args.chosen.lake


def _where(args) -> str:
    return "the lake" if _catalog(args) else _db(args)  # (a catalog string may hold a password)


def _reader(args, table: str):
    """A read connection to the store file or the lake, or None when it has no `table` (no
    store yet, or one made before the table). Raises when it cannot be opened."""
    catalog = _catalog(args)
    if catalog:
        from ..storage.lake import connect

        con = connect(catalog, claims=False)
    else:
        import duckdb

        db = _db(args)
        if not os.path.exists(db):
            return None
        con = duckdb.connect(db, read_only=True)
    found = con.execute(
        "SELECT 1 FROM duckdb_tables() WHERE table_name = ? AND database_name = current_database()",
        [table],
    ).fetchall()
    if not found:
        con.close()
        return None
    return con


def _registered(args):
    """The store's registered rulesets as a lookup (only standard when there is no store, or
    a running server holds the file)."""
    from replays import rulesets as R

    from ..storage import registry

    found: dict[tuple[str, str], R.Ruleset] = {}
    try:
        con = _reader(args, "rulesets")
    except Exception as exc:  # (a file a server holds; a lake that cannot be reached)
        print(f"balance lab: cannot read the registered rulesets of {_where(args)} ({exc}); "
              "only files and standard are known", file=sys.stderr)  # fmt: skip
        con = None
    if con is not None:
        try:
            found = {(r.game, r.name): r for r in registry.load(con)}
        finally:
            con.close()
    return R.chain_lookup(R.builtin_lookup, lambda game, name: found.get((game, name)))


def _ruleset(spec: str, lookup, game: str | None):
    """A ruleset from a TOML file (when `spec` is a file) or a known name."""
    from replays import rulesets as R

    if os.path.isfile(spec):
        with open(spec, "rb") as f:
            return R.parse_toml(f.read(), lookup)
    for g in (game,) if game else R.GAMES:
        ruleset = lookup(g, spec)
        if ruleset is not None:
            return ruleset
    raise R.RulesetError(None, f"no file or registered ruleset {spec!r} (RS5.1)")


def run_run(args) -> int:
    from replays import rulesets as R

    from ..server.lab_runner import Cancelled, LabRun, WorkerDied, parse_levels, play

    levels = parse_levels(args.levels)
    if levels is None:
        return _fail(f"--levels {args.levels!r}: bot levels 1..4, comma-separated")
    if not 1 <= args.games <= MAX_GAMES:
        return _fail(f"--games must be 1..{MAX_GAMES:,}")
    if not 0 <= args.min_effect < 1:
        return _fail("--min-effect is a change of score or share: 0 up to 1")
    db = _db(args)
    lookup = _registered(args)
    try:
        base = _ruleset(args.base, lookup, None)
        candidate = _ruleset(args.candidate, lookup, base.game)
    except R.RulesetError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot read a ruleset file: {exc}")
    if base.game != "slow6" or candidate.game != "slow6":
        return _fail("the lab plays Slow6 only (its bots); both rulesets must be slow6")
    run = LabRun(base, candidate, args.board, args.powers, levels, args.seed, args.games)
    default_dir = Path("balance-lab") if _catalog(args) else Path(db + ".lab")
    run_dir = Path(args.run_dir) if args.run_dir else default_dir
    path = run_dir / f"{run.key}.ndjson"
    import time

    start = time.monotonic()
    try:
        pairs = play(run, path, max(1, args.jobs), _progress())
    except ValueError as exc:
        return _fail(str(exc))
    except OSError as exc:  # a full disk, a run directory that cannot be written
        return _fail(f"cannot keep the run's pairs in {path}: {exc}; those written are kept", 1)
    except WorkerDied:
        kept = _kept(path, run)
        return _fail(f"a worker process died (killed, out of memory?); {kept} of {run.games} "
                     f"pairs kept in {path}: the same command goes on from them", 1)  # fmt: skip
    except Cancelled as exc:
        print(f"\nbalance lab: cancelled; {exc.kept} of {run.games} pairs kept in {path}: the "
              "same command goes on from them", file=sys.stderr)  # fmt: skip
        return CANCELLED
    seconds = time.monotonic() - start
    print(file=sys.stderr)
    from analysis import lab as predictions

    rows = predictions.predict(pairs, powers=run.powers, levels=levels,
                               min_effect=args.min_effect, seed=run.seed)  # fmt: skip
    stored = {
        # (another --min-effect flags other rows: another stored run)
        "id": run.run_id + ("" if args.min_effect == 0.02 else f"-m{args.min_effect:g}"),
        "game": "slow6", "base": base.to_json(),
        "candidate": candidate.to_json(), "board": run.board, "powers": run.powers,
        "levels": list(levels), "games": run.games, "seed": run.seed,
        "engine_version": run.engine_version, "min_effect": args.min_effect,
        "picks_differ": sum(p["base"]["picks"] != p["candidate"]["picks"] for p in pairs),
        "seconds": seconds,
    }  # fmt: skip
    note = _store(args, stored, rows)
    if args.json:
        for row in rows:
            print(json.dumps({k: row[k] for k in _JSON_KEYS}))
    else:
        stored["created_at"] = None
        print(_table(stored, rows))
    print(note, file=sys.stderr)
    if note.startswith("stored"):
        path.unlink(missing_ok=True)  # (the store has it now; the seed plays it again)
        try:
            path.parent.rmdir()  # only when empty: other runs' files stay
        except OSError:
            pass
    return 0


def _kept(path: Path, run) -> int:
    from ..server.lab_runner import read_pairs

    return len(read_pairs(path, run))


_JSON_KEYS = ("family", "row", "base", "candidate", "change", "lo", "hi", "confident")


def _progress():
    tty = sys.stderr.isatty()
    last = [0.0]

    def show(done: int, total: int, rate: float) -> None:
        import time

        now = time.monotonic()
        if not tty and done != total and now - last[0] < 5:
            return
        last[0] = now
        eta = f", about {(total - done) / rate:.0f} s left" if rate > 0 and done < total else ""
        line = f"lab: {done}/{total} pairs ({rate:.1f} pairs/s{eta})"
        print(("\r" + line) if tty else line, end="" if tty else "\n", file=sys.stderr)

    return show


def _store(args, run: dict, rows: list) -> str:
    from ..storage.lab_runs import save

    catalog, where = _catalog(args), _where(args)
    try:
        if catalog:
            from ..storage.lake import connect

            con = connect(catalog, claims=False)
        else:
            from ..storage.store import open_db

            con = open_db(_db(args))
    except Exception as exc:  # (a file a server holds; a lake that cannot be reached)
        return f"not stored: {where} cannot be written ({exc}); the result is above"
    try:
        new = save(con, run, rows)
    except Exception as exc:  # (a lake made before lab_runs: balance lake upgrade)
        hint = " (a lake made before the lab: balance lake upgrade)" if catalog else ""
        return f"not stored in {where} ({exc}){hint}; the result is above"
    finally:
        con.close()
    return f"stored: lab run {run['id']} in {where}" + ("" if new else " (stored already)")


def _fmt(value, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:+.1f}" if unit == "turns" else f"{value:+.3f}"


def _table(run: dict, rows: list) -> str:
    from replays.rulesets import Ruleset

    base, candidate = Ruleset.from_json(run["base"]), Ruleset.from_json(run["candidate"])
    changes = ", ".join(f"{p} {_v(a)} -> {_v(b)}" for p, a, b in candidate.changes_from(base))
    board = f"{run['board']}x{run['board']}, {'powers' if run['powers'] else 'no powers'}"
    out = [
        f"lab run {run['id']}: candidate {candidate.name!r} against base {base.name!r} "
        f"(slow6, {board}), {run['games']} pairs, seed {run['seed']}, engine "
        f"{run['engine_version']}",
        f"what changed: {changes or 'nothing (the same parameters)'}",
        f"players: bots of level {', '.join(map(str, run['levels']))} stand in for players "
        "(each side's level drawn per game); what players would do differently, bots cannot "
        "tell",
        f"picks: the same under both rulesets in {run['games'] - run['picks_differ']} of "
        f"{run['games']} pairs",
        f"95% paired bootstrap intervals; confident: clear of +-{run['min_effect']} "
        "(score, share of games; game length: +-0.5 turns) on at least 30 games or sides (n: the "
        "row's smallest group)",
        "",
        f"{'family':12} {'row':22} {'n':>6} {'base':>8} {'candidate':>10} {'change':>8}  interval",
    ]
    for r in rows:
        interval = (f"[{_fmt(r['lo'], r['unit'])}, {_fmt(r['hi'], r['unit'])}]"
                    if r["lo"] is not None else "-")  # fmt: skip
        plain = r["unit"] == "turns"
        b = "-" if r["base"] is None else (f"{r['base']:.1f}" if plain else f"{r['base']:.3f}")
        c = ("-" if r["candidate"] is None
             else (f"{r['candidate']:.1f}" if plain else f"{r['candidate']:.3f}"))  # fmt: skip
        mark = "  *" if r["confident"] else ""
        out.append(f"{r['family']:12} {r['row']:22} {r['n']:>6} {b:>8} {c:>10} "
                   f"{_fmt(r['change'], r['unit']):>8}  {interval}{mark}")  # fmt: skip
    sure = [f"{r['family']} {r['row']} {_fmt(r['change'], r['unit'])}" for r in rows
            if r["confident"]]  # fmt: skip
    out += ["", "confident changes (*): " + ("; ".join(sure) if sure else "none")]
    return "\n".join(out)


def _v(value) -> str:
    if isinstance(value, list | tuple):
        return "[" + ", ".join(map(str, value)) + "]"
    return "null" if value is None else str(value)


def run_list(args) -> int:
    from ..storage.lab_runs import runs

    db = _where(args)
    try:
        con = _reader(args, "lab_runs")
    except Exception as exc:  # (a store held by a server, a file that is not a store)
        return _fail(f"cannot read {db}: {exc}")
    listing = [] if con is None else runs(con)
    if con is not None:
        con.close()
    if args.json:
        print(json.dumps({"runs": listing}, indent=2))
        return 0
    if not listing:
        print(f"no lab runs in {db}")
    for run in listing:
        if run["id"].startswith("worth-"):
            print(f"{run['id']}  {run['created_at'][:19]}  worth of powers under "
                  f"{run['base']['name']}, bots level {run['levels'][0]}, {run['games']} pairs "
                  f"a power, {run['board']}x{run['board']}, seed {run['seed']}")  # fmt: skip
            continue
        print(f"{run['id']}  {run['created_at'][:19]}  {run['candidate']['name']} vs "
              f"{run['base']['name']}  {run['games']} pairs, {run['board']}x{run['board']}"
              f"{' powers' if run['powers'] else ''}, levels "
              f"{','.join(map(str, run['levels']))}, seed {run['seed']}")  # fmt: skip
    return 0


def run_show(args) -> int:
    from ..storage.lab_runs import run as stored_run

    db = _where(args)
    try:
        con = _reader(args, "lab_runs")
    except Exception as exc:
        return _fail(f"cannot read {db}: {exc}")
    found = None if con is None else stored_run(con, args.id)
    if con is not None:
        con.close()
    if found is None:
        return _fail(f"no stored lab run {args.id!r} (or more than one starts so) in {db}",
                     CANCELLED)  # fmt: skip
    if args.json:
        for row in found["rows"]:
            print(json.dumps({k: row[k] for k in _JSON_KEYS}))
    elif found["id"].startswith("worth-"):
        from .lab_worth import table

        print(table(found, found["rows"]))
    else:
        print(_table(found, found["rows"]))
    return 0


def run_check(args) -> int:
    """The run's predicted rows are its pre-registered hypotheses for the release: only they
    are compared, each with the observed change between the two rulesets' human games."""
    from analysis import lab as predictions

    from ..storage.lab_runs import run as stored_run

    where = _where(args)
    try:
        con = _reader(args, "lab_runs")
    except Exception as exc:
        return _fail(f"cannot read {where}: {exc}")
    if con is None:
        return _fail(f"no stored lab runs in {where}", CANCELLED)
    try:
        found = stored_run(con, args.id)
        if found is None:
            return _fail(f"no stored lab run {args.id!r} (or more than one starts so)", CANCELLED)
        before_name = args.before or found["base"]["name"]
        after_name = args.after or found["candidate"]["name"]
        board, powers = found["board"], found["powers"]
        before = predictions.observed_games(con, before_name, board, powers)
        after = predictions.observed_games(con, after_name, board, powers)
    finally:
        con.close()
    tested = predictions.hypotheses(found["rows"])
    seen = predictions.observe(before, after, powers=powers, board=board, seed=found["seed"],
                               tested=tested)  # fmt: skip
    out = predictions.compare(found["rows"], seen)
    if args.json:
        for r in out:
            print(json.dumps(r))
        return 0
    print(f"lab run {found['id']}: {found['candidate']['name']} against {found['base']['name']}"
          f"; observed: {len(before)} human games under {before_name}, {len(after)} under "
          f"{after_name} ({board}x{board}, {'powers' if powers else 'no powers'}, online and "
          "friend games)")  # fmt: skip
    print(f"The run's {tested} predicted rows are the release's pre-registered hypotheses: only "
          "they are compared here. inside: the observed change lies in the predicted "
          "interval; consistent: the two intervals overlap; missed: the observed interval at "
          f"1 - 0.05/{tested} (Bonferroni over these rows) lies wholly outside the predicted "
          "one.")  # fmt: skip
    print(f"{'family':12} {'row':22} {'predicted':>24} {'observed':>24}  inside  consistent"
          "  missed")  # fmt: skip
    hits = [r["inside"] for r in out if r["inside"] is not None]
    for r in out:
        unit = "turns" if r["family"] == "game_length" else "score"
        p = _interval(r["predicted"], r["predicted_lo"], r["predicted_hi"], unit)
        o = _interval(r["observed"], r["observed_lo"], r["observed_hi"], unit)
        marks = ["-" if r[k] is None else ("yes" if r[k] else "no")
                 for k in ("inside", "consistent", "missed")]  # fmt: skip
        print(f"{r['family']:12} {r['row']:22} {p:>24} {o:>24}  {marks[0]:6}  {marks[1]:10}"
              f"  {marks[2]}")  # fmt: skip
    tally = predictions.record(out)
    print(f"inside: {tally['inside']} of {len(hits)} rows compared; consistent: "
          f"{tally['consistent']} of {tally['compared']}; missed: {tally['missed']}")  # fmt: skip
    return 0


def _interval(value, lo, hi, unit: str) -> str:
    if value is None:
        return "-"
    if lo is None:
        return _fmt(value, unit)
    return f"{_fmt(value, unit)} [{_fmt(lo, unit)}, {_fmt(hi, unit)}]"
