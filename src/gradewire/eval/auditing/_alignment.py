"""Aligning a judge with people's labels, without retraining, proven on held-out folds.

`align_judge` grades labelled samples with the judge as it is, then tries what can be
adjusted without retraining, each a *candidate*:

- ``threshold`` (a score-based judge: its scores are not all 0 or 1): the pass threshold,
  fitted on the other folds (`calibrate_threshold`);
- ``shots`` (a judge with few-shot examples, `BinaryJudgeGrader`): examples chosen from
  the judge's disagreements with people in the other folds, shown with people's verdict;
- ``criteria`` (when a ``proposer`` model is given): a revised criteria text the proposer
  writes from the current text and the disagreements of the other folds.

k stratified folds (each class dealt evenly across them); the candidate of each fold is
made from the other folds only, and judges that fold's samples, so every sample's
verdict after comes from a judge that never saw its label. Agreement with people
(Cohen's κ) before and after is compared on the same samples with a paired bootstrap
interval of the change (`paired_kappa_change_interval`). Several candidates are several
tries: each interval is at the Bonferroni level (``1 - (1 - confidence) / m`` for ``m``
candidates), and a candidate counts as an improvement only when that interval lies above
0; of those, the one with the largest change is chosen, and otherwise the judge is kept
as it is. A sample the candidate could not judge (an error, an abstention) counts as a
disagreement: a candidate gains nothing by not answering.

The chosen change is then made again from every label (the threshold fitted on all, the
shots chosen from all the disagreements, the criteria proposed from them): the held-out
proof is of that procedure, as in cross-validation; the interval covers the sampling
error of the held-out agreement with each fold's candidate fixed, not the variation of
the candidates themselves. The result carries the judge as a grader spec (`spec`), to
diff against the old one and to build.
"""

from __future__ import annotations

import copy
import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from gradewire.core import (
    BaseGrader,
    Grade,
    GradewireError,
    InvalidInputError,
    InvalidTypeError,
    StringThread,
)
from gradewire.core._logging_core import LoggingCore
from gradewire.eval.auditing._calibration import (
    _best_threshold,
    _stratified_folds,
    binary_kappa,
    paired_kappa_change_interval,
)
from gradewire.eval.auditing._judge_audits import _grade_all, _keyed
from gradewire.judges import BinaryJudgeGrader, JudgeShot
from gradewire.judges._binary_judge import _shot_messages
from gradewire.judges._certificate import json_ready
from gradewire.judges._identity import is_judge
from gradewire.models import ChatModel, complete_structured

__all__ = ["AlignmentCandidate", "JudgeAlignment", "align_judge"]

# How much of a disagreement the proposer is shown (characters per text), and how many.
_SHOWN_CHARS = 600
_SHOWN_EXAMPLES = 8
# A reply that is only a placeholder: "<the revised criterion>", "...", "string".
_PLACEHOLDER = re.compile(r"<[^<>]*>|\.{3}|…|string|criteria|the revised criterion", re.I)


@dataclass(frozen=True)
class AlignmentCandidate:
    """One way of adjusting the judge, judged on held-out folds.

    Attributes:
        kind: ``"threshold"``, ``"shots"`` or ``"criteria"``.
        kappa_after: Cohen's κ of the held-out verdicts with people's labels.
        change: ``kappa_after`` minus the judge's κ as it is.
        ci_low: Lower end of the paired bootstrap interval of ``change`` (at the
            alignment's ``adjusted_confidence``).
        ci_high: Upper end.
        improved: Whether the interval lies above 0.
        unanswered: Held-out samples the candidate did not judge (counted as disagreements).
        folds: What each fold's candidate was (its threshold, its shots' ids, its criteria).
        notes: What went wrong while making candidates (a proposer that did not answer).
        held_out: Each sample's held-out verdict (id → 1 pass, 0 fail; an unanswered
            sample has the verdict opposite to people's).
        method: How its interval was computed.
    """

    kind: str
    kappa_after: float
    change: float
    ci_low: float
    ci_high: float
    improved: bool
    unanswered: int
    folds: tuple[Any, ...]
    notes: tuple[str, ...] = ()
    held_out: Mapping[str, int] = field(default_factory=dict)
    method: str = ""


