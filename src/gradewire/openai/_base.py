"""What every OpenAI grader shares: its config, the pass flag, and error kinds in the logs."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, Literal

from gradewire.core._errors import IgnoreGradeException
from gradewire.core._failure_records import attach_log_fields
from gradewire.core._grade import Grade
from gradewire.core._grader import BaseGrader
from gradewire.core._log_state import LogState
from gradewire.core._thread import StringThread
from gradewire.openai._errors import DataVariableError, ErrorKind, error_kind

__all__ = ["ERROR_KIND_FIELD", "OpenAIGrader", "kind_count_key"]

ERROR_KIND_FIELD = "error_kind"
"""The field of an error record that holds its OpenAI error kind."""


def kind_count_key(kind: str) -> str:
    """The metric an error kind is counted under: ``score/<kind>_count``."""
    return f"score/{kind}_count"


def _score_range(config: Mapping[str, Any]) -> tuple[float, float] | None:
    """The range OpenAI's docs give the grader type's scores (None: not bounded by its type)."""
    kind = config.get("type")
    if kind in ("string_check", "label_model"):
        return (0.0, 1.0)
    if kind == "text_similarity":
        # Cosine similarity of embeddings is in [-1, 1]; the lexical metrics in [0, 1].
        return (-1.0, 1.0) if config.get("evaluation_metric") == "cosine" else (0.0, 1.0)
    if kind == "score_model":
        declared = config.get("range") or (0.0, 1.0)
        try:
            low, high = (float(v) for v in declared)
        except (TypeError, ValueError):
            return None
        return (low, high) if low < high else None
    return None  # python and multi graders compute any number


class OpenAIGrader(BaseGrader):
    """The base of the graders built from OpenAI grader configs (`openai_grader`).

    Besides gradewire's logs, each error is counted under its OpenAI kind as
    ``score/<kind>_count`` (e.g. ``score/invalid_variable_error_count``), every kind the
    grader type can raise shown, 0 included, once a sample was graded. A grader with a
    pass rule (``pass_threshold``, string_check's exact outcome, label_model's passing
    labels) logs ``passed`` (its mean is the pass rate) and puts it in ``grade.info``.

    Attributes:
        config: The OpenAI grader object, as given (JSON-ready); also ``spec``, so
            `gradewire.specs.grader_config` logs it and `load_graders` rebuilds it.
        pass_threshold: The score at or above which a sample passes, or None.
    """

    error_kinds: ClassVar[tuple[ErrorKind, ...]] = ("invalid_variable_error", "other_error")
    """The kinds this type of grader can raise, shown on dashboards even at 0."""

    missing_variables: Literal["error", "abstain"] = "error"
    """What a data-row variable that names nothing or a null makes of a sample (see
    `OpenAIGraderSettings`); the builder sets it from the settings."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("grade")
        if own is not None and not getattr(own, "_missing_variables_checked", False):
            # Every type's grade() renders templates its own way: the policy on missing
            # variables is applied once, here, around each of them.
            cls.grade = _with_missing_variables(own)  # type: ignore[method-assign,assignment]

    def __init__(
        self,
        grader_key: str,
        config: Mapping[str, Any],
        *,
        pass_threshold: float | None = None,
        **options: Any,
    ) -> None:
        super().__init__(grader_key, **options)
        self.config: dict[str, Any] = dict(config)
        self.spec: dict[str, Any] = self.config
        self.pass_threshold = pass_threshold
        self.score_range = _score_range(self.config)
        self._kind_counts: Counter[str] = Counter()
        self.shown_error_kinds: tuple[ErrorKind, ...] = self.error_kinds
        """The kinds counted on dashboards even at 0 (a multi grader's: its graders')."""

    def passed(self, value: float) -> bool | None:
        """Whether ``value`` passes; None when the grader has no pass rule."""
        if self.pass_threshold is None:
            return None
        return value >= self.pass_threshold

    def scored(
        self,
        value: float,
        sample: StringThread,
        *,
        reasoning: str | None = None,
        info: Mapping[str, Any] | None = None,
        children: tuple[Grade, ...] = (),
        log: Mapping[str, Any] | None = None,
        passed: bool | None = None,
    ) -> Grade:
        """Log one scored sample and return its grade (with ``passed`` in its info)."""
        verdict = self.passed(value) if passed is None else passed
        record: dict[str, Any] = {"score": value, **(log or {})}
        details: dict[str, Any] = {"type": self.config.get("type"), **(info or {})}
        if verdict is not None:
            record["passed"] = verdict
            details["passed"] = verdict
        if self.sample_tables:
            record["prompt"] = sample.last_user_content() or ""
            record["completion"] = sample.completion() or ""
            if reasoning is not None:
                record["reasoning"] = reasoning
        self.add_log(record)
        return Grade(value, self.grader_key, reasoning, children=children, info=details)

    def log_failure(self, exc: Exception, sample: object) -> None:
        """Log the failure with its OpenAI error kind, and count the kind."""
        if not isinstance(exc, IgnoreGradeException):
            kind = error_kind(exc)
            attach_log_fields(exc, {ERROR_KIND_FIELD: kind})
            self._kind_counts[kind] += 1
        super().log_failure(exc, sample)

    def _own_log_state(self) -> LogState:
        state = super()._own_log_state()
        if not state.counts:
            return state
        counts = dict(state.counts)
        for kind in (*self.shown_error_kinds, *self._kind_counts):
            counts[kind_count_key(kind)] = self._kind_counts.get(kind, 0)
        return LogState(state.stats, counts)

    def clear_logs(self) -> None:
        """Forget the logged records and the error-kind counts."""
        super().clear_logs()
        counts = getattr(self, "_kind_counts", None)
        if counts is not None:
            counts.clear()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(grader_key={self.grader_key!r})"


def _with_missing_variables(
    grade: Callable[[Any, StringThread], Awaitable[Grade]],
) -> Callable[[Any, StringThread], Awaitable[Grade]]:
    """``grade``, with a missing variable an abstention when the grader says so."""

    @functools.wraps(grade)
    async def checked(self: OpenAIGrader, sample: StringThread) -> Grade:
        try:
            return await grade(self, sample)
        except DataVariableError as exc:
            if self.missing_variables != "abstain":
                raise
            raise IgnoreGradeException(f"{exc} (missing_variables='abstain')") from exc

    checked._missing_variables_checked = True  # type: ignore[attr-defined]
    return checked
