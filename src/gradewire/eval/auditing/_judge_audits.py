"""Judge audits on the user's own samples: test-retest, position bias, length sensitivity.

Each audit grades the samples in a controlled way and gives one figure a person can act
on, with what to do about it: how often the judge changes its mind when asked again, how
often its pairwise verdict follows the order of the answers, and how far a neutral
padding of the answer moves its score.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradewire.core import BaseGrader, Grade, InvalidInputError, InvalidTypeError, StringThread
from gradewire.eval.comparing._bootstrap import paired_bootstrap
from gradewire.judges import JudgedSample, PairwiseJudgeGrader
from gradewire.stats import agreement

__all__ = [
    "PADDING",
    "LengthAudit",
    "PositionAudit",
    "RetestAudit",
    "audit_length",
    "audit_position",
    "audit_retest",
]

PADDING = (
    "I hope this answer is helpful. If anything above is unclear, feel free to ask and I "
    "will gladly explain it in more detail."
)
"""The default padding: sentences that add nothing to any answer."""

_SHOWN = 10
_RETEST_CONFIDENCE = 0.95
Samples = Sequence[StringThread] | Mapping[str, StringThread]


def _keyed(samples: Samples) -> dict[str, StringThread]:
    if isinstance(samples, Mapping):
        keyed = {str(key): thread for key, thread in samples.items()}
    elif isinstance(samples, (str, bytes)) or not isinstance(samples, Sequence):
        raise InvalidTypeError("samples must be a list of StringThread or a dict id → thread")
    else:
        keyed = {str(i): thread for i, thread in enumerate(samples)}
    for key, thread in keyed.items():
        if not isinstance(thread, StringThread):
            raise InvalidTypeError(
                f"sample {key!r} is a {type(thread).__name__}, not a StringThread"
            )
    if len(keyed) < 2:
        raise InvalidInputError(f"an audit needs at least 2 samples, not {len(keyed)}")
    return keyed


def _ids(ids: Sequence[str]) -> str:
    more = f", … ({len(ids) - _SHOWN} more)" if len(ids) > _SHOWN else ""
    return ", ".join(ids[:_SHOWN]) + more


async def _grade_all(
    grader: BaseGrader[Any], keyed: Mapping[str, StringThread], concurrency: int
) -> dict[str, Grade]:
    outcomes = await grader._attempt_many(list(keyed.values()), concurrency)
    return {k: o for k, o in zip(keyed, outcomes, strict=True) if isinstance(o, Grade)}


def _cached(grades: Mapping[str, Grade]) -> int:
    return sum(int((g.info.get("usage") or {}).get("cached_calls", 0) > 0) for g in grades.values())


@dataclass(frozen=True)
class RetestAudit:
    """The same judge asked twice on the same samples.

    Attributes:
        grader: The grader's key.
        n: Samples scored both times.
        alpha: Krippendorff's α of the two passes (interval level; 1 is a judge that
            always repeats itself), NaN when undefined (every score the same).
        alpha_ci: Its bootstrap interval.
        flip_rate: Share of the ``n`` samples whose score changed.
        flips: Ids of the samples whose score changed.
        mean_shift: Mean of (second - first) over the ``n`` samples.
        not_scored: Samples left out because a pass did not score them.
    """

    grader: str
    n: int
    alpha: float
    alpha_ci: tuple[float, float]
    flip_rate: float
    flips: tuple[str, ...]
    mean_shift: float
    not_scored: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN as None)."""
        return _plain(self)

    def __str__(self) -> str:
        interval = _interval(*self.alpha_ci, confidence=_RETEST_CONFIDENCE, sign="")
        advice = (
            "the judge repeats itself: one call per sample is enough"
            if self.flip_rate == 0
            else "a score moves this often from noise alone: lower the judge's temperature, "
            "or average several calls per sample (a JudgePanel of the same judge), before "
            "reading differences smaller than this"
        )
        lines = [
            f"test-retest of {self.grader!r} on {self.n} samples: {len(self.flips)} changed "
            f"score when asked again (flip rate {self.flip_rate:.1%}); Krippendorff's α "
            f"{_f(self.alpha)} ({interval})",
            f"  {advice}",
        ]
        if self.flips:
            lines.append(f"  changed: {_ids(self.flips)}")
        if self.not_scored:
            lines.append(f"  {self.not_scored} sample(s) not scored in a pass, left out")
        return "\n".join(lines)


