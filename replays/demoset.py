"""The demo dataset: simulated traffic a designer can read, made once and shipped compressed.

`balance simulate --demo-set --seed 2026 --jobs 2 --out ingest/server/demo_data` writes three files
(each from its own seed, so one can be made again alone: `write(..., only=[name])`):

- `slow6.ndjson.gz`: Slow6 games over both boards, every variant, mode and computer level;
- `slide.ndjson.gz`: Slide games over 2..6 players;
- `buggy-client.ndjson.gz`: records from a client build with a bug (`BUGGY_VERSION`): some
  valid, some breaking a rule in one of a few ways (a move that no piece may make, a piece
  moved into its own side's piece, a move of the opponent's piece, a wrong result, a Slide
  take out of turn...), and a few malformed lines (a cut line, a bad square, a missing field);
- `playtest.ndjson.gz`: a few uploads of a play-test build (`PLAYTEST_VERSION`) whose games
  name a ruleset nobody registered (`PLAYTEST_FILE`): quarantined as RS5.1 until an operator
  registers it (`balance rules add`) and runs `balance reverify`.

The balance patch: release `PATCH_VERSION` (3.1.0, the last two weeks) changed the rules. Its
Slow6 games play the ruleset of `PATCH_FILE` (shipped beside the data; `balance serve --demo`
registers it before loading), so the Versions page shows what the patch did. `patch_release`
plays only those games (`balance simulate --demo-patch --out DIR` patches a made dataset in
place, in minutes, where the whole set takes a quarter of an hour).

Every client version carries the build label `+sim`, so a simulated game says so wherever its
version shows (filters, tables, the explorer, SQL). Dates fall in the `WEEKS` weeks before
`EPOCH`, and versions follow a release calendar: a game is played on a build released by its
date, mostly the newest. Deterministic for a seed whatever `jobs` is: the games are made in
chunks, each from its own seed. Bots: people play as levels 0..2, the computer opponent at its
level up to 3 (level 4 plays as 3: it would take hours).
"""

from __future__ import annotations

import gzip
import random
from collections.abc import Callable, Collection, Iterable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import orjson

from .rulesets import Ruleset
from .verdict import Record

SIM = "+sim"
# (version, first day it is played, relative weight while it is among the newest): day 0 is
# the first day of the window. 3.1.0-beta.2 is a pre-release a few testers run.
RELEASES = (
    ("2.4.0" + SIM, 0, 1.0),
    ("2.5.0" + SIM, 14, 1.0),
    ("2.5.3" + SIM, 28, 1.0),
    ("3.0.0" + SIM, 45, 1.0),
    ("3.1.0-beta.2" + SIM, 63, 0.12),
)
# an Android beta build that uploads some games its rules got wrong (a pre-release: the default
# balance cut, the newest release with enough games, is not about it)
BUGGY_VERSION = "3.1.0-beta.3" + SIM
BUGGY_PLATFORM = "android"
BUGGY_FROM_DAY = 70
WEEKS = 13
SLOW6_GAMES = 20_400
SLIDE_GAMES = 5_200
BUGGY_SLOW6 = 600
BUGGY_SLIDE = 120
CHUNK = 200  # games per seeded chunk
FILES = ("slow6.ndjson.gz", "slide.ndjson.gz", "buggy-client.ndjson.gz", "playtest.ndjson.gz")
# The balance patch: release 3.1.0 ships on PATCH_FROM_DAY with a ruleset of its own. Most
# 3.0.0 players update (PATCH_SHARE of the 3.0.0 games from that day on become 3.1.0 games,
# played again under PATCH_FILE's rules); the rest of the dataset is as it was made.
PATCH_BASE = "3.0.0" + SIM
PATCH_VERSION = "3.1.0" + SIM
PATCH_FROM_DAY = 66
PATCH_SHARE = 0.8
PATCH_FILE = "patch-3.1.toml"
# a play-test build of the next release, naming a ruleset that was never registered (RS5.1)
PLAYTEST_VERSION = "3.2.0-beta.1" + SIM
PLAYTEST_FILE = "playtest-3.2.toml"
PLAYTEST_GAMES = 30
PLAYTEST_FROM_DAY = 84  # its first day
# what a game without powers never meets (R8): a ruleset changing only these is played the
# same in it, so such a game is the same game under the patch and needs no new play
POWER_PARAMS = frozenset(
    {"powers", "picks", "dash_reach", "leap_reach", "freeze_turns", "trap_turns", "surge_rest"}
)
SLIDE_PLAYERS = ((2, 30), (3, 20), (4, 30), (5, 10), (6, 10))


