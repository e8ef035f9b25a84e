"""analysis.stats and analysis.logit against scipy and published values."""

import numpy as np
import pytest
from scipy import optimize, stats

from analysis import logit
from analysis import stats as st


def test_wilson_matches_scipy():
    ks = np.array([0, 1, 8, 37, 50, 99, 100])
    ns = np.array([10, 10, 10, 80, 100, 100, 100])
    lo, hi = st.wilson(ks, ns)
    for k, n, a, b in zip(ks, ns, lo, hi, strict=True):
        ci = stats.binomtest(int(k), int(n)).proportion_ci(0.95, method="wilson")
        assert a == pytest.approx(ci.low, abs=1e-12)
        assert b == pytest.approx(ci.high, abs=1e-12)


def test_wilson_known_value_and_empty_row():
    lo, hi = st.wilson([8, 0], [10, 0])
    assert lo[0] == pytest.approx(0.4902, abs=1e-4) and hi[0] == pytest.approx(0.9433, abs=1e-4)
    assert np.isnan(lo[1]) and np.isnan(hi[1])


def test_score_test_is_the_test_wilson_inverts():
    rng = np.random.default_rng(1)
    n = rng.integers(5, 400, 500)
    k = rng.binomial(n, 0.5) + rng.integers(0, 2, 500) * 0.5
    k = np.minimum(k, n)
    p = st.score_test(k, n, 0.5)
    lo, hi = st.wilson(k, n)
    outside = (lo > 0.5) | (hi < 0.5)
    assert np.array_equal(p < 0.05, outside)
    z = (k / n - 0.5) / np.sqrt(0.25 / n)
    assert np.allclose(p, 2 * stats.norm.sf(np.abs(z)))


def test_bh_matches_scipy():
    rng = np.random.default_rng(2)
    p = np.concatenate([rng.uniform(size=90), rng.uniform(0, 0.002, size=10)])
    q, rejected = st.bh(p)
    assert np.allclose(q, stats.false_discovery_control(p, method="bh"))
    assert rejected.sum() >= 10 and np.array_equal(rejected, q <= 0.05)


def test_bh_ignores_missing_rows_and_runs_per_family():
    p = np.array([0.01, np.nan, 0.04, 0.01, 0.04])
    q, rejected = st.bh(p)
    assert np.isnan(q[1]) and not rejected[1]
    assert np.allclose(q[[0, 2, 3, 4]], stats.false_discovery_control(p[[0, 2, 3, 4]]))
    q2, _ = st.bh_grouped(p, ["a", "a", "a", "b", "b"])
    assert np.allclose(q2[[0, 2]], stats.false_discovery_control(p[[0, 2]]))
    assert np.allclose(q2[[3, 4]], stats.false_discovery_control(p[[3, 4]]))


def test_newcombe_published_example():
    # Newcombe (1998), Statistics in Medicine 17:873, example (a): 56/70 - 48/80, method 10.
    d, lo, hi = st.diff_newcombe([56], [70], [48], [80])
    assert d[0] == pytest.approx(0.2)
    assert lo[0] == pytest.approx(0.0524, abs=1e-4)
    assert hi[0] == pytest.approx(0.3339, abs=1e-4)


def test_diff_test_matches_chi_square():
    p = st.diff_test([56, 10], [70, 40], [48, 12], [80, 40])
    for i, (a, b, c, d) in enumerate([(56, 14, 48, 32), (10, 30, 12, 28)]):
        chi = stats.chi2_contingency([[a, b], [c, d]], correction=False)
        assert p[i] == pytest.approx(chi.pvalue, rel=1e-9)


def test_beta_prior_recovers_a_known_prior():
    rng = np.random.default_rng(3)
    true = rng.beta(30, 20, size=4000)  # mean 0.6, strength 50
    n = rng.integers(50, 400, size=4000)
    k = rng.binomial(n, true)
    a, b = st.beta_prior(k, n)
    assert a / (a + b) == pytest.approx(0.6, abs=0.005)
    assert a + b == pytest.approx(50, rel=0.15)


