"""The exception hierarchy: everything gradewire raises derives from GradewireError."""

from __future__ import annotations

TYPE_CHECKING = False  # `import gradewire` does not import typing
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "GradeTimeoutError",
    "GraderFailingError",
    "GradewireError",
    "GradingError",
    "IgnoreGradeException",
    "InvalidInputError",
    "InvalidTypeError",
    "MissingDependencyError",
    "ModelCallError",
    "OutputParserException",
    "SinkError",
]


class GradewireError(Exception):
    """Base class of every error gradewire raises."""


class InvalidInputError(GradewireError, ValueError):
    """An argument has a value gradewire cannot use; the message says what to pass instead."""


class InvalidTypeError(InvalidInputError, TypeError):
    """An argument has a type gradewire cannot use; the message says what to pass instead."""


class GradingError(GradewireError):
    """A grade could not be produced (for example every sub-grader of a combination failed)."""


class GradeTimeoutError(GradingError):
    """A grade took longer than its timeout; the sample is an error of its own kind.

    Counted in ``score/error_count`` and, apart, in ``score/timeout_count``; the run goes
    on with the next sample.

    Attributes:
        grader_key: The grader that timed out.
        seconds: The timeout that was exceeded.
    """

    def __init__(self, grader_key: str, seconds: float) -> None:
        super().__init__(
            f"grader {grader_key!r} did not finish within its timeout of {seconds:g} s; "
            "the sample counts as timed out (score/timeout_count). Raise the timeout if the "
            "grader needs longer"
        )
        self.grader_key = grader_key
        self.seconds = seconds

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.grader_key, self.seconds))


class GraderFailingError(GradingError):
    """A grader failed on too many samples of a window, so training stops (fail fast).

    Raised by the training adapters (``trl_reward``, ``RewardLogger``, ...) when the share
    of failed samples reaches their ``max_error_rate``: a reward that is mostly missing
    trains on nothing. Abstentions are not failures. The first error of the window is
    chained as ``__cause__``, so its traceback is printed with this one.

    Attributes:
        grader_key: The failing grader.
        failed: Samples of the window that failed.
        samples: Samples in the window.
        first_error: The first failure of the window.
        first_traceback: That failure's formatted traceback.
    """

    def __init__(
        self,
        message: str,
        *,
        grader_key: str,
        failed: int,
        samples: int,
        first_error: BaseException,
        first_traceback: str,
    ) -> None:
        super().__init__(message)
        self.grader_key = grader_key
        self.failed = failed
        self.samples = samples
        self.first_error = first_error
        self.first_traceback = first_traceback

    def __reduce__(self) -> tuple[Any, ...]:
        fields = (self.grader_key, self.failed, self.samples, self.first_error)
        return (_rebuild_failing, (str(self), *fields, self.first_traceback))


def _rebuild_failing(
    message: str,
    grader_key: str,
    failed: int,
    samples: int,
    first_error: BaseException,
    first_traceback: str,
) -> GraderFailingError:
    return GraderFailingError(
        message,
        grader_key=grader_key,
        failed=failed,
        samples=samples,
        first_error=first_error,
        first_traceback=first_traceback,
    )


class ModelCallError(GradingError):
    """A call to a judge model or reward endpoint failed for good (after its retries)."""


class SinkError(GradewireError):
    """A sink could not deliver logs; the message says what is kept where."""


class IgnoreGradeException(GradewireError):
    """Raised from `grade()` to abstain: the sample is counted as abstained, never scored 0.

    The message is Adaptive Harmony's: a sentence saying the grade should be ignored, then
    `` Error details: <reason>`` when a reason is given.

    Attributes:
        message: The whole message, equal to ``str(exc)``.
        reason: The reason as given (the stock sentence when none was): what gradewire's
            records, tables and reward server answers show.
    """

    default_ignore_score_message = (
        "Grade should be ignored. The grader could not judge this sample, or its criteria "
        "do not apply to it, so a score would wrongly reward or penalise it."
    )

    def __init__(self, message: str | None = None, *args: object) -> None:
        text = self.default_ignore_score_message
        if message:
            text += f" Error details: {message}"
        super().__init__(text, *args)
        self.message = text
        self.reason = message or self.default_ignore_score_message

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from the reason as given: its args hold the message, details included.
        reason = None if self.reason == self.default_ignore_score_message else self.reason
        return (type(self), (reason,), self.__dict__)


class OutputParserException(GradewireError, ValueError):
    """Structured output could not be parsed or validated.

    Attributes:
        llm_output: The raw text that was being parsed, kept so nothing is lost.
    """

    def __init__(self, message: str, llm_output: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.llm_output = llm_output

    def __reduce__(self) -> tuple[type[OutputParserException], tuple[str, str]]:
        return (type(self), (self.message, self.llm_output))


class MissingDependencyError(GradewireError, ImportError):
    """An optional dependency is not installed; the message holds the exact pip command."""

    def __init__(self, package: str, *, extra: str | None = None, purpose: str = "") -> None:
        target = f"gradewire[{extra}]" if extra else package
        why = f" to {purpose}" if purpose else ""
        super().__init__(f"{package} is needed{why}; install it with: pip install '{target}'")
        self.package = package
        self.extra = extra
        self.purpose = purpose

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_missing, (self.package, self.extra, self.purpose))


def _rebuild_missing(package: str, extra: str | None, purpose: str) -> MissingDependencyError:
    return MissingDependencyError(package, extra=extra, purpose=purpose)
