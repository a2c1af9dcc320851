import numpy as np
import pytest
from scipy import stats

from gradewire import InvalidInputError
from gradewire.eval import paired_bootstrap


def _scipy(a, b, n_resamples, method, seed):
    return stats.bootstrap(
        (a, b),
        lambda x, y, axis: np.mean(y - x, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=n_resamples,
        method=method,
        rng=seed,
    )


@pytest.mark.parametrize("n", [30, 200, 5000])
def test_same_interval_as_scipy_for_the_same_seed(n):
    # Continuous scores: the resample indices are drawn exactly as scipy draws them, so
    # the BCa interval and standard error agree to rounding.
    rng = np.random.default_rng(n)
    a = rng.normal(0.5, 0.2, n)
    b = a + rng.normal(0.03, 0.3, n)
    ours = paired_bootstrap(a, b, n_resamples=3000, seed=7)
    theirs = _scipy(a, b, 3000, "BCa", 7)
    assert ours.method == "BCa"
    assert ours.low == pytest.approx(theirs.confidence_interval.low, abs=1e-12)
    assert ours.high == pytest.approx(theirs.confidence_interval.high, abs=1e-12)
    assert ours.standard_error == pytest.approx(theirs.standard_error, rel=1e-9)
    assert ours.estimate == pytest.approx(float(np.mean(b - a)))


def test_binary_scores_agree_with_scipy_within_monte_carlo_error():
    # 0/1 scores take the multinomial shortcut: other draws, the same distribution.
    rng = np.random.default_rng(3)
    a = (rng.random(400) < 0.6).astype(float)
    b = (rng.random(400) < 0.7).astype(float)
    ours = paired_bootstrap(a, b, n_resamples=20000, seed=1)
    theirs = _scipy(a, b, 20000, "BCa", 1)
    assert ours.low == pytest.approx(theirs.confidence_interval.low, abs=0.006)
    assert ours.high == pytest.approx(theirs.confidence_interval.high, abs=0.006)
    assert ours.standard_error == pytest.approx(theirs.standard_error, rel=0.03)


def test_seeded_and_reproducible():
    rng = np.random.default_rng(0)
    a, b = rng.random(100), rng.random(100)
    first = paired_bootstrap(a, b, seed=11)
    assert paired_bootstrap(a, b, seed=11) == first
    assert paired_bootstrap(a, b, seed=12) != first


def _coverage(kind, reps=500, n=100):
    rng = np.random.default_rng(2024)
    hits_naive = hits_clustered = 0
    for rep in range(reps):
        clusters = None
        if kind == "normal":
            a = rng.normal(0.6, 0.2, n)
            b = a + rng.normal(0.05, 0.25, n)
        elif kind == "binary":
            a = (rng.random(n) < 0.6).astype(float)
            b = (rng.random(n) < 0.65).astype(float)
        else:  # 40 topics of 4 questions; a per-topic shift in the difference
            clusters = np.repeat(np.arange(40), 4)
            a = rng.normal(0.5, 0.2, 160)
            b = a + 0.05 + rng.normal(0, 0.3, 40)[clusters] + rng.normal(0, 0.1, 160)
        interval = paired_bootstrap(a, b, n_resamples=1000, seed=rep)
        hits_naive += interval.low <= 0.05 <= interval.high
        if clusters is not None:
            interval = paired_bootstrap(a, b, clusters=clusters, n_resamples=1000, seed=rep)
            hits_clustered += interval.low <= 0.05 <= interval.high
    return hits_naive / reps, hits_clustered / reps


@pytest.mark.parametrize("kind", ["normal", "binary"])
def test_the_95_interval_covers_the_true_difference_95_percent_of_the_time(kind):
    coverage, _ = _coverage(kind)
    assert 0.93 <= coverage <= 0.97, coverage


def test_clustered_interval_keeps_its_coverage_where_the_naive_one_fails():
    naive, clustered = _coverage("clustered")
    assert 0.93 <= clustered <= 0.97, clustered
    assert naive < 0.85, naive  # questions that share a topic are not independent


def test_clustered_jackknife_and_estimate_use_the_pooled_mean():
    a = np.zeros(6)
    b = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 1.0])
    interval = paired_bootstrap(a, b, clusters=["x", "x", "x", "y", "y", "z"])
    assert interval.n_clusters == 3
    assert interval.estimate == pytest.approx(4 / 6)


def test_constant_differences_give_a_point_interval():
    interval = paired_bootstrap([0, 0, 0, 0], [1, 1, 1, 1])
    assert (interval.low, interval.high) == (1.0, 1.0)
    assert interval.method == "percentile"


@pytest.mark.parametrize(
    ("a", "b", "options", "message"),
    [
        ([1, 2], [1], {}, "same length"),
        ([1], [2], {}, "at least 2 pairs"),
        ([1, float("nan")], [1, 2], {}, "finite"),
        ([1, 2], [1, 2], {"n_resamples": 1}, "n_resamples"),
        ([1, 2], [1, 2], {"confidence": 1.5}, "confidence"),
        ([1, 2], [1, 2], {"clusters": ["a", "a"]}, "at least 2 clusters"),
    ],
)
def test_bad_input_is_an_error_that_says_why(a, b, options, message):
    with pytest.raises(InvalidInputError, match=message):
        paired_bootstrap(a, b, **options)