async def audit_retest(
    grader: BaseGrader[Any], samples: Samples, *, concurrency: int = 8, seed: int = 0
) -> RetestAudit:
    """Grade every sample twice with ``grader`` and measure how far the passes agree.

    The passes run one after the other, so a sample is never asked twice at once (which
    a client may answer with one shared call).

    Raises:
        InvalidInputError: Fewer than 2 samples, or the second pass answered from a
            judge cache (a retest needs fresh calls: build the judge without one).
    """
    keyed = _keyed(samples)
    first = await _grade_all(grader, keyed, concurrency)
    second = await _grade_all(grader, keyed, concurrency)
    if _cached(second):
        raise InvalidInputError(
            f"{_cached(second)} sample(s) of the second pass were answered from the judge's "
            "cache, so a retest measures nothing; build the judge model without cache="
        )
    both = [k for k in keyed if k in first and k in second]
    a = {k: first[k].value for k in both}
    b = {k: second[k].value for k in both}
    flips = tuple(k for k in both if a[k] != b[k])
    alpha, interval = math.nan, (math.nan, math.nan)
    if len(both) >= 2:
        result = agreement(
            a,
            b,
            scale="interval",
            statistics=["krippendorff_alpha"],
            seed=seed,
            n_resamples=1000,
            confidence=_RETEST_CONFIDENCE,
        )
        alpha, interval = result.krippendorff_alpha, result.ci("krippendorff_alpha")
    n = len(both)
    return RetestAudit(
        grader=grader.grader_key,
        n=n,
        alpha=alpha,
        alpha_ci=interval,
        flip_rate=len(flips) / n if n else math.nan,
        flips=flips,
        mean_shift=float(np.mean([b[k] - a[k] for k in both])) if n else math.nan,
        not_scored=len(keyed) - n,
    )


@dataclass(frozen=True)
class PositionAudit:
    """A pairwise judge asked every pair in both orders.

    Attributes:
        grader: The judge's key.
        n: Pairs answered in both orders.
        consistency: Share of the pairs whose verdict (which completion won, or a tie)
            was the same in both orders.
        inconsistent: Ids of the pairs whose verdict changed with the order.
        first_position_rate: Among the decisive answers (not TIE), the share that chose
            the answer shown first; 0.5 is a judge with no position preference. NaN
            when every answer was a tie.
        decisive: How many answers were decisive.
        not_answered: Pairs left out because an order got no verdict.
    """

    grader: str
    n: int
    consistency: float
    inconsistent: tuple[str, ...]
    first_position_rate: float
    decisive: int
    not_answered: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN as None)."""
        return _plain(self)

    def __str__(self) -> str:
        bias = self.first_position_rate
        lean = (
            "no decisive verdicts"
            if not math.isfinite(bias)
            else f"it chose the answer shown first in {bias:.1%} of its {self.decisive} "
            "decisive verdicts (50% is no preference)"
        )
        advice = (
            "its verdicts do not depend on the order"
            if not self.inconsistent
            else "judge with swap = true (both orders, a flip counted as a tie), or its "
            "pairwise verdicts partly measure the order"
        )
        lines = [
            f"position audit of {self.grader!r} on {self.n} pairs: {len(self.inconsistent)} "
            f"verdict(s) changed when the order was swapped (consistency "
            f"{self.consistency:.1%}); {lean}",
            f"  {advice}",
        ]
        if self.inconsistent:
            lines.append(f"  changed: {_ids(self.inconsistent)}")
        if self.not_answered:
            lines.append(f"  {self.not_answered} pair(s) without a verdict in an order, left out")
        return "\n".join(lines)


async def audit_position(
    judge: PairwiseJudgeGrader, samples: Samples, *, concurrency: int = 8
) -> PositionAudit:
    """Ask ``judge`` every pair in both orders and measure its position preference.

    Each sample is a pair as `PairwiseJudgeGrader` reads it (the thread's completion and
    ``metadata[judge.other_key]``). The calls are the judge's own, with its settings;
    they are not logged in its logs.

    Raises:
        InvalidTypeError: ``judge`` is not a `PairwiseJudgeGrader`.
        InvalidInputError: Fewer than 2 samples, or a sample that is not a pair.
    """
    if not isinstance(judge, PairwiseJudgeGrader):
        raise InvalidTypeError(
            f"a position audit needs a PairwiseJudgeGrader, not {type(judge).__name__}"
        )
    keyed = _keyed(samples)
    judged = {k: JudgedSample.of(t) for k, t in keyed.items()}
    others = {k: judge.other(s) for k, s in judged.items()}  # refuses a sample with none
    limit = asyncio.Semaphore(concurrency)

    async def both(key: str) -> tuple[str, str] | None:
        async with limit:
            try:
                first = await judge.ask_order(judged[key], others[key], True)
                second = await judge.ask_order(judged[key], others[key], False)
            except Exception:  # an unanswered order leaves the pair out, counted
                return None
        return first.verdict, second.verdict

    answers = await asyncio.gather(*(both(k) for k in keyed))
    pairs = {k: v for k, v in zip(keyed, answers, strict=True) if v is not None}
    winner = {"A": "candidate", "B": "other", "TIE": "tie"}
    swapped = {"A": "other", "B": "candidate", "TIE": "tie"}
    inconsistent = tuple(k for k, (x, y) in pairs.items() if winner[x] != swapped[y])
    verdicts = [v for pair in pairs.values() for v in pair]
    decisive = [v for v in verdicts if v != "TIE"]
    n = len(pairs)
    return PositionAudit(
        grader=judge.grader_key,
        n=n,
        consistency=1.0 - len(inconsistent) / n if n else math.nan,
        inconsistent=inconsistent,
        first_position_rate=decisive.count("A") / len(decisive) if decisive else math.nan,
        decisive=len(decisive),
        not_answered=len(keyed) - n,
    )


@dataclass(frozen=True)
class LengthAudit:
    """The same samples graded as they are and with a neutral padding of the answer.

    Attributes:
        grader: The grader's key.
        n: Samples scored both ways.
        padding_words: Words the padding added.
        mean: Mean score of the samples as they are.
        padded_mean: Mean score of the padded samples.
        shift: ``padded_mean - mean``: what the padding alone bought.
        ci_low: Lower end of the paired bootstrap interval of ``shift``.
        ci_high: Upper end.
        confidence: The interval's level.
        changed: Ids whose score the padding changed.
        not_scored: Samples left out because a version was not scored.
    """

    grader: str
    n: int
    padding_words: int
    mean: float
    padded_mean: float
    shift: float
    ci_low: float
    ci_high: float
    confidence: float
    changed: tuple[str, ...]
    not_scored: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN as None)."""
        return _plain(self)

    def __str__(self) -> str:
        interval = _interval(self.ci_low, self.ci_high, confidence=self.confidence, sign="+")
        moved = math.isfinite(self.ci_low) and (self.ci_low > 0 or self.ci_high < 0)
        advice = (
            "the judge rewards length itself: a policy trained on it will learn to pad; "
            "state in the criteria that length is not a merit, or penalise length"
            if moved and self.shift > 0
            else "the judge penalises length itself: longer complete answers lose points"
            if moved
            else "no length effect this interval can tell apart from zero"
        )
        return (
            f"length audit of {self.grader!r} on {self.n} samples: a neutral padding of "
            f"{self.padding_words} words moved the mean from {_f(self.mean)} to "
            f"{_f(self.padded_mean)} (shift {self.shift:+.3f}, {interval}); "
            f"{len(self.changed)} score(s) changed\n  {advice}"
        )