@dataclass(frozen=True)
class JudgeAlignment:
    """What aligning a judge with people's labels gained on held-out folds.

    Attributes:
        grader: The judge's key.
        identity_before: The judge's identity as it was.
        identity_after: The identity of the judge to use (``identity_before`` when
            nothing was proven).
        n: Labelled samples the judge (as it was) judged.
        positives: Of them, those people passed.
        folds: Folds of the cross-validation.
        threshold: The verdict threshold of the judge as it was (a value at or above
            it passes).
        kappa_before: Cohen's κ of the judge as it was with the labels.
        candidates: Each candidate tried, with its held-out figures.
        chosen: The kind of the candidate used, or None (nothing proven: judge kept).
        changes: What the chosen change is, made from every label (``pass_threshold``,
            ``shots``, ``criteria``); empty when nothing was chosen.
        confidence: The family's level.
        adjusted_confidence: Each candidate interval's level (Bonferroni).
        method: How the intervals were computed.
        spec: The judge to use, as a grader spec (None: the judge was not built from
            one, see `gradewire.specs.build_grader`).
    """

    grader: str
    identity_before: str
    identity_after: str
    n: int
    positives: int
    folds: int
    threshold: float
    kappa_before: float
    candidates: tuple[AlignmentCandidate, ...]
    chosen: str | None
    changes: Mapping[str, Any]
    confidence: float
    adjusted_confidence: float
    method: str
    spec: Mapping[str, Any] | None = field(default=None)

    @property
    def improved(self) -> bool:
        """Whether a candidate was proven better on held-out labels (and chosen)."""
        return self.chosen is not None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN as None)."""
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["candidates"] = [
            {name: getattr(c, name) for name in c.__dataclass_fields__} for c in self.candidates
        ]
        out: dict[str, Any] = json_ready(data)
        return out

    def __str__(self) -> str:
        head = (
            f"alignment of {self.grader!r} on {self.n} labelled samples ({self.positives} "
            f"passed by people), {self.folds}-fold held out: Cohen's κ {_f(self.kappa_before)} "
            f"as it is; {len(self.candidates)} candidate(s), each interval at "
            f"{self.adjusted_confidence:.1%} (Bonferroni for {self.confidence:.0%} over "
            f"them), {self.method}"
        )
        lines = [head]
        for c in self.candidates:
            interval = (
                f"[{_signed(c.ci_low)}, {_signed(c.ci_high)}]"
                if math.isfinite(c.ci_low) and math.isfinite(c.ci_high)
                else "no interval"
            )
            verdict = (
                "better"
                if c.improved
                else "worse"
                if math.isfinite(c.ci_high) and c.ci_high < 0
                else "not told apart from 0"
            )
            extra = f", {c.unanswered} unanswered" if c.unanswered else ""
            lines.append(
                f"  {c.kind}: κ {_f(c.kappa_after)} held out, change {_signed(c.change)} "
                f"{interval}: {verdict}{extra}"
            )
            if "percentile" in c.method:
                lines.append("    interval: percentile (BCa undefined here)")
            lines.extend(f"    note: {note}" for note in c.notes)
        if self.chosen is None:
            lines.append(
                "  no candidate agrees better with people on held-out labels by an interval "
                "that excludes 0: keep the judge as it is"
            )
        else:
            lines.append(
                f"  use the {self.chosen} candidate, made again from every label "
                f"({', '.join(sorted(self.changes))} changed): {self.identity_after}"
            )
        return "\n".join(lines)


class _Proposal(BaseModel):
    criteria: str = Field(min_length=1)


async def align_judge(
    judge: BaseGrader[Any],
    samples: Sequence[StringThread] | Mapping[str, StringThread],
    labels: Mapping[str, float | None],
    *,
    folds: int = 5,
    shots: int = 4,
    proposer: ChatModel | None = None,
    threshold: float | None = None,
    concurrency: int = 8,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> JudgeAlignment:
    """Adjust ``judge`` to people's pass/fail ``labels`` and prove it on held-out folds.

    Args:
        judge: The judge (a `JudgeGrader`; panels are not adjusted).
        samples: The labelled samples (a dict id → thread, or a list keyed by position).
        labels: People's label per sample id: 1 pass, 0 fail (None: unlabelled).
        folds: Stratified folds (2 or more); each class needs at least this many samples.
        shots: Most few-shot examples a ``shots`` candidate adds (0: no such candidate).
        proposer: A model that proposes a revised criteria text (None: no ``criteria``
            candidate). It may be the judge's own model.
        threshold: The verdict threshold of the judge as it is (default: its
            ``pass_threshold``, else 0.5).
        concurrency: Samples in flight.
        confidence: The family's level (each of m candidate intervals gets the
            Bonferroni level ``1 - (1 - confidence) / m``).
        n_resamples: Bootstrap resamples of each interval.
        seed: Seed of the folds, the shots' choice and the bootstrap.

    Raises:
        InvalidTypeError: ``judge`` is not a judge.
        InvalidInputError: Labels other than 0/1, too few samples of a class for the
            folds, or bad settings.
    """
    if not is_judge(judge) or not hasattr(judge, "judge"):
        raise InvalidTypeError(
            f"align a judge (a JudgeGrader: a grader that calls a model), not "
            f"{type(judge).__name__}"
        )
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise InvalidInputError(f"folds must be 2 or more, not {folds!r}")
    if isinstance(shots, bool) or not isinstance(shots, int) or shots < 0:
        raise InvalidInputError(f"shots must be a whole number of examples, not {shots!r}")
    if not 0.0 < confidence < 1.0:
        raise InvalidInputError(f"confidence must be between 0 and 1, not {confidence!r}")
    keyed = _keyed(samples)
    unknown = sorted(set(labels) - set(keyed))
    if unknown:
        raise InvalidInputError(f"labels of samples that are not given: {unknown[:5]}")
    if threshold is None:
        declared = getattr(judge, "pass_threshold", None)
        threshold = float(declared) if isinstance(declared, (int, float)) else 0.5
    base = _variant(judge)
    labelled = {k: keyed[k] for k in keyed if labels.get(k) is not None}
    graded = await _grade_all(base, labelled, concurrency)
    ids = [k for k in labelled if k in graded and math.isfinite(graded[k].value)]
    y = np.array([float(labels[k]) for k in ids])  # type: ignore[arg-type]
    if not set(np.unique(y)) <= {0.0, 1.0}:
        raise InvalidInputError("aligning a judge needs pass/fail labels (1 or 0)")
    truth = y.astype(bool)
    positives = int(truth.sum())
    if min(positives, len(ids) - positives) < folds:
        raise InvalidInputError(
            f"the judge judged {positives} samples people passed and {len(ids) - positives} "
            f"they failed: each needs at least {folds} (one per fold) for a held-out proof; "
            "label more samples or use fewer folds"
        )
    scores = np.array([graded[k].value for k in ids])
    before = scores >= threshold
    state = _Judged(
        judge=judge,
        keyed=keyed,
        labels=labels,
        graded=graded,
        ids=ids,
        truth=truth,
        scores=scores,
        before=before,
        threshold=threshold,
        shots=shots,
        proposer=proposer,
        concurrency=concurrency,
        rng=random.Random(seed),
    )
    kinds = []
    if not set(np.unique(scores)) <= {0.0, 1.0}:
        kinds.append("threshold")
    if shots > 0 and isinstance(judge, BinaryJudgeGrader):
        kinds.append("shots")
    if proposer is not None and isinstance(getattr(judge, "criteria", None), str):
        kinds.append("criteria")
    adjusted = 1.0 - (1.0 - confidence) / max(1, len(kinds))
    split = _stratified_folds(truth, folds, seed)
    candidates = []
    for kind in kinds:
        after, made, unanswered, notes = await _held_out(kind, state, split)
        low, high, method = paired_kappa_change_interval(
            truth, before, after, confidence=adjusted, n_resamples=n_resamples, seed=seed
        )
        kappa_after = binary_kappa(truth, after)
        candidates.append(
            AlignmentCandidate(
                kind=kind,
                kappa_after=kappa_after,
                change=kappa_after - binary_kappa(truth, before),
                ci_low=low,
                ci_high=high,
                improved=math.isfinite(low) and low > 0.0,
                unanswered=unanswered,
                folds=tuple(made),
                notes=tuple(notes),
                held_out={k: int(v) for k, v in zip(ids, after, strict=True)},
                method=f"{method}, each fold's candidate fixed",
            )
        )
    best = max((c for c in candidates if c.improved), key=lambda c: c.change, default=None)
    changes: dict[str, Any] = {}
    final: Any = judge
    if best is not None:
        changes, final = await _made_from_all(best.kind, state)
    return JudgeAlignment(
        grader=judge.grader_key,
        identity_before=_identity(judge),
        identity_after=_identity(final),
        n=len(ids),
        positives=positives,
        folds=folds,
        threshold=float(threshold),
        kappa_before=binary_kappa(truth, before),
        candidates=tuple(candidates),
        chosen=None if best is None or not changes else best.kind,
        changes=changes,
        confidence=confidence,
        adjusted_confidence=adjusted,
        method=(
            "paired bootstrap over samples (BCa; percentile where BCa is undefined), each "
            "fold's candidate fixed"
        ),
        spec=_spec(judge, changes),
    )


@dataclass
class _Judged:
    """The judge as it is on the labelled samples: what every candidate is made from."""

    judge: Any
    keyed: Mapping[str, StringThread]
    labels: Mapping[str, float | None]
    graded: Mapping[str, Grade]
    ids: list[str]
    truth: np.ndarray[Any, Any]
    scores: np.ndarray[Any, Any]
    before: np.ndarray[Any, Any]
    threshold: float
    shots: int
    proposer: ChatModel | None
    concurrency: int
    rng: random.Random

    def disagreements(self, among: Sequence[int]) -> list[str]:
        """The ids, among the positions ``among``, where the judge and people disagree."""
        return [self.ids[i] for i in among if self.before[i] != self.truth[i]]


async def _held_out(
    kind: str, state: _Judged, split: Sequence[tuple[Any, Any]]
) -> tuple[np.ndarray[Any, Any], list[Any], int, list[str]]:
    """Each sample's verdict by the ``kind`` candidate made from the other folds only.

    Returns the verdicts, what each fold's candidate was, the samples it did not judge
    (counted as disagreements) and notes.
    """
    after = state.before.copy()
    made: list[Any] = []
    notes: list[str] = []
    unanswered = 0
    for number, (train, test) in enumerate(split):
        if kind == "threshold":
            chosen = _best_threshold(state.scores[train], state.truth[train], state.threshold)
            made.append(chosen)
            after[test] = state.scores[test] >= chosen
            continue
        # Only the other folds' disagreements: this fold's labels stay unseen.
        trained = state.disagreements(train)
        if kind == "shots":
            picked = _pick_shots(trained, state.labels, state.shots, state.rng)
            made.append(picked)
            if not picked:  # no disagreement to show: the judge as it is
                continue
            shown = [_shot(state.keyed[k], state.labels[k]) for k in picked]
            variant = _variant(state.judge, shots=shown)
        else:
            proposal, note = await _propose(state, trained)
            made.append(proposal)
            if note:
                notes.append(f"fold {number + 1}: {note}")
            if proposal is None:  # the judge as it is
                continue
            variant = _variant(state.judge, criteria=proposal)
        fold = {state.ids[i]: state.keyed[state.ids[i]] for i in test}
        answers = await _grade_all(variant, fold, state.concurrency)
        for i in test:
            grade = answers.get(state.ids[i])
            if grade is None or not math.isfinite(grade.value):
                unanswered += 1
                after[i] = not state.truth[i]
            else:
                after[i] = grade.value >= state.threshold
    return after, made, unanswered, notes


async def _made_from_all(kind: str, state: _Judged) -> tuple[dict[str, Any], Any]:
    """The ``kind`` change made again from every label, and the judge with it."""
    everyone = state.disagreements(range(len(state.ids)))
    if kind == "threshold":
        threshold = _best_threshold(state.scores, state.truth, state.threshold)
        return {"pass_threshold": threshold}, _variant(state.judge, pass_threshold=threshold)
    if kind == "shots":
        picked = _pick_shots(everyone, state.labels, state.shots, state.rng)
        added = [_shot(state.keyed[k], state.labels[k]) for k in picked]
        return {"shots": [_shot_dict(s) for s in added]}, _variant(state.judge, shots=added)
    proposal, _ = await _propose(state, everyone)
    if proposal is None:
        return {}, state.judge
    return {"criteria": proposal}, _variant(state.judge, criteria=proposal)


def _variant(
    judge: BaseGrader[Any],
    *,
    criteria: str | None = None,
    shots: Sequence[JudgeShot] = (),
    pass_threshold: float | None = None,
) -> Any:
    """A copy of ``judge`` with its own logs and the changes given."""
    clone: Any = copy.copy(judge)
    LoggingCore.__init__(
        clone, sample_tables=judge.sample_tables, max_log_records=judge.max_log_records
    )
    if criteria is not None:
        clone.criteria = criteria
    if shots:
        clone.shots = (*clone.shots, *shots)
    if pass_threshold is not None:
        clone.pass_threshold = pass_threshold
    if isinstance(clone, BinaryJudgeGrader):
        # The shots are shown judged on the criteria: both are in the prompt.
        clone._shot_messages = _shot_messages(clone.shots, clone.criteria)
    return clone


def _pick_shots(
    disagreements: Sequence[str],
    labels: Mapping[str, float | None],
    most: int,
    rng: random.Random,
) -> list[str]:
    """Up to ``most`` disagreements, people's passes and fails alternating, in a seeded order."""
    passed = [k for k in disagreements if labels[k] == 1.0]
    failed = [k for k in disagreements if labels[k] == 0.0]
    rng.shuffle(passed)
    rng.shuffle(failed)
    picked: list[str] = []
    while len(picked) < most and (passed or failed):
        for group in (passed, failed):
            if group and len(picked) < most:
                picked.append(group.pop())
    return sorted(picked)


