"""compare_runs: two runs on the same samples, paired by id, per grader.

The difference ``B - A`` of each grader's mean is taken over the samples both runs scored,
with its paired standard error, a paired bootstrap interval (`paired_bootstrap`, seeded;
clusters resampled whole when a cluster key is given) and a p-value: McNemar's exact test
when both runs give only 0/1 scores and samples are independent, else a paired t-test
(cluster-robust with a cluster key). With several graders the p-values are also given
Holm-adjusted; the intervals are not adjusted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from gradewire.core import InvalidInputError
from gradewire.eval._bootstrap import paired_bootstrap
from gradewire.eval._records import SampleRecord
from gradewire.eval._run import EvalRun
from gradewire.eval._scipy import scipy_stats
from gradewire.eval._statistics import clustered_stderr

__all__ = ["ChangedSample", "Comparison", "GraderComparison", "compare_runs", "holm"]

MULTIPLE_COMPARISONS = (
    "p_value_holm is Holm-adjusted over the graders compared; intervals are per grader, "
    "not adjusted for multiple comparisons"
)


@dataclass(frozen=True)
class ChangedSample:
    """A sample whose score moved between the runs."""

    id: str
    a: float
    b: float
    diff: float
    prompt: str
    completion_a: str
    completion_b: str


@dataclass(frozen=True)
class GraderComparison:
    """One grader compared across two runs on their paired samples.

    Attributes:
        grader: The grader key.
        n_pairs: Samples both runs scored.
        mean_a: Mean of run A over the pairs.
        mean_b: Mean of run B over the pairs.
        diff: ``mean_b - mean_a``.
        stderr: Paired standard error of ``diff`` (cluster-robust with clusters).
        ci_low: Lower end of the paired bootstrap interval of ``diff``.
        ci_high: Upper end.
        bootstrap_stderr: Standard deviation of the bootstrap distribution.
        confidence: The interval's level.
        method: The bootstrap interval's method (BCa, or percentile when BCa is undefined).
        p_value: Two-sided p-value of "no difference".
        p_value_holm: The p-value Holm-adjusted over every grader compared.
        test: Which test gave the p-value.
        wins: Pairs where B scored higher.
        ties: Pairs with equal scores.
        losses: Pairs where B scored lower.
        not_scored: Paired samples left out because a run did not score them.
        n_clusters: Clusters of the clustered statistics (None: unclustered).
        most_changed: The samples whose score moved most, largest first.
    """

    grader: str
    n_pairs: int
    mean_a: float
    mean_b: float
    diff: float
    stderr: float
    ci_low: float
    ci_high: float
    bootstrap_stderr: float
    confidence: float
    method: str
    p_value: float
    p_value_holm: float
    test: str
    wins: int
    ties: int
    losses: int
    not_scored: int
    n_clusters: int | None = None
    most_changed: tuple[ChangedSample, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN as None)."""
        out = asdict(self)
        return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in out.items()}


@dataclass(frozen=True)
class Comparison:
    """Two runs compared: a `GraderComparison` per grader both runs have, and what did not pair.

    Attributes:
        run_a: Name of run A.
        run_b: Name of run B.
        graders: One comparison per grader both runs have.
        only_a: Ids of samples only run A has (never silently dropped: listed here).
        only_b: Ids of samples only run B has.
        graders_only_a: Grader keys only run A has.
        graders_only_b: Grader keys only run B has.
        cluster_key: The cluster field, if the statistics are clustered.
        seed: The bootstrap seed.
        n_resamples: Bootstrap resamples.
        note: What was and was not corrected for multiple comparisons.
    """

    run_a: str
    run_b: str
    graders: tuple[GraderComparison, ...]
    only_a: tuple[str, ...] = ()
    only_b: tuple[str, ...] = ()
    graders_only_a: tuple[str, ...] = ()
    graders_only_b: tuple[str, ...] = ()
    cluster_key: str | None = None
    seed: int = 0
    n_resamples: int = 2000
    note: str = field(default=MULTIPLE_COMPARISONS)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``graders`` holds one object per grader."""
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "graders": [g.to_dict() for g in self.graders],
            "unpaired": {
                "only_a": list(self.only_a),
                "only_b": list(self.only_b),
                "count_only_a": len(self.only_a),
                "count_only_b": len(self.only_b),
            },
            "graders_only_a": list(self.graders_only_a),
            "graders_only_b": list(self.graders_only_b),
            "cluster_key": self.cluster_key,
            "seed": self.seed,
            "n_resamples": self.n_resamples,
            "multiple_comparisons": self.note,
        }


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values`` (NaN stays NaN)."""
    order = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    m = len(order)
    adjusted = [math.nan] * len(p_values)
    running = 0.0
    for rank, (p, index) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[index] = running
    return adjusted


