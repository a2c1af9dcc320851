"""OpenAI's grader error taxonomy, as gradewire exceptions that carry their kind."""

from __future__ import annotations

from typing import Literal

from gradewire.core._errors import (
    GradeTimeoutError,
    GradingError,
    ModelCallError,
    OutputParserException,
)
from gradewire.models._truncated import TruncatedOutputError

__all__ = [
    "ERROR_KINDS",
    "DataVariableError",
    "ErrorKind",
    "FormulaError",
    "OpenAIGraderError",
    "PythonGraderRuntimeError",
    "SampleParseError",
    "TemplateVariableError",
    "UnresponsiveRewardError",
    "error_kind",
]

ErrorKind = Literal[
    "formula_parse_error",
    "invalid_variable_error",
    "model_grader_parse_error",
    "model_grader_refusal_error",
    "model_grader_server_error",
    "other_error",
    "python_grader_runtime_error",
    "python_grader_server_error",
    "sample_parse_error",
    "truncated_observation_error",
    "unresponsive_reward_error",
]
"""The error kinds of OpenAI's grader run metadata (``metadata.errors``)."""

ERROR_KINDS: tuple[ErrorKind, ...] = (
    "formula_parse_error",
    "invalid_variable_error",
    "model_grader_parse_error",
    "model_grader_refusal_error",
    "model_grader_server_error",
    "other_error",
    "python_grader_runtime_error",
    "python_grader_server_error",
    "sample_parse_error",
    "truncated_observation_error",
    "unresponsive_reward_error",
)


class OpenAIGraderError(GradingError):
    """A sample an OpenAI grader could not score, with the kind OpenAI reports it as.

    Counted in ``score/error_count`` and in ``score/<kind>_count``, never scored 0.

    Attributes:
        kind: One of OpenAI's error kinds (`ERROR_KINDS`).
    """

    kind: ErrorKind = "other_error"

    def __init__(self, message: str, *, kind: ErrorKind | None = None) -> None:
        super().__init__(message)
        if kind is not None:
            self.kind = kind

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), str(self), self.kind))


def _rebuild(cls: type[OpenAIGraderError], message: str, kind: ErrorKind) -> OpenAIGraderError:
    return cls(message, kind=kind)


class TemplateVariableError(OpenAIGraderError):
    """A ``{{namespace.path}}`` of a template names nothing in the sample or its item."""

    kind: ErrorKind = "invalid_variable_error"


class DataVariableError(TemplateVariableError):
    """A ``{{item.path}}`` names nothing in the data row, or a null or NaN there.

    The data row's value is missing (a reference not given): `OpenAIGraderSettings`'s
    ``missing_variables="abstain"`` makes such a sample an abstention. A variable of the
    model's output that names nothing stays a `TemplateVariableError`: the model's fault.
    """


class SampleParseError(OpenAIGraderError):
    """``{{sample.output_json}}`` was used but the completion is not JSON."""

    kind: ErrorKind = "sample_parse_error"


class FormulaError(OpenAIGraderError):
    """A multi grader's ``calculate_output`` could not be evaluated (division by zero, ...)."""

    kind: ErrorKind = "formula_parse_error"


class PythonGraderRuntimeError(OpenAIGraderError):
    """A python grader's ``grade`` raised, or returned something that is not a number."""

    kind: ErrorKind = "python_grader_runtime_error"


class UnresponsiveRewardError(OpenAIGraderError, GradeTimeoutError):
    """A python grader did not return within its timeout; its processes were ended.

    Also a `GradeTimeoutError`: a timeout outcome, counted in ``score/timeout_count`` as
    on every grader, besides OpenAI's ``score/unresponsive_reward_error_count``.
    """

    kind: ErrorKind = "unresponsive_reward_error"

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind | None = None,
        grader_key: str = "python",
        seconds: float = 0.0,
    ) -> None:
        GradingError.__init__(self, message)
        if kind is not None:
            self.kind = kind
        self.grader_key = grader_key
        self.seconds = seconds

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_unresponsive, (str(self), self.kind, self.grader_key, self.seconds))


def _rebuild_unresponsive(
    message: str, kind: ErrorKind, grader_key: str, seconds: float
) -> UnresponsiveRewardError:
    return UnresponsiveRewardError(message, kind=kind, grader_key=grader_key, seconds=seconds)


def error_kind(exc: BaseException) -> ErrorKind:
    """The OpenAI error kind an exception raised while grading stands for."""
    if isinstance(exc, OpenAIGraderError):
        return exc.kind
    if isinstance(exc, TruncatedOutputError):
        return "truncated_observation_error"
    if isinstance(exc, OutputParserException):
        return "model_grader_parse_error"
    if isinstance(exc, ModelCallError):
        # The chat client reports a model's refusal as an answer of status 200.
        if getattr(exc, "status", None) == 200:
            return "model_grader_refusal_error"
        return "model_grader_server_error"
    return "other_error"