def _shot(thread: StringThread, label: float | None) -> JudgeShot:
    turns = list(thread.turns)
    if not turns or turns[-1].role != "assistant":
        raise InvalidInputError("a sample shown as a shot must end with the assistant's answer")
    verdict = "PASS" if label == 1.0 else "FAIL"
    reasoning = (
        "People judged that the completion complies with the criteria"
        if verdict == "PASS"
        else "People judged that the completion does not comply with the criteria"
    )
    question = StringThread(turns[:-1], thread.metadata)
    return JudgeShot(question, turns[-1].content, verdict, reasoning)


def _shot_dict(shot: JudgeShot) -> dict[str, Any]:
    source = shot.thread_or_question
    shown: dict[str, Any] = (
        {"question": source} if isinstance(source, str) else {"thread": source.to_dict()}
    )
    return {
        **shown,
        "completion": shot.completion,
        "verdict": shot.verdict,
        "reasoning": shot.reasoning,
    }


async def _propose(state: _Judged, disagreements: Sequence[str]) -> tuple[str | None, str | None]:
    """A revised criteria text from ``disagreements`` (None and why, when there is none)."""
    judge, proposer = state.judge, state.proposer
    assert proposer is not None
    if not disagreements:
        return None, "no disagreement to learn from: criteria kept"
    shown = []
    for key in list(disagreements)[:_SHOWN_EXAMPLES]:
        thread = state.keyed[key]
        grade = state.graded[key]
        people = "PASS" if state.labels[key] == 1.0 else "FAIL"
        judged = "PASS" if grade.value >= state.threshold else "FAIL"
        shown.append(
            f"<example>\n<question>{_cut(thread.last_user_content() or '')}</question>\n"
            f"<answer>{_cut(thread.completion() or '')}</answer>\n"
            f"<people>{people}</people>\n<judge>{judged}</judge>\n"
            f"<judge_reasoning>{_cut(grade.reasoning or '')}</judge_reasoning>\n</example>"
        )
    prompt = (
        "An LLM judge grades answers against a criterion. On the examples below, people and "
        "the judge disagreed. Rewrite the criterion so that a judge that follows it would "
        "give people's verdicts. State the rule in general terms (do not quote or name the "
        "examples), keep what the criterion already gets right, and keep it short.\n\n"
        f"<criterion>{judge.criteria}</criterion>\n\n" + "\n".join(shown) + "\n\n"
        'Give the revised criterion as the value of "criteria".'
    )
    try:
        answer, _ = await complete_structured(
            proposer, [{"role": "user", "content": prompt}], _Proposal
        )
    except GradewireError as exc:  # a proposer that fails leaves the criteria as they are
        return None, f"the proposer did not answer ({type(exc).__name__}: {exc}): criteria kept"
    text = answer.criteria.strip()
    if not text:
        return None, "the proposer gave an empty criteria text: criteria kept"
    if text.casefold() == judge.criteria.strip().casefold():
        return None, "the proposer gave the criteria back unchanged: criteria kept"
    if _PLACEHOLDER.fullmatch(text):
        # A small model copies the shape of the answer it was shown instead of writing one.
        return None, f"the proposer gave a placeholder ({text[:60]!r}), not a text: criteria kept"
    return text, None


def _spec(judge: BaseGrader[Any], changes: Mapping[str, Any]) -> dict[str, Any] | None:
    spec = getattr(judge, "spec", None)
    if not isinstance(spec, Mapping):
        return None
    out = dict(spec)
    if "shots" in changes:
        out["shots"] = [*(out.get("shots") or []), *changes["shots"]]
    if "criteria" in changes:
        out["criteria"] = changes["criteria"]
    if "pass_threshold" in changes:
        out["pass_threshold"] = changes["pass_threshold"]
    return out


def _identity(judge: Any) -> str:
    return str(judge.identity)


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + " …"


def _signed(value: float) -> str:
    # Rounded first, so a -1e-17 of float noise does not print as -0.000.
    return f"{round(value, 3) + 0.0:+.3f}" if math.isfinite(value) else "–"


def _f(value: float) -> str:
    return f"{value:.3f}" if math.isfinite(value) else "–"
