"""Paired differences of two runs: the tests and intervals valid at small n.

Each function computes one named method from the literature, chosen for small counts:

- `mcnemar_mid_p`: McNemar's mid-p test of 0/1 pairs, the conditional binomial test on
  the pairs that differ with half the probability of the observed count. Fagerland,
  Lydersen and Laake (2013, BMC Med Res Methodol 13:91) recommend it: the exact
  conditional test is conservative (rejects too rarely), the asymptotic one exceeds its
  level at small counts, the mid-p test holds it closely.
- `tango_interval`: Tango's (1998) score interval of a paired difference of proportions,
  recommended by Fagerland, Lydersen and Laake (2014, Stat Med 33:2850). It needs no
  pair to differ: with none it is ``±z²/(n + z²)``, not a point.
- `cr2_interval`: the mean of paired differences with the cluster-robust CR2 standard
  error (Bell and McCaffrey 2002) and Student's t with the Bell–McCaffrey degrees of
  freedom (Imbens and Kolesár 2016): the small-sample correction for few clusters. With
  every pair its own cluster it is exactly the paired t interval (CR2 = s²/n, n - 1
  degrees of freedom); with equal clusters, the t interval of the cluster means (G - 1).

This module imports numpy and, at first use, scipy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from gradewire.core import InvalidInputError, MissingDependencyError

__all__ = ["ClusteredT", "cr2_interval", "mcnemar_mid_p", "tango_interval"]

_NORMAL = NormalDist()
_HUGE = 1e12


def _scipy_stats() -> Any:
    try:
        from scipy import stats
    except ImportError:
        raise MissingDependencyError(
            "scipy", extra="eval", purpose="compute paired intervals and p-values"
        ) from None
    return stats


def _check_counts(gained: int, lost: int, n: int) -> None:
    if min(gained, lost) < 0 or gained + lost > n or n < 1:
        raise InvalidInputError(
            f"need 0 <= gained + lost <= n with n >= 1 (got {gained}, {lost}, {n})"
        )


def mcnemar_mid_p(gained: int, lost: int) -> float:
    """Two-sided mid-p McNemar test of "no difference" from the discordant pairs.

    Of ``m = gained + lost`` pairs that differ, the smaller count ``k`` is Binomial(m, ½)
    when the runs are equally good; the mid-p value is ``2·P(X < k) + P(X = k)``, capped
    at 1 (Fagerland et al. 2013, eq. 3). With no discordant pair it is 1.

    Args:
        gained: Pairs where B scored 1 and A 0.
        lost: Pairs where A scored 1 and B 0.

    Raises:
        InvalidInputError: A negative count.
    """
    if min(gained, lost) < 0:
        raise InvalidInputError(f"counts must be >= 0 (got {gained}, {lost})")
    m = gained + lost
    if m == 0:
        return 1.0
    k = min(gained, lost)
    binom = _scipy_stats().binom
    return float(min(1.0, 2.0 * binom.cdf(k, m, 0.5) - binom.pmf(k, m, 0.5)))


def tango_interval(gained: int, lost: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Tango's score interval of ``(gained - lost) / n``, within [-1, 1].

    The set of differences δ that Tango's score statistic does not reject at
    ``1 - confidence``; its ends solve ``T(δ) = ±z`` (Tango 1998, eq. 3 and 5).

    Args:
        gained: Pairs where B scored 1 and A 0.
        lost: Pairs where A scored 1 and B 0.
        n: All pairs (concordant ones included).
        confidence: Level of the interval.

    Raises:
        InvalidInputError: Counts that are negative or exceed ``n``.
    """
    _check_counts(gained, lost, n)
    if not 0.0 < confidence < 1.0:
        raise InvalidInputError(f"confidence must be between 0 and 1, not {confidence!r}")
    z = _NORMAL.inv_cdf(0.5 + confidence / 2.0)
    estimate = (gained - lost) / n
    low = _root(lambda d: _tango(gained, lost, n, d) - z, -1.0, estimate)
    high = _root(lambda d: _tango(gained, lost, n, d) + z, estimate, 1.0)
    return low, high


def _tango(gained: int, lost: int, n: int, delta: float) -> float:
    """Tango's score statistic of a difference ``delta`` (decreasing in ``delta``)."""
    w = -gained - lost + (2 * n - gained + lost) * delta
    # The restricted maximum-likelihood probability of a "lost" pair at difference delta.
    p_lost = (math.sqrt(max(w * w + 8.0 * n * lost * delta * (1.0 - delta), 0.0)) - w) / (4 * n)
    variance = n * (2.0 * p_lost + delta * (1.0 - delta))
    numerator = gained - lost - n * delta
    if variance <= 0.0:
        # The statistic is unbounded here; a large finite value keeps root finding exact.
        return math.copysign(_HUGE, numerator) if numerator else 0.0
    return numerator / math.sqrt(variance)