def _epoch() -> datetime:
    from .slow6.simulate import EPOCH

    return EPOCH


def _when(rng: random.Random, first_day: int = 0) -> datetime:
    """A time in the window (from `first_day` on); the newer days a little busier."""
    days = WEEKS * 7
    while True:
        day = rng.uniform(first_day, days)
        if rng.random() < 0.7 + 0.3 * day / days:
            break
    return _epoch() - timedelta(days=days) + timedelta(seconds=int(day * 86400))


def _version(rng: random.Random, when: datetime) -> str:
    """The build a game on this date was played on: the newest release by then, often one of
    the two before it (people update late)."""
    day = (when - (_epoch() - timedelta(days=WEEKS * 7))).total_seconds() / 86400
    out = [(v, w) for v, start, w in RELEASES if start <= day]
    releases = [v for v, w in out if w == 1.0]
    weights = [0.6, 0.25, 0.15][: len(releases)]
    choices = list(reversed(releases))[: len(weights)]
    pre = [(v, w) for v, w in out if w != 1.0]
    if pre:
        choices += [v for v, _ in pre]
        weights += [w for _, w in pre]
    return rng.choices(choices, weights)[0]


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def slow6_chunk(seed: int, count: int) -> list[bytes]:
    from .slow6.simulate import PLATFORMS, QUIT_RATE, _weighted, random_game_settings
    from .slow6.simulate import simulate_game as play

    rng = random.Random(seed)
    out = []
    for _ in range(count):
        settings = random_game_settings(rng)
        levels = list(min(lv, 2) for lv in settings["levels"])
        ai = settings["ai"]
        if ai:  # the computer plays at its own level (4 as 3: see the module's text)
            levels[ai["side"]] = min(ai["level"], 3)
        settings["levels"] = tuple(levels)
        when = _when(rng)
        client = {"platform": _weighted(rng, PLATFORMS), "version": _version(rng, when)}
        record = play(rng, quit_rate=QUIT_RATE, client=client, ended_at=_stamp(when), **settings)
        out.append(orjson.dumps(record))
    return out


def slide_chunk(seed: int, count: int) -> list[bytes]:
    from .slide import simulate as slide

    rng = random.Random(seed)
    out: list[bytes] = []
    while len(out) < count:
        players = rng.choices([p for p, _ in SLIDE_PLAYERS], [w for _, w in SLIDE_PLAYERS])[0]
        when = _when(rng)
        games = slide._table(rng, players, "mixed", when, as_match=rng.random() < 0.2)
        version = _version(rng, when)
        for i, g in enumerate(games):  # a match's games follow each other
            g["client"]["version"] = version
            g["ended_at"] = _stamp(when + timedelta(minutes=12 * i))
            out.append(orjson.dumps(g))
    return out


