"""leaderboard: any number of runs, paired on the samples they all hold, grader by grader.

The runs are paired by sample id as `compare_runs` pairs two: samples only some runs hold
are counted and listed per run (`Leaderboard.unshared`), never dropped silently; a shared
id whose prompt differs between runs, or a grader whose spec differs, is refused as
compare refuses it, unless allowed. Each grader's board is then made from the samples
every run with that grader scored (`rank_board`: means with intervals, every pair's
difference with an adjusted p-value, rank intervals and tiers). A grader whose verdicts
came from different judges or served models in different runs says so on its board, in
compare's sentences (`spread_lines`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from gradewire.core import InvalidInputError
from gradewire.eval.comparing._compare_runs import (
    MISSING,
    MismatchedRunsError,
    _changed_message,
    _labels,
    _log_id,
    _mismatch_message,
    _prompt,
    _short_name,
)
from gradewire.eval.ranking._ranks import ADJUSTMENTS, Adjustment, rank_board
from gradewire.eval.ranking._standings import GraderBoard, Leaderboard
from gradewire.eval.runs._eval_run import EvalRun
from gradewire.eval.runs._judge_facts import judge_facts, spread_lines
from gradewire.eval.runs._records import SampleRecord

__all__ = ["leaderboard", "run_names"]


def run_names(runs: Sequence[EvalRun]) -> list[str]:
    """Short names of the runs, unique among them.

    An Inspect log is named by its task and model; runs of one short name are told apart
    by their log ids, else their own names, else by their place in the list ("#2").
    """
    names = [_short_name(run) for run in runs]
    counts = Counter(names)
    out = []
    for run, name in zip(runs, names, strict=True):
        if counts[name] > 1:
            log = _log_id(run)
            name = f"{name} ({log})" if log else run.name
        out.append(name)
    counts = Counter(out)
    seen: Counter[str] = Counter()
    final = []
    for name in out:
        if counts[name] > 1:
            seen[name] += 1
            name = f"{name} #{seen[name]}"
        final.append(name)
    return final


def leaderboard(
    runs: Sequence[EvalRun],
    *,
    cluster_key: str | None = None,
    by: str | None = None,
    confidence: float = 0.95,
    adjust: Adjustment = "holm",
    allow_mismatched_prompts: bool = False,
    allow_changed_graders: bool = False,
) -> Leaderboard:
    """Rank runs grader by grader on the samples they all hold, with honest ties.

    Per grader: each run's mean with its interval (the method for the scores' kind),
    every pair's paired difference with compare's test, the p-values adjusted for the
    number of pairs (``adjust``), each run's rank interval and its tier (runs of one tier
    cannot be told apart).

    Args:
        runs: Two or more runs (`open_run` opens any source compare reads).
        cluster_key: A metadata field grouping samples that are not independent: the
            intervals and tests are clustered by it.
        by: A metadata field: each grader's board is also made per value of it.
        confidence: Level of the intervals; a pair is separable when its adjusted
            p-value is below ``1 - confidence``.
        adjust: ``"holm"`` (default: the family-wise error of separable claims is at most
            ``1 - confidence``), ``"bh"`` (Benjamini–Hochberg: the false discovery rate)
            or ``"maxt"`` (step-down max-T: the family-wise error at about ``1 -
            confidence`` for large n, less conservative than Holm's for many runs).
        allow_mismatched_prompts: Pair samples by id even where their prompts differ.
        allow_changed_graders: Rank a grader whose spec differs between runs.

    Raises:
        MismatchedRunsError: Shared ids whose prompts differ, or graders whose spec
            changed, unless allowed.
        InvalidInputError: Fewer than two runs, no shared sample, an unknown adjustment,
            a level out of range, or a shared sample without the cluster field.
    """
    if len(runs) < 2:
        raise InvalidInputError(f"a leaderboard needs two or more runs, not {len(runs)}")
    if adjust not in ADJUSTMENTS:
        raise InvalidInputError(f"adjust={adjust!r}: pass one of {sorted(ADJUSTMENTS)}")
    if not 0.0 < confidence < 1.0:
        raise InvalidInputError(f"confidence must be between 0 and 1, not {confidence!r}")
    names = run_names(runs)
    by_id = [{record.id: record for record in run.records} for run in runs]
    shared = [r.id for r in runs[0].records if all(r.id in ids for ids in by_id[1:])]
    shared_set = set(shared)
    unshared = {
        name: tuple(r.id for r in run.records if r.id not in shared_set)
        for name, run in zip(names, runs, strict=True)
    }
    unshared = {name: ids for name, ids in unshared.items() if ids}
    if not shared:
        raise InvalidInputError(
            "the runs share no sample id, so nothing can be paired: rank runs of the same "
            "data ("
            + ", ".join(f"{n}: {len(r.records)} samples" for n, r in zip(names, runs, strict=True))
            + ")"
        )
    mismatched = _mismatched(runs, by_id, shared)
    graders = list(dict.fromkeys(key for run in runs for key in run.graders))
    changed = [
        key
        for key in graders
        if len({run.spec_hashes[key] for run in runs if key in run.spec_hashes}) > 1
    ]
    problems = []
    if mismatched and not allow_mismatched_prompts:
        first, other, pairs = mismatched[0]
        problems.append(
            f"{names[first]} (A) and {names[other]} (B): " + _mismatch_message(pairs, len(shared))
        )
    if changed and not allow_changed_graders:
        for key in changed:
            holders = [i for i, run in enumerate(runs) if key in run.spec_hashes]
            base = holders[0]
            for i in holders[1:]:
                if runs[i].spec_hashes[key] != runs[base].spec_hashes[key]:
                    problems.append(
                        f"{names[base]} (A) and {names[i]} (B): "
                        + _changed_message([key], runs[base], runs[i])
                    )
                    break
    if problems:
        raise MismatchedRunsError("cannot rank these runs:\n" + "\n".join(problems))
    records = [[ids[sample] for ids in by_id] for sample in shared]
    labels = _cluster_labels(records, cluster_key) if cluster_key else None
    slices = [_slice_value(group, by) for group in records] if by else None
    facts = [judge_facts(run) for run in runs]
    boards = [
        replace(
            _board(key, runs, names, records, labels, slices, confidence, adjust),
            judge_drift=tuple(spread_lines([key], list(zip(names, facts, strict=True)))),
        )
        for key in graders
    ]
    return Leaderboard(
        runs=tuple(names),
        graders=tuple(boards),
        n_shared=len(shared),
        unshared=unshared,
        adjustment=ADJUSTMENTS[adjust][1],
        confidence=confidence,
        cluster_key=cluster_key,
        by=by,
        mismatched_prompts=tuple(dict.fromkeys(r.id for _, _, ps in mismatched for r, _ in ps)),
        changed_graders=tuple(changed),
    )


def _mismatched(
    runs: Sequence[EvalRun], by_id: Sequence[dict[str, SampleRecord]], shared: Sequence[str]
) -> list[tuple[int, int, list[tuple[SampleRecord, SampleRecord]]]]:
    """Per run after the first, the shared samples whose prompt differs from the first run's."""
    base = {sample: _prompt(by_id[0][sample]) for sample in shared}
    out = []
    for i in range(1, len(runs)):
        pairs = [
            (by_id[0][sample], by_id[i][sample])
            for sample in shared
            if _prompt(by_id[i][sample]) != base[sample]
        ]
        if pairs:
            out.append((0, i, pairs))
    return out


def _cluster_labels(records: Sequence[Sequence[SampleRecord]], key: str) -> list[str]:
    labels = []
    for group in records:
        for record in group:
            if key in record.metadata:
                labels.append(str(record.metadata[key]))
                break
        else:
            # compare's message: the sample, the field, in either run.
            _labels([(group[0], group[-1])], key)
    return labels


def _slice_value(group: Sequence[SampleRecord], by: str) -> str:
    for record in group:
        if by in record.metadata:
            return str(record.metadata[by])
    return MISSING


def _board(
    key: str,
    runs: Sequence[EvalRun],
    names: Sequence[str],
    records: Sequence[Sequence[SampleRecord]],
    labels: Sequence[str] | None,
    slices: Sequence[str] | None,
    confidence: float,
    adjust: Adjustment,
) -> GraderBoard:
    holders = [i for i, run in enumerate(runs) if key in run.spec_hashes]
    scores = [runs[i].scores(key) for i in holders]
    passes = [runs[i].passes(key) for i in holders]
    ids = [group[0].id for group in records]
    common = set.intersection(*(set(table) for table in scores))
    kept = [s for s, sample in enumerate(ids) if sample in common]
    kept_set = set(kept)
    not_scored = tuple(records[s][0].id for s in range(len(records)) if s not in kept_set)

    def board(rows: Sequence[int], value: str | None) -> GraderBoard:
        matrix = np.array(
            [[table[ids[s]] for s in rows] for table in scores],
            dtype=np.float64,
        ).reshape(len(holders), len(rows))
        verdicts = [
            [float(verdict[ids[s]]) for s in rows if ids[s] in verdict] if verdict else None
            for verdict in passes
        ]
        sub_labels = [labels[s] for s in rows] if labels is not None else None
        if sub_labels is not None and len(set(sub_labels)) < 2:
            sub_labels = None  # one cluster: the board says so below
        made = rank_board(
            key,
            [names[i] for i in holders],
            matrix,
            clusters=sub_labels,
            confidence=confidence,
            adjust=adjust,
            score_ranges=[runs[i].score_ranges.get(key) for i in holders],
            passes=verdicts,
            slice_value=value,
        )
        if labels is not None and sub_labels is None and rows:
            made = _with_note(
                made,
                "every sample is in one cluster: the pairs are treated as independent, so "
                "the intervals are of this cluster's own samples, not of clusters like it",
            )
        return made

    whole = board(kept, None)
    if slices is not None:
        values = sorted({slices[s] for s in kept})
        whole = replace(
            whole, slices=tuple(board([s for s in kept if slices[s] == v], v) for v in values)
        )
    return replace(
        whole,
        not_scored=not_scored,
        missing_runs=tuple(names[i] for i in range(len(runs)) if i not in holders),
    )


def _with_note(board: GraderBoard, note: str) -> GraderBoard:
    return replace(board, notes=(*board.notes, note))
