"""Version comparison (analysis.versions): a planted change between two client versions is
found at its size, no change raises no more flags than the false discovery rate allows, and the
intervals cover the true difference. The tables come from synthetic stores (analysis.synthetic)
through the jobs' own SQL (analysis.cubes), as a run computes them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pytest
from scipy.special import expit

from analysis import cubes, sources, versions
from analysis import stats as st
from analysis import synthetic as sy
from analysis.cuts import Cut
from analysis.frames import POWERS
from analysis.games_sql import Selection

A, B = "3.0.0", "3.1.0"
ADDITIVE_FAMILIES = [f for f, t in versions.FAMILIES.items() if t != "games"]
TWO = ((A, 1), (B, 1))


def agg_tables(p: sy.Plan) -> dict[str, pl.DataFrame]:
    """The additive tables the comparison reads, for the plan's games."""
    con, _ = sy.make_store(":memory:", p)
    try:
        present = sources.present(con)
        sel = {s.name: Selection(s.where(Cut())).read_dicts(con, s.name) for s in present}
        mine = [c for c in cubes.of(present) if c.table in versions.FAMILIES.values()]
        shared = cubes.prepare(con, mine, sel)
        out = {t: con.sql(cubes.sql(t, cs, sel)).pl() for t, cs in cubes.by_table(mine).items()}
        cubes.drop(con, shared)
        return out
    finally:
        con.close()


def compare(p: sy.Plan, a: str = A, b: str = B) -> versions.Comparison:
    out = agg_tables(p)
    # the additive tables' families (the adjusted model's samples: adjusted_frames below)
    return versions.compare(lambda t, cut: cut.apply(out[t]), a, b, families=ADDITIVE_FAMILIES)


def rows(c: versions.Comparison, family: str, measure: str | None = None) -> pl.DataFrame:
    df = c.table.filter(pl.col("family") == family)
    return df if measure is None else df.filter(pl.col("measure") == measure)


# -- fast: the arithmetic, the defaults and what cannot be compared -----------------------------


def first_move_frame(version: str, board: int, n: int, wins: int, draws: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "board": [board], "variant": ["classic"], "mode": ["online"], "ai_level": [None],
            "platform": ["ios"], "client_version": [version], "week": [None], "n": [n],
            "wins": [wins], "draws": [draws], "losses": [n - wins - draws],
        },
        schema_overrides={"ai_level": pl.UInt8, "week": pl.Date},
    )  # fmt: skip


def test_differences_are_sums_of_counts_and_the_documented_tests():
    # two rows of the same cell in version A (as two weeks would be): their counts add up
    table = pl.concat(
        [
            first_move_frame(A, 5, 600, 300, 20),
            first_move_frame(A, 5, 400, 190, 10),
            first_move_frame(B, 5, 900, 520, 30),
            first_move_frame(B, 7, 50, 25, 0),  # 7x7: B only
        ]
    )
    c = versions.compare(lambda t, cut: cut.apply(table) if t == "agg_first_move" else None, A, B)
    row = rows(c, "first_move").row(0, named=True)
    ka, na, kb, nb = 300 + 190 + 15, 1000, 520 + 15, 900
    d, lo, hi = st.diff_newcombe(kb, nb, ka, na)
    assert (row["a_n"], row["b_n"]) == (na, nb)
    assert row["diff"] == pytest.approx(float(d)) and row["diff"] == pytest.approx(
        kb / nb - ka / na
    )
    assert (row["lo"], row["hi"]) == (pytest.approx(float(lo)), pytest.approx(float(hi)))
    assert row["p_value"] == pytest.approx(float(st.diff_test(kb, nb, ka, na)))
    # z = 4.0 at one look, but the always-valid interval reaches into the minimum (0.02): a
    # change away from zero, not yet one shown to matter
    assert row["p_value"] < 1e-4 and not row["flagged"]
    assert row["always_lo"] < row["lo"] and row["always_lo"] < 0.02 < row["diff"]
    assert c.summary().startswith("0 things changed by more than their minimum from 3.0.0")
    # the same rates on ten times the games: the whole interval clears the minimum
    big = table.with_columns(pl.col("n", "wins", "draws", "losses") * 10)
    c = versions.compare(lambda t, cut: cut.apply(big) if t == "agg_first_move" else None, A, B)
    row = rows(c, "first_move").row(0, named=True)
    assert row["flagged"] and row["always_lo"] > row["minimum"] == 0.02
    assert c.summary().startswith(
        "1 thing changed by more than the minimum from 3.0.0 (A) to 3.1.0 (B): first move 5×5"
    )
    assert "+0.089 [" in c.summary() and "(minimum 0.020)" in c.summary()
    assert rows(c, "first_move").height == 1  # 7x7 has games of one version: not compared
    assert any("7×7 classic" in n and "3.1.0 (B) only" in n for n in c.notes)
    # the other tables are absent: each family says so, nothing crashes
    for family in ("Powers", "Computer levels", "End reasons", "Game length"):
        assert any(n.startswith(family) and "either version" in n for n in c.notes), family


