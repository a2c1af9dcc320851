"""One method per grader: the interval and the p-value of a paired difference, in agreement.

Each grader's difference ``mean(b - a)`` gets one procedure, and both its interval and
its p-value come from it, so an interval that excludes 0 always sits beside
``p < 1 - confidence`` and an interval that includes 0 beside ``p >= 1 - confidence``:

- 0/1 scores: McNemar's test with Tango's score interval (`mcnemar_tango`); with a
  cluster key, the clustered McNemar test with the interval that inverts it
  (`clustered_mcnemar`). Both intervals stay within [-1, 1].
- Other scores: the paired bootstrap (BCa; whole clusters resampled with a cluster key)
  with the p-value that inverts its interval (`paired_bootstrap`). Its interval stays
  within the range of the resampled means.

Few clusters make any clustered interval unreliable: under `FEW_CLUSTERS` a warning
says so, and the unclustered interval is kept beside the clustered one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from gradewire.eval.comparing._bootstrap import BootstrapInterval, paired_bootstrap
from gradewire.eval.comparing._paired_binary import ScoreInterval, clustered_mcnemar, mcnemar_tango
from gradewire.eval.runs._statistics import clustered_stderr

__all__ = [
    "BINARY",
    "BINARY_CLUSTERED",
    "BOOTSTRAP",
    "BOOTSTRAP_CLUSTERED",
    "FEW_CLUSTERS",
    "FEW_DIFFERING",
    "PairedDifference",
    "paired_difference",
]

# Below this many clusters a clustered interval's own width is too uncertain to trust
# (cluster-robust errors need a few dozen clusters; Cameron and Miller 2015).
FEW_CLUSTERS = 20
# Below this many pairs that differ, a bootstrap distribution is too coarse: it sees a
# handful of distinct values and gives intervals that are too narrow.
FEW_DIFFERING = 10

BINARY = "McNemar test, Tango score interval"
BINARY_CLUSTERED = "clustered McNemar test (Durkalski), its inverted interval"
BOOTSTRAP = "paired bootstrap (BCa), p-value by inverting the interval"
BOOTSTRAP_CLUSTERED = "cluster bootstrap (BCa), p-value by inverting the interval"


@dataclass(frozen=True)
class PairedDifference:
    """The difference of two runs' means on paired samples, with its interval and p-value.

    Attributes:
        estimate: ``mean(b - a)``.
        low: Lower end of the interval.
        high: Upper end.
        p_value: Two-sided p-value of "no difference", from the same procedure.
        method: The procedure's name (one of the module's method names).
        stderr: Paired standard error (cluster-robust with clusters).
        bootstrap_stderr: Standard deviation of the bootstrap distribution (NaN when the
            method does not resample).
        n_clusters: Clusters (None: unclustered).
        naive_low: With clusters, the lower end of the unclustered interval.
        naive_high: Its upper end.
        warnings: What makes the interval less reliable than its level says.
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
        clusters: A cluster label per pair, or None for independent samples.
        confidence: Level of the interval.
        n_resamples: Bootstrap resamples (scores other than 0/1).
        seed: Bootstrap seed.

    Raises:
        InvalidInputError: Fewer than two pairs (or clusters), or bad arguments.
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    d = y - x
    n = int(d.size)
    binary = is_binary(x) and is_binary(y)
    stderr = float(d.std(ddof=1)) / math.sqrt(n) if n > 1 else math.nan
    notes: list[str] = []
    differing = int(np.count_nonzero(d))
    if not binary and 0 < differing < FEW_DIFFERING:
        notes.append(
            f"only {differing} pair(s) differ: a bootstrap of so few is too narrow; "
            "grade more samples before trusting the interval"
        )
    if clusters is None:
        if binary:
            gained, lost = int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0))
            score = mcnemar_tango(gained, lost, n, confidence)
            return _result(score, BINARY, stderr, None, tuple(notes))
        boot = paired_bootstrap(x, y, n_resamples=n_resamples, confidence=confidence, seed=seed)
        return _result(boot, BOOTSTRAP, stderr, None, tuple(notes))
    naive = paired_difference(x, y, confidence=confidence, n_resamples=n_resamples, seed=seed)
    clustered_se, n_clusters = clustered_stderr(d, clusters)
    if n_clusters < FEW_CLUSTERS:
        notes.append(
            f"only {n_clusters} clusters: a clustered interval needs about {FEW_CLUSTERS} "
            "or more to be trusted"
        )
    if binary:
        score, _ = clustered_mcnemar(d, clusters, confidence)
        result = _result(score, BINARY_CLUSTERED, clustered_se, n_clusters, tuple(notes))
    else:
        boot = paired_bootstrap(
            x, y, clusters=clusters, n_resamples=n_resamples, confidence=confidence, seed=seed
        )
        result = _result(boot, BOOTSTRAP_CLUSTERED, clustered_se, n_clusters, tuple(notes))
    return replace(result, naive_low=naive.low, naive_high=naive.high)


def _result(
    interval: ScoreInterval | BootstrapInterval,
    method: str,
    stderr: float,
    n_clusters: int | None,
    notes: tuple[str, ...],
) -> PairedDifference:
    """The paired difference an interval (and its p-value) of ``method`` gives."""
    return PairedDifference(
        estimate=interval.estimate,
        low=interval.low,
        high=interval.high,
        p_value=interval.p_value,
        method=method,
        stderr=stderr,
        bootstrap_stderr=(
            interval.standard_error if isinstance(interval, BootstrapInterval) else math.nan
        ),
        n_clusters=n_clusters,
        warnings=notes,
    )
