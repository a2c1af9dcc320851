"""Per-grader statistics of a run: mean, standard error and interval, clustered when asked.

With a cluster key the standard error is the cluster-robust one (Miller 2024, "Adding
Error Bars to Evals", eq. 4; CR2 with Bell-McCaffrey degrees of freedom, which is eq. 4
with the G/(G-1) factor when clusters are equal): questions that share a source document
are not independent, and the naive error is too small.

The interval's method depends on the scores (`gradewire.stats._mean_interval` says how,
and ``docs/methods/audit-means.md`` where each holds): Clopper-Pearson's exact interval
for 0/1 scores; for scores in a range the grader declares (`BaseGrader.score_range`,
recorded in the run's config), Wilson's interval over an effective sample size, which
stays inside the range; else Student's t. Each summary names its method, and carries a
caveat where the audit found the method covering less than 93%.

A grader with a pass rule (``grade.info["passed"]``: OpenAI graders with a
``pass_threshold``, string_check, label_model) also gets its pass rate, with the
Clopper-Pearson interval (clustered: the effective-n Wilson interval).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from gradewire.core import InvalidInputError
from gradewire.eval.runs._records import SampleRecord
from gradewire.stats._mean_interval import METHOD_NAMES, cr2_stderr, mean_interval

__all__ = [
    "GraderSummary",
    "cluster_labels",
    "passed_verdict",
    "summarize",
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
        method: How the interval was computed (``clopper_pearson``, ``bounded``, ``t``,
            ``t_clustered``, ``none``); `method_name` in words.
        caveat: Why the interval may cover less than it says at this n, or None.
        score_range: The range the grader declared its scores lie in, or None.
        passed: Scored samples that passed the grader's pass rule (None: no pass rule).
        pass_rate: ``passed / n`` over the samples with a pass verdict.
        pass_low: Lower end of the pass rate's interval.
        pass_high: Upper end.
        pass_method: How the pass rate's interval was computed.
        error_kinds: How many errors of each kind (``timeout``, ``parse``,
            ``invalid_variable_error``, ...).
        first_error: The message of the first error, in the data's order.
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
    method: str = "none"
    caveat: str | None = None
    score_range: tuple[float, float] | None = None
    passed: int | None = None
    pass_n: int = 0
    pass_rate: float = math.nan
    pass_low: float = math.nan
    pass_high: float = math.nan
    pass_method: str | None = None
    error_kinds: Mapping[str, int] = field(default_factory=dict)
    first_error: str | None = None

    @property
    def method_name(self) -> str:
        """The interval's method in words (``Clopper-Pearson exact``, ``Student t``, ...)."""
        return METHOD_NAMES.get(self.method, self.method)

    def to_dict(self) -> dict[str, Any]:
        """The statistics as a JSON-ready dict (NaN as None), with the method in words."""
        out = {
            key: None if isinstance(value, float) and math.isnan(value) else value
            for key, value in asdict(self).items()
        }
        out["method_name"] = self.method_name
        out["error_kinds"] = dict(self.error_kinds)
        if self.score_range is not None:
            out["score_range"] = list(self.score_range)
        if self.pass_method is not None:
            out["pass_method_name"] = METHOD_NAMES.get(self.pass_method, self.pass_method)
        return out


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
    score_ranges: Mapping[str, Sequence[float]] | None = None,
) -> list[GraderSummary]:
    """Statistics per grader over the records (stale outcomes count as missing).

    Stale: of another spec than ``spec_hashes`` says, or of another input than the
    record's (`SampleRecord.current`). ``score_ranges`` holds the range each grader
    declared (`BaseGrader.score_range`): its interval stays inside it.
    """
    labels = (
        cluster_labels(((r.id, r.metadata) for r in records), cluster_key) if cluster_key else None
    )
    summaries = []
    for key, spec_hash in spec_hashes.items():
        values: list[float] = []
        groups: list[str] = []
        verdicts: list[float] = []
        verdict_groups: list[str] = []
        kinds: dict[str, int] = {}
        first_error: str | None = None
        errors = abstained = missing = timeouts = 0
        for index, record in enumerate(records):
            outcome = record.current(key, spec_hash)
            if outcome is None:
                missing += 1
            elif outcome.status == "error":
                errors += 1
                timeouts += outcome.kind == "timeout"
                kind = outcome.kind or "error"
                kinds[kind] = kinds.get(kind, 0) + 1
                if first_error is None:
                    first_error = outcome.message or kind
            elif outcome.status == "abstained":
                abstained += 1
            elif outcome.value is not None:
                values.append(outcome.value)
                if labels is not None:
                    groups.append(labels[index])
                verdict = passed_verdict(outcome.grade)
                if verdict is not None:
                    verdicts.append(1.0 if verdict else 0.0)
                    if labels is not None:
                        verdict_groups.append(labels[index])
        declared = (score_ranges or {}).get(key)
        score_range = _range(declared)
        summary = _summary(
            key, values, groups if labels is not None else None, confidence, score_range
        )
        summary = replace(
            summary,
            errors=errors,
            abstained=abstained,
            missing=missing,
            timeouts=timeouts,
            error_kinds=kinds,
            first_error=first_error,
        )
        if verdicts:
            rate = mean_interval(
                verdicts,
                score_range=(0.0, 1.0),
                clusters=verdict_groups if labels is not None else None,
                confidence=confidence,
            )
            summary = replace(
                summary,
                passed=int(sum(verdicts)),
                pass_n=len(verdicts),
                pass_rate=rate.mean,
                pass_low=rate.low,
                pass_high=rate.high,
                pass_method=rate.method,
            )
        summaries.append(summary)
    return summaries


def passed_verdict(grade: Mapping[str, Any] | None) -> bool | None:
    """The grade's pass verdict (``info["passed"]``), or None when it has none."""
    if grade is None:
        return None
    info = grade.get("info")
    verdict = info.get("passed") if isinstance(info, Mapping) else None
    return verdict if isinstance(verdict, bool) else None


def _range(declared: object) -> tuple[float, float] | None:
    """A declared range read back from a config: ``[low, high]``, else None."""
    if not isinstance(declared, (list, tuple)) or len(declared) != 2:
        return None
    low, high = declared
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)):
        return None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        return None
    return float(low), float(high)


def _summary(
    key: str,
    values: list[float],
    groups: list[str] | None,
    confidence: float,
    score_range: tuple[float, float] | None = None,
) -> GraderSummary:
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    nan = math.nan
    if n == 0:
        return GraderSummary(
            key,
            0,
            nan,
            nan,
            nan,
            nan,
            nan,
            confidence,
            0,
            0,
            0,
            nan,
            nan,
            nan,
            score_range=score_range,
        )
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if n > 1 else nan
    naive = std / math.sqrt(n) if n > 1 else nan
    stderr, n_clusters = naive, None
    if groups is not None:
        se, _, n_clusters = cr2_stderr(x, groups)
        stderr = se
    found = mean_interval(x, score_range=score_range, clusters=groups, confidence=confidence)
    low, high = found.low, found.high
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
        method=found.method,
        caveat=found.caveat,
        score_range=score_range,
    )