def test_no_flag_is_said_as_nothing_detected_not_as_no_change():
    table = pl.concat([first_move_frame(A, 5, 600, 300, 20), first_move_frame(B, 5, 600, 310, 20)])
    c = versions.compare(lambda t, cut: cut.apply(table) if t == "agg_first_move" else None, A, B)
    assert c.table.height == 1 and not c.flagged.height
    assert c.summary().startswith(
        "0 things changed by more than their minimum from 3.0.0 (A) to 3.1.0 (B)"
    )
    # and what it would take to see one: the games a version needs, from this row's spread
    # (the sequence tuned to the minimum: 25,000 with its scale at twice the minimum)
    assert "a version needs about first move 23,000 games" in c.summary()


def test_a_version_without_games_in_a_family_is_said_not_compared():
    table = first_move_frame(A, 5, 600, 300, 20)
    c = versions.compare(lambda t, cut: cut.apply(table) if t == "agg_first_move" else None, A, B)
    assert c.table.height == 0
    assert any("no games of 3.1.0 (B)" in n for n in c.notes)
    assert "Nothing to compare" in c.summary()


def test_default_versions_are_the_live_release_and_the_one_before():
    games = {"2.5.0": 900, "3.0.0": 1200, "3.1.0": 300, "3.2.0-beta.1": 5000, "3.2.0": 40}
    pair = versions.default_pair(games)
    # 3.2.0 has fewer than 200 human games: the live version is 3.1.0; pre-releases never
    assert (pair.a, pair.b) == ("3.0.0", "3.1.0")
    assert "live version" in pair.why and "release before" in pair.why
    only = versions.default_pair({"3.0.0": 500})
    assert only.a is None and only.b == "3.0.0" and "only release" in only.why
    assert versions.default_pair({}).b is None


# -- planted effects on synthetic stores ----------------------------------------------------------

BASE = dict(modes=(("online", 1),), versions=TWO, p_board7=0.0, p_hidden=0.0)


def test_a_changed_first_move_edge_is_found_at_its_size():
    # B's first mover is worth +0.25 log-odds more than A's: +0.058 in score rate, at about
    # 6,000 games of each version (5x5 classic): about 6 standard errors
    p = sy.Plan(n=12_000, seed=11, p_powers=0.0, first_effect=0.15, **BASE)
    p = replace(p, version_first_effect={B: 0.25})
    c = compare(p)
    truth = (1 - p.draw_rate) * (expit(0.40) - expit(0.15))
    assert truth == pytest.approx(0.058, abs=0.001)
    first = rows(c, "first_move")
    assert first.height == 1 and first["flagged"].all()
    r = first.row(0, named=True)
    assert r["lo"] < truth < r["hi"], r
    assert min(r["a_n"], r["b_n"]) > 5500
    # nothing else changed: at most one false discovery among the other families
    assert c.flagged.filter(pl.col("family") != "first_move").height <= 1
    assert c.summary().startswith(("1 thing changed", "2 things changed"))


@pytest.mark.slow  # 10 synthetic stores
def test_the_first_move_change_is_found_in_nearly_every_sample_at_8000_games_a_version():
    # the same +0.25 log-odds (+0.058, about 3 times the minimum of 0.02) on 8,000 games a
    # version: the always-valid interval must clear the minimum, which takes more games than
    # clearing zero did (3,000 a version found it in about 3 samples of 10)
    truth = 0.95 * (expit(0.40) - expit(0.15))
    found = covered = 0
    for seed in range(200, 210):
        p = sy.Plan(n=16_000, seed=seed, p_powers=0.0, first_effect=0.15, **BASE)
        r = rows(compare(replace(p, version_first_effect={B: 0.25})), "first_move").row(
            0, named=True
        )
        found += r["flagged"]
        covered += r["lo"] < truth < r["hi"]
    assert found >= 7  # about 90% a sample: P(binomial(10, .9) < 7) ~ 1.3%
    assert covered >= 8  # 95% intervals: P(binomial(10, .95) < 8) ~ 1.2%


