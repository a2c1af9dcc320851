"""Prediction-powered inference for a judged mean (Angelopoulos et al., Science 2023).

A judge scores all N samples; people label n of them, chosen at random. The judge's mean
is cheap and precise but carries the judge's bias; the labels' mean is honest but wide.
PPI takes the judge's mean over the unlabelled samples and corrects it by the mean
difference between people and judge on the labelled ones:

    estimate = λ · mean_unlabelled(f) + mean_labelled(y - λ · f)

which estimates the mean human label without bias whatever the judge's quality, with the
variance ``λ² var(f_unlabelled) / (N - n) + var(y - λ f) / n`` (the two sets are disjoint,
so independent) and a normal (CLT) interval. λ = 1 is the original PPI; the all-samples
form ``mean_N(f) - mean_n(f - y)`` is λ = 1 - n/N of the same family. By default λ is
power-tuned (PPI++, Angelopoulos, Duchi and Zrnic 2023): the variance-minimising weight,
estimated from the data and clipped to [0, 1], so the interval is never much wider than
the labels' own and as narrow as the judge allows. The conventions are ``ppi_py``'s
(``ppi_mean_ci`` with ``lam=None``, ``"overall"`` tuning): standard deviations divide by n,
and the tuned λ is ``cov(y, f) / ((1 + n / N) · var(f))`` with ``var`` over every judge
score (dividing by count - 1).

The labelled samples must be a uniform random subset of the judged ones: PPI's guarantee
rests on it, and nothing in the numbers can check it. The normal interval is asymptotic:
with tens of labels it is too narrow (the more so when the judge's errors are rare, and
PPI++ tunes λ on the same labels; 79% of nominal-95% intervals covered the truth from 5
labels, 91% from 20, in the simulations of ``tests/stats/test_ppi.py``). Below
`SMALL_SAMPLE` labels the interval is therefore Student's t with n - 1 degrees of freedom
over unbiased (n - 1) variances, the small-sample form of the same interval: in the same
simulations it covered 94% or more from 20 labels on, and about 90% from 10.
`PPIInterval.describe` says which form was used, and that below 30 labels even this one is
approximate. The labels-only interval beside it takes the same form, so the two compare.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from gradewire.core import InvalidInputError, InvalidTypeError
from gradewire.stats._keyed import LabelSource, read_scores
from gradewire.stats._mean_interval import t_quantile
from gradewire.stats._ppi_result import MeanInterval, PPIInterval
from gradewire.stats._text import format_id, format_number

__all__ = ["SMALL_SAMPLE", "ppi_mean_difference", "ppi_mean_interval"]

_Array = npt.NDArray[np.float64]

SMALL_SAMPLE = 100
"""Below this many labels the interval is Student's t (n - 1 df), not ppi_py's normal one."""


def ppi_mean_interval(
    judge: LabelSource,
    labels: LabelSource,
    *,
    ids: Sequence[Hashable] | None = None,
    confidence: float = 0.95,
    lam: float | None = None,
) -> PPIInterval:
    """The mean human label of a judged set, from judge scores and a few human labels.

    Give the judge's score of every sample and the human labels of a random subset, each
    keyed by sample id (a mapping such as a dict or a pandas Series, or a sequence aligned
    with ``ids``; None or NaN where there is none). The result holds the prediction-powered
    estimate and interval beside the judge-only and the labels-only intervals, and says
    what the labels changed.

    Args:
        judge: The judge's score per sample (numbers or bools).
        labels: The human label per labelled sample, on the judge's scale.
        ids: The sample ids of the sources given as sequences, in order. Without it,
            sequences are keyed by position, and then both must be sequences.
        confidence: The interval's level, between 0 and 1.
        lam: The weight of the judge: None tunes it (PPI++), 1 is the original PPI, 0
            uses the labels alone.

    Returns:
        The estimate, its interval, and the classical intervals beside it.

    Raises:
        InvalidInputError: Fewer than 2 labels, a labelled sample the judge did not score,
            no judged sample without a label, a label or score that is not a finite
            number, or an argument out of range.

    Example:
        A judge that passes a third of the answers, where people fail one in four of
        those; people labelled every fifth sample:

        >>> import gradewire as gw
        >>> judge = {f"s{i}": float(i % 3 == 0) for i in range(300)}
        >>> people = {f"s{i}": float(i % 3 == 0 and i % 4 != 0) for i in range(0, 300, 5)}
        >>> result = gw.stats.ppi_mean_interval(judge, people)
        >>> result.n_labels, result.n_judged
        (60, 300)
        >>> round(result.judge_only.estimate, 3), round(result.estimate, 3)
        (0.333, 0.25)
    """
    _check(confidence, lam)
    all_ids, (scores, human) = read_scores([judge, labels], ["judge", "labels"], ids)
    _labelled_are_judged(human, scores, "the judge")
    n_unscored = sum(1 for i in all_ids if i not in scores)
    return _ppi(scores, human, confidence, lam, "mean", n_unscored)


def ppi_mean_difference(
    judge_a: LabelSource,
    judge_b: LabelSource,
    labels_a: LabelSource,
    labels_b: LabelSource,
    *,
    ids: Sequence[Hashable] | None = None,
    confidence: float = 0.95,
    lam: float | None = None,
) -> PPIInterval:
    """The mean human-labelled difference ``b - a`` of two runs on the same samples.

    Two runs (two models answering the same prompts) are scored by the same judge on every
    sample; people label both runs' answers on a random subset of the samples. This is
    `ppi_mean_interval` on the per-sample differences ``judge_b - judge_a`` and
    ``labels_b - labels_a``: pairing removes what the samples share, and the labels
    correct the judge's bias where it differs between the runs. Samples only one run's
    judge scored are left out and counted in ``n_unscored``. With a human verdict on the
    pair itself (b better: 1, a better: -1, tie: 0) and a judge's verdict to match, call
    `ppi_mean_interval` on those directly.

    Args:
        judge_a: The judge's score of run A, per sample.
        judge_b: The judge's score of run B, per sample.
        labels_a: The human label of run A's answer, per labelled sample.
        labels_b: The human label of run B's answer, on the same samples as ``labels_a``.
        ids: The sample ids of the sources given as sequences, in order.
        confidence: The interval's level, between 0 and 1.
        lam: The weight of the judge: None tunes it (PPI++), 1 is the original PPI.

    Returns:
        The estimate of ``mean(label_b - label_a)``, its interval, and the classical
        intervals beside it.

    Raises:
        InvalidInputError: The runs' labels cover different samples, a labelled sample a
            run's judge did not score, fewer than 2 labelled samples, or what
            `ppi_mean_interval` refuses.
    """
    _check(confidence, lam)
    all_ids, (score_a, score_b, human_a, human_b) = read_scores(
        [judge_a, judge_b, labels_a, labels_b],
        ["judge_a", "judge_b", "labels_a", "labels_b"],
        ids,
    )
    only = [i for i in human_a if i not in human_b] + [i for i in human_b if i not in human_a]
    if only:
        raise InvalidInputError(
            f"{len(only)} samples have a human label for one run only ({_some(only)}): "
            "label both runs' answers on each labelled sample, or drop those labels"
        )
    _labelled_are_judged(human_a, score_a, "run A's judge")
    _labelled_are_judged(human_a, score_b, "run B's judge")
    paired = {i: score_b[i] - score_a[i] for i in score_a if i in score_b}
    difference = {i: human_b[i] - human_a[i] for i in human_a}
    n_unscored = sum(1 for i in all_ids if i not in paired)
    return _ppi(paired, difference, confidence, lam, "mean difference b - a", n_unscored)


def _check(confidence: float, lam: float | None) -> None:
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise InvalidTypeError(f"confidence must be a number, not {type(confidence).__name__}")
    if not 0.0 < confidence < 1.0:
        raise InvalidInputError(
            f"confidence must be between 0 and 1 (0.95 for 95%), not {confidence!r}"
        )
    if lam is not None:
        if isinstance(lam, bool) or not isinstance(lam, int | float):
            raise InvalidTypeError(f"lam must be a number or None, not {type(lam).__name__}")
        if not 0.0 <= lam <= 1.0:
            raise InvalidInputError(
                f"lam must be between 0 (labels only) and 1 (original PPI), or None to tune "
                f"it, not {lam!r}"
            )


def _labelled_are_judged(
    human: Mapping[Hashable, float], scores: Mapping[Hashable, float], who: str
) -> None:
    missing = [i for i in human if i not in scores]
    if missing:
        raise InvalidInputError(
            f"{who} has no score for {len(missing)} labelled samples ({_some(missing)}): "
            "PPI compares judge and people on every labelled sample; grade those samples "
            "or drop their labels"
        )


def _some(ids: Sequence[Hashable]) -> str:
    shown = ", ".join(format_id(i) for i in ids[:5])
    return f"{shown}, …" if len(ids) > 5 else shown


def _ppi(
    scores: Mapping[Hashable, float],
    human: Mapping[Hashable, float],
    confidence: float,
    lam: float | None,
    estimand: str,
    n_unscored: int,
) -> PPIInterval:
    n = len(human)
    if n < 2:
        raise InvalidInputError(
            f"PPI needs at least 2 human labels to estimate the judge's error, not {n}"
        )
    unlabelled = np.fromiter((v for i, v in scores.items() if i not in human), dtype=np.float64)
    if unlabelled.size == 0:
        raise InvalidInputError(
            "every judged sample has a human label, so the judge adds nothing: use the "
            "labels' own mean, or judge more samples than are labelled"
        )
    y = np.fromiter(human.values(), dtype=np.float64, count=n)
    f = np.fromiter((scores[i] for i in human), dtype=np.float64, count=n)
    if lam is None:
        weight, method = _tuned_lambda(y, f, unlabelled), "PPI++"
    else:
        weight, method = float(lam), "PPI"
    big_n = unlabelled.size
    rectifier = y - weight * f
    _refuse_no_spread(y, rectifier, weight, estimand)
    if unlabelled.size < 2:
        raise InvalidInputError(
            "only one judged sample has no human label, so the spread of the judge's scores "
            "there cannot be estimated: judge more samples than are labelled"
        )
    estimate = float(weight * unlabelled.mean() + rectifier.mean())
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    # ppi_py's normal interval from SMALL_SAMPLE labels on; below, its small-sample form.
    ddof, quantile = (0, z) if n >= SMALL_SAMPLE else (1, t_quantile(confidence, n - 1))
    standard_error = math.sqrt(
        float(np.var(weight * unlabelled, ddof=ddof)) / big_n
        + float(np.var(rectifier, ddof=ddof)) / n
    )
    judged = np.concatenate([f, unlabelled])
    return PPIInterval(
        estimate=estimate,
        low=estimate - quantile * standard_error,
        high=estimate + quantile * standard_error,
        standard_error=standard_error,
        confidence=confidence,
        lam=weight,
        method=method,
        estimand=estimand,
        n_labels=n,
        n_judged=judged.size,
        n_unscored=n_unscored,
        judge_bias=float(np.mean(f - y)),
        judge_only=_classical(judged, z),
        human_only=_classical(y, z) if ddof == 0 else _classical(y, quantile, ddof=1),
        interval_form="normal" if ddof == 0 else f"Student t, {n - 1} df",
    )


def _refuse_no_spread(y: _Array, rectifier: _Array, weight: float, estimand: str) -> None:
    """Refuse labels, or a judge's error on them, that do not vary: nothing bounds them.

    The normal interval's width comes from the spread of ``y - λ f`` over the labels. When
    it is 0 (two identical labels; a judge that matched every label), the interval would
    be zero-width, and "the judge is worth infinitely many labels": a spread of 0 in a
    sample says only that the spread is small, never that it is 0.
    """
    what = "human labels" if estimand == "mean" else "human label differences b - a"
    n = y.size
    if float(np.ptp(y)) == 0.0:
        raise InvalidInputError(
            f"the {n} {what} are all {format_number(float(y[0]))}: with no spread among them "
            "a normal interval has zero width, as if the mean were known exactly; label "
            "more samples (until the labels differ) before estimating it"
        )
    if float(np.ptp(rectifier)) == 0.0:
        raise InvalidInputError(
            f"on the {n} labelled samples the {what} minus λ = {weight:.3g} times the judge's "
            "scores are all equal: the judge's error has no spread there, so a normal "
            "interval would leave it out; label more samples (or pass lam=0 for the labels' "
            "own interval)"
        )


def _tuned_lambda(y: _Array, f: _Array, unlabelled: _Array) -> float:
    """PPI++'s variance-minimising λ for a mean, clipped to [0, 1] (``ppi_py``'s formula)."""
    spread = float(np.var(np.concatenate([f, unlabelled]), ddof=1))
    if spread == 0.0:
        return 0.0  # a judge that gives one score throughout carries no information
    covariance = float(np.mean((y - y.mean()) * (f - f.mean())))
    tuned = covariance / ((1.0 + y.size / unlabelled.size) * spread)
    return min(1.0, max(0.0, tuned))


def _classical(values: _Array, quantile: float, *, ddof: int = 0) -> MeanInterval:
    mean = float(values.mean())
    standard_error = float(values.std(ddof=ddof)) / math.sqrt(values.size)
    return MeanInterval(
        estimate=mean,
        low=mean - quantile * standard_error,
        high=mean + quantile * standard_error,
        standard_error=standard_error,
        n=int(values.size),
    )
