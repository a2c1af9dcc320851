"""CombinedGrader: several graders folded into one scalar reward."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence
from typing import Any, Literal

from gradewire.core._errors import (
    GradingError,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
)
from gradewire.core._grade import Grade, as_finite_float
from gradewire.core._grader import BaseGrader, LogValue
from gradewire.core._log_state import LogState
from gradewire.core._thread import StringThread
from gradewire.core._weights import weighted_mean, weighted_sum

__all__ = ["CombinedGrader"]

logger = logging.getLogger("gradewire")

Aggregation = Literal["mean", "sum"]
OnError = Literal["raise", "skip", "zero", "fail"]
_ON_ERROR = ("raise", "skip", "zero", "fail")


class CombinedGrader(BaseGrader):
    """Run sub-graders concurrently and combine their values by weight.

    With ``aggregation="mean"`` the value is the weighted mean over the sub-graders that
    produced a grade (weights renormalised over them); with ``"sum"`` it is the weighted
    sum. A sub-grader that abstains is skipped, and counted both in its own logs and in
    this grader's ``skipped`` statistic; if every sub-grader abstains, the combination
    abstains (Adaptive Harmony raises ``RuntimeError`` there).

    A sub-grader that fails (raises anything but `IgnoreGradeException`) is handled by
    ``on_error``. ``"raise"`` (the default, as in Adaptive Harmony) raises its own exception
    unchanged, so `grade_many`, the trainer adapters and the reward server count the whole
    sample as an error: scoring it on the remaining graders would let a policy learn to
    break the grader it does badly on. ``"zero"`` counts it as a 0.0 with its weight;
    ``"skip"`` treats it like an abstention; ``"fail"`` raises a `GradingError` naming it.
    Unlike Adaptive Harmony, a judge whose output cannot be parsed (`OutputParserException`)
    is a failure like any other, not skipped: malformed judge output is something a policy
    can learn to provoke too.

    The returned Grade keeps the sub-grades, with their weights, as children; its reasoning
    has one line per sub-grader, ``key: value - reasoning`` (``- None`` when a sub-grade
    has no reasoning, as in Adaptive Harmony; a skipped one reads ``key: abstained -
    reason``).

    `get_logs()` reports this grader's own statistics plus each sub-grader's logs under
    ``<sub_key>/...``; clearing clears the sub-graders too.
    """

    def __init__(
        self,
        grader_key: str,
        graders: Sequence[BaseGrader[Any]],
        weights: Sequence[float] | None = None,
        aggregation: Aggregation | None = None,
        failure_rate_warning_threshold: float = 0.2,
        *,
        aggregation_method: Aggregation | None = None,
        sample_tables: bool = False,
        max_log_records: int | None = None,
        on_error: OnError = "raise",
    ) -> None:
        """Combine graders.

        Args:
            grader_key: The combination's logical name.
            graders: The sub-graders, each with a distinct grader_key.
            weights: One non-negative weight per grader (default: all 1.0).
            aggregation: ``"mean"`` (weighted, renormalised; the default) or ``"sum"``
                (weighted).
            failure_rate_warning_threshold: With ``on_error="skip"``, log a warning when more
                than this fraction of the sub-graders failed on a sample and was skipped
                (once, until the logs are cleared). Abstentions are counted, not warned of.
            aggregation_method: Adaptive Harmony's name for ``aggregation``.
            sample_tables: Add the scored/unscored sample tables to `get_logs()`.
            max_log_records: Bound on the records kept by this grader and by each
                sub-grader that has none of its own (see `BaseGrader.max_log_records`).
            on_error: What a failing sub-grader means: ``"raise"`` its exception,
                count it as ``"zero"``, ``"skip"`` it, or ``"fail"`` with a `GradingError`
                (see the class docstring).
        """
        super().__init__(grader_key, sample_tables=sample_tables)
        self.graders: tuple[BaseGrader[Any], ...] = tuple(graders)
        if not self.graders:
            raise InvalidInputError("CombinedGrader needs at least one grader")
        keys: set[str] = set()
        for grader in self.graders:
            if not isinstance(grader, BaseGrader):
                raise InvalidTypeError(
                    f"graders must be BaseGrader instances, not {type(grader).__name__}; "
                    "wrap plain functions with BaseGrader.from_function(key, fn)"
                )
            if grader.grader_key in keys:
                raise InvalidInputError(
                    f"two graders share the key {grader.grader_key!r}; give each a distinct "
                    "grader_key so their logs do not mix"
                )
            keys.add(grader.grader_key)
        self.weights = self._check_weights(weights)
        self.aggregation: Aggregation = _aggregation(aggregation, aggregation_method)
        if on_error not in _ON_ERROR:
            raise InvalidInputError(
                f"on_error must be 'raise', 'skip', 'zero' or 'fail', not {on_error!r}"
            )
        self.on_error: OnError = on_error
        threshold = as_finite_float(failure_rate_warning_threshold, "the failure rate threshold")
        if not 0.0 <= threshold <= 1.0:
            raise InvalidInputError(
                f"failure_rate_warning_threshold must be between 0 and 1, not {threshold!r}"
            )
        self.failure_rate_warning_threshold = threshold
        self._warned_failure_rate = False
        self.max_log_records = max_log_records

    @property
    def score_range(self) -> tuple[float, float] | None:
        """The range every combined score lies in: set, or found from the sub-graders'.

        Found when every sub-grader with a weight declares its range: a weighted mean lies
        between the lowest low and the highest high, a weighted sum (over whichever
        sub-graders graded) between the sums of the negative lows and of the positive highs.
        With ``on_error="zero"`` a failed part counts 0, so 0 is inside. None when any weighted
        sub-grader's range is unknown.
        """
        declared: tuple[float, float] | None = getattr(self, "_declared_range", None)
        if declared is not None:
            return declared
        # Not strict: read before __init__ has set the weights, there are none yet.
        weighted = zip(self._sub_graders(), getattr(self, "weights", ()), strict=False)
        parts = [(weight, grader.score_range) for grader, weight in weighted if weight > 0]
        if not parts or any(part is None for _, part in parts):
            return None
        ranges = [(w, r) for w, r in parts if r is not None]
        if self.aggregation == "sum":
            low = math.fsum(w * min(r[0], 0.0) for w, r in ranges)
            high = math.fsum(w * max(r[1], 0.0) for w, r in ranges)
        else:
            low = min(r[0] for _, r in ranges)
            high = max(r[1] for _, r in ranges)
        if self.on_error == "zero":
            low, high = min(low, 0.0), max(high, 0.0)
        return (low, high) if math.isfinite(low) and math.isfinite(high) and low < high else None

    @score_range.setter
    def score_range(self, value: tuple[float, float] | None) -> None:
        self._declared_range = value

    @property
    def agg_method(self) -> Aggregation:
        """Adaptive Harmony's name for `aggregation` (reading and setting it)."""
        return self.aggregation

    @agg_method.setter
    def agg_method(self, value: Aggregation) -> None:
        self.aggregation = _aggregation(value, None)

    def _sub_graders(self) -> tuple[BaseGrader[Any], ...]:
        return getattr(self, "graders", ())

    def _check_weights(self, weights: Sequence[float] | None) -> tuple[float, ...]:
        if weights is None:
            return (1.0,) * len(self.graders)
        checked = tuple(as_finite_float(w, "a CombinedGrader weight") for w in weights)
        if len(checked) != len(self.graders):
            raise InvalidInputError(
                f"{len(checked)} weights for {len(self.graders)} graders; pass one weight "
                "per grader (or weights=None for equal weights)"
            )
        if any(w < 0 for w in checked):
            raise InvalidInputError(
                f"weights must be >= 0, got {list(checked)}; for penalties use HUD's "
                "gradewire.hud.combine(), where a negative weight means an error to avoid"
            )
        if not any(checked):
            raise InvalidInputError("at least one weight must be positive")
        return checked

    async def grade(self, sample: StringThread) -> Grade:
        """Grade with every sub-grader concurrently and combine the results."""
        outcomes = await asyncio.gather(*(g._attempt(sample) for g in self.graders))
        used: list[Grade] = []
        skipped: list[tuple[str, str]] = []
        failed = 0
        for grader, weight, outcome in zip(self.graders, self.weights, outcomes, strict=True):
            key = grader.grader_key
            if isinstance(outcome, Grade):
                used.append(outcome.replace(weight=weight))
            elif isinstance(outcome, IgnoreGradeException):
                skipped.append((key, f"abstained - {outcome.reason}"))
            elif self.on_error == "raise":
                raise outcome
            else:
                failure = f"{type(outcome).__name__}: {outcome}"
                if self.on_error == "fail":
                    raise GradingError(
                        f"a sub-grader failed and on_error='fail': {key} failed ({failure})"
                    )
                if self.on_error == "zero":
                    info = {"error": f"{key} failed ({failure})"}
                    used.append(Grade(0.0, key, f"failed - {failure}", weight=weight, info=info))
                else:
                    skipped.append((key, f"failed - {failure}"))
                    failed += 1
        if not used:
            reason = "; ".join(f"{key}: {why}" for key, why in skipped)
            if all(isinstance(o, IgnoreGradeException) for o in outcomes):
                raise IgnoreGradeException(f"every sub-grader abstained: {reason}")
            raise GradingError(f"no sub-grader produced a grade: {reason}")
        if failed:
            self._warn_failure_rate(failed)
        values = [g.value for g in used]
        weights = [g.weight for g in used]
        if self.aggregation == "sum":
            value = weighted_sum(values, weights)
        elif any(weights):
            value = weighted_mean(values, weights)
        else:
            raise GradingError(
                "only zero-weight sub-graders produced a grade, so the weighted mean is "
                f"undefined: {'; '.join(f'{key}: {why}' for key, why in skipped)}"
            )
        if not math.isfinite(value):
            raise GradingError(
                f"the weighted {self.aggregation} of {values} with weights {weights} is "
                "beyond the float range; use smaller weights (only their ratios matter for "
                "aggregation='mean')"
            )
        reasoning = _explain(used, skipped)
        log: dict[str, Any] = {"score": value, "skipped": len(skipped)}
        if self.sample_tables:
            log["prompt"] = sample.last_user_content() or ""
            log["completion"] = sample.completion() or ""
            log["reasoning"] = reasoning
        self.add_log(log)
        return Grade(value, self.grader_key, reasoning, children=used)

    def _warn_failure_rate(self, failed: int) -> None:
        rate = failed / len(self.graders)
        if rate > self.failure_rate_warning_threshold and not self._warned_failure_rate:
            self._warned_failure_rate = True
            logger.warning(
                "combined grader %r: %d of %d sub-graders failed on a sample and were skipped "
                "(more than failure_rate_warning_threshold=%g); counted in %s/skipped",
                self.grader_key,
                failed,
                len(self.graders),
                self.failure_rate_warning_threshold,
                self.grader_key,
            )

    def log_state(self, *, clear: bool = False) -> LogState:
        """This grader's state merged with every sub-grader's, under ``<sub_key>/``."""
        state = self._own_log_state()
        for grader in self.graders:
            state = state.merge(grader.log_state().prefixed(grader.grader_key))
        if clear:
            self.clear_logs()
        return state

    def get_logs(self, clear: bool = False, log_all_samples: bool = False) -> dict[str, LogValue]:
        """This grader's logs, then each sub-grader's under ``<sub_key>/``."""
        logs = super().get_logs(clear=False, log_all_samples=log_all_samples)
        for grader in self.graders:
            sub_logs = grader.get_logs(clear=False, log_all_samples=log_all_samples)
            for key, value in sub_logs.items():
                logs[f"{grader.grader_key}/{key}"] = value
        if clear:
            self.clear_logs()
        return logs

    def clear_logs(self) -> None:
        """Forget this grader's records and every sub-grader's."""
        super().clear_logs()
        self._warned_failure_rate = False
        for grader in getattr(self, "graders", ()):
            grader.clear_logs()

    def __repr__(self) -> str:
        return (
            f"CombinedGrader(grader_key={self.grader_key!r}, "
            f"graders={[g.grader_key for g in self.graders]!r}, weights={list(self.weights)!r}, "
            f"aggregation={self.aggregation!r}, on_error={self.on_error!r})"
        )


def _aggregation(aggregation: Aggregation | None, method: Aggregation | None) -> Aggregation:
    if aggregation is not None and method is not None and aggregation != method:
        raise InvalidInputError(
            f"aggregation={aggregation!r} and aggregation_method={method!r} disagree; they "
            "are the same setting (aggregation_method is Adaptive Harmony's name): pass one"
        )
    chosen = aggregation if aggregation is not None else method
    if chosen is None:
        return "mean"
    if chosen not in ("mean", "sum"):
        raise InvalidInputError(f"aggregation must be 'mean' or 'sum', not {chosen!r}")
    return chosen


def _explain(used: Sequence[Grade], skipped: Sequence[tuple[str, str]]) -> str:
    """One line per sub-grader: ``key: value - reasoning``, then the skipped ones."""
    # Adaptive Harmony's format, ``- None`` included when a sub-grade gave no reasoning.
    lines = [f"{g.grader_key}: {g.value} - {g.reasoning}" for g in used]
    lines.extend(f"{key}: {why}" for key, why in skipped)
    return "\n".join(lines)