def true_pick_effects(p: sy.Plan, version: str, n: int = 200_000) -> dict[str, float]:
    """Each power's score picked minus not picked in `version`, from the expected scores of a
    large independent sample (no outcome noise)."""
    g = sy.generate(replace(p, n=n, seed=p.seed + 10_000), games_only=True)["games"]
    g = sy.expected_scores(g, p.draw_rate).filter(pl.col("client_version") == version)
    sides = pl.concat(
        [g.select(pl.col(f"powers_{s}").alias("picks"), pl.col(f"e{s}").alias("e")) for s in (0, 1)]
    )
    e = sides["e"].to_numpy()
    out = {}
    for power in POWERS:
        has = sides["picks"].list.contains(power).to_numpy()
        out[power] = e[has].mean() - e[~has].mean()
    return out


@pytest.mark.slow  # a 200,000-game calibration sample
def test_a_power_that_got_stronger_is_found_at_its_size():
    # surge +0.5 log-odds in B only, 15,000 games of each version (9,000 sides picking it):
    # enough for the always-valid interval of its raw pick effect to clear the minimum
    p = sy.Plan(n=30_000, seed=12, p_powers=1.0, **BASE)
    p = replace(p, version_power_effects={B: {"surge": 0.5}})
    c = compare(p)
    ta, tb = true_pick_effects(p, A), true_pick_effects(p, B)
    truth = {pw: tb[pw] - ta[pw] for pw in POWERS}
    assert truth["surge"] > 0.09  # the planted change is large, not a rounding of zero
    effect = rows(c, "powers", "pick effect")
    surge = effect.filter(pl.col("item") == "surge").row(0, named=True)
    assert surge["flagged"] and surge["lo"] < truth["surge"] < surge["hi"]
    # the other nine look slightly weaker in B (powers are zero-sum): the intervals cover that
    covered = sum(r["lo"] < truth[r["item"]] < r["hi"] for r in effect.iter_rows(named=True))
    assert covered >= 9
    assert c.flagged.filter(pl.col("item") != "surge").height <= 1


@pytest.mark.slow  # 20 synthetic stores
def test_no_change_between_versions_is_no_change_and_intervals_cover_zero():
    # the same game in both versions: every true difference is 0, so no change can clear
    # its minimum but by chance, which the page holds at 0.1 expected flags a comparison
    # (about 2 over 20 comparisons at the very most; far fewer at a true difference of 0)
    families_with_flags, covered, tested = 0, 0, 0
    for seed in range(20):
        p = sy.Plan(
            n=4_000, seed=100 + seed, versions=TWO, p_board7=0.25,
            modes=(("online", 3), ("computer", 1)),
        )  # fmt: skip
        c = compare(p)
        assert set(c.table["family"]) == set(ADDITIVE_FAMILIES)
        families_with_flags += c.flagged["family"].n_unique()
        ok = c.table.filter(pl.col("diff").is_not_nan())
        covered += int(((ok["lo"] <= 0) & (ok["hi"] >= 0)).sum())
        tested += ok.height
    assert families_with_flags <= 2
    assert covered / tested >= 0.93, covered / tested


