"""compare_runs: two runs on the same samples, paired by id, per grader.

Pairs must be the same question: each sample records a hash of its prompt part (every
turn before the completion; metadata and completion left out), and pairs whose prompts
differ are refused, as are graders whose spec differs between the runs, unless asked
for (``allow_mismatched_prompts``, ``allow_changed_graders``). Samples and graders only
one run has are listed, never dropped silently.

The difference ``B - A`` of each grader's mean is taken over the samples both runs scored,
with its paired standard error, and an interval and a p-value from one method
(`paired_difference`: the mid-p McNemar test with Tango's score interval for 0/1 graders,
the paired t otherwise, a cluster-robust CR2 t with a cluster key), so the two never
disagree. With several graders the p-values are also given
Holm-adjusted; the intervals are not adjusted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from gradewire.core import InvalidInputError
from gradewire.eval.comparing._paired_difference import NONE, paired_difference
from gradewire.eval.comparing._power import minimum_detectable_difference
from gradewire.eval.comparing._results import (
    ChangedSample,
    Comparison,
    GraderComparison,
    SliceComparison,
    holm,
)
from gradewire.eval.comparing._shown_pairs import SHOWN_PAIRS, shown_pairs
from gradewire.eval.comparing._verdict import verdict
from gradewire.eval.runs._eval_run import EvalRun
from gradewire.eval.runs._judge_facts import drift_lines, judge_facts
from gradewire.eval.runs._records import SampleRecord
from gradewire.eval.runs._samples import prompt_hash

__all__ = ["MismatchedRunsError", "compare_runs"]


class MismatchedRunsError(InvalidInputError):
    """Two runs whose pairs are not the same questions, or whose graders changed."""


def compare_runs(
    a: EvalRun,
    b: EvalRun,
    *,
    cluster_key: str | None = None,
    by: str | None = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    top: int = 10,
    shown: int = SHOWN_PAIRS,
    allow_mismatched_prompts: bool = False,
    allow_changed_graders: bool = False,
) -> Comparison:
    """Compare run B with run A on the samples both have, grader by grader.

    Args:
        a: The baseline run.
        b: The run compared with it; differences are ``B - A``.
        cluster_key: A metadata field grouping samples that share a source (a document,
            an Inspect sample's epochs): the standard error, the interval and the test
            are clustered by it. None treats the pairs as independent (a run's own
            ``cluster_key`` is not applied unless passed here).
        by: A metadata field (topic, difficulty, source): each grader is also compared
            slice by slice on its values, and a slice whose difference has the other
            sign than the whole is flagged (`SliceComparison.flips`).
        n_resamples: Bootstrap resamples.
        confidence: Level of the intervals.
        seed: Bootstrap seed: the same runs and seed give the same intervals.
        top: How many most-changed samples to keep per grader.
        shown: How many pairs to keep for a reader in `Comparison.samples` (the compare
            page): the largest changes of each grader, outcome and slice in turn.
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
    slices = [_slice_value(ra, rb, by) for ra, rb in pairs] if by else None
    results = [
        _compare_grader(key, a, b, pairs, labels, slices, n_resamples, confidence, seed, top)
        for key in shared
    ]
    if shown < 0:
        raise InvalidInputError(f"shown={shown}: the pairs to show are 0 or more")
    samples, counts = shown_pairs(
        pairs, {key: (a.scores(key), b.scores(key)) for key in shared}, slices, limit=shown
    )
    adjusted = holm([r.p_value for r in results])
    results = [replace(r, p_value_holm=p) for r, p in zip(results, adjusted, strict=True)]
    name_a, name_b = display_names(a, b)
    return Comparison(
        run_a=name_a,
        run_b=name_b,
        graders=tuple(replace(r, verdict=verdict(r, len(results))) for r in results),
        only_a=only_a,
        only_b=only_b,
        graders_only_a=tuple(k for k in a.graders if k not in b.spec_hashes),
        graders_only_b=tuple(k for k in b.graders if k not in a.spec_hashes),
        cluster_key=cluster_key,
        by=by,
        seed=seed,
        n_resamples=n_resamples,
        mismatched_prompts=tuple(ra.id for ra, _ in mismatched),
        changed_graders=tuple(changed),
        samples=samples,
        sample_counts=counts,
        # Which judge and which served model gave each run's verdicts: a change is said.
        judge_drift=tuple(drift_lines(shared, judge_facts(a), judge_facts(b))),
    )


def display_names(a: EvalRun, b: EvalRun) -> tuple[str, str]:
    """Short names of two runs, unique between them.

    An Inspect log is named by its task and model (its file name is a long time stamp);
    when both runs share them, the log's own id (the file name's last ``_`` part) tells
    them apart. Two runs of one name (folders of one name in two places) get "(A)" and
    "(B)".
    """
    names = [_short_name(a), _short_name(b)]
    if names[0] == names[1]:
        ids = (_log_id(a), _log_id(b))
        if all(ids) and ids[0] != ids[1]:
            names = [f"{names[0]} ({ids[0]})", f"{names[1]} ({ids[1]})"]
        elif a.name != b.name:
            names = [a.name, b.name]
        else:
            names = [f"{a.name} (A)", f"{b.name} (B)"]
    return names[0], names[1]


def _short_name(run: EvalRun) -> str:
    config = run.config
    if config.get("source") == "inspect" and config.get("task") and config.get("model"):
        return f"{config['task']} {config['model']}"
    return run.name


def _log_id(run: EvalRun) -> str:
    log = run.config.get("log")
    if not isinstance(log, str):
        return ""
    return Path(log).stem.rsplit("_", 1)[-1]


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


MISSING = "(missing)"


def _slice_value(ra: SampleRecord, rb: SampleRecord, by: str) -> str:
    for record in (ra, rb):
        if by in record.metadata:
            return str(record.metadata[by])
    return MISSING


def _slices(
    x: np.ndarray,
    y: np.ndarray,
    values: Sequence[str],
    groups: Sequence[str] | None,
    overall: float,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> tuple[SliceComparison, ...]:
    out = []
    nan = math.nan
    for value in sorted(set(values)):
        mask = np.array([v == value for v in values], dtype=bool)
        xs, ys = x[mask], y[mask]
        n = int(mask.sum())
        with np.errstate(over="ignore"):
            diff = _mean(ys - xs) if n else nan
        low = high = p = nan
        method, note = NONE, ""
        sub_groups = [g for g, m in zip(groups, mask, strict=True) if m] if groups else None
        within_one = sub_groups is not None and len(set(sub_groups)) == 1
        if n < 2:
            note = f"{n} pair: no interval from a single pair"
        else:
            result = paired_difference(
                xs,
                ys,
                clusters=None if within_one else sub_groups,
                n_resamples=n_resamples,
                confidence=confidence,
                seed=seed,
            )
            low, high, p, method = result.low, result.high, result.p_value, result.method
            reasons = list(result.warnings)
            if within_one:
                assert sub_groups is not None
                reasons.insert(
                    0,
                    f"the slice is one cluster ({sub_groups[0]!r}): its pairs are treated as "
                    "independent, so the interval is of this cluster's own difference, not "
                    "of clusters like it",
                )
            note = "; ".join(reasons)
        flips = bool(diff * overall < 0)
        out.append(
            SliceComparison(
                value=value,
                n_pairs=n,
                mean_a=_mean(xs),
                mean_b=_mean(ys),
                diff=diff,
                ci_low=low,
                ci_high=high,
                p_value=p,
                flips=flips,
                flips_clearly=flips and (high < 0.0 if overall > 0 else low > 0.0),
                method=method,
                note=note,
            )
        )
    return tuple(out)


def _mean(values: np.ndarray) -> float:
    """The mean, rescaled so that huge finite scores do not overflow its sum."""
    if not values.size:
        return math.nan
    largest = float(np.max(np.abs(values)))
    if not math.isfinite(largest):
        # Differences that overflowed: paired_difference refuses them with the reason.
        with np.errstate(invalid="ignore", over="ignore"):
            return float(values.mean())
    if largest <= 1e100:
        return float(values.mean())
    scale = 2.0 ** math.floor(math.log2(largest))
    return float((values / scale).mean() * scale)


def _compare_grader(
    key: str,
    a: EvalRun,
    b: EvalRun,
    pairs: Sequence[tuple[SampleRecord, SampleRecord]],
    labels: Sequence[str] | None,
    slice_values: Sequence[str] | None,
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
    values = [slice_values[i] for i, _, _ in kept] if slice_values is not None else None
    with np.errstate(over="ignore"):
        # Differences of scores near the float limit overflow: paired_difference refuses them.
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
        mean_a=_mean(x),
        mean_b=_mean(y),
        diff=_mean(d),
        stderr=nan,
        ci_low=nan,
        ci_high=nan,
        bootstrap_stderr=nan,
        confidence=confidence,
        method=NONE,
        p_value=nan,
        p_value_holm=nan,
        wins=wins,
        ties=n - wins - losses,
        losses=losses,
        # Pairs the grader graded in a run: in a run of several tasks (lm-eval), a task's
        # grader has no outcome on another task's samples, which are not its to score.
        not_scored=sum(
            1
            for ra, rb in pairs
            if a.outcome(ra, key) is not None or b.outcome(rb, key) is not None
        )
        - n,
        most_changed=changed,
        points=bool(n) and bool(np.all((x >= 0) & (x <= 1) & (y >= 0) & (y <= 1))),
    )
    if values is not None and n:
        base = replace(
            base,
            slices=_slices(x, y, values, groups, _mean(d), n_resamples, confidence, seed),
        )
    if n < 2:
        return replace(base, warnings=(f"{n} pair(s) scored by both runs: nothing to compare",))
    if groups is not None and len(set(groups)) < 2:
        return replace(
            base,
            n_clusters=len(set(groups)),
            warnings=("every pair is in one cluster: a clustered comparison needs two or more",),
        )
    result = paired_difference(
        x, y, clusters=groups, n_resamples=n_resamples, confidence=confidence, seed=seed
    )
    return replace(
        base,
        stderr=result.stderr,
        ci_low=result.low,
        ci_high=result.high,
        bootstrap_stderr=result.bootstrap_stderr,
        method=result.method,
        p_value=result.p_value,
        n_clusters=result.n_clusters,
        naive_ci_low=result.naive_low,
        naive_ci_high=result.naive_high,
        warnings=result.warnings,
        dof=result.dof,
        detectable=minimum_detectable_difference(
            result.stderr, confidence, dof=result.dof if math.isfinite(result.dof) else math.inf
        ),
    )
