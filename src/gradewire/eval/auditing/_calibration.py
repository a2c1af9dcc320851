"""Calibrating a score-based judge's decision threshold from people's labels, proven held out.

A judge that scores (a range judge, OpenAI's ``score_model``, a logprob-weighted score)
passes a sample when its score reaches a threshold. `calibrate_threshold` finds the
threshold that agrees best with people's pass/fail labels, and proves it on labels it
did not see: k stratified folds (each class dealt evenly across them), the threshold of
each fold chosen on the other folds only, so every sample's calibrated verdict comes from
a threshold fitted without it.
Agreement (Cohen's κ) before (the judge's own threshold) and after (the held-out
thresholds) is compared on the same samples with a paired bootstrap interval of the
change; an improvement is claimed only when that interval excludes 0, and otherwise the
judge's own threshold is kept.

The interval resamples the samples with each fold's threshold held fixed: it covers the
sampling error of the held-out agreement, not the variation of the fitted thresholds.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gradewire.core import InvalidInputError
from gradewire.eval.runs._scipy import scipy_stats

__all__ = [
    "ThresholdCalibration",
    "binary_kappa",
    "calibrate_threshold",
    "paired_kappa_change_interval",
]


def binary_kappa(truth: npt.NDArray[Any], predicted: npt.NDArray[Any]) -> float:
    """Cohen's κ of two 0/1 raters (NaN when both always give one label: undefined)."""
    truth = np.asarray(truth, dtype=bool)
    predicted = np.asarray(predicted, dtype=bool)
    observed = float(np.mean(truth == predicted))
    p_truth, p_pred = float(np.mean(truth)), float(np.mean(predicted))
    expected = p_truth * p_pred + (1.0 - p_truth) * (1.0 - p_pred)
    if expected >= 1.0 - 1e-12:
        return math.nan
    return (observed - expected) / (1.0 - expected)


@dataclass(frozen=True)
class ThresholdCalibration:
    """A judge's decision threshold, calibrated on labels and checked on held-out folds.

    Attributes:
        n: Samples with a score and a label.
        positives: Of them, those people passed.
        folds: Folds of the cross-validation.
        threshold_before: The judge's own threshold (a score at or above it passes).
        threshold: The threshold to use: the one fitted on every sample when the
            held-out improvement is proven, else ``threshold_before``.
        fitted_threshold: The threshold fitted on every sample (whatever was proven).
        fold_thresholds: The threshold fitted on each fold's other folds.
        kappa_before: Cohen's κ of the judge's own threshold with the labels.
        kappa_after: Cohen's κ of the held-out calibrated verdicts with the labels.
        change: ``kappa_after - kappa_before``.
        ci_low: Lower end of the paired bootstrap interval of ``change``.
        ci_high: Upper end.
        confidence: The interval's level.
        method: How the interval was computed.
        improved: Whether the interval lies above 0 (then ``threshold`` is the new one).
        held_out: Each sample's held-out calibrated verdict (id → 0/1).
    """

    n: int
    positives: int
    folds: int
    threshold_before: float
    threshold: float
    fitted_threshold: float
    fold_thresholds: tuple[float, ...]
    kappa_before: float
    kappa_after: float
    change: float
    ci_low: float
    ci_high: float
    confidence: float
    method: str
    improved: bool
    held_out: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN as None)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, float) and not math.isfinite(value):
                value = None
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            out[name] = value
        return out

    def __str__(self) -> str:
        interval = (
            f"{self.confidence:.0%} interval [{self.ci_low:+.3f}, {self.ci_high:+.3f}]"
            if math.isfinite(self.ci_low) and math.isfinite(self.ci_high)
            else "no interval"
        )
        head = (
            f"threshold calibration on {self.n} labelled samples ({self.positives} passed by "
            f"people), {self.folds}-fold held out: Cohen's κ {_f(self.kappa_before)} at the "
            f"judge's threshold {self.threshold_before:g}, {_f(self.kappa_after)} calibrated "
            f"(change {self.change:+.3f}, {interval}, {self.method})"
        )
        if self.improved:
            verdict = (
                f"  the calibrated threshold agrees better with people on held-out labels: "
                f"use {self.threshold:g}"
            )
        elif math.isfinite(self.ci_high) and self.ci_high < 0:
            verdict = (
                f"  calibration agreed worse on held-out labels; keep {self.threshold_before:g}"
            )
        else:
            verdict = (
                "  no improvement this interval can tell apart from 0: keep the judge's "
                f"threshold {self.threshold_before:g} (fitted on all labels: "
                f"{self.fitted_threshold:g}, not proven)"
            )
        return f"{head}\n{verdict}"