def padded(thread: StringThread, padding: str) -> StringThread:
    """``thread`` with ``padding`` appended to its final assistant turn."""
    completion = thread.completion()
    if completion is None:
        raise InvalidInputError(
            "a length audit pads the completion, and a sample has none (no final assistant turn)"
        )
    turns = list(thread.turns)
    last = turns[-1]
    turns[-1] = type(last)(last.role, f"{completion.rstrip()}\n\n{padding}")
    return StringThread(turns, thread.metadata)


async def audit_length(
    grader: BaseGrader[Any],
    samples: Samples,
    *,
    padding: str = PADDING,
    concurrency: int = 8,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> LengthAudit:
    """Grade every sample as it is and with ``padding`` appended to its answer.

    The padding adds length and nothing else; the paired mean shift (with a paired
    bootstrap interval) is how far the grader's score follows length alone.

    Raises:
        InvalidInputError: Fewer than 2 samples, an empty padding, or a sample without
            a completion.
    """
    if not isinstance(padding, str) or not padding.strip():
        raise InvalidInputError("padding must be non-empty text")
    keyed = _keyed(samples)
    longer = {k: padded(t, padding) for k, t in keyed.items()}
    plain = await _grade_all(grader, keyed, concurrency)
    more = await _grade_all(grader, longer, concurrency)
    both = [k for k in keyed if k in plain and k in more]
    x = np.array([plain[k].value for k in both], dtype=np.float64)
    y = np.array([more[k].value for k in both], dtype=np.float64)
    low = high = math.nan
    if len(both) >= 2:
        interval = paired_bootstrap(x, y, n_resamples=n_resamples, confidence=confidence, seed=seed)
        low, high = interval.low, interval.high
    n = len(both)
    return LengthAudit(
        grader=grader.grader_key,
        n=n,
        padding_words=len(padding.split()),
        mean=float(x.mean()) if n else math.nan,
        padded_mean=float(y.mean()) if n else math.nan,
        shift=float((y - x).mean()) if n else math.nan,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        changed=tuple(k for k in both if plain[k].value != more[k].value),
        not_scored=len(keyed) - n,
    )


def _interval(low: float, high: float, *, confidence: float, sign: str) -> str:
    """The interval as the audits print it; ``sign="+"`` for a shift, signed both ways."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "no interval"
    return f"{confidence:.0%} interval [{low:{sign}.3f}, {high:{sign}.3f}]"


def _f(value: float) -> str:
    return "–" if not math.isfinite(value) else f"{value:.3f}"


def _plain(result: object) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in result.__dataclass_fields__:  # type: ignore[attr-defined]
        value = getattr(result, name)
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        elif isinstance(value, tuple):
            value = [None if isinstance(v, float) and not math.isfinite(v) else v for v in value]
        out[name] = value
    return out
