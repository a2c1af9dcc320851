"""The results of comparing two runs: per grader, and for the pair of runs."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from gradewire.eval.comparing._comparison_view import (
    GraderLine,
    comparison_line,
    render_comparison_view,
)

__all__ = [
    "MULTIPLE_COMPARISONS",
    "ChangedSample",
    "Comparison",
    "GraderComparison",
    "Outcome",
    "PairedSample",
    "SampleCounts",
    "SliceComparison",
    "holm",
]

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
    # Texts of any length: left out of the repr, which a terminal or a log shows whole.
    prompt: str = field(repr=False)
    completion_a: str = field(repr=False)
    completion_b: str = field(repr=False)


Outcome = Literal["gained", "lost", "tied"]
"""A pair's outcome on one grader: ``"gained"`` (B scored higher), ``"lost"``, ``"tied"``."""

SampleCounts = Mapping[tuple[str | None, Outcome | None, str | None], int]
"""Pairs per ``(grader, outcome, slice)``, None standing for any (a pair counts once)."""


@dataclass(frozen=True)
class PairedSample:
    """One sample as both runs answered it, kept for a reader to look at.

    Attributes:
        id: The sample id.
        slice: Its value of the ``by`` field (None without ``by``).
        metadata: Its metadata (run A's, else run B's).
        prompt: The prompt (run A's).
        completion_a: Run A's completion.
        completion_b: Run B's completion.
        scores: Per grader both runs scored it with, ``(score in A, score in B)``.
    """

    id: str
    slice: str | None
    metadata: Mapping[str, Any] = field(repr=False)
    prompt: str = field(repr=False)
    completion_a: str = field(repr=False)
    completion_b: str = field(repr=False)
    scores: Mapping[str, tuple[float, float]]

    def outcome(self, grader: str) -> Outcome | None:
        """``"gained"``, ``"lost"`` or ``"tied"`` on ``grader`` (None: not scored by both)."""
        if grader not in self.scores:
            return None
        a, b = self.scores[grader]
        return "gained" if b > a else "lost" if b < a else "tied"


