"""Per-grader statistics of a run: mean, standard error and interval, clustered when asked.

With a cluster key the standard error is the cluster-robust one (Miller 2024, "Adding
Error Bars to Evals", eq. 4, with the usual G/(G-1) small-sample factor): questions that
share a topic or a source document are not independent, and the naive error is too small.
Intervals use Student's t with n-1 (or G-1 clusters) degrees of freedom, except for 0/1
graders: a t interval of a proportion runs past 0 and 1 near the ends, so theirs is
Wilson's score interval, within [0, 1] (with clusters, over the effective sample size
``n * naive_variance / clustered_variance``, the design-effect adjustment of Korn and
Graubard 1998).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from gradewire.core import InvalidInputError
from gradewire.eval.runs._records import SampleRecord
from gradewire.eval.runs._scipy import scipy_stats

__all__ = [
    "GraderSummary",
    "cluster_labels",
    "clustered_stderr",
    "summarize",
    "t_interval",
    "wilson_interval",
]


@dataclass(frozen=True)
class GraderSummary:
    """One grader's statistics over a run.

    Attributes:
        grader: The grader key.
        n: Samples scored.
        mean: Mean score (NaN when nothing was scored).
        std: Sample standard deviation (n - 1).
        stderr: Standard error of the mean: clustered when ``n_clusters`` is set.
        ci_low: Lower end of the interval of the mean.
        ci_high: Upper end.
        confidence: Confidence level of the interval.
        errors: Samples on which the grader failed (timeouts included).
        abstained: Samples on which it abstained.
        missing: Samples of the run it has not graded (yet).
        min: Lowest score.
        max: Highest score.
        naive_stderr: The unclustered standard error, for comparison.
        n_clusters: Number of clusters (None without a cluster key).
        timeouts: Of the errors, the samples whose grade took longer than its timeout.
    """

    grader: str
    n: int
    mean: float
    std: float
    stderr: float
    ci_low: float
    ci_high: float
    confidence: float
    errors: int
    abstained: int
    missing: int
    min: float
    max: float
    naive_stderr: float
    n_clusters: int | None = None
    timeouts: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The statistics as a JSON-ready dict (NaN as None)."""
        return {
            key: None if isinstance(value, float) and math.isnan(value) else value
            for key, value in asdict(self).items()
        }


def t_interval(
    mean: float, stderr: float, dof: int, confidence: float = 0.95
) -> tuple[float, float]:
    """``mean ± t(dof) * stderr``; NaN ends when there are too few degrees of freedom."""
    if dof < 1 or not math.isfinite(stderr):
        return math.nan, math.nan
    half = float(scipy_stats().t.ppf(0.5 + confidence / 2.0, dof)) * stderr
    return mean - half, mean + half


def wilson_interval(proportion: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a proportion observed over ``n`` (possibly effective) trials."""
    if n <= 0.0 or not math.isfinite(n):
        return math.nan, math.nan
    z = float(scipy_stats().norm.ppf(0.5 + confidence / 2.0))
    z2n = z * z / n
    centre = (proportion + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(proportion * (1.0 - proportion) / n + z2n / (4.0 * n))
    # Rounding must not leave an observed 0 or 1 just outside its own interval.
    return max(0.0, min(proportion, centre - half)), min(1.0, max(proportion, centre + half))


def clustered_stderr(values: npt.ArrayLike, clusters: Sequence[str]) -> tuple[float, int]:
    """Cluster-robust standard error of the mean, and the number of clusters."""
    x = np.asarray(values, dtype=np.float64)
    _, group = np.unique(np.asarray(clusters, dtype=str), return_inverse=True)
    g = int(group.max()) + 1 if x.size else 0
    if g < 2:
        return math.nan, g
    sums = np.bincount(group, weights=x - x.mean(), minlength=g)
    variance = float(np.dot(sums, sums)) / x.size**2 * g / (g - 1)
    return math.sqrt(variance), g


def cluster_labels(samples: Iterable[tuple[str, Mapping[str, Any]]], cluster_key: str) -> list[str]:
    """The cluster label of each sample, from its ``(id, metadata)``.

    Raises:
        InvalidInputError: A sample has no such field (names the first few).
    """
    labels: list[str] = []
    missing: list[str] = []
    for sample_id, metadata in samples:
        if cluster_key in metadata:
            labels.append(str(metadata[cluster_key]))
        else:
            missing.append(sample_id)
    if missing:
        shown = ", ".join(repr(i) for i in missing[:5])
        raise InvalidInputError(
            f"--cluster-key {cluster_key!r}: {len(missing)} sample(s) have no such field "
            f"({shown}); add it to every row or pick another field"
        )
    return labels


def summarize(
    records: Sequence[SampleRecord],
    spec_hashes: Mapping[str, str],
    *,
    cluster_key: str | None = None,
    confidence: float = 0.95,
) -> list[GraderSummary]:
    """Statistics per grader over the records (stale outcomes count as missing).

    Stale: of another spec than ``spec_hashes`` says, or of another input than the
    record's (`SampleRecord.current`).
    """
    labels = (
        cluster_labels(((r.id, r.metadata) for r in records), cluster_key) if cluster_key else None
    )
    summaries = []
    for key, spec_hash in spec_hashes.items():
        values: list[float] = []
        groups: list[str] = []
        errors = abstained = missing = timeouts = 0
        for index, record in enumerate(records):
            outcome = record.current(key, spec_hash)
            if outcome is None:
                missing += 1
            elif outcome.status == "error":
                errors += 1
                timeouts += outcome.kind == "timeout"
            elif outcome.status == "abstained":
                abstained += 1
            elif outcome.value is not None:
                values.append(outcome.value)
                if labels is not None:
                    groups.append(labels[index])
        summary = _summary(key, values, groups if labels is not None else None, confidence)
        summaries.append(
            replace(summary, errors=errors, abstained=abstained, missing=missing, timeouts=timeouts)
        )
    return summaries


def _summary(
    key: str, values: list[float], groups: list[str] | None, confidence: float
) -> GraderSummary:
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    nan = math.nan
    if n == 0:
        return GraderSummary(key, 0, nan, nan, nan, nan, nan, confidence, 0, 0, 0, nan, nan, nan)
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if n > 1 else nan
    naive = std / math.sqrt(n) if n > 1 else nan
    stderr, dof, n_clusters = naive, n - 1, None
    if groups is not None:
        stderr, n_clusters = clustered_stderr(x, groups)
        dof = n_clusters - 1
    if bool(np.all((x == 0.0) | (x == 1.0))):
        effective = float(n)
        if groups is not None and stderr > 0.0 and naive > 0.0:
            effective = n * (naive / stderr) ** 2
        low, high = wilson_interval(mean, effective, confidence)
    else:
        low, high = t_interval(mean, stderr, dof, confidence)
    return GraderSummary(
        grader=key,
        n=n,
        mean=mean,
        std=std,
        stderr=stderr,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        errors=0,
        abstained=0,
        missing=0,
        min=float(x.min()),
        max=float(x.max()),
        naive_stderr=naive,
        n_clusters=n_clusters,
    )
