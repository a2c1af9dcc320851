"""compare_runs: two runs on the same samples, paired by id, per grader.

Pairs must be the same question: each sample records a hash of its prompt part (every
turn before the completion; metadata and completion left out), and pairs whose prompts
differ are refused, as are graders whose spec differs between the runs, unless asked
for (``allow_mismatched_prompts``, ``allow_changed_graders``). Samples and graders only
one run has are listed, never dropped silently.

The difference ``B - A`` of each grader's mean is taken over the samples both runs scored,
with its paired standard error, a paired bootstrap interval (`paired_bootstrap`, seeded;
clusters resampled whole when a cluster key is given) and a p-value: McNemar's exact test
when both runs give only 0/1 scores and samples are independent, else a paired t-test
(cluster-robust with a cluster key). With several graders the p-values are also given
Holm-adjusted; the intervals are not adjusted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from gradewire.core import InvalidInputError
from gradewire.eval._bootstrap import paired_bootstrap
from gradewire.eval._comparison import ChangedSample, Comparison, GraderComparison, holm
from gradewire.eval._records import SampleRecord
from gradewire.eval._run import EvalRun
from gradewire.eval._samples import prompt_hash
from gradewire.eval._scipy import scipy_stats
from gradewire.eval._statistics import clustered_stderr

__all__ = ["MismatchedRunsError", "compare_runs"]


class MismatchedRunsError(InvalidInputError):
    """Two runs whose pairs are not the same questions, or whose graders changed."""


def compare_runs(
    a: EvalRun,
    b: EvalRun,
    *,
    cluster_key: str | None = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    top: int = 10,
    allow_mismatched_prompts: bool = False,
    allow_changed_graders: bool = False,
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
        allow_mismatched_prompts: Pair samples by id even where their prompts differ
            (listed in `Comparison.mismatched_prompts`); else such pairs are refused.
        allow_changed_graders: Compare a grader whose spec differs between the runs
            (listed in `Comparison.changed_graders`); else it is refused.

    Raises:
        MismatchedRunsError: Paired samples whose prompts differ, or graders whose spec
            changed (the message names a few, with the difference), unless allowed.
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
    mismatched = [(ra, rb) for ra, rb in pairs if _prompt(ra) != _prompt(rb)]
    changed = [key for key in shared if a.spec_hashes[key] != b.spec_hashes[key]]
    problems = []
    if mismatched and not allow_mismatched_prompts:
        problems.append(_mismatch_message(mismatched, len(pairs)))
    if changed and not allow_changed_graders:
        problems.append(_changed_message(changed, a, b))
    if problems:
        raise MismatchedRunsError(
            f"cannot compare {a.name} (A) with {b.name} (B):\n" + "\n".join(problems)
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
        mismatched_prompts=tuple(ra.id for ra, _ in mismatched),
        changed_graders=tuple(changed),
    )


def _prompt(record: SampleRecord) -> str:
    """The record's prompt hash (computed from its input when it does not carry one)."""
    return record.prompt_hash or prompt_hash(record.input.get("turns") or [])


def _short(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= width else flat[: width - 1] + "…")


_SHOWN = 5


def _mismatch_message(mismatched: Sequence[tuple[SampleRecord, SampleRecord]], n_pairs: int) -> str:
    lines = [
        f"{len(mismatched)} of {n_pairs} paired samples have different prompts in A and B, "
        "so their scores are not of the same question:"
    ]
    for ra, rb in mismatched[:_SHOWN]:
        lines.append(f"  id {ra.id!r}: A {_short(ra.prompt())}, B {_short(rb.prompt())}")
    if len(mismatched) > _SHOWN:
        lines.append(f"  ... and {len(mismatched) - _SHOWN} more")
    lines.append(
        "Ids pair the samples: give each row a stable id that names its question (or no "
        "id: the prompt's hash names it), and evaluate again. To compare these pairs "
        "anyway, pass --allow-mismatched-prompts (allow_mismatched_prompts=True)."
    )
    return "\n".join(lines)


def _changed_message(changed: Sequence[str], a: EvalRun, b: EvalRun) -> str:
    lines = [f"{len(changed)} grader(s) have another spec in B than in A:"]
    for key in changed:
        lines.append(f"  {key!r}: {_spec_difference(_spec(a, key), _spec(b, key))}")
    lines.append(
        "Scores of different graders are not comparable: grade both runs with the same "
        "grader file. To compare them anyway, pass --allow-changed-graders "
        "(allow_changed_graders=True)."
    )
    return "\n".join(lines)


def _spec(run: EvalRun, key: str) -> Mapping[str, Any] | None:
    for spec in run.config.get("graders") or ():
        if isinstance(spec, Mapping) and spec.get("key") == key:
            return spec
    return None


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for name, item in value.items():
            out.update(_flat(item, f"{prefix}.{name}" if prefix else str(name)))
        return out
    return {prefix: value}


def _spec_difference(spec_a: Mapping[str, Any] | None, spec_b: Mapping[str, Any] | None) -> str:
    if spec_a is None or spec_b is None:
        which = "A's" if spec_a is None else "B's"
        return f"spec hashes differ ({which} spec is not recorded)"
    flat_a, flat_b = _flat(spec_a), _flat(spec_b)
    names = [n for n in dict.fromkeys([*flat_a, *flat_b]) if flat_a.get(n) != flat_b.get(n)]
    if not names:
        return "spec hashes differ (the recorded specs are alike)"
    shown = [
        f"{name} {_short(str(flat_a.get(name, '(none)')), 40)} → "
        f"{_short(str(flat_b.get(name, '(none)')), 40)}"
        for name in names[:3]
    ]
    more = f" and {len(names) - 3} more field(s)" if len(names) > 3 else ""
    return "; ".join(shown) + more


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
