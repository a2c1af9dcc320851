"""The interval of one run's mean score, by a method chosen for the scores it is given.

Which method, in words:

- **Clopper-Pearson** (``clopper_pearson``): the grader scores 0 or 1 (pass/fail), and
  the samples are independent. The exact binomial interval (Clopper & Pearson 1934): it
  never leaves [0, 1], is not a single point when every sample passed or every one failed,
  and covers the true rate at least 95% of the time at every n and every rate. Wilson's
  interval, used before, is narrower but covered 89-92% of the time at n = 5 and near
  rates of 0.02 or 0.98 (the audit below): Clopper-Pearson is the one that holds.
- **bounded** (``bounded``; clustered, ``bounded_clustered``): the scores lie in a known
  range (``score_range``: OpenAI graders, range judges, score_model's ``range``), or they
  are 0/1 and clustered. Wilson's
  interval of the mean rescaled to [0, 1], over an *effective* number of samples: the
  number of 0/1 samples whose mean would be as uncertain, ``n_eff = p(1 - p) / var``
  (``var`` the mean's variance, clustered when asked), shrunk by ``(z / t_df)^2`` because
  ``var`` itself is estimated from ``df`` degrees of freedom (Korn & Graubard 1998). The
  interval stays inside the range, is lopsided near a bound as the scores are, and when
  every score sits on one bound it falls back to ``n`` (the widest a bounded score can
  vary), never to a point.
- **t** (``t``): the range is unknown. ``mean ± t(n - 1) · stderr``, Student's t.
- **clustered t** (``t_clustered``): the same with the cluster-robust standard error,
  CR2 with Bell-McCaffrey degrees of freedom (`cr2_stderr`; with equal clusters it is
  Miller 2024's eq. 4 with the G/(G - 1) factor, and G - 1 degrees of freedom). The
  ``bounded`` interval uses the same variance and degrees of freedom when clustered.

Where the simulation audit (``bench/stats_audit_means.py``, ``docs/methods/audit-means.md``)
finds a method's coverage below 93% the interval carries a ``caveat`` saying so.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from gradewire.core import InvalidInputError, MissingDependencyError

__all__ = [
    "METHOD_NAMES",
    "MeanEstimate",
    "Method",
    "check_range",
    "clopper_pearson",
    "cr2_stderr",
    "mean_interval",
    "t_quantile",
    "wilson",
]

Method = Literal["clopper_pearson", "bounded", "bounded_clustered", "t", "t_clustered", "none"]

METHOD_NAMES: dict[str, str] = {
    "clopper_pearson": "Clopper-Pearson exact",
    "bounded": "Wilson score, effective n (Korn-Graubard)",
    "bounded_clustered": "Wilson score, effective n (Korn-Graubard), cluster-robust CR2",
    "t": "Student t",
    "t_clustered": "Student t, cluster-robust CR2 (Bell-McCaffrey df)",
    "none": "no interval",
}
"""Each method's name as the screen, the report and the README print it."""

# Below these, the audit measured coverage under 93% for the method (see the caveats).
FEW_CLUSTERS = 10
"""With fewer clusters a clustered interval's variance rests on too few groups."""
SMALL_N_T = 50
"""Under this n, a t interval of skewed scores (|skewness| >= 1) covered less than 93%."""


@dataclass(frozen=True)
class MeanEstimate:
    """An interval of a mean, with the method that made it.

    Attributes:
        mean: The mean of the values.
        low: Lower end (NaN when there is no interval).
        high: Upper end.
        method: Which method (`Method`); ``METHOD_NAMES[method]`` in words.
        effective_n: For ``bounded``: the effective number of samples the interval is over.
        caveat: Why the interval may cover less than it says, or None.
    """

    mean: float
    low: float
    high: float
    method: Method
    effective_n: float | None = None
    caveat: str | None = None

    @property
    def method_name(self) -> str:
        """The method in words."""
        return METHOD_NAMES[self.method]


def _scipy_stats() -> Any:
    try:
        from scipy import stats
    except ImportError:
        raise MissingDependencyError(
            "scipy", extra="eval", purpose="compute intervals of mean scores"
        ) from None
    return stats