def calibrate_threshold(
    scores: Mapping[str, float | None],
    labels: Mapping[str, float | None],
    *,
    threshold: float = 0.5,
    folds: int = 5,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> ThresholdCalibration:
    """Calibrate the pass threshold of a judge's ``scores`` on people's 0/1 ``labels``.

    Args:
        scores: The judge's score per sample id (None or NaN: unscored, left out).
        labels: People's label per sample id: 1 pass, 0 fail (None: unlabelled).
        threshold: The judge's own threshold: a score at or above it passes.
        folds: Stratified folds (2 or more); each class needs at least this many samples.
        confidence: The interval's level.
        n_resamples: Bootstrap resamples of the interval.
        seed: Seed of the folds and of the bootstrap.

    Raises:
        InvalidInputError: Labels other than 0/1, too few samples of a class for the
            folds, or bad settings.
    """
    scipy_stats()  # the interval needs it: fail before any work

    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise InvalidInputError(f"folds must be 2 or more, not {folds!r}")
    if not 0.0 < confidence < 1.0:
        raise InvalidInputError(f"confidence must be between 0 and 1, not {confidence!r}")
    ids = [
        key for key in scores if key in labels and _finite(scores[key]) and labels[key] is not None
    ]
    y = np.array([float(labels[key]) for key in ids])  # type: ignore[arg-type]
    if not set(np.unique(y)) <= {0.0, 1.0}:
        raise InvalidInputError("threshold calibration needs pass/fail labels (1 or 0)")
    s = np.array([float(scores[key]) for key in ids])  # type: ignore[arg-type]
    positives = int(y.sum())
    if min(positives, len(y) - positives) < folds:
        raise InvalidInputError(
            f"{positives} passed and {len(y) - positives} failed samples: each needs at least "
            f"{folds} (one per fold) for a held-out calibration; label more samples or use "
            "fewer folds"
        )
    truth = y.astype(bool)
    before = s >= threshold
    after = np.zeros(len(y), dtype=bool)
    fitted: list[float] = []
    for train, test in _stratified_folds(truth, folds, seed):
        chosen = _best_threshold(s[train], truth[train], threshold)
        fitted.append(chosen)
        after[test] = s[test] >= chosen
    kappa_before = binary_kappa(truth, before)
    kappa_after = binary_kappa(truth, after)
    change = kappa_after - kappa_before
    low, high, method = paired_kappa_change_interval(
        truth, before, after, confidence=confidence, n_resamples=n_resamples, seed=seed
    )
    method += ", fold thresholds fixed"
    improved = math.isfinite(low) and low > 0.0
    overall = _best_threshold(s, truth, threshold)
    return ThresholdCalibration(
        n=len(y),
        positives=positives,
        folds=folds,
        threshold_before=float(threshold),
        threshold=overall if improved else float(threshold),
        fitted_threshold=overall,
        fold_thresholds=tuple(fitted),
        kappa_before=kappa_before,
        kappa_after=kappa_after,
        change=change,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        method=method,
        improved=improved,
        held_out={key: int(value) for key, value in zip(ids, after, strict=True)},
    )


def paired_kappa_change_interval(
    truth: npt.NDArray[Any],
    before: npt.NDArray[Any],
    after: npt.NDArray[Any],
    *,
    confidence: float,
    n_resamples: int,
    seed: int,
) -> tuple[float, float, str]:
    """The paired bootstrap interval of κ(truth, after) - κ(truth, before), and its method.

    The samples are resampled with both verdicts of each kept together (paired); BCa,
    else the percentile interval where BCa is undefined (every jackknife value equal).
    NaN ends when ``n_resamples`` is 0 or the change is undefined.
    """
    stats = scipy_stats()
    truth = np.asarray(truth, dtype=bool)
    before = np.asarray(before, dtype=bool)
    after = np.asarray(after, dtype=bool)
    method = "paired bootstrap over samples (BCa)"
    change = binary_kappa(truth, after) - binary_kappa(truth, before)
    if n_resamples <= 0 or not math.isfinite(change):
        return math.nan, math.nan, method

    def statistic(index: npt.NDArray[np.int64], axis: int = -1) -> npt.NDArray[Any]:
        gain: npt.NDArray[Any] = _kappa_rows(truth[index], after[index], axis) - _kappa_rows(
            truth[index], before[index], axis
        )
        return gain

    index = np.arange(len(truth))
    low = high = math.nan
    for kind in ("BCa", "percentile"):
        # BCa's acceleration is undefined when every jackknife value is equal (the
        # verdicts after equal those before): then the percentile interval.
        with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.simplefilter("ignore", getattr(stats, "DegenerateDataWarning", Warning))
            result = stats.bootstrap(
                (index,),
                statistic,
                vectorized=True,
                n_resamples=n_resamples,
                confidence_level=confidence,
                method=kind,
                random_state=np.random.default_rng(seed),
            )
        low = float(result.confidence_interval.low)
        high = float(result.confidence_interval.high)
        if math.isfinite(low) and math.isfinite(high):
            break
        method = "paired bootstrap over samples (percentile: BCa undefined here)"
    return low, high, method


def _kappa_rows(
    truth: npt.NDArray[Any], predicted: npt.NDArray[Any], axis: int
) -> npt.NDArray[Any]:
    """`binary_kappa` along ``axis`` of many resamples at once (NaN where undefined)."""
    observed = np.mean(truth == predicted, axis=axis)
    p_truth = np.mean(truth, axis=axis)
    p_pred = np.mean(predicted, axis=axis)
    expected = p_truth * p_pred + (1.0 - p_truth) * (1.0 - p_pred)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = (observed - expected) / (1.0 - expected)
    out: npt.NDArray[Any] = np.where(expected >= 1.0 - 1e-12, np.nan, kappa)
    return out


def _stratified_folds(
    truth: npt.NDArray[Any], folds: int, seed: int
) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
    """(train, test) indices of ``folds`` folds, each class dealt evenly across them."""
    rng = np.random.default_rng(seed)
    fold_of = np.empty(len(truth), dtype=np.int64)
    for label in (False, True):
        members = rng.permutation(np.flatnonzero(truth == label))
        # Dealt round-robin from a random starting fold, so fold sizes stay even.
        fold_of[members] = (np.arange(len(members)) + int(rng.integers(folds))) % folds
    every = np.arange(len(truth))
    return [(every[fold_of != k], every[fold_of == k]) for k in range(folds)]


def _best_threshold(scores: npt.NDArray[Any], truth: npt.NDArray[Any], default: float) -> float:
    """The threshold of best κ on these samples; among equals, the nearest to ``default``."""
    values = np.unique(scores)
    candidates = [default, *((values[:-1] + values[1:]) / 2.0), values[0], values[-1] + 1e-9]
    best, best_kappa = default, binary_kappa(truth, scores >= default)
    for candidate in candidates:
        kappa = binary_kappa(truth, scores >= candidate)
        if not math.isfinite(kappa):
            continue
        better = not math.isfinite(best_kappa) or kappa > best_kappa + 1e-12
        tie = math.isfinite(best_kappa) and abs(kappa - best_kappa) <= 1e-12
        if better or (tie and abs(candidate - default) < abs(best - default)):
            best, best_kappa = float(candidate), kappa
    return best


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _f(value: float) -> str:
    return f"{value:.3f}" if math.isfinite(value) else "–"
