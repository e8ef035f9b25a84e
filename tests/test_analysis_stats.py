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
    a, b = st.beta_prior_mom(k, n)
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
