"""One method per grader: the interval and the p-value of a paired difference, in agreement.

Each grader's difference ``mean(b - a)`` gets one named method, chosen for small counts
(`gradewire.stats._paired` has the references), and its interval excludes 0 exactly
when its p-value is below ``1 - confidence``:

- 0/1 scores, independent pairs: the mid-p McNemar test with Tango's score interval.
  The mid-p test never rejects where Tango's interval includes 0 (its rejections are a
  subset of the asymptotic McNemar test's, which Tango's interval inverts); where Tango's
  interval excludes 0 but the mid-p test does not reject, the interval is extended to 0
  and a warning says so, so the two always agree.
- Other scores, independent pairs: the paired t test and interval (n - 1 degrees of
  freedom); when no pair differs and the scores are within [0, 1], the interval is ± the
  exact (Clopper–Pearson) upper bound of the share of pairs that differ. At small n the
  t holds its level where the paired bootstrap covers too little
  (``docs/methods/audit-paired.md``).
- With clusters (any scores): the cluster-robust CR2 standard error with Student's t on
  the Bell–McCaffrey degrees of freedom, the small-sample correction for few clusters.

The functions take plain arrays, so a comparison of many runs (a leaderboard) calls
`paired_difference` once per pair of runs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from gradewire.core import InvalidInputError
from gradewire.stats._paired import cr2_interval, mcnemar_mid_p, tango_interval

__all__ = [
    "BINARY",
    "CLUSTERED",
    "FEW_CLUSTERS",
    "NO_PAIR_DIFFERS",
    "PAIRED_T",
    "PairedDifference",
    "paired_difference",
]

# Below this many clusters the simulation audit (docs/methods/audit-paired.md) finds the
# CR2 interval's coverage or the test's level off by more than the audit allows for some
# data; the verdict then says how many clusters there are and shows the unclustered
# interval beside the clustered one.
FEW_CLUSTERS = 10

# Clusters this many times larger than the smallest one make the CR2 interval's level
# slip a little in the audit's "unlike clusters" cells (2 to 40 pairs a cluster).
UNLIKE_SIZES = 5

BINARY = "mid-p McNemar test, Tango score interval"
PAIRED_T = "paired t test and interval"
CLUSTERED = "cluster-robust t (CR2, Bell–McCaffrey degrees of freedom)"
NO_PAIR_DIFFERS = "no pair differs: exact bound on the share of pairs that differ"
NONE = "none"

# Scores whose magnitude passes this are rescaled by a power of two before any sum of
# squares, which overflows float64 from about 1e154.
_LARGE = 1e100


@dataclass(frozen=True)
class PairedDifference:
    """The difference of two runs' means on paired samples, with its interval and p-value.

    Attributes:
        estimate: ``mean(b - a)``.
        low: Lower end of the interval (NaN: no interval; ``warnings`` say why).
        high: Upper end.
        p_value: Two-sided p-value of "no difference", from the same method.
        method: The method's name (one of the module's method names).
        stderr: Paired standard error (CR2 cluster-robust with clusters).
        bootstrap_stderr: Kept for compatibility: NaN (no method here resamples).
        n_clusters: Clusters (None: unclustered).
        naive_low: With clusters, the lower end of the unclustered interval.
        naive_high: Its upper end.
        warnings: What makes the interval less reliable than its level says.
        dof: Degrees of freedom of the t methods (NaN for McNemar/Tango).
    """

    estimate: float
    low: float
    high: float
    p_value: float
    method: str
    stderr: float
    bootstrap_stderr: float = math.nan
    n_clusters: int | None = None
    naive_low: float = math.nan
    naive_high: float = math.nan
    warnings: tuple[str, ...] = ()
    dof: float = math.nan


def is_binary(x: npt.NDArray[np.float64]) -> bool:
    """Whether every score is 0 or 1."""
    return bool(np.all((x == 0.0) | (x == 1.0)))


def paired_difference(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    clusters: Sequence[str] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> PairedDifference:
    """The paired difference ``b - a`` with the interval and p-value of one method.

    Args:
        a: Scores of run A, one per pair (at least two pairs).
        b: Scores of run B on the same samples.
        clusters: A cluster label per pair, or None for independent pairs.
        confidence: Level of the interval.
        n_resamples: Unused (no method here resamples); kept for callers.
        seed: Unused; kept for callers.

    Raises:
        InvalidInputError: Fewer than two pairs (or clusters), scores that are not
            finite, differences too large for a float, or bad arguments.
    """
    del n_resamples, seed
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape or x.size < 2:
        raise InvalidInputError(
            f"a and b must be 1-D, of one length and hold 2 or more pairs (got {x.shape} "
            f"and {y.shape})"
        )
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise InvalidInputError("a and b must hold finite numbers; leave unscored pairs out")
    if not 0.0 < confidence < 1.0:
        raise InvalidInputError(f"confidence must be between 0 and 1, not {confidence!r}")
    scale = _scale(x, y)
    if scale != 1.0:
        result = paired_difference(x / scale, y / scale, clusters=clusters, confidence=confidence)
        return _rescaled(result, scale)
    if clusters is None:
        return _independent(x, y, confidence)
    labels = list(clusters)
    if len(labels) != x.size:
        raise InvalidInputError(f"clusters must hold one label per pair ({x.size})")
    n_clusters = len(set(map(str, labels)))
    if n_clusters < 2:
        raise InvalidInputError("a clustered comparison needs at least 2 clusters")
    naive = _independent(x, y, confidence)
    d = y - x
    notes = list(_spread_notes(d))
    few = n_clusters < FEW_CLUSTERS
    sizes = Counter(map(str, labels)).values()
    if max(sizes) >= UNLIKE_SIZES * min(sizes):
        notes.append(
            f"clusters of very unequal size ({min(sizes)} to {max(sizes)} pairs): with such "
            "clusters the simulation audit finds the clustered interval's coverage down to "
            "about 94% and its false-positive rate up to about 6% (not 5%); read a p-value "
            "near the level with care"
        )
    if not np.any(d) and naive.method in (BINARY, NO_PAIR_DIFFERS):
        # Nothing differs, so no spread between clusters can be measured; Tango's interval
        # over the pairs still bounds what so many ties allow.
        return replace(
            naive,
            n_clusters=n_clusters,
            naive_low=naive.low,
            naive_high=naive.high,
            warnings=(
                *notes,
                "no pair differs, so how clusters vary cannot be measured: the interval "
                "treats the pairs as independent",
            ),
        )
    if not np.any(d):
        if few:
            notes.insert(0, f"only {n_clusters} clusters")
        return PairedDifference(
            0.0,
            math.nan,
            math.nan,
            1.0,
            CLUSTERED,
            0.0,
            n_clusters=n_clusters,
            naive_low=naive.low,
            naive_high=naive.high,
            warnings=(*notes, _NO_SPREAD),
        )
    t = cr2_interval(d, labels, confidence)
    if few:
        notes.insert(
            0,
            f"only {n_clusters} clusters: the clustered interval uses a small-sample "
            f"correction (CR2, t on {t.dof:.1f} degrees of freedom); with fewer than "
            f"{FEW_CLUSTERS} clusters its coverage depends on how alike the clusters are",
        )
    low, high = _within(t.low, t.high, x, y)
    return PairedDifference(
        t.estimate,
        low,
        high,
        t.p_value,
        CLUSTERED,
        t.stderr,
        n_clusters=t.n_clusters,
        naive_low=naive.low,
        naive_high=naive.high,
        warnings=tuple(notes),
        dof=t.dof,
    )


_NO_SPREAD = (
    "every pair has the same difference, so the data say nothing about how much it "
    "could vary: no interval (grade more samples, or samples where the runs differ)"
)


def _independent(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], confidence: float
) -> PairedDifference:
    d = y - x
    n = int(d.size)
    stderr = float(d.std(ddof=1)) / math.sqrt(n)
    if is_binary(x) and is_binary(y):
        gained, lost = int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0))
        low, high = tango_interval(gained, lost, n, confidence)
        p_value = mcnemar_mid_p(gained, lost)
        notes: tuple[str, ...] = ()
        alpha = 1.0 - confidence
        if (low > 0.0 or high < 0.0) and p_value >= alpha:
            notes = (
                # 0/1 scores read in points, as the verdict writes them.
                f"Tango's interval alone ({100 * low:.1f} to {100 * high:.1f} points) "
                "excludes 0 but the "
                f"mid-p McNemar test does not reject no difference (p = {p_value:.4f}): "
                "the interval is extended to 0, so the two agree",
            )
            low, high = min(low, 0.0), max(high, 0.0)
        return PairedDifference(float(d.mean()), low, high, p_value, BINARY, stderr, warnings=notes)
    notes = tuple(_spread_notes(d))
    if not np.any(d) and _in_unit_range(x, y):
        # No pair differs. Scores within [0, 1] differ by at most 1 a pair, so the mean
        # difference is within ± the share of pairs that differ, whose exact upper bound
        # with none of n seen is 1 - (α/2)^(1/n) (Clopper–Pearson): never a point.
        bound = 1.0 - ((1.0 - confidence) / 2.0) ** (1.0 / n)
        return PairedDifference(0.0, -bound, bound, 1.0, NO_PAIR_DIFFERS, 0.0, warnings=notes)
    if not np.any(d != d[0]):
        return PairedDifference(
            float(d[0]), math.nan, math.nan, math.nan, PAIRED_T, 0.0, warnings=(*notes, _NO_SPREAD)
        )
    t = cr2_interval(d, None, confidence)
    low, high = _within(t.low, t.high, x, y)
    return PairedDifference(
        t.estimate, low, high, t.p_value, PAIRED_T, t.stderr, warnings=notes, dof=t.dof
    )


def _spread_notes(d: npt.NDArray[np.float64]) -> tuple[str, ...]:
    differing = int(np.count_nonzero(d))
    if 0 < differing < 5 and not is_binary(np.abs(d)):
        return (
            f"only {differing} pair(s) differ: the t interval rests on very few differences; "
            "grade more samples before trusting it",
        )
    return ()


def _in_unit_range(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> bool:
    return bool(np.all((x >= 0.0) & (x <= 1.0) & (y >= 0.0) & (y <= 1.0)))


def _within(
    low: float, high: float, x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]
) -> tuple[float, float]:
    """The interval cut to the differences the scores' range allows (0/1 or [0, 1]: ±1)."""
    if _in_unit_range(x, y):
        return max(low, -1.0), min(high, 1.0)
    return low, high


def _scale(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    """A power of two to divide huge scores by (1.0 for ordinary ones)."""
    largest = float(max(np.max(np.abs(x)), np.max(np.abs(y))))
    if largest <= _LARGE:
        return 1.0
    return float(2.0 ** math.floor(math.log2(largest)))


def _rescaled(result: PairedDifference, scale: float) -> PairedDifference:
    figures = {
        name: getattr(result, name) * scale
        for name in ("estimate", "low", "high", "stderr", "naive_low", "naive_high")
    }
    if any(math.isinf(v) for v in figures.values()):
        raise InvalidInputError(
            "the scores are too large for their differences to be held as floats "
            f"(|score| up to ~{scale:.1e}): rescale the grader's scores"
        )
    return replace(result, **figures)
