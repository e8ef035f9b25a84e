"""`balance verify` and `balance simulate`."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import orjson

from replays.vocabulary import BOARDS, GAMES

if TYPE_CHECKING:
    from replays.rulesets import Ruleset


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("verify", help="verify JSON or NDJSON upload records, one verdict line each")
    p.add_argument("files", nargs="*", metavar="FILE", help="a file of records, or - for stdin")
    p.add_argument(
        "--rules",
        nargs="+",
        action="extend",
        default=[],
        metavar="RULESET.toml",
        help="ruleset files (rulesets.md RS4.1) to judge records under, besides standard; they "
        "may be based_on each other in any order (the records may follow them)",
    )
    p.set_defaults(run=run_verify)

    p = sub.add_parser("simulate", help="write simulated, valid schema-1 records as NDJSON")
    p.add_argument("--game", choices=GAMES, default="slow6")
    p.add_argument("--games", type=int, default=100, metavar="N")
    p.add_argument("--board", type=int, choices=BOARDS, help="Slow6 board (default: a mix)")
    p.add_argument("--powers", action="store_true", default=None, help="Slow6 with powers")
    p.add_argument("--no-powers", dest="powers", action="store_false", help="Slow6 without powers")
    p.add_argument("--hidden", action="store_true", default=None, help="hidden variant")
    p.add_argument("--no-hidden", dest="hidden", action="store_false")
    p.add_argument("--players", type=int, default=4, help="Slide players, 2..6")
    p.add_argument(
        "--rules",
        nargs="+",
        action="extend",
        default=[],
        metavar="RULESET.toml",
        help="play under this ruleset (the last file; earlier ones are what it may be "
        "based_on); each record names it",
    )
    p.add_argument("--max-level", type=int, default=4, choices=range(0, 5),
                   help="strongest Slow6 bot used (lower is faster)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", metavar="FILE", help="output file (default: stdout)")
    p.add_argument(
        "--demo-set",
        action="store_true",
        help="write the demo dataset (replays/demoset.py) into the folder --out",
    )
    p.add_argument(
        "--demo-patch",
        action="store_true",
        help="patch the demo dataset in the folder --out: only its patched release's Slow6 "
        "games played again under the patch's ruleset, and the play-test uploads",
    )
    p.add_argument("--jobs", type=int, default=1, help="processes for --demo-set")
    p.set_defaults(run=run_simulate)


def read_records(files: Iterable[str]) -> Iterator[bytes]:
    """Yield the text of each record: a file holding one JSON document (an object, or an
    array of objects), or NDJSON, one record a line."""
    for name in files:
        data = sys.stdin.buffer.read() if name == "-" else open(name, "rb").read()
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict):
            yield data
        elif isinstance(doc, list):
            for item in doc:
                yield orjson.dumps(item)
        else:
            for line in data.splitlines():
                if line.strip():
                    yield line


def split_rules(rules: list[str], files: list[str]) -> tuple[list[str], list[str]]:
    """`--rules a.toml b.toml records.ndjson`: argparse gives every name after --rules to it;
    the records are the names from the first one that holds records (JSON: an object or an
    array of objects, or NDJSON), or is - (standard input)."""
    if files or not rules:
        return rules, files
    for i, name in enumerate(rules):
        if name == "-" or _holds_records(name):
            return rules[:i], rules[i:]
    return rules, files


def _holds_records(name: str) -> bool:
    """Whether a file starts as JSON records do ({, or [ then { or ]); a TOML file starts with a
    key, a comment or a [table] header."""
    try:
        with open(name, "rb") as f:
            head = f.read(512).lstrip()
    except OSError:
        return False  # (reported when read as a ruleset file)
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:].lstrip()
    return head.startswith(b"{") or (
        head.startswith(b"[") and head[1:].lstrip()[:1] in (b"{", b"]")
    )


def load_rules(names: list[str]) -> dict[tuple[str, str], Ruleset]:
    """Parse ruleset files (based_on each other in any order); exits 2 naming the fault."""
    from .rulesets import RulesetError, parse_files

    texts = {}
    for name in names:
        try:
            texts[name] = open(name, "rb").read()
        except OSError as e:
            raise SystemExit(f"balance: cannot read ruleset file {name}: {e.strerror}") from None
    try:
        return parse_files(texts)
    except RulesetError as e:
        where = f" (parameter {e.param})" if e.param else ""
        print(f"balance: invalid ruleset{where}: {e.message}", file=sys.stderr)
        raise SystemExit(2) from None


def run_verify(args: argparse.Namespace) -> int:
    from .rulesets import chain_lookup
    from .verifier import check_text

    rule_files, files = split_rules(args.rules, args.files)
    if not files:
        print("balance verify: name the files of records (or - for stdin)", file=sys.stderr)
        return 2
    known = load_rules(rule_files)
    lookup = chain_lookup(lambda game, name: known.get((game, name))) if known else None
    out = sys.stdout
    all_valid = True
    try:
        for text in read_records(files):
            _, verdict = check_text(text, lookup)
            all_valid &= verdict.ok
            out.write(orjson.dumps(verdict.as_dict()).decode() + "\n")
        out.flush()
    except BrokenPipeError:  # `balance verify ... | head`: the reader has gone, so stop quietly
        sys.stderr.close()
        return 1
    return 0 if all_valid else 1


class Progress:
    """A one-line progress bar on standard error, only when it is a terminal."""

    def __init__(self, total: int):
        self.total = total
        self.on = sys.stderr.isatty()
        self.start = time.perf_counter()
        self.shown = 0.0

    def update(self, done: int) -> None:
        now = time.perf_counter()
        if not self.on or (now - self.shown < 0.1 and done < self.total):
            return
        self.shown = now
        width = 30
        filled = width * done // max(self.total, 1)
        rate = done / max(now - self.start, 1e-9)
        bar = "#" * filled + "." * (width - filled)
        sys.stderr.write(f"\r[{bar}] {done}/{self.total} games, {rate:.0f}/s")
        if done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def run_simulate(args: argparse.Namespace) -> int:
    if args.demo_set or args.demo_patch:
        flag = "--demo-set" if args.demo_set else "--demo-patch"
        if not args.out:
            print(f"balance simulate {flag}: name the folder with --out", file=sys.stderr)
            return 2
        from .demoset import patch, write

        echo = lambda s: print(s, flush=True)  # noqa: E731
        if args.demo_patch:
            patch(args.out, seed=args.seed, echo=echo)
        else:
            write(args.out, seed=args.seed, jobs=args.jobs, echo=echo)
        return 0
    rules = None
    if args.rules:
        known = load_rules(args.rules)
        last = open(args.rules[-1], "rb").read()
        from .rulesets import chain_lookup, parse_toml

        rules = parse_toml(last, chain_lookup(lambda game, name: known.get((game, name))))
        if rules.game != args.game:
            print(
                f"balance simulate: ruleset {rules.name} is for {rules.game}, not {args.game} "
                "(--game)",
                file=sys.stderr,
            )
            return 2
    if args.game == "slide":
        from .slide.simulate import simulate_games as slide_games

        games = slide_games(args.games, args.players, args.seed, rules=rules)
    else:
        from .slow6.simulate import simulate_games

        if args.hidden and args.powers:
            print("balance simulate: the hidden variant has no powers", file=sys.stderr)
            return 2
        games = simulate_games(
            args.games, board=args.board, powers=args.powers, hidden=args.hidden,
            seed=args.seed, max_level=args.max_level, rules=rules,
        )  # fmt: skip
    out = open(args.out, "wb") if args.out else sys.stdout.buffer
    progress = Progress(args.games)
    try:
        for i, record in enumerate(games, 1):
            out.write(orjson.dumps(record) + b"\n")
            progress.update(i)
    finally:
        if args.out:
            out.close()
        else:
            out.flush()
    return 0
