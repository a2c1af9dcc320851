"""CombinedGrader: several graders folded into one scalar reward."""

from __future__ import annotations

import asyncio
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
from gradewire.core._stats import LogState
from gradewire.core._thread import StringThread

__all__ = ["CombinedGrader"]

Aggregation = Literal["mean", "sum"]
OnError = Literal["skip", "zero", "fail"]


class CombinedGrader(BaseGrader):
    """Run sub-graders concurrently and combine their values by weight.

    With ``aggregation="mean"`` the value is the weighted mean over the sub-graders that
    produced a grade (weights renormalised over them); with ``"sum"`` it is the weighted
    sum. A sub-grader that abstains is skipped, and counted both in its own logs and in
    this grader's ``skipped`` statistic. A sub-grader that fails is handled by ``on_error``:
    ``"skip"`` (the default) treats it like an abstention; ``"zero"`` counts it as a 0.0
    with its weight; ``"fail"`` fails the whole combination. If no sub-grader produces a
    grade the combination abstains (all abstained) or fails. The returned Grade keeps the
    sub-grades, with their weights, as children.

    For RL rewards prefer ``on_error="zero"`` or ``"fail"``: with ``"skip"``, a completion
    that makes one sub-grader fail (too long for the judge's context, say) is scored by the
    others alone, and a policy can learn to break the grader it does badly on.

    `get_logs()` reports this grader's own statistics plus each sub-grader's logs under
    ``<sub_key>/...``; clearing clears the sub-graders too.
    """

    def __init__(
        self,
        grader_key: str,
        graders: Sequence[BaseGrader],
        weights: Sequence[float] | None = None,
        aggregation: Aggregation = "mean",
        *,
        sample_tables: bool = False,
        max_log_records: int | None = None,
        on_error: OnError = "skip",
    ) -> None:
        """Combine graders.

        Args:
            grader_key: The combination's logical name.
            graders: The sub-graders, each with a distinct grader_key.
            weights: One non-negative weight per grader (default: all 1.0).
            aggregation: ``"mean"`` (weighted, renormalised) or ``"sum"`` (weighted).
            sample_tables: Add the scored/unscored sample tables to `get_logs()`.
            max_log_records: Bound on the records kept by this grader and by each
                sub-grader that has none of its own (see `BaseGrader.max_log_records`).
            on_error: What a failing sub-grader means: ``"skip"`` it, count it as
                ``"zero"``, or ``"fail"`` the combination (see the class docstring).
        """
        super().__init__(grader_key, sample_tables=sample_tables)
        self.graders: tuple[BaseGrader, ...] = tuple(graders)
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
        if aggregation not in ("mean", "sum"):
            raise InvalidInputError(f"aggregation must be 'mean' or 'sum', not {aggregation!r}")
        self.aggregation: Aggregation = aggregation
        if on_error not in ("skip", "zero", "fail"):
            raise InvalidInputError(f"on_error must be 'skip', 'zero' or 'fail', not {on_error!r}")
        self.on_error: OnError = on_error
        self.max_log_records = max_log_records

    def _sub_graders(self) -> tuple[BaseGrader, ...]:
        return getattr(self, "graders", ())

    def _check_weights(self, weights: Sequence[float] | None) -> tuple[float, ...]:
        if weights is None:
            return (1.0,) * len(self.graders)
        checked = tuple(as_finite_float(w, "a CombinedGrader weight") for w in weights)
        if len(checked) != len(self.graders):
            raise InvalidInputError(
                f"{len(checked)} weights for {len(self.graders)} graders; pass one weight "
                "per grader"
            )
        if any(w < 0 for w in checked):
            raise InvalidInputError(
                f"weights must be >= 0, got {list(checked)}; for penalties use "
                "gradewire.combine(), where a negative weight means an error to avoid"
            )
        if not any(checked):
            raise InvalidInputError("at least one weight must be positive")
        return checked

    async def grade(self, sample: StringThread) -> Grade:
        """Grade with every sub-grader concurrently and combine the results."""
        outcomes = await asyncio.gather(*(g._attempt(sample) for g in self.graders))
        used: list[Grade] = []
        skipped: list[str] = []
        for grader, weight, outcome in zip(self.graders, self.weights, outcomes, strict=True):
            key = grader.grader_key
            if isinstance(outcome, Grade):
                used.append(outcome.replace(weight=weight))
            elif isinstance(outcome, IgnoreGradeException):
                skipped.append(f"{key} abstained ({outcome})")
            else:
                failure = f"{key} failed ({type(outcome).__name__}: {outcome})"
                if self.on_error == "fail":
                    raise GradingError(f"a sub-grader failed and on_error='fail': {failure}")
                if self.on_error == "zero":
                    used.append(Grade(0.0, key, failure, weight=weight, info={"error": failure}))
                else:
                    skipped.append(failure)
        if not used:
            reason = "; ".join(skipped)
            if all(isinstance(o, IgnoreGradeException) for o in outcomes):
                raise IgnoreGradeException(f"every sub-grader abstained: {reason}")
            raise GradingError(f"no sub-grader produced a grade: {reason}")
        total = sum(g.weight for g in used)
        weighted = sum(g.value * g.weight for g in used)
        if self.aggregation == "sum":
            value = weighted
        elif total > 0:
            value = weighted / total
        else:
            raise GradingError(
                "only zero-weight sub-graders produced a grade, so the weighted mean is "
                f"undefined: {'; '.join(skipped)}"
            )
        reasoning = self._explain(used, skipped)
        log: dict[str, Any] = {"score": value, "skipped": len(skipped)}
        if self.sample_tables:
            log["prompt"] = sample.last_user_content() or ""
            log["completion"] = sample.completion() or ""
            log["reasoning"] = reasoning
        self.add_log(log)
        return Grade(value, self.grader_key, reasoning, children=used)

    def _explain(self, used: list[Grade], skipped: list[str]) -> str:
        parts = ", ".join(f"{g.grader_key}={g.value:.4g} (w={g.weight:g})" for g in used)
        text = f"weighted {self.aggregation} of {len(used)}/{len(self.graders)} graders: {parts}"
        return f"{text}; skipped: {'; '.join(skipped)}" if skipped else text

    def log_state(self, *, clear: bool = False) -> LogState:
        """This grader's state merged with every sub-grader's, under ``<sub_key>/``."""
        state = self._own_log_state()
        for grader in self.graders:
            state = state.merge(grader.log_state().prefixed(grader.grader_key))
        if clear:
            self.clear_logs()
        return state

    def get_logs(self, clear: bool = False) -> dict[str, LogValue]:
        """This grader's logs, then each sub-grader's under ``<sub_key>/``."""
        logs = super().get_logs(clear=False)
        for grader in self.graders:
            for key, value in grader.get_logs(clear=False).items():
                logs[f"{grader.grader_key}/{key}"] = value
        if clear:
            self.clear_logs()
        return logs

    def clear_logs(self) -> None:
        """Forget this grader's records and every sub-grader's."""
        super().clear_logs()
        for grader in self.graders:
            grader.clear_logs()

    def __repr__(self) -> str:
        return (
            f"CombinedGrader(grader_key={self.grader_key!r}, "
            f"graders={[g.grader_key for g in self.graders]!r}, weights={list(self.weights)!r}, "
            f"aggregation={self.aggregation!r}, on_error={self.on_error!r})"
        )