def test_shrinkage_keeps_a_lucky_small_row_off_the_top():
    # 119 lineups near 50% with plenty of games, and one seen 9 times with 9 wins.
    rng = np.random.default_rng(4)
    n = np.append(rng.integers(800, 1200, size=119), 9)
    true = rng.normal(0.5, 0.03, size=120)
    k = np.append(rng.binomial(n[:119], true[:119]), 9).astype(float)
    raw = k / n
    shrunk = st.shrink_grouped(k, n, np.zeros(120))
    assert raw.argmax() == 119
    assert shrunk.argmax() != 119
    mean = k.sum() / n.sum()
    between = (np.minimum(raw, mean) - 1e-12 <= shrunk) & (shrunk <= np.maximum(raw, mean) + 1e-12)
    assert between.all()


def test_no_spread_beyond_noise_shrinks_to_the_mean():
    n = np.full(50, 100)
    k = np.full(50, 50.0)
    k[0], k[1] = 45, 55  # far less spread than binomial noise
    shrunk = st.shrink_grouped(k, n, np.zeros(50))
    assert np.allclose(shrunk, 0.5, atol=1e-6)


def lineup_family(seed: int):
    """119 lineups of 5x5 with plenty of games each, true rates from Beta(645, 645) (strength
    1,290: a spread of about 0.014), and three lineups that truly score 1/2 but were lucky in
    their 100 games (56 of 100)."""
    rng = np.random.default_rng(seed)
    n = rng.integers(800, 1200, size=119)
    k = rng.binomial(n, rng.beta(645, 645, size=119)).astype(float)
    return np.append(k, [56.0, 56.0, 56.0]), np.append(n, [100, 100, 100])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_extreme_row_does_not_move_the_prior(seed):
    # A moment fit weighs every observed rate alike: one lineup with 9 wins in 9 games made
    # the spread look ten times larger (strength 1,290 -> 121), so every lucky lineup kept its
    # luck (the three true 0.50 lineups showed 0.525). The 9 games say little about the spread.
    k, n = lineup_family(seed)
    a, b = st.beta_prior(k, n)
    a9, b9 = st.beta_prior(np.append(k, 9.0), np.append(n, 9))
    assert a9 + b9 == pytest.approx(a + b, rel=0.05)
    assert 0.4 * 1290 < a + b < 2.5 * 1290
    shrunk = st.shrink_grouped(np.append(k, 9.0), np.append(n, 9), np.zeros(123))
    assert (np.abs(shrunk[119:122] - 0.5) < 0.015).all()  # raw: 0.56
    assert shrunk[122] < 0.51  # and the 9 of 9 lineup itself is not shown as strong
    before = st.shrink_grouped(k, n, np.zeros(122))
    assert np.abs(shrunk[:122] - before).max() < 0.002


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_prior_recovers_a_planted_spread_at_7x7_scale(seed):
    # 5,040 lineups of 7x7 at about 400 sides each (a million games), true strength 300: the
    # spread (sd 0.029) is about the size of one lineup's binomial noise (0.025)
    rng = np.random.default_rng(seed)
    true = rng.beta(150, 150, size=5040)
    n = rng.poisson(400, size=5040)
    k = rng.binomial(n, true)
    a, b = st.beta_prior(k, n)
    assert a + b == pytest.approx(300, rel=0.15)
    assert a / (a + b) == pytest.approx(k.sum() / n.sum())
    shrunk = st.shrink(k, n, a, b)
    # what shrinkage is for: closer to the true rates than the raw ones
    assert np.mean((shrunk - true) ** 2) < 0.7 * np.mean((k / n - true) ** 2)


