"""The paired bootstrap: an interval for the mean difference of two runs on the same samples.

Resampling is vectorised with numpy and seeded, so the same data and seed give the same
interval. The interval is BCa (bias-corrected and accelerated, Efron 1987); for a mean the
jackknife it needs is O(n) (leave-one-out means are ``(S - d_i) / (n - 1)``), where a
generic implementation (`scipy.stats.bootstrap`) re-evaluates the statistic n times.
With clusters, whole clusters are resampled and the statistic is the pooled mean;
resampling G clusters spreads the means by ``(G - 1) / G`` of their variance, so the
resampled means are spread back about the estimate by ``sqrt(G / (G - 1))``, the
small-sample factor the cluster-robust standard error has (with a few dozen clusters
the plain cluster bootstrap covers visibly less than its level).

The p-value of "no difference" is the inversion of the same interval (Efron and
Tibshirani 1993, ch. 15-16): the smallest ``1 - confidence`` at which the BCa interval
excludes 0. So the interval excludes 0 exactly when the p-value is below
``1 - confidence``, whatever the data; its resolution is about ``1 / n_resamples``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gradewire.core import InvalidInputError
from gradewire.stats._resample import PERCENTILE, BcaConstants, bca_constants

__all__ = ["BootstrapInterval", "paired_bootstrap"]

# Elements of one block of resample indices: about 16 MB of int32, whatever n is.
_BLOCK = 4_000_000
# Differences with at most this many distinct values (0/1 graders give three) are
# resampled through multinomial counts per value: the same distribution, O(values) a draw.
_FEW_VALUES = 64


@dataclass(frozen=True)
class BootstrapInterval:
    """A bootstrap interval of the mean paired difference ``b - a``.

    Attributes:
        estimate: The observed mean difference.
        low: Lower end of the interval.
        high: Upper end of the interval.
        standard_error: Standard deviation of the bootstrap distribution.
        confidence: The interval's confidence level (0.95 for a 95% interval).
        n_resamples: How many resamples were drawn.
        n_pairs: How many pairs the difference is over.
        n_clusters: How many clusters were resampled (None: samples were resampled).
        method: ``"BCa"``, or ``"percentile"`` when BCa is undefined (every resample
            on one side of the estimate).
        p_value: Two-sided p-value of a difference of 0: the smallest ``1 - level`` at
            which the interval of that level excludes 0.
    """

    estimate: float
    low: float
    high: float
    standard_error: float
    confidence: float
    n_resamples: int
    n_pairs: int
    n_clusters: int | None
    method: str
    p_value: float


def paired_bootstrap(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    clusters: Sequence[object] | npt.ArrayLike | None = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapInterval:
    """Bootstrap interval of ``mean(b - a)`` over paired samples.

    Args:
        a: Scores of run A, one per sample.
        b: Scores of run B on the same samples, in the same order.
        clusters: A cluster label per pair (a topic, a source document): whole clusters
            are resampled, so questions that share a unit do not make the interval too
            narrow. None resamples pairs.
        n_resamples: Number of bootstrap resamples.
        confidence: Confidence level of the interval, between 0 and 1.
        seed: Seed of the random generator: the same inputs and seed give the same interval.

    Returns:
        The interval, its estimate and standard error.

    Raises:
        InvalidInputError: Lengths differ, fewer than two pairs (or clusters), a value is
            not finite, or an argument is out of range.
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise InvalidInputError(
            f"a and b must be 1-D and of the same length (got shapes {x.shape} and {y.shape}); "
            "pair the samples first"
        )
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise InvalidInputError("a and b must hold finite numbers; leave unscored pairs out")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 2:
        raise InvalidInputError(f"n_resamples must be an int >= 2, not {n_resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise InvalidInputError(f"confidence must be between 0 and 1, not {confidence!r}")
    d = y - x
    rng = np.random.default_rng(seed)
    if clusters is None:
        if d.size < 2:
            raise InvalidInputError(f"a bootstrap needs at least 2 pairs, not {d.size}")
        estimate = float(d.mean())
        boot = _resample_means(d, n_resamples, rng)
        jackknife = (d.sum() - d) / (d.size - 1)
        n_clusters = None
    else:
        labels = np.asarray(clusters, dtype=object)
        if labels.shape != d.shape:
            raise InvalidInputError(
                f"clusters must hold one label per pair ({d.size}), not {labels.shape}"
            )
        _, group = np.unique(labels.astype(str), return_inverse=True)
        sums = np.asarray(np.bincount(group, weights=d), dtype=np.float64)
        sizes = np.bincount(group).astype(np.float64)
        if sums.size < 2:
            raise InvalidInputError(
                "a clustered bootstrap needs at least 2 clusters; every pair has the same "
                "cluster label"
            )
        estimate = float(sums.sum() / sizes.sum())
        boot = _resample_clusters(sums, sizes, n_resamples, rng)
        boot = estimate + (boot - estimate) * np.sqrt(sums.size / (sums.size - 1))
        jackknife = (sums.sum() - sums) / (sizes.sum() - sizes)
        n_clusters = int(sums.size)
    low, high, method, p_value = _bca(estimate, boot, jackknife, confidence)
    return BootstrapInterval(
        estimate=estimate,
        low=low,
        high=high,
        standard_error=float(boot.std(ddof=1)),
        confidence=confidence,
        n_resamples=n_resamples,
        n_pairs=int(d.size),
        n_clusters=n_clusters,
        method=method,
        p_value=p_value,
    )


def _resample_means(
    d: npt.NDArray[np.float64], n_resamples: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    n = d.size
    values, counts = np.unique(d, return_counts=True)
    if values.size <= _FEW_VALUES and values.size * 8 <= n:
        draws = rng.multinomial(n, counts / n, size=n_resamples)
        return np.asarray(draws @ values / n, dtype=np.float64)
    out = np.empty(n_resamples)
    rows = max(1, _BLOCK // n)
    index_type = np.int32 if n < 2**31 else np.int64
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        index = rng.integers(0, n, size=(stop - start, n), dtype=index_type)
        out[start:stop] = d[index].mean(axis=1)
    return out


def _resample_clusters(
    sums: npt.NDArray[np.float64],
    sizes: npt.NDArray[np.float64],
    n_resamples: int,
    rng: np.random.Generator,
) -> npt.NDArray[np.float64]:
    g = sums.size
    out = np.empty(n_resamples)
    rows = max(1, _BLOCK // g)
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        index = rng.integers(0, g, size=(stop - start, g))
        out[start:stop] = sums[index].sum(axis=1) / sizes[index].sum(axis=1)
    return out


def _bca(
    estimate: float,
    boot: npt.NDArray[np.float64],
    jackknife: npt.NDArray[np.float64],
    confidence: float,
) -> tuple[float, float, str, float]:
    """The interval's ends, its method, and the p-value that inverts it."""
    alpha = (1.0 - confidence) / 2.0
    ordered = np.sort(boot)
    constants = bca_constants(estimate, boot, jackknife)
    if isinstance(constants, str):
        # Every resample on one side (or all differences equal): BCa is undefined.
        low, high = np.quantile(ordered, [alpha, 1.0 - alpha])
        return float(low), float(high), "percentile", _p_value(ordered, PERCENTILE)
    low, high = np.quantile(ordered, [constants.level(alpha), constants.level(1.0 - alpha)])
    return float(low), float(high), "BCa", _p_value(ordered, constants)


def _p_value(ordered: npt.NDArray[np.float64], constants: BcaConstants) -> float:
    """The smallest ``1 - level`` at which the interval of that level excludes 0.

    Its lower end is above 0, or its upper end below 0; quantiles are interpolated
    linearly, as `np.quantile` does.
    """
    last = ordered.size - 1
    # The interval is closed: an end exactly at 0 still includes 0. Above 0 the lower
    # end leaves 0 once its level passes the highest level whose quantile is <= 0.
    at_most = int(np.searchsorted(ordered, 0.0, side="right"))
    if at_most == 0:
        ceiling = 0.0
    elif at_most > last:
        ceiling = 1.0
    else:
        left, right = ordered[at_most - 1], ordered[at_most]
        ceiling = (at_most - 1 + (0.0 - left) / (right - left)) / last
    # Below 0: the upper end leaves 0 once its level is under the lowest level whose
    # quantile is >= 0.
    under = int(np.searchsorted(ordered, 0.0, side="left"))
    if under == 0:
        floor = 0.0
    elif under > last:
        floor = 1.0
    else:
        left, right = ordered[under - 1], ordered[under]
        floor = (under - 1 + (0.0 - left) / (right - left)) / last
    p_low = 2.0 * constants.nominal(ceiling)
    p_high = 2.0 * (1.0 - constants.nominal(floor))
    return float(min(1.0, p_low, p_high))