def _chunks(total: int, seed: int, salt: int) -> list[tuple[int, int]]:
    return [(seed * 1_000_003 + salt * 10_007 + i, min(CHUNK, total - i * CHUNK))
            for i in range((total + CHUNK - 1) // CHUNK)]  # fmt: skip


def _run(
    fn: Callable[[int, int], list[bytes]],
    chunks: list[tuple[int, int]],
    jobs: int,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[bytes]:
    if jobs <= 1:
        for i, (s, n) in enumerate(chunks, 1):
            yield from fn(s, n)
            if progress:
                progress(i, len(chunks))
        return
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs) as pool:
        futures = [pool.submit(fn, s, n) for s, n in chunks]
        for i, f in enumerate(futures, 1):
            yield from f.result()
            if progress:
                progress(i, len(chunks))


# -- the balance patch and the play-test build ---------------------------------------------------


def ruleset_file(folder: str | Path, name: str, *known: Ruleset) -> Ruleset:
    """A ruleset shipped with the demo data, in the dataset's folder (`based_on` one of
    `known`, or standard)."""
    from .rulesets import parse_toml

    def lookup(game: str, base: str) -> Ruleset | None:
        return next((r for r in known if (r.game, r.name) == (game, base)), None)

    return parse_toml((Path(folder) / name).read_bytes(), lookup)


def _replay_under(record: Record, rules: Ruleset) -> Record:
    """The same game (id, players' seats, mode, board, computer, challenge, client, time) played
    again by the bots under `rules`, from a generator seeded by its id (the same every time)."""
    from .slow6.simulate import HUMAN_LEVELS, QUIT_RATE, _weighted
    from .slow6.simulate import simulate_game as play

    rng = random.Random(record["game_id"])
    levels = [min(_weighted(rng, HUMAN_LEVELS), 2) for _ in range(2)]
    ai = record["ai"]
    if ai:  # the computer plays at its own level (4 as 3: see the module's text)
        levels[ai["side"]] = min(ai["level"], 3)
    rules_of = record["rules"]
    challenge = record.get("challenge")
    out = play(
        rng, board=rules_of["board"], powers=rules_of["powers"], hidden=rules_of["hidden"],
        mode=record["mode"], levels=(levels[0], levels[1]), ai=ai,
        challenge_id=challenge["id"] if challenge else None, quit_rate=QUIT_RATE,
        client=record["client"], ended_at=record["ended_at"], rules=rules,
    )  # fmt: skip
    out["game_id"] = record["game_id"]
    return out


def _updated(record: Record) -> bool:
    """Whether this game's player had updated to the patch release by then (by its id: the
    same answer every time; a game already on it stays)."""
    version = record["client"]["version"]
    if version == PATCH_VERSION:
        return True
    if version != PATCH_BASE or record.get("game") != "slow6":
        return False
    start = _epoch() - timedelta(days=WEEKS * 7) + timedelta(days=PATCH_FROM_DAY)
    ended = datetime.strptime(record["ended_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=start.tzinfo)
    return ended >= start and random.Random(record["game_id"] + "update").random() < PATCH_SHARE


def patch_release(lines: Iterable[bytes], rules: Ruleset) -> Iterator[bytes]:
    """The dataset with its patch release: the Slow6 games of players who updated
    (`_updated`) as `PATCH_VERSION` games played under `rules` (the rest as they are). A game
    without powers is relabelled when the ruleset changes only power parameters (it plays the
    same); every other game is played again (`_replay_under`)."""
    from .rulesets import STANDARD

    power_only = {p for p, _, _ in rules.changes_from(STANDARD["slow6"])} <= POWER_PARAMS
    for line in lines:
        record = orjson.loads(line)
        if not _updated(record):
            yield line
            continue
        record["client"] = {**record["client"], "version": PATCH_VERSION}
        if power_only and not record["rules"]["powers"]:
            record = {**record, "ruleset": rules.name}
        else:
            record = _replay_under(record, rules)
        yield orjson.dumps(record)


def playtest(seed: int, rules: Ruleset) -> list[bytes]:
    """The play-test build's uploads: Slow6 games with powers, online, played under `rules`
    (which the demo never registers: each is RS5.1 until an operator does)."""
    from .slow6.simulate import simulate_game as play

    rng = random.Random(seed)
    out = []
    for _ in range(PLAYTEST_GAMES):
        when = _when(rng, PLAYTEST_FROM_DAY)
        client = {"platform": "ios", "version": PLAYTEST_VERSION}
        levels = (rng.choice((1, 2)), rng.choice((1, 2)))
        record = play(
            rng, board=5, powers=True, mode="online", levels=levels, client=client,
            ended_at=_stamp(when), rules=rules,
        )  # fmt: skip
        out.append((record["ended_at"], orjson.dumps(record)))
    return [line for _, line in sorted(out)]


def patch(out_dir: str | Path, seed: int = 2026, echo: Callable[[str], object] = print) -> None:
    """Patch a made dataset in place: the patch release's Slow6 games of `slow6.ndjson.gz`
    played under its ruleset (again: the same games), and `playtest.ndjson.gz` made again."""
    out_dir = Path(out_dir)
    src = out_dir / FILES[0]
    with gzip.open(src, "rb") as f:
        lines = [line.rstrip(b"\n") for line in f if line.strip()]
    patched = ruleset_file(out_dir, PATCH_FILE)
    _write(src, patch_release(lines, patched))
    echo(f"patched {src}: {PATCH_VERSION} plays {PATCH_FILE}")
    path = out_dir / FILES[3]
    tested = ruleset_file(out_dir, PLAYTEST_FILE, patched)
    _write(path, iter(playtest(seed * 1_000_003 + 4, tested)))
    echo(f"wrote {path}")


def _write(path: Path, lines: Iterator[bytes]) -> None:
    tmp = path.with_suffix(".tmp")
    # mtime=0: the same seed gives the same bytes
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        for line in lines:
            gz.write(line + b"\n")
    tmp.replace(path)


# -- the buggy client --------------------------------------------------------------------------


def _break_slow6(rng: random.Random, record: Record) -> Record | None:
    """The record with one of the client's bugs in it (None when this game gives no chance)."""
    from .slow6.frames import frames

    kind = rng.choices(["move", "own", "theirs", "result", "after"], [35, 20, 15, 20, 10])[0]
    turns = record["turns"]
    if kind == "result":
        r = record["result"]
        if r["winner"] is None or r["reason"] in ("timeout", "resign"):
            return None
        r["winner"] = 1 - r["winner"]
        return record
    if kind == "after":
        if record["result"]["reason"] in ("timeout", "resign") or not turns:
            return None
        turns.append(dict(turns[-1]))
        return record
    if len(turns) < 4:
        return None
    k = rng.randrange(2, len(turns))
    board = frames({**record, "turns": turns[:k]})["frames"][-1]
    n = record["rules"]["board"]
    side = board["to_move"]
    files = "abcdefg"[:n]
    mine = [p["square"] for p in board["pieces"] if p["side"] == side]
    theirs = [p["square"] for p in board["pieces"] if p["side"] != side]
    if not mine or not theirs:
        return None

    def near(sq: str, dist: int) -> list[str]:
        f, r = files.index(sq[0]), int(sq[1:]) - 1
        return [f"{files[f + dx]}{r + dy + 1}"
                for dx in range(-dist, dist + 1) for dy in range(-dist, dist + 1)
                if (dx or dy) and 0 <= f + dx < n and 0 <= r + dy < n]  # fmt: skip

    frm = rng.choice(theirs if kind == "theirs" else mine)
    if kind == "own":
        targets = [s for s in near(frm, 1) if s in mine]
    else:
        targets = [s for s in near(frm, 3) if s not in mine]
    if not targets:
        return None
    turns[k] = {"moves": [f"{frm}-{rng.choice(targets)}"]}
    return record


def _break_slide(rng: random.Random, record: Record) -> Record | None:
    kind = rng.choice(["takes", "slide", "score"])
    rounds = record["rounds"]
    i = rng.randrange(1, len(rounds))
    if kind == "takes":
        takes = rounds[i]["takes"]
        if len(set(takes)) < 2:
            return None
        rounds[i]["takes"] = list(reversed(takes))
    elif kind == "slide":
        rounds[i]["slides"][0]["side"] = rng.choice(["left", "right", "top", "bottom"])
    else:
        record["result"]["scores"][0] += 1
    return record


# (line, its record) -> the line spoiled
MALFORMED: tuple[Callable[[bytes, Record], bytes], ...] = (
    lambda line, rec: line[: len(line) // 2],  # the upload cut off
    lambda line, rec: orjson.dumps({**rec, "turns": [{"moves": ["h9-a1"]}, *rec["turns"][1:]]}),
    lambda line, rec: orjson.dumps({k: v for k, v in rec.items() if k != "result"}),
    lambda line, rec: orjson.dumps({**rec, "ended_at": "30/11/2026 18:04"}),
)


def buggy_client(seed: int) -> list[bytes]:
    """The buggy build's uploads, in upload order: valid ones, ones that break a rule (each
    checked to break one), and a few malformed lines."""
    from .slide import simulate as slide
    from .verifier import check_text

    rng = random.Random(seed)
    out: list[tuple[str, bytes]] = []
    while len(out) < BUGGY_SLOW6:
        from .slow6.simulate import random_game_settings
        from .slow6.simulate import simulate_game as play

        settings = random_game_settings(rng)
        settings["levels"] = tuple(min(lv, 2) for lv in settings["levels"])
        when = _when(rng, BUGGY_FROM_DAY)
        client = {"platform": BUGGY_PLATFORM, "version": BUGGY_VERSION}
        record = play(rng, quit_rate=0.06, client=client, ended_at=_stamp(when), **settings)
        if rng.random() < 0.45:
            bad = _break_slow6(rng, orjson.loads(orjson.dumps(record)))
            if bad is None or check_text(orjson.dumps(bad))[1].verdict != "invalid":
                continue
            record = bad
        out.append((record["ended_at"], orjson.dumps(record)))
    slides = 0
    while slides < BUGGY_SLIDE:
        when = _when(rng, BUGGY_FROM_DAY)
        (game,) = slide._table(rng, rng.randrange(2, 7), "mixed", when, as_match=False)
        game["client"] = {"platform": BUGGY_PLATFORM, "version": BUGGY_VERSION}
        game["ended_at"] = _stamp(when)
        if rng.random() < 0.3:
            bad = _break_slide(rng, orjson.loads(orjson.dumps(game)))
            if bad is None or check_text(orjson.dumps(bad))[1].verdict != "invalid":
                continue
            game = bad
        out.append((game["ended_at"], orjson.dumps(game)))
        slides += 1
    out.sort()
    lines = [line for _, line in out]
    slow6 = [i for i, line in enumerate(lines) if b'"game":"slow6"' in line]
    for at, spoil in zip(rng.sample(slow6, 3 * len(MALFORMED)), MALFORMED * 3, strict=True):
        lines[at] = spoil(lines[at], orjson.loads(lines[at]))  # twelve malformed lines
    return lines


def write(
    out_dir: str | Path,
    seed: int = 2026,
    jobs: int = 1,
    echo: Callable[[str], object] = print,
    only: Collection[str] | None = None,
) -> list[Path]:
    """Make the four files in `out_dir` (or those named in `only`); returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    def progress(label: str) -> Callable[[int, int], None]:
        def show(i: int, total: int) -> None:
            if i == total or i % 10 == 0:
                echo(f"  {label}: {i}/{total} chunks")

        return show

    patched = ruleset_file(out_dir, PATCH_FILE)
    tested = ruleset_file(out_dir, PLAYTEST_FILE, patched)
    parts: list[tuple[str, Callable[[], Iterator[bytes]]]] = [
        (FILES[0], lambda: patch_release(_run(slow6_chunk, _chunks(SLOW6_GAMES, seed, 1), jobs,
                                              progress("Slow6")), patched)),
        (FILES[1], lambda: _run(slide_chunk, _chunks(SLIDE_GAMES, seed, 2), jobs,
                                progress("Slide"))),
        (FILES[2], lambda: iter(buggy_client(seed * 1_000_003 + 3))),
        (FILES[3], lambda: iter(playtest(seed * 1_000_003 + 4, tested))),
    ]  # fmt: skip
    paths = []
    for name, make in parts:
        if only is not None and name not in only:
            continue
        path = out_dir / name
        _write(path, make())
        echo(f"wrote {path}")
        paths.append(path)
    return paths