def test_prior_edge_cases():
    a, b = st.beta_prior([], [])
    assert np.isnan(a) and np.isnan(b)
    assert np.isnan(st.beta_prior([0, 0], [0, 0])[0])  # rows without games are no data
    # one row: shrunk to itself
    assert st.shrink_grouped([7.0], [10.0], [0]) == pytest.approx([0.7])
    # every row won every game: no spread to see, and a mean below 1 (Jeffreys' estimate of
    # the pooled rate), so no row is certain
    k, n = np.array([3.0, 40.0, 1.0]), np.array([3.0, 40.0, 1.0])
    a, b = st.beta_prior(k, n)
    assert a / (a + b) == pytest.approx(44.5 / 45)
    shrunk = st.shrink_grouped(k, n, np.zeros(3))
    assert np.allclose(shrunk, 44.5 / 45, atol=1e-6)
    # rows of one game each say nothing about the spread: all go to the pool
    shrunk = st.shrink_grouped([1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], np.zeros(4))
    assert np.allclose(shrunk, 0.25, atol=1e-4)  # within the outlier share (1e-4)
    # no row won: the same from below, never 0.000 for a row tried once
    shrunk = st.shrink_grouped([0.0, 0.0, 0.0], [1.0, 10.0, 30.0], np.zeros(3))
    assert np.allclose(shrunk, 0.5 / 42, atol=1e-5) and (shrunk > 0).all()


def test_the_likelihood_is_exact_at_huge_strengths():
    # the fit compares strengths near 1e9, where gammaln's differences keep no digit
    from scipy.special import betaln

    k, n = np.array([3.0, 7.5, 0.0]), np.array([10.0, 12.0, 4.0])
    for m in (0.5, 40.0, 5e3, 2e4):
        a, b = 0.4 * m, 0.6 * m
        direct = (betaln(k + a, n - k + b) - betaln(a, b)).sum()
        assert st.beta_binomial_loglik(k, n, 0.4, m)[0] == pytest.approx(direct, rel=1e-9)
    # as the strength grows the Beta is a point mass: the binomial likelihood at 0.4
    binomial = (k * np.log(0.4) + (n - k) * np.log(0.6)).sum()
    assert st.beta_binomial_loglik(k, n, 0.4, 1e9)[0] == pytest.approx(binomial, abs=1e-6)


def test_irls_reaches_the_maximum_likelihood():
    rng = np.random.default_rng(5)
    x = np.column_stack([np.ones(3000), rng.normal(size=3000), rng.integers(-1, 2, size=3000)])
    true = np.array([0.1, 0.8, -0.4])
    y = rng.binomial(1, 1 / (1 + np.exp(-x @ true))).astype(float)
    y[rng.uniform(size=3000) < 0.1] = 0.5  # some draws
    f = logit.fit(x, y)
    assert f.converged
    best = optimize.minimize(lambda b: -logit.loglik(b, x, y), np.zeros(3), method="BFGS")
    assert np.allclose(f.coef, best.x, atol=1e-4)
    assert (np.abs(f.coef - true) < 4 * f.se).all()


def test_irls_intervals_cover_at_the_nominal_rate():
    rng = np.random.default_rng(6)
    covered = 0
    for _ in range(200):
        x = np.column_stack([np.ones(400), rng.integers(0, 2, size=400)])
        y = rng.binomial(1, 1 / (1 + np.exp(-(x @ [0.0, 0.7])))).astype(float)
        f = logit.fit(x, y)
        covered += abs(f.coef[1] - 0.7) < 1.96 * f.se[1]
    assert 0.90 <= covered / 200 <= 0.99


def test_shrinkage_does_not_flatten_a_real_outlier():
    # 119 even lineups and one truly at 0.60 over 40,000 games: one Beta prior fitted to
    # the family (its spread is almost all the outlier) pulled it to the pool; the two-group
    # prior keeps it where its games put it, and still shrinks a lucky 9 of 9
    rng = np.random.default_rng(3)
    n = np.full(120, 40_000.0)
    k = rng.binomial(40_000, 0.5, 120).astype(float)
    k[0] = 24_000.0
    shrunk = st.shrink_grouped(np.append(k, 9.0), np.append(n, 9.0), np.zeros(121))
    assert shrunk[0] == pytest.approx(0.60, abs=0.001)
    assert np.abs(shrunk[1:120] - 0.5).max() < 0.01
    assert shrunk[120] < 0.51
    # at about 700 games a lineup at 0.60 is told apart; at 100 it is still shrunk
    for games, low, high in ((2_000, 0.59, 0.61), (100, 0.49, 0.53)):
        row = st.shrink_grouped(np.append(k, 0.6 * games), np.append(n, games), np.zeros(121))[120]
        assert low < row < high, (games, row)
