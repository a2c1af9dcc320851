"""Interval and p-value of a comparison come from one procedure, and never disagree."""

import math

import numpy as np
import pytest
from scipy import optimize, stats
from statsmodels.stats.contingency_tables import mcnemar

from gradewire.eval.comparing._compare_runs import compare_runs
from gradewire.eval.comparing._paired_binary import clustered_mcnemar, mcnemar_tango
from gradewire.eval.comparing._paired_difference import (
    BINARY,
    BINARY_CLUSTERED,
    BOOTSTRAP,
    BOOTSTRAP_CLUSTERED,
    FEW_CLUSTERS,
    paired_difference,
)
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
    result = mcnemar_tango(gained, lost, n)
    assert result.low == pytest.approx(low, abs=6e-5)
    assert result.high == pytest.approx(high, abs=6e-5)


@pytest.mark.parametrize(
    ("gained", "lost", "n"), [(47, 29, 190), (4, 0, 10), (3, 9, 40), (0, 5, 6)]
)
def test_mcnemar_tango_against_references(gained, lost, n):
    result = mcnemar_tango(gained, lost, n)
    # The p-value is McNemar's asymptotic test without continuity correction.
    table = [[n - gained - lost, lost], [gained, 0]]
    reference = mcnemar(table, exact=False, correction=False).pvalue
    assert result.p_value == pytest.approx(reference, abs=1e-9)
    # Each end is a difference the score statistic rejects exactly at the level: the
    # statistic is recomputed from a likelihood maximised numerically under the null.
    z = stats.norm.ppf(0.975)
    for end, sign in ((result.low, 1.0), (result.high, -1.0)):
        if abs(end) == 1.0:
            continue
        assert _score_by_numeric_mle(gained, lost, n, end) == pytest.approx(sign * z, abs=1e-5)
    assert -1.0 <= result.low <= result.estimate <= result.high <= 1.0


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


def test_clustered_mcnemar_is_durkalskis_statistic_and_its_inversion():
    rng = np.random.default_rng(4)
    clusters = [str(i // 5) for i in range(150)]
    d = rng.choice([-1.0, 0.0, 1.0], size=150, p=[0.15, 0.6, 0.25])
    result, g = clustered_mcnemar(d, clusters)
    assert g == 30
    sums = np.array([d[i * 5 : i * 5 + 5].sum() for i in range(30)])
    chi2 = sums.sum() ** 2 / np.dot(sums, sums)
    assert result.p_value == pytest.approx(stats.chi2.sf(chi2, 1), abs=1e-12)
    z = stats.norm.ppf(0.975)
    for end, sign in ((result.low, 1.0), (result.high, -1.0)):
        centred = sums - 5 * end
        assert centred.sum() / math.sqrt(np.dot(centred, centred)) == pytest.approx(
            sign * z, abs=1e-9
        )


@pytest.mark.parametrize(("n", "shift"), [(30, 0.0), (60, 0.08), (200, 0.03), (500, 0.02)])
def test_bootstrap_p_value_inverts_the_bootstrap_interval(n, shift):
    rng = np.random.default_rng(n)
    a = rng.normal(0.5, 0.2, n)
    b = a + rng.normal(shift, 0.3, n)
    ours = paired_difference(a, b, n_resamples=3000, seed=7)
    assert ours.method == BOOTSTRAP
    theirs = stats.bootstrap(
        (a, b),
        lambda x, y, axis: np.mean(y - x, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=3000,
        method="BCa",
        rng=7,
        confidence_level=1.0 - ours.p_value,
    ).confidence_interval
    # At the level 1 - p, one end of scipy's interval (same draws) is exactly 0.
    assert min(abs(theirs.low), abs(theirs.high)) < 1e-9


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
        ("binary clustered", BINARY_CLUSTERED),
        ("continuous", BOOTSTRAP),
        ("continuous clustered", BOOTSTRAP_CLUSTERED),
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
    assert g.method == BINARY_CLUSTERED
    assert any("only 4 clusters" in w for w in g.warnings)
    naive = compare_runs(a, b).graders[0]
    assert (g.naive_ci_low, g.naive_ci_high) == (naive.ci_low, naive.ci_high)
    assert -1.0 <= g.ci_low <= g.ci_high <= 1.0
    assert (g.ci_low > 0 or g.ci_high < 0) == (g.p_value < 0.05)
