"""Paired 0/1 scores: McNemar's test and the score interval that inverts it.

Two runs graded 0/1 on the same samples differ only on the discordant pairs: ``gained``
(B right, A wrong) and ``lost`` (A right, B wrong). The difference of the two accuracies
is ``(gained - lost) / n``. Its test and its interval come from one score statistic, so
an interval excluding 0 always sits beside p < 1 - confidence, and the other way round:

- Independent samples: Tango's (1998) asymptotic score statistic. At a difference of 0 it
  is McNemar's statistic ``(gained - lost) / sqrt(gained + lost)`` (no continuity
  correction), the test that Fagerland, Lydersen and Laake (2013) recommend for paired
  proportions; the interval is the set of differences the same statistic does not reject,
  within [-1, 1] by construction.
- Clustered samples: the clustered McNemar statistic of Durkalski et al. (2003), the sum
  of per-cluster ``gained - lost`` over the square root of the sum of their squares: a
  variance centred on the difference tested, not on the estimate, so no degree of
  freedom is spent and no small-sample factor is needed. For a difference δ the
  statistic is ``Σ (s_g - n_g δ) / sqrt(Σ (s_g - n_g δ)²)``, so the set of δ it does not
  reject is where a quadratic is <= 0, solved in closed form and kept within [-1, 1].
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gradewire.core import InvalidInputError
from gradewire.eval.runs._scipy import scipy_stats

__all__ = ["ScoreInterval", "clustered_mcnemar", "mcnemar_tango"]

_HUGE = 1e12


@dataclass(frozen=True)
class ScoreInterval:
    """A score test of "no difference" and the interval of differences it does not reject.

    Attributes:
        estimate: The observed difference ``(gained - lost) / n``.
        low: Lower end of the interval.
        high: Upper end.
        p_value: Two-sided p-value of a difference of 0.
        statistic: The test statistic at a difference of 0 (signed).
        confidence: The interval's level.
    """

    estimate: float
    low: float
    high: float
    p_value: float
    statistic: float
    confidence: float


def mcnemar_tango(gained: int, lost: int, n: int, confidence: float = 0.95) -> ScoreInterval:
    """McNemar's test and Tango's score interval of a paired difference of proportions.

    Args:
        gained: Pairs where B scored 1 and A 0.
        lost: Pairs where A scored 1 and B 0.
        n: All pairs (concordant ones included).
        confidence: Level of the interval.

    Raises:
        InvalidInputError: Counts that are negative or exceed ``n``.
    """
    if min(gained, lost) < 0 or gained + lost > n or n < 1:
        raise InvalidInputError(
            f"need 0 <= gained + lost <= n with n >= 1 (got {gained}, {lost}, {n})"
        )
    estimate = (gained - lost) / n
    if gained + lost == 0:
        # No pair differs: nothing moves the statistic off 0, and no difference but 0
        # is supported by data that never disagree.
        return ScoreInterval(0.0, 0.0, 0.0, 1.0, 0.0, confidence)
    z = _normal_quantile(confidence)
    statistic = (gained - lost) / math.sqrt(gained + lost)
    p_value = float(2.0 * scipy_stats().norm.sf(abs(statistic)))

    def excess(delta: float, sign: float) -> float:
        return _tango(gained, lost, n, delta) - sign * z

    low = _root(lambda d: excess(d, 1.0), -1.0, estimate)
    high = _root(lambda d: excess(d, -1.0), estimate, 1.0)
    return ScoreInterval(estimate, low, high, p_value, statistic, confidence)


def _tango(gained: int, lost: int, n: int, delta: float) -> float:
    """Tango's score statistic of a difference ``delta`` (decreasing in ``delta``)."""
    w = -gained - lost + (2 * n - gained + lost) * delta
    # The maximum-likelihood probability of a "lost" pair given a difference of delta.
    p_lost = (math.sqrt(max(w * w + 8.0 * n * lost * delta * (1.0 - delta), 0.0)) - w) / (4 * n)
    variance = n * (2.0 * p_lost + delta * (1.0 - delta))
    numerator = gained - lost - n * delta
    if variance <= 0.0:
        # The statistic is unbounded here; a large finite value keeps root finding exact.
        return math.copysign(_HUGE, numerator) if numerator else 0.0
    return numerator / math.sqrt(variance)


def _root(f: Callable[[float], float], low: float, high: float) -> float:
    """Where ``f`` (decreasing) crosses 0 on [low, high]; a bound where it does not.

    ``f(low) > 0 > f(high)`` has a root inside; ``f`` of one sign over the whole range
    means that bound of the parameter space is not rejected, and is the interval's end.
    """
    f_low, f_high = f(low), f(high)
    if f_low <= 0.0:
        return low
    if f_high >= 0.0:
        return high
    from scipy.optimize import brentq

    return float(brentq(f, low, high, xtol=1e-15, rtol=4 * np.finfo(float).eps))


def clustered_mcnemar(
    d: npt.ArrayLike, clusters: Sequence[object], confidence: float = 0.95
) -> tuple[ScoreInterval, int]:
    """The clustered McNemar test and its inverted interval; also the number of clusters.

    Args:
        d: Per-pair differences ``b - a`` (-1, 0 or 1).
        clusters: A cluster label per pair.
        confidence: Level of the interval.

    Raises:
        InvalidInputError: Fewer than two clusters, or labels not one per pair.
    """
    x = np.asarray(d, dtype=np.float64)
    labels = np.asarray(clusters, dtype=object)
    if labels.shape != x.shape:
        raise InvalidInputError(f"clusters must hold one label per pair ({x.size})")
    _, group = np.unique(labels.astype(str), return_inverse=True)
    sums = np.bincount(group, weights=x).astype(np.float64)
    sizes = np.bincount(group).astype(np.float64)
    g = int(sums.size)
    if g < 2:
        raise InvalidInputError("a clustered test needs at least 2 clusters")
    n = float(sizes.sum())
    total = float(sums.sum())
    estimate = total / n
    z = _normal_quantile(confidence)
    null_variance = float(np.dot(sums, sums))
    if null_variance == 0.0:
        return ScoreInterval(0.0, 0.0, 0.0, 1.0, 0.0, confidence), g
    statistic = total / math.sqrt(null_variance)
    p_value = float(2.0 * scipy_stats().norm.sf(abs(statistic)))
    # (total - n δ)² <= z² Σ (s_g - n_g δ)², a quadratic a δ² - 2 b δ + c <= 0.
    k = z * z
    a = n * n - k * float(np.dot(sizes, sizes))
    b = n * total - k * float(np.dot(sizes, sums))
    c = total * total - k * float(np.dot(sums, sums))
    low, high = _quadratic_interval(a, b, c, estimate)
    return ScoreInterval(
        estimate, max(-1.0, low), min(1.0, high), p_value, statistic, confidence
    ), g


def _quadratic_interval(a: float, b: float, c: float, estimate: float) -> tuple[float, float]:
    """The connected set of δ around ``estimate`` where ``a δ² - 2 b δ + c <= 0``."""
    if a <= 0.0:
        # Too few clusters for the statistic ever to exceed z: no difference is rejected.
        return -math.inf, math.inf
    disc = b * b - a * c
    root = math.sqrt(max(disc, 0.0))
    return (b - root) / a, (b + root) / a


def _normal_quantile(confidence: float) -> float:
    return float(scipy_stats().norm.ppf(0.5 + confidence / 2.0))