def test_game_length_is_the_histogram_mean_with_its_welch_interval():
    def frame(version, turns, games):
        return pl.DataFrame(
            {
                "board": 5, "variant": "classic", "mode": "online", "client_version": version,
                "week": None, "reason": "points", "turns": turns, "games": games,
            },
            schema_overrides={"week": pl.Date},
        )  # fmt: skip

    ta, ga = np.array([10, 20, 30]), np.array([5, 10, 5])
    tb, gb = np.array([20, 30]), np.array([10, 10])
    table = pl.concat([frame(A, ta, ga), frame(B, tb, gb)])
    c = versions.compare(lambda t, cut: cut.apply(table) if t == "agg_game_length" else None, A, B)
    r = rows(c, "game_length").row(0, named=True)
    # agg_game_length has no platform: a platform cut is not applied to it, and said
    ios = versions.compare(
        lambda t, cut: cut.apply(table) if t == "agg_game_length" else None,
        A, B, Cut(mode=("online",), platform="ios"),
    )  # fmt: skip
    assert rows(ios, "game_length").row(0, named=True)["diff"] == r["diff"]
    assert "Game length: agg_game_length has no platform: not applied" in ios.notes
    xa, xb = np.repeat(ta, ga), np.repeat(tb, gb)
    assert r["diff"] == pytest.approx(xb.mean() - xa.mean())
    se = np.sqrt(xa.var(ddof=1) / len(xa) + xb.var(ddof=1) / len(xb))
    assert r["hi"] - r["diff"] == pytest.approx(st.Z95 * se)


def test_a_changed_rank_file_effect_is_found_in_the_lineup_cells():
    """Rank 5 on file c got +0.6 log-odds stronger in B (5×5 classic, 6,000 games a version):
    the lineup model's cell is flagged first, its interval covers the cell's true contrast
    (the model's cells sum to zero by rank and by file: 0.6 × 4/5 × 4/5 = 0.384), and the
    other 24 cells are not flagged."""
    from test_analysis_lineup_model import planted_cell

    base = dict(n=6000, p_board7=0.0, modes=(("online", 1),), p_hidden=0.0, p_powers=0.0)
    ta = agg_tables(sy.Plan(seed=1, versions=((A, 1),), **base))
    tb = agg_tables(
        sy.Plan(seed=2, versions=((B, 1),), lineup_effects=planted_cell(5, 5, 2, 0.6), **base)
    )
    both = {t: pl.concat([ta[t], tb[t]], how="vertical_relaxed") for t in ta}
    c = versions.compare(lambda t, cut: cut.apply(both[t]), A, B, families=["lineup_cells"])
    cells = rows(c, "lineup_cells")
    assert cells.height == 25
    top = cells.row(0, named=True)
    assert top["label"] == "5×5 classic rank 5 on file c" and top["flagged"]
    assert top["lo"] <= 0.6 * 0.8 * 0.8 <= top["hi"]
    assert cells["flagged"].sum() == 1


def adjusted_frames(p: sy.Plan) -> versions.Comparison:
    """The adjusted-power comparison of a synthetic store, each version's sample drawn with
    the SQL the Versions page runs."""
    con, _ = sy.make_store(":memory:", p)
    try:
        frames = {v: con.sql(versions.adjusted_sample_sql(v)).pl() for v in (A, B)}
    finally:
        con.close()

    def fetch(table, cut):
        assert table == "games"
        return cut.apply(pl.concat(list(frames.values())))

    return versions.compare(fetch, A, B, families=["adjusted_powers"])


def test_a_power_that_got_stronger_is_found_by_the_adjusted_model():
    """surge +0.6 log-odds stronger in B, 9,000 sampled games a version: flagged first, its
    interval covering the true change of its contrast against the median power (0.6: the
    median is one of the nine that did not change); the others' intervals cover theirs (0:
    against the average they would all look 0.06 weaker) and none of them is flagged."""
    p = sy.Plan(
        n=24_000, seed=31, versions=TWO, modes=(("online", 1),), p_hidden=0.0, p_powers=1.0,
        version_power_effects={B: {"surge": 0.6}},
    )  # fmt: skip
    c = adjusted_frames(p)
    adj = rows(c, "adjusted_powers")
    assert adj.height == len(POWERS)
    top = adj.row(0, named=True)
    assert top["item"] == "surge" and top["flagged"]
    assert top["lo"] <= 0.6 <= top["hi"]
    others = adj.filter(pl.col("item") != "surge")
    assert int(others["flagged"].sum()) == 0
    covered = ((others["lo"] <= 0) & (others["hi"] >= 0)).sum()
    assert covered >= len(POWERS) - 2


def test_without_a_change_the_adjusted_powers_show_no_change():
    flagged_families = 0
    for seed in range(6):
        p = sy.Plan(
            n=10_000, seed=200 + seed, versions=TWO, modes=(("online", 1),), p_hidden=0.0,
            p_powers=1.0,
        )  # fmt: skip
        c = adjusted_frames(p)
        flagged_families += int(c.flagged.height > 0)
    assert flagged_families == 0