def compare_runs(
    a: EvalRun,
    b: EvalRun,
    *,
    cluster_key: str | None = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    top: int = 10,
) -> Comparison:
    """Compare run B with run A on the samples both have, grader by grader.

    Args:
        a: The baseline run.
        b: The run compared with it; differences are ``B - A``.
        cluster_key: A metadata field grouping dependent samples: the standard error,
            the interval (whole clusters resampled) and the test are clustered by it.
        n_resamples: Bootstrap resamples.
        confidence: Level of the intervals.
        seed: Bootstrap seed: the same runs and seed give the same intervals.
        top: How many most-changed samples to keep per grader.

    Raises:
        InvalidInputError: The runs share no grader, or a paired sample lacks the
            cluster field.
    """
    by_id_b = {record.id: record for record in b.records}
    ids_a = {record.id for record in a.records}
    pairs = [(record, by_id_b[record.id]) for record in a.records if record.id in by_id_b]
    only_a = tuple(record.id for record in a.records if record.id not in by_id_b)
    only_b = tuple(record.id for record in b.records if record.id not in ids_a)
    shared = [key for key in a.graders if key in b.spec_hashes]
    if not shared:
        raise InvalidInputError(
            f"the runs share no grader (A has {a.graders}, B has {b.graders}); compare runs "
            "graded with the same grader keys"
        )
    labels = _labels(pairs, cluster_key) if cluster_key else None
    results = [
        _compare_grader(key, a, b, pairs, labels, n_resamples, confidence, seed, top)
        for key in shared
    ]
    adjusted = holm([r.p_value for r in results])
    return Comparison(
        run_a=a.name,
        run_b=b.name,
        graders=tuple(replace(r, p_value_holm=p) for r, p in zip(results, adjusted, strict=True)),
        only_a=only_a,
        only_b=only_b,
        graders_only_a=tuple(k for k in a.graders if k not in b.spec_hashes),
        graders_only_b=tuple(k for k in b.graders if k not in a.spec_hashes),
        cluster_key=cluster_key,
        seed=seed,
        n_resamples=n_resamples,
    )


def _labels(pairs: Sequence[tuple[SampleRecord, SampleRecord]], key: str) -> list[str]:
    labels = []
    for record_a, record_b in pairs:
        for record in (record_a, record_b):
            if key in record.metadata:
                labels.append(str(record.metadata[key]))
                break
        else:
            raise InvalidInputError(
                f"--cluster-key {key!r}: sample {record_a.id!r} has no such field in either run"
            )
    return labels


def _compare_grader(
    key: str,
    a: EvalRun,
    b: EvalRun,
    pairs: Sequence[tuple[SampleRecord, SampleRecord]],
    labels: Sequence[str] | None,
    n_resamples: int,
    confidence: float,
    seed: int,
    top: int,
) -> GraderComparison:
    scores_a, scores_b = a.scores(key), b.scores(key)
    kept = [
        (i, ra, rb) for i, (ra, rb) in enumerate(pairs) if ra.id in scores_a and rb.id in scores_b
    ]
    x = np.array([scores_a[ra.id] for _, ra, _ in kept], dtype=np.float64)
    y = np.array([scores_b[rb.id] for _, _, rb in kept], dtype=np.float64)
    groups = [labels[i] for i, _, _ in kept] if labels is not None else None
    d = y - x
    n = int(d.size)
    nan = math.nan
    wins, losses = int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0))
    changed = tuple(
        ChangedSample(
            ra.id,
            float(scores_a[ra.id]),
            float(scores_b[rb.id]),
            float(scores_b[rb.id] - scores_a[ra.id]),
            ra.prompt(),
            ra.completion(),
            rb.completion(),
        )
        for _, ra, rb in sorted(kept, key=lambda t: -abs(scores_b[t[2].id] - scores_a[t[1].id]))[
            :top
        ]
        if scores_b[rb.id] != scores_a[ra.id]
    )
    base = GraderComparison(
        grader=key,
        n_pairs=n,
        mean_a=float(x.mean()) if n else nan,
        mean_b=float(y.mean()) if n else nan,
        diff=float(d.mean()) if n else nan,
        stderr=nan,
        ci_low=nan,
        ci_high=nan,
        bootstrap_stderr=nan,
        confidence=confidence,
        method="none",
        p_value=nan,
        p_value_holm=nan,
        test="none",
        wins=wins,
        ties=n - wins - losses,
        losses=losses,
        not_scored=len(pairs) - n,
        most_changed=changed,
    )
    if n < 2:
        return base
    stderr, n_clusters, dof = float(d.std(ddof=1)) / math.sqrt(n), None, n - 1
    if groups is not None:
        stderr, n_clusters = clustered_stderr(d, groups)
        dof = n_clusters - 1
        if n_clusters < 2:
            return replace(base, n_clusters=n_clusters, test="none (one cluster)")
    interval = paired_bootstrap(
        x, y, clusters=groups, n_resamples=n_resamples, confidence=confidence, seed=seed
    )
    p_value, test = _test(x, y, d, stderr, dof, groups is not None)
    return replace(
        base,
        stderr=stderr,
        ci_low=interval.low,
        ci_high=interval.high,
        bootstrap_stderr=interval.standard_error,
        method=interval.method,
        p_value=p_value,
        test=test,
        n_clusters=n_clusters,
    )


def _test(
    x: np.ndarray, y: np.ndarray, d: np.ndarray, stderr: float, dof: int, clustered: bool
) -> tuple[float, str]:
    stats = scipy_stats()
    binary = bool(np.all((x == 0) | (x == 1)) and np.all((y == 0) | (y == 1)))
    if binary and not clustered:
        gained = int(np.count_nonzero(d > 0))
        lost = int(np.count_nonzero(d < 0))
        if gained + lost == 0:
            return 1.0, "McNemar exact"
        return float(stats.binomtest(gained, gained + lost, 0.5).pvalue), "McNemar exact"
    name = "paired t, cluster-robust" if clustered else "paired t"
    mean = float(d.mean())
    if stderr == 0.0 or not math.isfinite(stderr):
        return (1.0 if mean == 0.0 else 0.0), name
    t = mean / stderr
    return float(2.0 * stats.t.sf(abs(t), dof)), name