@functools.lru_cache(maxsize=256)
def _z(confidence: float) -> float:
    return float(_scipy_stats().norm.ppf(0.5 + confidence / 2.0))


@functools.lru_cache(maxsize=1024)
def t_quantile(confidence: float, df: float) -> float:
    """The two-sided Student t quantile of `confidence` with `df` degrees of freedom."""
    return float(_scipy_stats().t.ppf(0.5 + confidence / 2.0, df))


def check_range(score_range: Sequence[float] | None) -> tuple[float, float] | None:
    """``score_range`` as ``(low, high)`` floats, checked (None stays None).

    Raises:
        InvalidInputError: Not two finite numbers with ``low < high``.
    """
    if score_range is None:
        return None
    try:
        low, high = (float(v) for v in score_range)
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"a score range is two numbers (low, high), not {score_range!r}"
        ) from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise InvalidInputError(
            f"a score range needs finite low < high, not {score_range!r}; e.g. (0.0, 1.0)"
        )
    return low, high


def wilson(proportion: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a proportion over ``n`` (possibly effective) trials."""
    if n <= 0.0 or not math.isfinite(n):
        return math.nan, math.nan
    z = _z(confidence)
    z2n = z * z / n
    centre = (proportion + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(proportion * (1.0 - proportion) / n + z2n / (4.0 * n))
    # Rounding must not leave an observed 0 or 1 just outside its own interval.
    return max(0.0, min(proportion, centre - half)), min(1.0, max(proportion, centre + half))


def clopper_pearson(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of ``successes`` out of ``n`` trials."""
    if n <= 0:
        return math.nan, math.nan
    beta = _scipy_stats().beta
    tail = (1.0 - confidence) / 2.0
    low = 0.0 if successes <= 0 else float(beta.ppf(tail, successes, n - successes + 1))
    high = 1.0 if successes >= n else float(beta.ppf(1.0 - tail, successes + 1, n - successes))
    return low, high


def cr2_stderr(values: npt.ArrayLike, clusters: Sequence[str]) -> tuple[float, float, int]:
    """CR2 standard error of the mean, its Bell-McCaffrey degrees of freedom, and G.

    The mean is the regression of the scores on a constant. CR2 (Bell & McCaffrey 2002)
    scales each cluster's residual sum by ``1 / sqrt(1 - n_g / N)``, its leverage; the
    degrees of freedom are Satterthwaite's for that variance under independent equal-
    variance errors, which Imbens & Kolesar (2016) recommend with few or unequal clusters.
    With G equal clusters both are the classic ones: the CR1 variance and G - 1.
    """
    x = np.asarray(values, dtype=np.float64)
    _, group = np.unique(np.asarray(clusters, dtype=str), return_inverse=True)
    g = int(group.max()) + 1 if x.size else 0
    total = int(x.size)
    if g < 2:
        return math.nan, math.nan, g
    sizes = np.bincount(group, minlength=g).astype(np.float64)
    sums = np.bincount(group, weights=x - x.mean(), minlength=g)
    weights = 1.0 / (total**2 * (1.0 - sizes / total))
    variance = float(np.sum(weights * sums**2))
    # The variance is e' B e with B = sum_g w_g (M 1_g)(M 1_g)'; its nonzero eigenvalues
    # are those of C = W^1/2 (diag(n) - n n' / N) W^1/2.
    root = np.sqrt(weights)
    c = (np.diag(sizes) - np.outer(sizes, sizes) / total) * np.outer(root, root)
    df = float(np.trace(c) ** 2 / np.sum(c * c))
    return math.sqrt(variance), df, g


def mean_interval(
    values: npt.ArrayLike,
    *,
    score_range: Sequence[float] | None = None,
    clusters: Sequence[str] | None = None,
    confidence: float = 0.95,
) -> MeanEstimate:
    """The interval of the mean of ``values`` (see the module docstring for the method).

    Args:
        values: The scores (finite).
        score_range: ``(low, high)``: every score of the grader lies in it. Values outside
            it void it (the range was wrong): the interval is then a t interval.
        clusters: One cluster label per value: samples of one cluster are not independent.
        confidence: The interval's confidence level.
    """
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return MeanEstimate(math.nan, math.nan, math.nan, "none")
    mean = float(x.mean())
    bounds = check_range(score_range)
    voided = None
    if bounds is not None and (x.min() < bounds[0] or x.max() > bounds[1]):
        voided = (
            f"scores from {x.min():g} to {x.max():g} fall outside the declared range "
            f"[{bounds[0]:g}, {bounds[1]:g}]: the range was left out"
        )
        bounds = None
    lo, hi = bounds if bounds is not None else (0.0, 1.0)
    on_bounds = bool(np.all((x == lo) | (x == hi)))
    if bounds is None and not on_bounds:
        found = _t(x, mean, clusters, confidence)
        if voided is None:
            return found
        note = voided if found.caveat is None else f"{voided}; {found.caveat}"
        return replace(found, caveat=note)
    # Rescaled to [0, 1]: a proportion, or a bounded score as a fraction of its range.
    y = (x - lo) / (hi - lo)
    p = float(y.mean())
    if on_bounds and clusters is None:
        low, high = clopper_pearson(round(float(y.sum())), n, confidence)
        return MeanEstimate(mean, lo + low * (hi - lo), lo + high * (hi - lo), "clopper_pearson")
    df: float
    caveat: str | None = None
    if clusters is None:
        variance = float(y.var(ddof=1)) / n if n > 1 else math.nan
        df = n - 1
    else:
        se, df, g = cr2_stderr(y, clusters)
        variance = se * se
        caveat = _few_clusters(g, df)
    # Every score on one bound (or no spread to measure): the widest a score in the
    # range can vary, a 0/1 score's, over every sample.
    spread = p not in (0.0, 1.0) and variance > 0.0
    effective = p * (1.0 - p) / variance if spread else float(n)
    if df > 0:
        effective *= (_z(confidence) / t_quantile(confidence, df)) ** 2
    else:
        effective = float(n)  # one sample or one cluster: nothing but the range
        alone = "one cluster" if clusters is not None else "one sample"
        caveat = f"{alone}: no spread to learn from, the interval rests on the range alone"
    low, high = wilson(p, effective, confidence)
    method: Method = "bounded" if clusters is None else "bounded_clustered"
    return MeanEstimate(
        mean, lo + low * (hi - lo), lo + high * (hi - lo), method, effective, caveat
    )


def _t(
    x: npt.NDArray[np.float64], mean: float, clusters: Sequence[str] | None, confidence: float
) -> MeanEstimate:
    n = int(x.size)
    df: float
    method: Method
    if clusters is None:
        if n < 2:
            return MeanEstimate(mean, math.nan, math.nan, "none", caveat="one sample")
        se, df, method = float(x.std(ddof=1)) / math.sqrt(n), n - 1, "t"
        caveat = _small_t(x)
    else:
        se, df, g = cr2_stderr(x, clusters)
        method, caveat = "t_clustered", _few_clusters(g, df)
        if g < 2:
            return MeanEstimate(mean, math.nan, math.nan, "none", caveat="one cluster")
    half = t_quantile(confidence, df) * se
    return MeanEstimate(mean, mean - half, mean + half, method, caveat=caveat)


def _few_clusters(g: int, df: float) -> str | None:
    if g >= FEW_CLUSTERS and df >= FEW_CLUSTERS - 1:
        return None
    return (
        f"{g} clusters ({df:.1f} degrees of freedom): a clustered interval learns its "
        f"variance from the clusters alone, and with fewer than {FEW_CLUSTERS} (or clusters "
        "of very unequal sizes) it can cover less than it says (docs/methods/audit-means.md)"
    )


def _small_t(x: npt.NDArray[np.float64]) -> str | None:
    n = int(x.size)
    sd = float(x.std())
    if sd == 0.0:
        return (
            "every score is the same: a t interval is then a single point, which says "
            "nothing of how other samples would score; declare the grader's score range "
            "for an interval that does"
        )
    skew = float(np.mean((x - x.mean()) ** 3)) / sd**3
    if n >= SMALL_N_T or abs(skew) < 1.0:
        return None
    return (
        f"n = {n} skewed scores (skewness {skew:.1f}): a t interval assumes a near-normal "
        f"mean, and covered less than 93% in the audit at this n; declare the grader's "
        "score range for a bounded interval"
    )
