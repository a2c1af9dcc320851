"""Interval and p-value of a comparison come from one method, checked against references."""

import functools
import math

import numpy as np
import pytest
from scipy import optimize, stats
from statsmodels.stats.contingency_tables import mcnemar

from gradewire.eval.comparing._compare_runs import compare_runs
from gradewire.eval.comparing._paired_difference import (
    BINARY,
    CLUSTERED,
    FEW_CLUSTERS,
    PAIRED_T,
    paired_difference,
)
from gradewire.stats._paired import cr2_interval, mcnemar_mid_p, tango_interval
from support.eval_helpers import make_run


def _binary_runs(tmp_path, gained, lost, n, topics=None):
    a = [1.0] * lost + [0.0] * gained + [1.0] * ((n - gained - lost) // 2)
    a += [0.0] * (n - len(a))
    b = [0.0] * lost + [1.0] * gained + [1.0] * ((n - gained - lost) // 2)
    b += [0.0] * (n - len(b))
    return (
        make_run(tmp_path / "a", {"correct": a}, topics=topics),
        make_run(tmp_path / "b", {"correct": b}, topics=topics),
    )


def test_the_reported_case_no_longer_has_an_interval_and_a_p_value_that_disagree(tmp_path):
    # 190 pairs, 47 gained and 29 lost: B - A = 0.0947. The bootstrap interval excluded
    # 0 while McNemar's exact test gave p = 0.0505.
    a, b = _binary_runs(tmp_path, 47, 29, 190)
    (g,) = compare_runs(a, b).graders
    assert g.diff == pytest.approx(18 / 190)
    excludes = g.ci_low > 0 or g.ci_high < 0
    assert excludes == (g.p_value < 0.05)
    assert g.method == BINARY
    assert -1.0 <= g.ci_low <= g.ci_high <= 1.0


@pytest.mark.parametrize(
    ("gained", "lost", "n", "low", "high"),
    [
        # Published Tango intervals (Fagerland, Lydersen and Laake 2013, "Recommended
        # tests and confidence intervals for paired binomial proportions"): airway
        # hyper-responsiveness (Bentur et al. 2009) and complete response (Cavo et al. 2012).
        (1, 7, 21, -0.5172, -0.0260),
        (6, 16, 161, -0.1240, -0.0054),
    ],
)
def test_tango_interval_matches_published_values(gained, lost, n, low, high):
    ours = tango_interval(gained, lost, n)
    assert ours == pytest.approx((low, high), abs=6e-5)


@pytest.mark.parametrize(
    ("gained", "lost", "n"),
    [(47, 29, 190), (4, 0, 10), (3, 9, 40), (0, 5, 6), (0, 0, 10), (0, 0, 3), (1, 0, 50)],
)
def test_tango_interval_solves_tangos_equation(gained, lost, n):
    low, high = tango_interval(gained, lost, n)
    # Each end is a difference the score statistic rejects exactly at the level: the
    # statistic is recomputed from a likelihood maximised numerically under the null.
    z = stats.norm.ppf(0.975)
    for end, sign in ((low, 1.0), (high, -1.0)):
        if abs(end) == 1.0:
            continue
        assert _score_by_numeric_mle(gained, lost, n, end) == pytest.approx(sign * z, abs=1e-5)
    assert -1.0 <= low <= (gained - lost) / n <= high <= 1.0


@pytest.mark.parametrize("n", [1, 3, 10, 40, 1000])
def test_no_discordant_pair_gives_plus_minus_z2_over_n_plus_z2_not_a_point(n):
    z2 = stats.norm.ppf(0.975) ** 2
    assert tango_interval(0, 0, n) == pytest.approx((-z2 / (n + z2), z2 / (n + z2)), abs=1e-12)
    assert tango_interval(0, 0, 10)[1] == pytest.approx(0.2776, abs=1e-4)
    assert mcnemar_mid_p(0, 0) == 1.0


@pytest.mark.parametrize(("gained", "lost"), [(8, 2), (2, 8), (47, 29), (4, 0), (0, 1), (30, 30)])
def test_mid_p_mcnemar_against_scipy_and_statsmodels(gained, lost):
    m, k = gained + lost, min(gained, lost)
    exact = stats.binomtest(k, m, 0.5).pvalue
    # statsmodels' exact McNemar is the same conditional binomial test.
    table = [[0, lost], [gained, 0]]
    assert mcnemar(table, exact=True).pvalue == pytest.approx(exact, abs=1e-12)
    # mid-p: the exact p-value less the probability of the observed count (Fagerland 2013).
    expected = min(1.0, exact - stats.binom.pmf(k, m, 0.5)) if gained != lost else 1.0
    assert mcnemar_mid_p(gained, lost) == pytest.approx(expected, abs=1e-12)


def test_the_issues_8_gained_2_lost_prints_the_mid_p_value_it_names(tmp_path):
    # Issue 27 item 3: 0.0578 (asymptotic) was printed under "McNemar"; exact 0.109, mid-p 0.065.
    a, b = _binary_runs(tmp_path, 8, 2, 20)
    (g,) = compare_runs(a, b).graders
    assert g.method == BINARY == "mid-p McNemar test, Tango score interval"
    assert g.p_value == pytest.approx(0.0654, abs=1e-4)
    assert "mid-p McNemar test, p = 0.065" in g.verdict


def _score_by_numeric_mle(gained, lost, n, delta):
    """Tango's statistic with the restricted MLE of P(lost) found by an optimiser."""
    concordant = n - gained - lost

    def negative_loglik(p_lost):
        p_gained = p_lost + delta
        rest = 1.0 - p_lost - p_gained
        terms = [(gained, p_gained), (lost, p_lost), (concordant, rest)]
        return -sum(k * math.log(p) for k, p in terms if k)

    lo = max(0.0, -delta) + 1e-12
    hi = (1.0 - delta) / 2.0 - 1e-12
    p_lost = optimize.minimize_scalar(
        negative_loglik, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12}
    ).x
    return (gained - lost - n * delta) / math.sqrt(n * (2 * p_lost + delta * (1 - delta)))


def _cr2_by_matrices(d, labels):
    """CR2 and Bell–McCaffrey degrees of freedom by the general matrix formulas."""
    n = len(d)
    x = np.ones((n, 1))
    hat = x @ x.T / n
    residual = d - d.mean()
    groups = sorted(set(labels))
    pieces, columns = [], []
    for g in groups:
        idx = np.array([i for i, label in enumerate(labels) if label == g])
        block = np.eye(len(idx)) - hat[np.ix_(idx, idx)]
        values, vectors = np.linalg.eigh(block)
        adjust = vectors @ np.diag(values**-0.5) @ vectors.T
        pieces.append(float(np.ones(len(idx)) @ adjust @ residual[idx]) / n)
        w = np.zeros(n)
        w[idx] = adjust @ np.ones(len(idx)) / n
        columns.append((np.eye(n) - hat) @ w)
    g_matrix = np.array(columns).T
    eigen = np.linalg.eigvalsh(g_matrix.T @ g_matrix)
    return math.sqrt(sum(p * p for p in pieces)), eigen.sum() ** 2 / (eigen**2).sum()


def test_cr2_and_bell_mccaffrey_against_the_matrix_formulas():
    rng = np.random.default_rng(4)
    sizes = [3, 9, 1, 14, 6]
    labels = [str(g) for g, size in enumerate(sizes) for _ in range(size)]
    d = rng.normal(0.1, 0.5, len(labels))
    ours = cr2_interval(d, labels)
    stderr, dof = _cr2_by_matrices(d, labels)
    assert ours.stderr == pytest.approx(stderr, rel=1e-10)
    assert ours.dof == pytest.approx(dof, rel=1e-10)
    assert ours.n_clusters == 5
    critical = stats.t.ppf(0.975, dof)
    assert (ours.low, ours.high) == pytest.approx(
        (d.mean() - critical * stderr, d.mean() + critical * stderr), rel=1e-10
    )


def test_cr2_with_equal_clusters_is_the_t_test_of_the_cluster_means():
    rng = np.random.default_rng(5)
    d = rng.normal(0.05, 0.3, 40)
    labels = [str(i // 8) for i in range(40)]
    ours = cr2_interval(d, labels)
    means = d.reshape(5, 8).mean(axis=1)
    reference = stats.ttest_1samp(means, 0.0)
    assert ours.dof == pytest.approx(4.0)
    assert ours.p_value == pytest.approx(reference.pvalue, rel=1e-10)
    assert (ours.low, ours.high) == pytest.approx(tuple(reference.confidence_interval()), rel=1e-10)
    # Unclustered, it is the paired t test.
    alone = cr2_interval(d)
    assert alone.p_value == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue, rel=1e-10)


@functools.cache
def _clipped_mean_of_p_a(sd):
    """E[clip(0.6 + N(0, sd), 0.02, 0.98)], integrated numerically."""
    x = np.linspace(-10, 10, 400_001)
    p = np.clip(0.6 + sd * x, 0.02, 0.98)
    return float(np.trapezoid(p * stats.norm.pdf(x), x))


def _simulate(kind, rng):
    """A paired data set and its true difference E[b - a]: (a, b, clusters, truth)."""
    n, g = 200, 50
    topic = np.repeat(np.arange(g), n // g)
    clustered = kind.endswith("clustered")
    clusters = [str(t) for t in topic] if clustered else None
    if kind.startswith("binary"):
        # Correlated 0/1 pairs: B keeps 85% of A's right answers and gets 30% of its
        # wrong ones; with clusters, A's accuracy moves with the topic.
        sd = 0.2 if clustered else 0.0
        p_a = np.clip(0.6 + rng.normal(0, sd, g)[topic], 0.02, 0.98)
        a = (rng.random(n) < p_a).astype(float)
        b = np.where(a == 1.0, rng.random(n) < 0.85, rng.random(n) < 0.3).astype(float)
        mean_p_a = _clipped_mean_of_p_a(sd) if clustered else 0.6
        return a, b, clusters, mean_p_a * (0.85 - 1.0) + (1.0 - mean_p_a) * 0.3
    a = rng.beta(2, 3, n)
    shared = rng.normal(0, 0.1, g)[topic] if clustered else 0.0
    b = a + 0.03 + shared + rng.normal(0, 0.15, n)
    return a, b, clusters, 0.03


@pytest.mark.parametrize(
    ("kind", "method"),
    [
        ("binary", BINARY),
        ("binary clustered", CLUSTERED),
        ("continuous", PAIRED_T),
        ("continuous clustered", CLUSTERED),
    ],
)
def test_over_a_thousand_simulated_comparisons_interval_and_test_agree_and_cover(kind, method):
    rng = np.random.default_rng(2025)
    disagreements = covered = outside = 0
    reps = 1000
    for rep in range(reps):
        a, b, clusters, truth = _simulate(kind, rng)
        result = paired_difference(a, b, clusters=clusters, n_resamples=1000, seed=rep)
        assert result.method == method
        excludes = result.low > 0 or result.high < 0
        disagreements += excludes != (result.p_value < 0.05)
        covered += result.low <= truth <= result.high
        if kind.startswith("binary"):
            outside += not -1.0 <= result.low <= result.high <= 1.0
    assert disagreements == 0
    assert outside == 0
    assert 0.93 <= covered / reps <= 0.97


def test_few_clusters_warn_and_keep_the_unclustered_interval_beside(tmp_path):
    topics = [str(i % 4) for i in range(190)]
    a, b = _binary_runs(tmp_path, 47, 29, 190, topics=topics)
    (g,) = compare_runs(a, b, cluster_key="topic").graders
    assert g.n_clusters == 4 < FEW_CLUSTERS
    assert g.method == CLUSTERED
    assert any("only 4 clusters" in w for w in g.warnings)
    naive = compare_runs(a, b).graders[0]
    assert (g.naive_ci_low, g.naive_ci_high) == (naive.ci_low, naive.ci_high)
    assert -1.0 <= g.ci_low <= g.ci_high <= 1.0
    assert (g.ci_low > 0 or g.ci_high < 0) == (g.p_value < 0.05)
