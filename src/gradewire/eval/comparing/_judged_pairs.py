"""judge_runs: a pairwise judge over the paired samples of two runs: B's win rate over A."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradewire.core import Grade, InvalidInputError, InvalidTypeError, StringThread
from gradewire.eval.comparing._bootstrap import paired_bootstrap
from gradewire.eval.comparing._compare_runs import MismatchedRunsError, _mismatch_message, _prompt
from gradewire.eval.runs._eval_run import EvalRun
from gradewire.eval.runs._records import SampleRecord
from gradewire.judges import PairwiseJudgeGrader

__all__ = ["JudgedComparison", "judge_runs"]

# Ids listed by the text form; to_dict() keeps them all.
_SHOWN = 10


@dataclass(frozen=True)
class JudgedComparison:
    """A pairwise judge's verdicts on two runs' paired samples: how often B beats A.

    Attributes:
        judge: The pairwise judge's key.
        run_a: Run A's name (the baseline).
        run_b: Run B's name.
        n_pairs: Pairs the judge gave a verdict on.
        wins: Pairs where B's completion was judged better.
        ties: Pairs judged equal, position-inconsistent ones included.
        losses: Pairs where A's completion was judged better.
        not_judged: Paired samples the judge abstained or failed on (left out).
        win_rate: ``(wins + ties / 2) / n_pairs``: B's win rate, ties counted half.
        ci_low: Lower end of the paired bootstrap interval of ``win_rate``.
        ci_high: Upper end.
        confidence: The interval's level.
        method: The bootstrap interval's method (BCa, or percentile).
        swap: Whether every pair was asked in both orders.
        position_consistency: With ``swap``, the share of judged pairs whose verdict did
            not change with the order; None without.
        inconsistent: Ids of the position-inconsistent pairs.
        failures: Id → why the judge gave no verdict.
        only_a: Ids only run A has (left out).
        only_b: Ids only run B has (left out).
        n_clusters: Clusters resampled whole (None: pairs were resampled).
    """

    judge: str
    run_a: str
    run_b: str
    n_pairs: int
    wins: int
    ties: int
    losses: int
    not_judged: int
    win_rate: float
    ci_low: float
    ci_high: float
    confidence: float
    method: str
    swap: bool
    position_consistency: float | None
    inconsistent: tuple[str, ...]
    failures: dict[str, str]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    n_clusters: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN as None)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, float) and not math.isfinite(value):
                value = None
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, dict):
                value = dict(value)
            out[name] = value
        return out

    def __str__(self) -> str:
        level = f"{self.confidence:.0%}"
        interval = (
            f"[{self.ci_low:.3f}, {self.ci_high:.3f}]" if math.isfinite(self.ci_low) else "(none)"
        )
        lines = [
            f"judge {self.judge!r}: B = {self.run_b} against A = {self.run_a}",
            f"  B wins {self.wins}, ties {self.ties}, loses {self.losses} of {self.n_pairs} "
            f"judged pairs; win rate (ties half) {_f(self.win_rate)}, {level} interval "
            f"{interval}",
        ]
        if self.position_consistency is not None:
            flips = len(self.inconsistent)
            lines.append(
                f"  position consistency {_f(self.position_consistency)}: {flips} verdict(s) "
                "changed when the order was swapped and count as ties"
                + (
                    f" ({', '.join(self.inconsistent[:_SHOWN])}{', …' if flips > _SHOWN else ''})"
                    if flips
                    else ""
                )
            )
        else:
            lines.append("  each pair asked in one order (swap=False): position bias not measured")
        if self.not_judged:
            lines.append(f"  {self.not_judged} pair(s) not judged (abstained or failed), left out")
        if self.only_a or self.only_b:
            lines.append(
                f"  unpaired: {len(self.only_a)} only in A, {len(self.only_b)} only in B (left out)"
            )
        return "\n".join(lines)


def _f(value: float) -> str:
    return "–" if not math.isfinite(value) else f"{value:.3f}"


def paired_threads(
    a: EvalRun, b: EvalRun, other_key: str
) -> tuple[list[tuple[str, StringThread]], tuple[str, ...], tuple[str, ...]]:
    """Per paired id, B's thread carrying A's completion under ``other_key``.

    Raises:
        MismatchedRunsError: Paired samples whose prompts differ.
        InvalidInputError: A paired sample without a completion in a run.
    """
    by_id_b = {record.id: record for record in b.records}
    ids_a = {record.id for record in a.records}
    pairs: list[tuple[str, StringThread]] = []
    differ: list[tuple[SampleRecord, SampleRecord]] = []
    missing: list[str] = []
    for record_a in a.records:
        record_b = by_id_b.get(record_a.id)
        if record_b is None:
            continue
        if _prompt(record_a) != _prompt(record_b):
            differ.append((record_a, record_b))
            continue
        if not record_a.completion() or not record_b.completion():
            missing.append(record_a.id)
            continue
        thread = StringThread.from_dict(record_b.input)
        pairs.append((record_a.id, thread.with_metadata(**{other_key: record_a.completion()})))
    if differ:
        raise MismatchedRunsError(
            f"cannot judge {b.name} (B) against {a.name} (A): a pairwise judge compares two "
            "completions of the same prompt.\n"
            + _mismatch_message(differ, len(differ) + len(pairs))
        )
    if missing:
        raise InvalidInputError(
            f"{len(missing)} paired sample(s) lack a completion in one run or both "
            f"({', '.join(map(repr, missing[:_SHOWN]))}); nothing to compare"
        )
    only_a = tuple(r.id for r in a.records if r.id not in by_id_b)
    only_b = tuple(r.id for r in b.records if r.id not in ids_a)
    return pairs, only_a, only_b


async def judge_runs(
    a: EvalRun,
    b: EvalRun,
    judge: PairwiseJudgeGrader,
    *,
    cluster_key: str | None = None,
    concurrency: int = 16,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> JudgedComparison:
    """Ask a pairwise judge whether run B's completion beats run A's, pair by pair.

    Samples are paired by id; each pair is one sample of ``judge``: B's thread, with A's
    completion as the other one (``judge.other_key``), so a value of 1.0 is a win for B.
    The win rate (ties counted half) gets a paired bootstrap interval over the pairs (over
    whole clusters with ``cluster_key``); with a judge built with ``swap=True`` every
    pair is asked in both orders and the position consistency is reported.

    Args:
        a: The baseline run.
        b: The run compared with it.
        judge: The pairwise judge.
        cluster_key: A metadata field grouping dependent samples.
        concurrency: Pairs judged at once.
        n_resamples: Bootstrap resamples.
        confidence: The interval's level.
        seed: Bootstrap seed.

    Raises:
        MismatchedRunsError: Paired samples whose prompts differ (checked before any call).
        InvalidInputError: No pairs, a paired sample without a completion, or one lacking
            the cluster field.
    """
    if not isinstance(judge, PairwiseJudgeGrader):
        raise InvalidTypeError(
            f"judge_runs needs a PairwiseJudgeGrader, not {type(judge).__name__}; declare one "
            'in a grader file with type = "pairwise_judge"'
        )
    pairs, only_a, only_b = paired_threads(a, b, judge.other_key)
    if not pairs:
        raise InvalidInputError(
            f"runs {a.name!r} and {b.name!r} share no sample id; judge runs of the same data"
        )
    grades = await judge._attempt_many([thread for _, thread in pairs], concurrency)
    judged: list[tuple[str, Grade]] = []
    failures: dict[str, str] = {}
    for (sample_id, _), outcome in zip(pairs, grades, strict=True):
        if isinstance(outcome, Grade):
            judged.append((sample_id, outcome))
        else:
            failures[sample_id] = f"{type(outcome).__name__}: {outcome}"
    clusters = _clusters(judged, pairs, cluster_key) if cluster_key else None
    return _summarise(
        judge, a, b, judged, failures, only_a, only_b, clusters, n_resamples, confidence, seed
    )


def _clusters(
    judged: Sequence[tuple[str, Grade]],
    pairs: Sequence[tuple[str, StringThread]],
    key: str,
) -> list[str]:
    threads = dict(pairs)
    labels = []
    for sample_id, _ in judged:
        metadata = threads[sample_id].metadata
        if key not in metadata:
            raise InvalidInputError(f"cluster key {key!r}: sample {sample_id!r} has no such field")
        labels.append(str(metadata[key]))
    return labels


def _summarise(
    judge: PairwiseJudgeGrader,
    a: EvalRun,
    b: EvalRun,
    judged: Sequence[tuple[str, Grade]],
    failures: dict[str, str],
    only_a: tuple[str, ...],
    only_b: tuple[str, ...],
    clusters: list[str] | None,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> JudgedComparison:
    values = np.array([grade.value for _, grade in judged], dtype=np.float64)
    winners = [grade.info["winner"] for _, grade in judged]
    n = int(values.size)
    low = high = math.nan
    method = "none (fewer than 2 judged pairs)"
    n_clusters = None
    if n >= 2 and (clusters is None or len(set(clusters)) >= 2):
        interval = paired_bootstrap(
            np.zeros(n),
            values,
            clusters=clusters,
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
        )
        low, high, method, n_clusters = (
            interval.low,
            interval.high,
            interval.method,
            interval.n_clusters,
        )
    inconsistent = tuple(
        sample_id for sample_id, grade in judged if grade.info.get("position_consistent") is False
    )
    return JudgedComparison(
        judge=judge.grader_key,
        run_a=a.name,
        run_b=b.name,
        n_pairs=n,
        wins=winners.count("candidate"),
        ties=winners.count("tie"),
        losses=winners.count("other"),
        not_judged=len(failures),
        win_rate=float(values.mean()) if n else math.nan,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        method=method,
        swap=judge.swap,
        position_consistency=(1.0 - len(inconsistent) / n) if judge.swap and n else None,
        inconsistent=inconsistent,
        failures=failures,
        only_a=only_a,
        only_b=only_b,
        n_clusters=n_clusters,
    )