def _root(f: Callable[[float], float], low: float, high: float) -> float:
    """Where ``f`` (decreasing) crosses 0 on [low, high]; a bound where it does not."""
    f_low, f_high = f(low), f(high)
    if f_low <= 0.0:
        return low
    if f_high >= 0.0:
        return high
    from scipy.optimize import brentq

    return float(brentq(f, low, high, xtol=1e-15, rtol=4 * np.finfo(float).eps))


@dataclass(frozen=True)
class ClusteredT:
    """A mean of paired differences with its CR2 standard error and a t interval.

    Attributes:
        estimate: The mean difference (each pair weighted alike).
        low: Lower end of the interval.
        high: Upper end.
        p_value: Two-sided p-value of a mean of 0 (the same t statistic).
        stderr: The CR2 standard error.
        dof: The Bell–McCaffrey degrees of freedom.
        n_clusters: Clusters (the pairs themselves when unclustered).
        confidence: The interval's level.
    """

    estimate: float
    low: float
    high: float
    p_value: float
    stderr: float
    dof: float
    n_clusters: int
    confidence: float


def cr2_interval(
    d: npt.ArrayLike,
    clusters: Sequence[object] | None = None,
    confidence: float = 0.95,
) -> ClusteredT:
    """The mean of ``d`` with a CR2 standard error and a Bell–McCaffrey t interval.

    For a mean (a regression on a constant) both have closed forms: with ``S_g`` the sum
    of the residuals ``d_i - mean`` in cluster g of size ``n_g``, the CR2 variance is
    ``Σ S_g² / (n² (1 - n_g/n))``; the degrees of freedom are ``tr(M)² / tr(M²)`` for
    ``M = D - u uᵀ``, ``D = diag(n_g / (n² (1 - n_g/n)))``, ``u_g = n_g / (n^1.5
    sqrt(1 - n_g/n))`` (Bell and McCaffrey's formula under independent errors of one
    variance, as Imbens and Kolesár 2016 recommend).

    Args:
        d: Per-pair differences ``b - a``.
        clusters: A cluster label per pair, or None: every pair its own cluster (the
            paired t interval).
        confidence: Level of the interval.

    Raises:
        InvalidInputError: Fewer than two clusters, labels not one per pair, a value
            that is not finite, or a level out of range.
    """
    x = np.asarray(d, dtype=np.float64)
    if x.ndim != 1 or x.size < 2:
        raise InvalidInputError(f"need at least 2 paired differences, not {x.size}")
    if not np.all(np.isfinite(x)):
        raise InvalidInputError("differences must be finite numbers")
    if not 0.0 < confidence < 1.0:
        raise InvalidInputError(f"confidence must be between 0 and 1, not {confidence!r}")
    n = x.size
    estimate = float(x.mean())
    residual = x - estimate
    if clusters is None:
        sums, sizes = residual, np.ones(n)
    else:
        labels = np.asarray(clusters, dtype=object)
        if labels.shape != x.shape:
            raise InvalidInputError(f"clusters must hold one label per pair ({n})")
        _, group = np.unique(labels.astype(str), return_inverse=True)
        sums = np.bincount(group, weights=residual).astype(np.float64)
        sizes = np.bincount(group).astype(np.float64)
    g = int(sizes.size)
    if g < 2:
        raise InvalidInputError("a clustered interval needs at least 2 clusters")
    share = sizes / n
    variance = float(np.sum(sums**2 / (1.0 - share))) / (n * n)
    diagonal = sizes / (n * n * (1.0 - share))
    u2 = sizes**2 / (n**3 * (1.0 - share))
    trace = float(diagonal.sum() - u2.sum())
    trace2 = float(np.sum(diagonal**2) - 2.0 * np.sum(diagonal * u2) + u2.sum() ** 2)
    dof = trace * trace / trace2 if trace2 > 0.0 else float(g - 1)
    stderr = math.sqrt(variance)
    t = _scipy_stats().t
    critical = float(t.ppf(0.5 + confidence / 2.0, dof))
    if stderr == 0.0:
        p_value = 1.0 if estimate == 0.0 else 0.0
        return ClusteredT(estimate, estimate, estimate, p_value, 0.0, dof, g, confidence)
    statistic = estimate / stderr
    p_value = float(min(1.0, 2.0 * t.sf(abs(statistic), dof)))
    return ClusteredT(
        estimate,
        estimate - critical * stderr,
        estimate + critical * stderr,
        p_value,
        stderr,
        dof,
        g,
        confidence,
    )
