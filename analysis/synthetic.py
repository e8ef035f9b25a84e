"""Synthetic store rows with realistic distributions and known, planted effects.

These are rows of the store tables written straight into DuckDB, not legal games: no replay
produced them. They exist to test that the jobs count exactly and recover planted effects, and
to benchmark the jobs at a million games (the simulator plays ~100 games a second, far too few).

The result of a game follows a logistic model on the difference between the two sides:
    logit P(side 0 wins | not a draw) = first_effect * (+1 if side 0 moved first else -1)
        + sum over powers of effect * (side 0 picked it - side 1 picked it)
        + lineup_effects[lineup_0] - lineup_effects[lineup_1]
        + (computer games) ai level effect for the computer's side
so every planted effect is known exactly in log-odds, and `expected_score` gives each side's
expected score, from which a calibration computes the true size of any score-rate effect.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

import duckdb
import numpy as np
import polars as pl
from scipy.special import expit

from ingest import storage
from replays.vocabulary import POWERS

# Weighted tables: the names are replays/vocabulary.py's (tests/replays/test_vocabulary.py
# holds them).
MODES = (("online", 45), ("friend", 15), ("computer", 25), ("challenge", 8), ("tutorial", 7))
PLATFORMS = (("ios", 35), ("android", 35), ("web", 15), ("desktop", 10), ("bot", 5))
VERSIONS = (("2.4.0", 10), ("2.5.0", 15), ("2.5.3", 25), ("3.0.0", 35), ("3.1.0-beta.2", 15))
REASONS_DECISIVE = (("home", 20), ("wipeout", 40), ("points", 32), ("timeout", 4), ("resign", 4))
REASONS_DRAW = (("points", 80), ("wipeout", 20))
TURN_LIMIT = {5: 15, 7: 21}
EPOCH = dt.datetime(2026, 11, 30)


@dataclass
class Plan:
    """What to generate. Effects are log-odds; 0 everywhere = no effect."""

    n: int = 10_000
    seed: int = 0
    days: int = 90
    p_board7: float = 0.25
    p_hidden: float = 0.15
    p_powers: float = 0.55  # of the games that are not hidden
    modes: tuple = MODES
    versions: tuple = VERSIONS
    draw_rate: float = 0.05
    first_effect: float = 0.15
    power_effects: dict[str, float] = field(default_factory=dict)
    lineup_effects: dict[str, float] = field(default_factory=dict)
    ai_level_effects: tuple[float, ...] = (-0.6, -0.2, 0.2, 0.6)  # levels 1..4, computer side
    pick_weights: dict[str, float] = field(default_factory=dict)  # popularity, default 1
    first_pick_bias: dict[str, float] = field(
        default_factory=dict
    )  # log-weight for the first mover
    challenge_ids: int = 40
    # per client version, added to first_effect / power_effects for that version's games (a
    # version that changed balance); empty: every version plays the same game
    version_first_effect: dict[str, float] = field(default_factory=dict)
    version_power_effects: dict[str, dict[str, float]] = field(default_factory=dict)


def _choice(rng, table, n):
    values = np.array([v for v, _ in table])
    w = np.array([w for _, w in table], dtype=float)
    return values[rng.choice(len(values), size=n, p=w / w.sum())]


def _version(rng, plan: Plan, n: int, drawn) -> np.ndarray:
    own = _choice(rng, plan.versions, n)  # drawn always: the rest of the stream stays the same
    return own if drawn is None else drawn


def _lineups(rng, board: np.ndarray) -> tuple[pl.Series, np.ndarray]:
    """A uniformly random permutation of 1..N per game: as text ('31524') and as a matrix
    of ranks by file (7 columns, 0 past the board's edge)."""
    ranks = np.zeros((len(board), 7), dtype=np.uint8)
    for n in (5, 7):
        idx = np.flatnonzero(board == n)
        ranks[idx, :n] = np.argsort(rng.random((len(idx), n)), axis=1) + 1
    digits = pl.DataFrame({str(f): ranks[:, f] for f in range(7)}).select(
        pl.concat_str([pl.col(str(f)).cast(pl.String).replace("0", "") for f in range(7)])
    )
    return digits.to_series().alias("lineup"), ranks


def _picks(rng, has_powers, log_w_side):
    """Three different powers per side (Gumbel top-3 of the log popularity)."""
    keys = log_w_side + rng.gumbel(size=log_w_side.shape)
    top = np.argsort(-keys, axis=1)[:, :3]
    picked = np.zeros(log_w_side.shape, dtype=bool)
    np.put_along_axis(picked, top, True, axis=1)
    picked[~has_powers] = False
    return picked


def generate(plan: Plan, games_only: bool = False) -> dict[str, pl.DataFrame]:
    """Frames `games`, `pieces`, `powers`, `turns`, keyed by the game index `gi` (only `games`
    when `games_only`: enough to calibrate expected scores)."""
    rng = np.random.default_rng(plan.seed)
    n = plan.n
    gi = np.arange(n, dtype=np.int64)
    board = np.where(rng.random(n) < plan.p_board7, 7, 5).astype(np.uint8)
    hidden = rng.random(n) < plan.p_hidden
    powers = ~hidden & (rng.random(n) < plan.p_powers)
    mode = _choice(rng, plan.modes, n)
    tutorial = mode == "tutorial"
    board[tutorial], hidden[tutorial], powers[tutorial] = 5, False, False
    variant = np.where(hidden, "hidden", np.where(powers, "powers", "classic"))
    computer = mode == "computer"
    ai_side = np.where(computer, rng.integers(0, 2, n), -1)
    ai_level = np.where(computer, rng.integers(1, 5, n), -1)
    challenge = mode == "challenge"
    cid = np.array([f"set-{i:03d}" for i in range(1, plan.challenge_ids + 1)])
    challenge_id = np.where(challenge, cid[rng.integers(0, len(cid), n)], "")
    first = rng.integers(0, 2, n).astype(np.uint8)
    (lineup0, ranks0), (lineup1, ranks1) = _lineups(rng, board), _lineups(rng, board)

    # power picks: popularity, plus a bias for the side that moves first (confounding)
    log_w = np.log(np.array([plan.pick_weights.get(p, 1.0) for p in POWERS]))
    bias = np.array([plan.first_pick_bias.get(p, 0.0) for p in POWERS])
    picks = []
    for s in (0, 1):
        lw = np.tile(log_w, (n, 1)) + np.outer(first == s, bias)
        picks.append(_picks(rng, powers, lw))

    # the planted outcome model
    eff = np.array([plan.power_effects.get(p, 0.0) for p in POWERS])
    eta = plan.first_effect * np.where(first == 0, 1.0, -1.0)
    eta = eta + (picks[0].astype(float) - picks[1]) @ eff
    version = None
    if plan.version_first_effect or plan.version_power_effects:
        # the version must be known before the result: drawn from its own stream, so the
        # games of a plan without version effects stay exactly what they were
        version = _choice(np.random.default_rng([plan.seed, 1]), plan.versions, n)
        for v, extra in plan.version_first_effect.items():
            eta = eta + np.where(version == v, extra * np.where(first == 0, 1.0, -1.0), 0.0)
        for v, effects in plan.version_power_effects.items():
            d = np.array([effects.get(p, 0.0) for p in POWERS])
            eta = eta + np.where(version == v, (picks[0].astype(float) - picks[1]) @ d, 0.0)
    if plan.lineup_effects:
        for s_, lu in ((1.0, lineup0), (-1.0, lineup1)):
            le = lu.replace_strict(plan.lineup_effects, default=0.0, return_dtype=pl.Float64)
            eta = eta + s_ * le.to_numpy()
    lvl = np.array((0.0,) + tuple(plan.ai_level_effects))
    eta = eta + np.where(computer, lvl[np.maximum(ai_level, 0)] * np.where(ai_side == 0, 1, -1), 0)
    p0 = expit(eta)
    draw = rng.random(n) < plan.draw_rate
    winner = np.where(draw, -1, np.where(rng.random(n) < p0, 0, 1))

    reason = np.where(
        draw, _choice(rng, REASONS_DRAW, n), _choice(rng, REASONS_DECISIVE, n)
    ).astype(object)
    limit = np.where(board == 7, 21, 15)
    turns = np.where(
        reason == "points",
        2 * limit,
        rng.integers(6, 2 * limit, n),
    )
    quit_ = (reason == "timeout") | (reason == "resign")
    turns = np.where(quit_, rng.integers(1, 2 * limit - 1, n), turns).astype(np.int64)
    # R6.4: after a timeout / resignation the side to move is the loser (never a draw here)
    wrong = quit_ & ((first + turns) % 2 != 1 - winner)
    turns = np.where(wrong, turns + 1, turns)
    seconds = rng.integers(0, plan.days * 86400, n)
    ended_at = np.datetime64(EPOCH) - seconds.astype("timedelta64[s]")
    received_at = ended_at + rng.integers(1, 600, n).astype("timedelta64[s]")

    games = pl.DataFrame(
        {
            "gi": gi,
            "board": board,
            "powers": powers,
            "hidden": hidden,
            "variant": variant,
            "mode": mode,
            "ai_side": pl.Series(ai_side).replace(-1, None).cast(pl.UInt8),
            "ai_level": pl.Series(ai_level).replace(-1, None).cast(pl.UInt8),
            "challenge_id": pl.Series(challenge_id).replace("", None),
            "platform": _choice(rng, PLATFORMS, n),
            "client_version": _version(rng, plan, n, version),
            "first": first,
            "lineup_0": lineup0,
            "lineup_1": lineup1,
            "winner": pl.Series(winner).replace(-1, None).cast(pl.UInt8),
            "reason": pl.Series(reason, dtype=pl.String),
            "turns": turns.astype(np.uint16),
            "ended_at": ended_at,
            "received_at": received_at,
            "p0": p0,  # the model's P(side 0 wins | not a draw): for calibration only
        }
    )
    pw = np.array(POWERS)
    for s in (0, 1):
        rows, cols = np.nonzero(picks[s])
        by_game = pl.DataFrame({"gi": rows, "power": pw[cols]}).group_by("gi", maintain_order=True)
        lists = by_game.agg(pl.col("power").alias(f"powers_{s}"))
        games = games.join(lists, on="gi", how="left")
    games = games.with_columns(
        pl.col("powers_0", "powers_1").fill_null(pl.lit([], dtype=pl.List(pl.String)))
    ).with_columns(
        pl.when(pl.col("powers")).then(pl.col(c)).otherwise(None).alias(c)
        for c in ("powers_0", "powers_1")
    )
    if games_only:
        return {"games": games}
    pieces = _pieces(rng, games, ranks0, ranks1)
    powers_df = _powers(rng, games, picks)
    points = _points(rng, pieces, games)
    games = games.join(points, on="gi", how="left").with_columns(
        pl.col("points_0", "points_1").fill_null(0)
    )
    return {
        "games": games,
        "pieces": pieces,
        "powers": powers_df,
        "turns": _turns(rng, games, powers_df),
    }


def _pieces(rng, games: pl.DataFrame, ranks0: np.ndarray, ranks1: np.ndarray) -> pl.DataFrame:
    board = games["board"].to_numpy().astype(np.int64)
    n_pieces = 2 * board
    g = np.repeat(np.arange(len(board)), n_pieces)
    gi = games["gi"].to_numpy()[g]
    offs = np.concatenate([[0], np.cumsum(n_pieces)[:-1]])
    idx = np.arange(n_pieces.sum()) - np.repeat(offs, n_pieces)
    nb = board[g]
    side = (idx >= nb).astype(np.uint8)
    file = np.where(side == 0, idx, idx - nb)
    rank = np.where(side == 0, ranks0[g, file], ranks1[g, file])
    row = np.where(side == 0, 1, nb)
    start = (
        pl.DataFrame({"f": file, "r": row})
        .select(
            pl.concat_str(
                pl.col("f").replace_strict(dict(enumerate("abcdefg")), return_dtype=pl.String),
                pl.col("r").cast(pl.String),
            )
        )
        .to_series()
    )
    winner = games["winner"].fill_null(255).to_numpy()[g]
    turns = games["turns"].to_numpy().astype(np.int64)[g]
    wipeout = (games["reason"] == "wipeout").to_numpy()[g]
    home_game = (games["reason"] == "home").to_numpy()[g]
    hidden = games["hidden"].to_numpy()[g]
    won = winner == side
    lost = (winner != 255) & ~won
    m = len(gi)
    promoted = rng.random(m) < np.where(won, 0.22, 0.08) * (1.0 + 0.05 * rank)
    alive = rng.random(m) < np.where(won, 0.6, np.where(lost, 0.3, 0.45))
    alive &= ~(lost & wipeout)
    alive &= ~((winner == 255) & wipeout)
    # the winner of a home game brings its first piece home as a crown
    first_of_side = np.concatenate([[True], (gi[1:] != gi[:-1]) | (side[1:] != side[:-1])])
    home = won & home_game & first_of_side
    promoted |= home
    alive |= home
    moves = rng.poisson(np.where(hidden, 1.6, 2.6))
    moves = np.where(home, np.maximum(moves, 6), moves)
    fought = ~alive | (rng.random(m) < 0.2)
    revealed = (moves > 0) | fought
    tmax = np.maximum(turns, 1)
    revealed_turn = np.where(revealed, (rng.random(m) * tmax * 0.6).astype(np.int64), -1)
    promoted_turn = np.where(
        promoted, np.minimum(tmax - 1, 4 + (rng.random(m) * tmax).astype(np.int64)), -1
    )
    removed_turn = np.where(alive, -1, (rng.random(m) * tmax).astype(np.int64))
    stunned = np.where(promoted & (rng.random(m) < 0.3), 1, 0).astype(np.uint8)

    def opt(a):
        return pl.Series(a).replace(-1, None).cast(pl.UInt16)

    return pl.DataFrame(
        {
            "gi": gi,
            "side": side,
            "start": start,
            "rank": rank,
            "promoted_turn": opt(promoted_turn),
            "removed_turn": opt(removed_turn),
            "revealed_turn": opt(revealed_turn),
            "moves": moves.astype(np.uint16),
            "stunned": stunned,
            "home": home,
        }
    )


def _points(rng, pieces: pl.DataFrame, games: pl.DataFrame) -> pl.DataFrame:
    # R6.3 totals of what is left (crowns count N+1); synthetic, so only roughly consistent
    pts = (
        pieces.join(games.select("gi", "board"), on="gi")
        .filter(pl.col("removed_turn").is_null())
        .with_columns(
            v=pl.when(pl.col("promoted_turn").is_not_null())
            .then(pl.col("board").cast(pl.Int32) + 1)
            .otherwise(pl.col("rank").cast(pl.Int32))
        )
        .group_by("gi", "side")
        .agg(pl.col("v").sum())
        .pivot(on="side", index="gi", values="v")
    )
    return pts.select(
        "gi",
        pl.col("0").fill_null(0).cast(pl.UInt16).alias("points_0") if "0" in pts.columns else
        pl.lit(0, pl.UInt16).alias("points_0"),
        pl.col("1").fill_null(0).cast(pl.UInt16).alias("points_1") if "1" in pts.columns else
        pl.lit(0, pl.UInt16).alias("points_1"),
    )  # fmt: skip


def _powers(rng, games: pl.DataFrame, picks) -> pl.DataFrame:
    first = games["first"].to_numpy().astype(np.int64)
    turns = games["turns"].to_numpy().astype(np.int64)
    frames = []
    for s in (0, 1):
        rows, cols = np.nonzero(picks[s])
        j = np.concatenate([[0], np.cumsum(np.diff(rows) == 0)])  # 0,1,2 within a side's picks
        restart = np.concatenate([[True], rows[1:] != rows[:-1]])
        j = j - np.maximum.accumulate(np.where(restart, j, 0))
        parity = (s - first[rows]) % 2
        slot = j + 3 * rng.integers(0, 4, len(rows))  # three distinct own turns
        turn = 2 * slot + parity
        used = (rng.random(len(rows)) < 0.75) & (turn < turns[rows])
        frames.append(
            pl.DataFrame(
                {
                    "gi": rows.astype(np.int64),
                    "side": np.full(len(rows), s, dtype=np.uint8),
                    "power": np.array(POWERS)[cols],
                    "used_turn": pl.Series(np.where(used, turn, -1)).replace(-1, None),
                }
            ).with_columns(pl.col("used_turn").cast(pl.UInt16))
        )
    return pl.concat(frames)


def _turns(rng, games: pl.DataFrame, powers: pl.DataFrame) -> pl.DataFrame:
    turns = games["turns"].to_numpy().astype(np.int64)
    gi = np.repeat(games["gi"].to_numpy(), turns)
    offs = np.concatenate([[0], np.cumsum(turns)[:-1]])
    t = np.arange(turns.sum()) - np.repeat(offs, turns)
    side = ((np.repeat(games["first"].to_numpy().astype(np.int64), turns) + t) % 2).astype(np.uint8)
    m = len(gi)
    fights = (rng.random(m) < 0.3).astype(np.uint8)
    stuns = ((rng.random(m) < 0.02) & (fights == 1)).astype(np.uint8)
    catches = (rng.random(m) < 0.012).astype(np.uint8)
    out = pl.DataFrame(
        {
            "gi": gi,
            "turn": t.astype(np.uint16),
            "side": side,
            "fights": fights,
            "removed": fights,
            "stuns": stuns,
            "catches": catches,
            "promotions": np.zeros(m, dtype=np.uint8),
            "trapped": np.zeros(m, dtype=np.uint8),
        }
    )
    used = powers.filter(pl.col("used_turn").is_not_null()).select(
        "gi", pl.col("used_turn").alias("turn"), "power"
    )
    return out.join(used, on=["gi", "turn"], how="left", maintain_order="left")


def expected_scores(games: pl.DataFrame, draw_rate: float) -> pl.DataFrame:
    """Each game's expected score for side 0 (e0) and side 1 (e1) under the planted model."""
    e0 = pl.col("p0") * (1 - draw_rate) + draw_rate / 2
    return games.with_columns(e0=e0).with_columns(e1=1 - pl.col("e0"))


# -- writing into a store ----------------------------------------------------------------------


def schema_sql(constraints: bool = True) -> str:
    """The store's schema; without constraints for fast bulk benchmarks."""
    sql = storage.schema_sql()
    if not constraints:
        sql = re.sub(r",\s*PRIMARY KEY \([^)]*\)", "", sql)
        sql = sql.replace(" PRIMARY KEY", "")
    return sql


def insert(con: duckdb.DuckDBPyConnection, data: dict[str, pl.DataFrame], tag: str = "syn"):
    """Insert generated frames into the store tables (the schema must exist). `game_id` is a
    UUID derived from (tag, gi), so several batches with different tags can go in one store."""
    gid = f"md5('{tag}:' || gi)::UUID"
    frame = data["games"].drop("p0")
    ruleset = "ruleset" if "ruleset" in frame.columns else "'standard'"
    con.register("_syn_games", frame.to_arrow())
    con.execute(
        f"""INSERT INTO games SELECT {gid}, 'slow6', board, powers, hidden, variant, mode,
        ai_side, ai_level, challenge_id, platform, client_version, first, lineup_0, lineup_1,
        powers_0, powers_1, winner, reason, points_0, points_1, turns, ended_at, received_at,
        {ruleset} FROM _syn_games"""
    )
    con.register("_syn_pieces", data["pieces"].to_arrow())
    con.execute(
        f"""INSERT INTO game_pieces SELECT {gid}, side, start, rank, promoted_turn, removed_turn,
        revealed_turn, moves, stunned, home FROM _syn_pieces"""
    )
    con.register("_syn_powers", data["powers"].to_arrow())
    con.execute(f"INSERT INTO game_powers SELECT {gid}, side, power, used_turn FROM _syn_powers")
    con.register("_syn_turns", data["turns"].to_arrow())
    con.execute(
        f"""INSERT INTO game_turns SELECT {gid}, turn, side, power,
        CASE WHEN turn % 3 = 0 THEN NULL ELSE 'a1-a2' END, NULL, fights, removed, stuns,
        catches, promotions, trapped FROM _syn_turns"""
    )
    for name in ("_syn_games", "_syn_pieces", "_syn_powers", "_syn_turns"):
        con.unregister(name)


def quarantine_rows(con, n: int, seed: int = 0, tag: str = "q"):
    """Quarantined records (Slow6 and Slide) with a spread of rules and client versions."""
    rng = np.random.default_rng(seed)
    rules = np.array(["R2.2", "R2.3", "R6.3", "R8.1", "R2.4", "S2.4"])
    rule = rules[rng.integers(0, len(rules), n)]
    seconds = rng.integers(0, 90 * 86400, n)
    ended = np.datetime64(EPOCH) - seconds.astype("timedelta64[s]")
    df = pl.DataFrame(
        {
            "gi": np.arange(n),
            "game": np.where(np.char.startswith(rule, "S"), "slide", "slow6"),
            "rule": rule,
            "turn": rng.integers(0, 30, n).astype(np.uint16),
            "platform": _choice(rng, PLATFORMS, n),
            "client_version": _choice(rng, VERSIONS, n),
            "mode": _choice(rng, MODES, n),
            "ended_at": ended,
            "received_at": ended + np.timedelta64(60, "s"),
        }
    )
    con.register("_syn_q", df.to_arrow())
    con.execute(
        f"""INSERT INTO quarantine SELECT md5('{tag}:' || gi)::UUID, game, rule, turn, NULL,
        'synthetic', platform, client_version, mode, ended_at, received_at, 'standard'
        FROM _syn_q"""
    )
    con.unregister("_syn_q")


def make_store(path, plan: Plan, *, constraints: bool = True, quarantined: int = 0):
    """A DuckDB file with the store schema holding `plan`'s games (and quarantined rows)."""
    con = duckdb.connect(str(path))
    con.execute(schema_sql(constraints))
    data = generate(plan)
    insert(con, data, tag=f"syn{plan.seed}")
    if quarantined:
        quarantine_rows(con, quarantined, seed=plan.seed)
    return con, data


def arriving(data: dict[str, pl.DataFrame], after: dt.datetime) -> dict[str, pl.DataFrame]:
    """Generated frames stamped as uploads arriving now: `received_at` one millisecond apart
    from `after` on (the store's latest), as the server stamps them (games generated alone
    get random times in the past, which a run takes for late arrivals)."""
    g = data["games"]
    stamp = pl.lit(after) + pl.duration(milliseconds=pl.int_range(1, g.height + 1))
    return {**data, "games": g.with_columns(received_at=stamp)}


def fill_store(con: duckdb.DuckDBPyConnection, games: int, chunk: int = 250_000) -> None:
    """The benchmarks' store: the schema, `games` games generated `chunk` at a time (memory
    stays bounded at a million), and one quarantined record for every 50 games."""
    con.execute(schema_sql())
    for i, start in enumerate(range(0, games, chunk)):
        plan = Plan(n=min(chunk, games - start), seed=1000 + i)
        insert(con, generate(plan), tag=f"bench{i}")
    quarantine_rows(con, games // 50, seed=7)