@dataclass(frozen=True)
class SliceComparison:
    """One grader compared on the pairs of one slice (a metadata value, ``--by KEY``).

    Attributes:
        value: The slice's metadata value (``"(missing)"`` for pairs without the field).
        n_pairs: Pairs in the slice scored by both runs.
        mean_a: Mean of run A over them.
        mean_b: Mean of run B.
        diff: ``mean_b - mean_a``.
        ci_low: Lower end of the slice's interval (the grader's method, on the slice).
        ci_high: Upper end.
        p_value: The slice's p-value (same method; not adjusted across slices).
        flips: The slice's difference has the opposite sign of the overall one ("leans
            the other way" when its interval includes 0).
        flips_clearly: It does, and its interval excludes 0 ("goes the other way").
        method: The method of the slice's interval and p-value (``"none"``: none).
        note: Why the slice has no interval, or the assumption its interval rests on.
    """

    value: str
    n_pairs: int
    mean_a: float
    mean_b: float
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    flips: bool = False
    flips_clearly: bool = False
    method: str = "none"
    note: str = ""


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
        ci_low: Lower end of the interval of ``diff``.
        ci_high: Upper end.
        bootstrap_stderr: Standard deviation of a bootstrap distribution (NaN: no
            method of compare resamples; kept for readers of older output).
        confidence: The interval's level.
        method: The one method that gave both the interval and the p-value (mid-p
            McNemar with Tango's interval, paired t, or cluster-robust CR2 t): the
            interval excludes 0 exactly when ``p_value < 1 - confidence``.
        p_value: Two-sided p-value of "no difference".
        p_value_holm: The p-value Holm-adjusted over every grader compared.
        wins: Pairs where B scored higher.
        ties: Pairs with equal scores.
        losses: Pairs where B scored lower.
        not_scored: Paired samples left out because a run did not score them.
        n_clusters: Clusters of the clustered statistics (None: unclustered).
        most_changed: The samples whose score moved most, largest first.
        naive_ci_low: With a cluster key, the lower end of the unclustered interval
            (shown beside the clustered one when there are few clusters).
        naive_ci_high: Its upper end.
        warnings: What makes this comparison less reliable than its level says (few
            clusters, few pairs that differ).
        points: Every score of both runs is within [0, 1], so differences read in
            points (100 to the range) in the verdict.
        detectable: The minimum detectable difference: the smallest true difference
            these pairs find with 80% power at the interval's level (NaN when nothing
            varies).
        verdict: The comparison in words (plain text holding the grader key: escape it
            where it is rendered).
        slices: With ``by``, the comparison per value of that metadata field.
        dof: Degrees of freedom of a t method (NaN for McNemar/Tango).
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
    wins: int
    ties: int
    losses: int
    not_scored: int
    n_clusters: int | None = None
    most_changed: tuple[ChangedSample, ...] = ()
    naive_ci_low: float = math.nan
    naive_ci_high: float = math.nan
    warnings: tuple[str, ...] = ()
    points: bool = False
    detectable: float = math.nan
    verdict: str = ""
    slices: tuple[SliceComparison, ...] = ()
    dof: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN as None)."""
        out = _no_nan(asdict(self))
        assert isinstance(out, dict)
        return out


@dataclass(frozen=True, repr=False)
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
        mismatched_prompts: Ids of pairs whose prompts differ between the runs (compared
            only with ``allow_mismatched_prompts``).
        changed_graders: Graders whose spec differs between the runs (compared only with
            ``allow_changed_graders``).
        cluster_key: The cluster field, if the statistics are clustered.
        by: The metadata field the graders are also compared by, slice by slice.
        seed: The bootstrap seed.
        n_resamples: Bootstrap resamples.
        note: What was and was not corrected for multiple comparisons.
        samples: The pairs kept for a reader (the compare page): the largest changes of
            each grader, outcome and slice in turn, up to a cap.
        sample_counts: How many pairs there are of each grader, outcome and slice, kept
            or not (so a reader sees what was left out).
    """

    run_a: str
    run_b: str
    graders: tuple[GraderComparison, ...]
    only_a: tuple[str, ...] = ()
    only_b: tuple[str, ...] = ()
    graders_only_a: tuple[str, ...] = ()
    graders_only_b: tuple[str, ...] = ()
    mismatched_prompts: tuple[str, ...] = ()
    changed_graders: tuple[str, ...] = ()
    cluster_key: str | None = None
    by: str | None = None
    seed: int = 0
    n_resamples: int = 2000
    note: str = field(default=MULTIPLE_COMPARISONS)
    samples: tuple[PairedSample, ...] = ()
    sample_counts: SampleCounts = field(default_factory=dict)
    judge_drift: tuple[str, ...] = ()
    """One sentence per grader judged by another judge or served model in B than in A."""

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
            "mismatched_prompts": {
                "ids": list(self.mismatched_prompts),
                "count": len(self.mismatched_prompts),
            },
            "changed_graders": list(self.changed_graders),
            "cluster_key": self.cluster_key,
            "by": self.by,
            "seed": self.seed,
            "n_resamples": self.n_resamples,
            "multiple_comparisons": self.note,
            "samples": [_no_nan(asdict(sample)) for sample in self.samples],
            "sample_counts": [
                {"grader": grader, "outcome": outcome, "slice": slice_, "count": count}
                for (grader, outcome, slice_), count in self.sample_counts.items()
            ],
            "judge_drift": list(self.judge_drift),
        }

    def _lines(self) -> list[GraderLine]:
        return [
            GraderLine(
                g.grader,
                g.diff,
                g.ci_low,
                g.ci_high,
                g.p_value,
                g.n_pairs,
                g.verdict,
                g.method,
                g.warnings,
            )
            for g in self.graders
        ]

    def __repr__(self) -> str:
        # The dataclass repr would print every changed sample's completions in full.
        return comparison_line(self.run_a, self.run_b, self._lines())

    def _repr_html_(self) -> str:
        confidence = self.graders[0].confidence if self.graders else 0.95
        return render_comparison_view(
            self.run_a, self.run_b, self._lines(), confidence=confidence, note=self.note
        )


def _no_nan(value: Any) -> Any:
    """NaN as None, at any depth (JSON has no NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_no_nan(v) for v in value]
    return value


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
