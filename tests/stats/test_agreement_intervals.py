"""The bootstrap intervals of agreement(): against scipy's BCa, and their coverage.

scipy.stats.bootstrap draws other resamples, so the intervals agree within Monte Carlo
error at many resamples, not to rounding. Coverage is simulated on populations whose true
value is known (analytically): 500 samples, each with its own seed; the 95% interval must
hold the true value 93% to 97% of the time.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from gradewire.stats import agreement

RUNS = 500


def _pearson(x, y, axis=-1):
    dx = x - x.mean(axis=axis, keepdims=True)
    dy = y - y.mean(axis=axis, keepdims=True)
    return (dx * dy).sum(axis) / np.sqrt((dx * dx).sum(axis) * (dy * dy).sum(axis))


def _kappa(k):
    def statistic(a, b, axis=-1):
        observed = np.mean(a == b, axis=axis)
        chance = sum(np.mean(a == c, axis=axis) * np.mean(b == c, axis=axis) for c in range(k))
        return (observed - chance) / (1.0 - chance)

    return statistic


def _scipy_bca(data, statistic, n_resamples, seed):
    result = stats.bootstrap(
        data,
        statistic,
        paired=True,
        vectorized=True,
        n_resamples=n_resamples,
        method="BCa",
        rng=seed,
    )
    return result.confidence_interval.low, result.confidence_interval.high


@pytest.mark.parametrize("n", [150, 3000])
def test_pearson_interval_agrees_with_scipy_bca(n):
    # At n = 3000 the jackknife leaves out 1,000 random groups of 3 items, not each item.
    rng = np.random.default_rng(n)
    x = rng.normal(size=n)
    y = 0.5 * x + rng.normal(size=n)
    resamples = 20000 if n < 1000 else 4000
    ours = agreement(
        x, y, scale="interval", statistics=["pearson"], n_resamples=resamples, seed=1
    ).ci("pearson")
    theirs = _scipy_bca((x, y), _pearson, resamples, 2)
    tolerance = 0.006 if n < 1000 else 0.003
    assert ours == pytest.approx(theirs, abs=tolerance)


def test_kappa_interval_agrees_with_scipy_bca():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 3, 300)
    b = np.where(rng.random(300) < 0.6, a, rng.integers(0, 3, 300))
    result = agreement(a, b, statistics=["cohen_kappa"], n_resamples=20000, seed=1)
    assert result.cohen_kappa == pytest.approx(_kappa(3)(a, b))
    theirs = _scipy_bca((a, b), _kappa(3), 20000, 2)
    assert result.ci("cohen_kappa") == pytest.approx(theirs, abs=0.008)


def _true_kappa(joint):
    rows, columns = joint.sum(axis=1), joint.sum(axis=0)
    chance = rows @ columns
    return (np.trace(joint) - chance) / (1.0 - chance)


def test_kappa_interval_covers_95_percent():
    joint = np.array([[0.25, 0.05, 0.02], [0.04, 0.20, 0.06], [0.01, 0.07, 0.30]])
    truth = _true_kappa(joint)
    rng = np.random.default_rng(2024)
    hits = 0
    for run in range(RUNS):
        cells = rng.choice(9, size=200, p=joint.ravel())
        result = agreement(
            cells // 3, cells % 3, statistics=["cohen_kappa"], n_resamples=1000, seed=run
        )
        low, high = result.ci("cohen_kappa")
        hits += low <= truth <= high
    assert 0.93 <= hits / RUNS <= 0.97, hits / RUNS


def test_pearson_interval_covers_95_percent():
    rho = 0.6
    rng = np.random.default_rng(2025)
    hits = 0
    for run in range(RUNS):
        x = rng.normal(size=200)
        y = rho * x + np.sqrt(1 - rho**2) * rng.normal(size=200)
        result = agreement(
            x, y, scale="interval", statistics=["pearson"], n_resamples=1000, seed=run
        )
        low, high = result.ci("pearson")
        hits += low <= rho <= high
    assert 0.93 <= hits / RUNS <= 0.97, hits / RUNS


def test_clustered_interval_keeps_its_coverage_where_the_item_bootstrap_fails():
    # 80 topics of 5 items. A topic sets the likely true label (0.7) and how hard its
    # items are (raters right 90% or 50% of the time, else a random label): items of a
    # topic are not independent. The population's joint distribution of the two labels,
    # and so its κ, follows from the model exactly.
    k, topics, size = 3, 80, 5
    joint = np.zeros((k, k))
    for topic in range(k):
        truth = np.full(k, 0.3 / k)
        truth[topic] += 0.7
        for accuracy in (0.9, 0.5):
            label = accuracy * np.eye(k) + (1 - accuracy) / k
            joint += np.einsum("z,za,zb->ab", truth, label, label) / (2 * k)
    kappa = _true_kappa(joint)
    rng = np.random.default_rng(2026)
    clusters = np.repeat(np.arange(topics), size)
    hits_clustered = hits_items = 0
    for run in range(RUNS):
        topic = rng.integers(0, k, topics)[clusters]
        accuracy = np.where(rng.random(topics) < 0.5, 0.9, 0.5)[clusters]
        true = np.where(rng.random(topics * size) < 0.7, topic, rng.integers(0, k, topics * size))
        a, b = (
            np.where(rng.random(topics * size) < accuracy, true, rng.integers(0, k, topics * size))
            for _ in range(2)
        )
        for chosen in (clusters, None):
            result = agreement(
                a, b, clusters=chosen, statistics=["cohen_kappa"], n_resamples=1000, seed=run
            )
            low, high = result.ci("cohen_kappa")
            if chosen is None:
                hits_items += low <= kappa <= high
            else:
                hits_clustered += low <= kappa <= high
    assert 0.93 <= hits_clustered / RUNS <= 0.97, hits_clustered / RUNS
    assert hits_items / RUNS < 0.90, hits_items / RUNS  # items of a topic are not independent
