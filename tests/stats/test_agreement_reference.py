"""agreement() against the reference implementations, to 1e-9, on random label sets.

scikit-learn's cohen_kappa_score (unweighted, linear, quadratic), the krippendorff
package's alpha (nominal, ordinal, interval; any number of raters; missing labels), and
scipy's pearsonr and spearmanr. A statistic the reference leaves undefined (a warning and
NaN, or a ValueError) is NaN here too, with a reason.
"""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from gradewire.stats import agreement

TOLERANCE = 1e-9


def _sources(columns, keep_none):
    """Each rater's labels as a dict keyed by sample id: a missing label absent or None."""
    return [
        {f"s{i}": v for i, v in enumerate(column) if keep_none or v is not None}
        for column in columns
    ]


def _paired(columns):
    a, b = columns
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    return [x for x, _ in pairs], [y for _, y in pairs]


def _reference_kappa(a, b, weights, labels=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns on 0/0 and returns NaN
        return float(cohen_kappa_score(a, b, weights=weights, labels=labels))


def _reference_alpha(columns, level, domain=None):
    data = np.array(
        [[np.nan if v is None else float(v) for v in column] for column in columns], dtype=float
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 0/0 where the pairable labels are one value
            return float(krippendorff.alpha(data, value_domain=domain, level_of_measurement=level))
    except ValueError:  # one value only, or no unit rated twice: α is undefined
        return math.nan


def _reference_confusion(a, b, labels):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns when a single label is used
        return confusion_matrix(a, b, labels=labels)


def _close(ours, reference):
    if math.isnan(reference):
        return math.isnan(ours)
    return abs(ours - reference) <= TOLERANCE


@st.composite
def label_columns(draw, raters=2, numbers=False):
    n = draw(st.integers(0, 40))
    k = draw(st.integers(1, 6))
    value = st.integers(-20, 20).map(lambda v: v / 4) if numbers else st.integers(0, k - 1)
    label = st.one_of(st.none(), value, value, value)
    return [draw(st.lists(label, min_size=n, max_size=n)) for _ in range(raters)]


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(label_columns(), st.booleans())
def test_kappa_matches_scikit_learn(columns, keep_none):
    a, b = _paired(columns)
    nominal = agreement(*_sources(columns, keep_none), n_resamples=0)
    ordinal = agreement(*_sources(columns, keep_none), scale="ordinal", n_resamples=0)
    assert nominal.n == ordinal.n == len(a)
    if len(a) < 2:
        assert math.isnan(nominal.cohen_kappa)
        assert "fewer than 2" in nominal.notes["cohen_kappa"]
        return
    reference = _reference_kappa(a, b, None)
    assert _close(nominal.cohen_kappa, reference), (nominal.cohen_kappa, reference)
    assert _close(ordinal.cohen_kappa, reference)
    assert _close(ordinal.weighted_kappa_linear, _reference_kappa(a, b, "linear"))
    assert _close(ordinal.weighted_kappa_quadratic, _reference_kappa(a, b, "quadratic"))
    assert nominal.raw_agreement == pytest.approx(np.mean(np.array(a) == np.array(b)), abs=1e-12)
    if math.isnan(reference):
        assert "same label" in nominal.notes["cohen_kappa"]
    labels = sorted(set(a) | set(b))
    assert nominal.categories == tuple(labels)
    assert np.array_equal(nominal.confusion, _reference_confusion(a, b, labels))


@SETTINGS
@given(label_columns(raters=2), st.integers(2, 4))
def test_weighted_kappa_with_an_explicit_order_matches_scikit_learn_labels(columns, extra):
    # Categories nobody used still count as steps between the used ones.
    a, b = _paired(columns)
    order = list(range(-extra, 6 + extra))[::-1]  # reversed: the order given is the order used
    result = agreement(*_sources(columns, False), scale="ordinal", categories=order, n_resamples=0)
    assert result.categories == tuple(order)
    if len(a) < 2:
        return
    for name, weights in (
        ("cohen_kappa", None),
        ("weighted_kappa_linear", "linear"),
        ("weighted_kappa_quadratic", "quadratic"),
    ):
        reference = _reference_kappa(a, b, weights, labels=order)
        assert _close(result.statistics[name], reference), (name, result.statistics[name])
    assert np.array_equal(result.confusion, _reference_confusion(a, b, order))


@SETTINGS
@given(st.integers(2, 5).flatmap(lambda r: label_columns(raters=r)), st.booleans())
def test_alpha_matches_krippendorff_nominal_and_ordinal_with_missing_labels(columns, keep_none):
    for level in ("nominal", "ordinal"):
        result = agreement(*_sources(columns, keep_none), scale=level, n_resamples=0)
        reference = _reference_alpha(columns, level)
        if result.n < 2:
            assert math.isnan(result.krippendorff_alpha)
            continue
        assert _close(result.krippendorff_alpha, reference), (level, result, reference)


@SETTINGS
@given(st.integers(2, 5).flatmap(lambda r: label_columns(raters=r, numbers=True)))
def test_alpha_matches_krippendorff_interval(columns):
    result = agreement(*_sources(columns, False), scale="interval", n_resamples=0)
    reference = _reference_alpha(columns, "interval")
    if result.n < 2:
        assert math.isnan(result.krippendorff_alpha)
        return
    assert _close(result.krippendorff_alpha, reference), (result, reference)


@SETTINGS
@given(label_columns(numbers=True))
def test_correlations_match_scipy(columns):
    a, b = _paired(columns)
    result = agreement(*_sources(columns, True), scale="interval", n_resamples=0)
    if len(a) < 2:
        assert math.isnan(result.pearson)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on a constant input and returns NaN
        pearson = float(stats.pearsonr(a, b).statistic) if len(a) > 1 else math.nan
        spearman = float(stats.spearmanr(a, b).statistic)
    assert _close(result.pearson, pearson), (result.pearson, pearson)
    assert _close(result.spearman, spearman), (result.spearman, spearman)
    assert result.mean_absolute_difference == pytest.approx(
        np.mean(np.abs(np.subtract(a, b))), abs=1e-12
    )
    if math.isnan(pearson):
        assert "same label" in result.notes["pearson"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_large_random_label_sets_match_every_reference(seed):
    rng = np.random.default_rng(seed)
    n, k = 2000, 5
    truth = rng.integers(0, k, n)
    columns = []
    for _ in range(3):
        noisy = np.clip(truth + rng.integers(-1, 2, n) * (rng.random(n) < 0.4), 0, k - 1)
        column = [None if rng.random() < 0.2 else int(v) for v in noisy]
        columns.append(column)
    pair = columns[:2]
    a, b = _paired(pair)
    result = agreement(*_sources(pair, True), scale="ordinal", n_resamples=0)
    assert result.n == len(a)
    assert _close(result.cohen_kappa, _reference_kappa(a, b, None))
    assert _close(result.weighted_kappa_linear, _reference_kappa(a, b, "linear"))
    assert _close(result.weighted_kappa_quadratic, _reference_kappa(a, b, "quadratic"))
    assert _close(result.krippendorff_alpha, _reference_alpha(pair, "ordinal"))
    assert _close(result.spearman, float(stats.spearmanr(a, b).statistic))
    three = agreement(*_sources(columns, False), scale="ordinal", n_resamples=0)
    assert _close(three.krippendorff_alpha, _reference_alpha(columns, "ordinal"))
    assert set(three.statistics) == {"raw_agreement", "krippendorff_alpha"}
    # One decimal: the krippendorff package builds a units × values × values array.
    scores = [[None if v is None else round(v + rng.normal(0, 0.3), 1) for v in c] for c in columns]
    interval = agreement(*_sources(scores, True), scale="interval", n_resamples=0)
    assert _close(interval.krippendorff_alpha, _reference_alpha(scores, "interval"))
    x, y = _paired(scores[:2])
    two = agreement(*_sources(scores[:2], True), scale="interval", n_resamples=0)
    assert _close(two.pearson, float(stats.pearsonr(x, y).statistic))
    assert _close(two.spearman, float(stats.spearmanr(x, y).statistic))


def test_string_labels_in_a_given_order_match_the_references_on_their_codes():
    # The krippendorff package's documented example: 0.815 ordinal, 0.743 nominal.
    order = ["very low", "low", "mid", "high", "very high"]
    vl, lo, mid, hi, vh, no = "very low", "low", "mid", "high", "very high", None
    rows = [
        [vl, lo, mid, mid, lo, vl, hi, vl, lo, no, no, no],
        [vl, lo, mid, mid, lo, lo, hi, vl, lo, vh, no, mid],
        [no, mid, mid, mid, lo, mid, hi, lo, lo, vh, vl, no],
        [vl, lo, mid, mid, lo, hi, hi, vl, lo, vh, vl, no],
    ]
    result = agreement(*_sources(rows, True), scale="ordinal", categories=order, n_resamples=0)
    codes = [[None if v is None else order.index(v) for v in row] for row in rows]
    assert _close(result.krippendorff_alpha, _reference_alpha(codes, "ordinal", range(5)))
    assert round(result.krippendorff_alpha, 3) == 0.815
    nominal = agreement(*_sources(rows, True), n_resamples=0)
    assert round(nominal.krippendorff_alpha, 3) == 0.743
    pair = agreement(*_sources(rows[:2], True), scale="ordinal", categories=order, n_resamples=0)
    a, b = _paired(codes[:2])
    assert _close(pair.weighted_kappa_linear, _reference_kappa(a, b, "linear", labels=range(5)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_float32_scores_agree_with_the_same_values_read_from_json(seed):
    """A judge's float32 scores against the same values as JSON floats: compared at float32.

    The references see both raters' labels normalised the same way (each cast to float32),
    which is the normalisation agreement() documents.
    """
    rng = np.random.default_rng(seed)
    values = np.array([0.1, 0.2, 0.3, 0.7, 1 / 3])
    judge = rng.choice(values, 200).astype(np.float32)
    people = [float(v) for v in judge.tolist()]  # what a JSON file would give: 0.1, not 0.1000…
    people = [json_float(v) for v in people]
    flipped = rng.random(200) < 0.3
    people = [float(rng.choice(values)) if f else v for f, v in zip(flipped, people, strict=True)]
    nominal = agreement(judge, people, n_resamples=0)
    interval = agreement(judge, people, scale="interval", n_resamples=0)
    a32, b32 = judge, np.asarray(people, dtype=np.float32)
    same = float(np.mean(a32 == b32))
    assert nominal.raw_agreement == pytest.approx(same, abs=TOLERANCE)
    assert interval.raw_agreement == pytest.approx(same, abs=TOLERANCE)
    codes_a, codes_b = np.unique(np.concatenate([a32, b32]), return_inverse=True)[1].reshape(2, -1)
    reference = cohen_kappa_score(codes_a, codes_b)
    assert nominal.cohen_kappa == pytest.approx(reference, abs=TOLERANCE)
    for scale, result in (("nominal", nominal), ("interval", interval)):
        alpha = krippendorff.alpha(
            reliability_data=np.vstack([a32, b32]).astype(np.float64), level_of_measurement=scale
        )
        assert result.krippendorff_alpha == pytest.approx(alpha, abs=1e-7)
    assert nominal.categories == (0.1, 0.2, 0.3, float(str(np.float32(1 / 3))), 0.7)
    identical = agreement(judge, [json_float(float(v)) for v in judge.tolist()], n_resamples=0)
    assert (identical.raw_agreement, identical.cohen_kappa) == (1.0, 1.0)
    assert identical.krippendorff_alpha == pytest.approx(1.0)


def json_float(value):
    """``value`` as it comes back from a JSON file written with float32's shortest repr."""
    return float(str(np.float32(value)))


def test_labels_that_differ_beyond_float32_precision_are_one_label_and_integers_stay_exact():
    result = agreement([0.1, 2**40, 5], [0.1 + 1e-12, 2**40 + 1, 5.0], n_resamples=0)
    assert result.disagreements == (1,)  # 2**40 and 2**40 + 1 are integers: exact
    assert result.raw_agreement == pytest.approx(2 / 3)
