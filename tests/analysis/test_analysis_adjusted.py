"""The adjusted model (agg_adjusted) on small and degenerate data: the run never fails, terms the
games cannot estimate say so (aliased / no information), the others are the maximum-likelihood
estimates of the full model."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import optimize
from scipy.special import expit

from analysis import adjusted, frames, jobs, load, logit
from analysis import stats as st
from analysis import synthetic as sy
from analysis.cuts import Cut


def few_big_boards(seed: int = 0) -> sy.Plan:
    # 240 human games on one client version, six of them on 7x7: the 7x7 columns (centre ranks,
    # first move on 7x7) outnumber the games that inform them
    return sy.Plan(
        n=240, seed=seed, p_board7=0.02, modes=(("online", 1),), versions=(("3.0.0", 1),)
    )


@pytest.mark.slow
def test_a_few_7x7_games_among_240_do_not_fail_the_run():
    con, _ = sy.make_store(":memory:", few_big_boards())
    summary = jobs.run(con, lambda fn: fn(con))  # was numpy.linalg.LinAlgError: Singular matrix
    assert not summary["skipped"] and summary["games_read"] == 240
    got = con.sql("FROM agg_adjusted").pl()
    rows = {r["term"]: r for r in got.iter_rows(named=True)}
    # each term says the games that inform it: every game for the first move, the games
    # with powers for a power, the board's games for a centre rank
    assert rows["first_move"]["n_games"] == rows["side_0"]["n_games"] == 240
    with_powers = con.sql("SELECT count(*) FROM games WHERE powers").fetchone()[0]
    assert {r["n_games"] for t, r in rows.items() if t.startswith("power:")} == {with_powers}
    assert rows["centre_rank:7x7:1"]["n_games"] == rows["first_move_x_board7"]["n_games"] < 20
    aliased = {t for t, r in rows.items() if r["note"] == adjusted.ALIASED}
    assert "first_move_x_board7" in aliased
    assert any(t.startswith("centre_rank:7x7:") for t in aliased)
    for t in aliased:
        r = rows[t]
        assert not r["estimable"] and r["estimate"] is None and r["se"] is None, t
    # what the games do inform keeps a finite estimate and interval
    informed = [
        "side_0",
        "first_move",
        *(t for t in rows if t.startswith(("power:", "centre_rank:5x5"))),
    ]
    for t in informed:
        r = rows[t]
        assert r["estimable"] and r["note"] is None, t
        assert r["lo"] < r["estimate"] < r["hi"] and 0 < r["se"] <= adjusted.MAX_SE, t
    # ... and is the maximum-likelihood estimate of the full (rank-deficient) design: a
    # generic optimiser over every column reaches the same estimable contrasts
    b = frames.build(load.read(con))
    x, y, terms, c = adjusted.design(b.in_cut(b.games, Cut.default("3.0.0")))

    def nll(beta):
        return -logit.loglik(beta, x, y)

    def grad(beta):
        return -(x.T @ (y - expit(x @ beta)))

    best = optimize.minimize(nll, np.zeros(x.shape[1]), jac=grad, method="BFGS", tol=1e-10)
    ours = got.filter(pl.col("estimable"))
    at = [terms.index(t) for t in ours["term"]]
    np.testing.assert_allclose(ours["estimate"].to_numpy(), c[at] @ best.x, atol=2e-3)


def test_a_term_whose_games_all_went_one_way_has_no_estimate():
    rng = np.random.default_rng(1)
    n = 400
    first = rng.choice([-1.0, 1.0], n)
    y = (rng.random(n) < expit(0.3 * first)).astype(float)
    z = ((rng.random(n) < 0.05) & (y == 1)).astype(float)  # only in games side 0 won
    x = np.column_stack([np.ones(n), first, z])
    got = adjusted.fitted(x, y, ["side_0", "first_move", "z"], np.eye(3), n)
    z_row = got.row(2, named=True)
    assert not z_row["estimable"] and z_row["note"] == adjusted.NO_INFORMATION
    assert z_row["estimate"] is None
    # the rest is what the other games say (the separated ones carry no information)
    alone = logit.fit(x[z == 0, :2], y[z == 0])
    np.testing.assert_allclose(got["estimate"].to_numpy()[:2], alone.coef, atol=1e-4)
    assert got["estimable"].to_list() == [True, True, False]


def test_aliased_columns_only_their_estimable_combination_is_reported():
    rng = np.random.default_rng(2)
    n = 300
    a = rng.choice([-1.0, 0.0, 1.0], n)
    y = (rng.random(n) < expit(0.4 * a)).astype(float)
    x = np.column_stack([np.ones(n), a, a])  # the same column twice
    c = np.array([[1.0, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 1]])
    got = adjusted.fitted(x, y, ["side_0", "a", "a_again", "a + a_again"], c, n)
    assert got["estimable"].to_list() == [True, False, False, True]
    assert got["note"].to_list()[1:3] == [adjusted.ALIASED] * 2
    once = logit.fit(x[:, :2], y)
    np.testing.assert_allclose(got["estimate"].to_numpy()[[0, 3]], once.coef, atol=1e-8)


def _power_games(seed: int, n: int = 3000) -> pl.DataFrame:
    p = sy.Plan(n=n, seed=seed, modes=(("online", 1),), versions=(("3.0.0", 1),), p_board7=0.0,
                p_hidden=0.0, p_powers=1.0, power_effects={"leap": 0.3, "trap": -0.2})  # fmt: skip
    con, _ = sy.make_store(":memory:", p)
    b = frames.build(load.read(con))
    return b.in_cut(b.games, Cut.default("3.0.0"))


def test_power_effects_are_against_the_average_power_whichever_power_is_the_reference():
    # the model fits nine power columns (the last power is the reference) and reports the
    # tenth as minus the sum of the others, with its variance from the whole covariance: the
    # ten must be the same contrasts, estimate and standard error, as a fit that takes another
    # power as its reference
    games = _power_games(3)
    got = adjusted.fit(games)
    powers = got.filter(pl.col("family") == "power")
    assert powers.height == len(frames.POWERS)
    assert powers["estimate"].sum() == pytest.approx(0, abs=1e-9)
    x, y, terms, _ = adjusted.design(games)
    m0 = games["mask_0"].to_numpy().astype(np.int64)
    m1 = games["mask_1"].to_numpy().astype(np.int64)
    d = np.column_stack([((m0 >> i) & 1) - ((m1 >> i) & 1) for i in range(10)]).astype(float)
    # 5x5 only: side_0, first_move, nine power columns, four centre-rank columns
    assert terms[:2] == ["side_0", "first_move"] and x.shape[1] == 2 + 9 + 4
    xx = np.column_stack([x[:, :2], *(d[:, j] - d[:, 0] for j in range(1, 10)), x[:, 11:]])
    f = logit.fit(xx, y)
    c = np.zeros((10, xx.shape[1]))
    c[0, 2:11] = -1.0
    for j in range(1, 10):
        c[j, 1 + j] = 1.0
    est, se = c @ f.coef, np.sqrt(np.einsum("ij,jk,ik->i", c, f.cov, c))
    by_name = {r["term"]: r for r in powers.iter_rows(named=True)}
    for j, p in enumerate(frames.POWERS):
        assert by_name[f"power:{p}"]["estimate"] == pytest.approx(est[j], abs=1e-6), p
        assert by_name[f"power:{p}"]["se"] == pytest.approx(se[j], rel=1e-5), p


def test_terms_are_tested_within_their_family():
    got = adjusted.fit(_power_games(4))
    fam = dict(zip(got["term"], got["family"], strict=True))
    assert fam["power:leap"] == "power" and fam["first_move"] == "first_move"
    assert fam["centre_rank:5x5:3"] == "centre_rank:5x5"
    powers = got.filter(pl.col("family") == "power")
    q, flagged = st.bh(powers["p_value"].to_numpy())
    np.testing.assert_allclose(powers["q_value"].to_numpy(), q)
    assert powers["flagged"].to_list() == flagged.tolist()
    assert {"power:leap"} <= set(powers.filter("flagged")["term"])
    first = got.filter(pl.col("term") == "first_move").row(0, named=True)
    assert first["q_value"] == pytest.approx(first["p_value"])  # a family of one
