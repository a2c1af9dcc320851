"""BaseGrader, an async scoring function with a logging core, and the function grader."""

from __future__ import annotations

import asyncio
import inspect
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, ClassVar, cast

from gradewire.core._batch import thread_batch
from gradewire.core._errors import (
    GradewireError,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
)
from gradewire.core._failure_records import failure_context, log_fields
from gradewire.core._grade import Grade, leaf_grade
from gradewire.core._log_buffer import ABSTAINED, ERROR
from gradewire.core._logging_core import LoggingCore, LogT, LogValue
from gradewire.core._thread import StringThread

__all__ = ["BaseGrader", "FunctionGrader", "GradeFunction", "LogValue"]

logger = logging.getLogger("gradewire")

GradeFunction = Callable[[StringThread], float | Grade | Awaitable[float | Grade | None] | None]
"""What `BaseGrader.from_function` takes: sync or async, returning a float, a Grade or None."""


class BaseGrader(LoggingCore[LogT], ABC):
    """An async grader: implement `grade()`; logging, batching and tables come with it.

    Call `add_log()` in `grade()` with one dict per sample; `get_logs()` turns the
    records into ``<key>/mean``, ``/std``, ``/min``, ``/max`` and ``/count`` for every
    numeric key, plus the count of samples that abstained or failed. ``self._logs`` is
    the list of logged dicts, for `get_logs()` overrides that build their own tables.

    A grader's log buffer belongs to one thread at a time: grade and read its logs from
    the same event loop (or hand the grader over between threads), not from two threads at
    once. Logging stays lock-free because it runs once per sample.

    Example:
        >>> class Length(BaseGrader):
        ...     async def grade(self, sample: StringThread) -> Grade:
        ...         score = min(len(sample.last_content()) / 100, 1.0)
        ...         self.add_log({"score": score})
        ...         return Grade(value=score, grader_key=self.grader_key)
    """

    logs_own_failures: ClassVar[bool] = False
    """Whether `grade()` logs the abstentions and errors it raises itself (`log_failure`)."""

    def __init__(
        self,
        grader_key: str,
        *,
        sample_tables: bool = False,
        max_log_records: int | None = None,
    ) -> None:
        """Set up the grader.

        Args:
            grader_key: The grader's logical name: the metric prefix in dashboards.
            sample_tables: Add the scored/unscored sample tables (`get_sample_tables`)
                to the default `get_logs()` output.
            max_log_records: Bound on the records kept (see the `max_log_records`
                property); None keeps every record until the logs are cleared.
        """
        if not isinstance(grader_key, str) or not grader_key.strip():
            raise InvalidInputError(
                f"grader_key must be a non-empty str, not {grader_key!r}; "
                "it names the grader in logs and dashboards"
            )
        self.grader_key = grader_key
        super().__init__(sample_tables=sample_tables, max_log_records=max_log_records)
        self._warned: set[type[BaseException]] = set()

    @abstractmethod
    async def grade(self, sample: StringThread) -> Grade:
        """Score one sample.

        Raise `IgnoreGradeException` to abstain; any other exception is an error.
        Through `grade_many()` or a call of the grader itself both are counted in the
        logs (``score/abstained_count``, ``score/error_count``), never scored as 0. An
        exception may carry a ``log_fields`` dict (see `attach_log_fields`): its fields
        are added to the abstention or error record, e.g. what the failed sample cost.
        """

    async def score_float_value(self, sample: StringThread) -> float:
        """Grade one sample and return only its value (Adaptive Harmony's trainer call).

        An abstention or error is counted in the logs, as through `grade_many`, and then
        raised, so the caller never takes a failed sample for a score.
        """
        outcome = await self._attempt(sample)
        if isinstance(outcome, Grade):
            return outcome.value
        raise outcome

    @classmethod
    def from_function(
        cls,
        grader_key: str,
        fn: GradeFunction | None = None,
        *,
        async_fn: GradeFunction | None = None,
        sample_tables: bool = False,
        in_thread: bool = False,
    ) -> BaseGrader[dict[str, Any]]:
        """A grader from a plain function of a sample.

        The function may be sync or async and may return a float, a `Grade`, or None to
        abstain. Each score is logged as ``{"score": value}`` (with ``reasoning`` when the
        function returned a Grade that has one).

        Args:
            grader_key: The grader's logical name.
            fn: The scoring function.
            async_fn: Adaptive Harmony's name for ``fn``; pass one of the two.
            sample_tables: Also log each sample's prompt and add the sample tables to
                `get_logs()`.
            in_thread: Run a sync function in a worker thread (`asyncio.to_thread`), so a
                slow one (a parser, a regex over long text) does not stall the event loop
                and the other samples; by default it runs inline, which is fastest for
                functions that take microseconds.
        """
        if (fn is None) == (async_fn is None):
            raise InvalidTypeError(
                "from_function takes the scoring function once: as fn (or async_fn, "
                "Adaptive Harmony's name), e.g. BaseGrader.from_function('key', score)"
            )
        function = cast("GradeFunction", fn if fn is not None else async_fn)
        return FunctionGrader(
            grader_key, function, sample_tables=sample_tables, in_thread=in_thread
        )

    async def __call__(self, sample: StringThread) -> Grade | None:
        """Grade one sample without raising: None when it abstained or failed (and logged)."""
        outcome = await self._attempt(sample)
        return outcome if isinstance(outcome, Grade) else None

    async def grade_many(
        self, samples: Iterable[StringThread], *, max_concurrency: int = 64
    ) -> list[Grade | None]:
        """Grade a batch concurrently, in order; one bad sample never fails the batch.

        A sample that abstains or fails gets None in its slot and is counted in the logs.

        Args:
            samples: The samples to grade.
            max_concurrency: How many `grade()` calls may be in flight at once.

        Raises:
            InvalidTypeError: A sample is not a `StringThread` (checked before any is graded).
        """
        outcomes = await self._attempt_many(thread_batch(samples), max_concurrency)
        return [o if isinstance(o, Grade) else None for o in outcomes]

    async def _attempt_many(
        self, samples: Iterable[StringThread], max_concurrency: int
    ) -> list[Grade | Exception]:
        """`_attempt` over a batch, in order, at most ``max_concurrency`` at a time."""
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise InvalidInputError(
                f"max_concurrency must be a positive int, not {max_concurrency!r}"
            )
        batch = list(samples)
        outcomes: list[Grade | Exception] = [IgnoreGradeException("not graded")] * len(batch)
        pending = iter(enumerate(batch))

        async def work() -> None:
            # Workers share one iterator, so at most max_concurrency grades run at once
            # and memory stays flat however long the batch is.
            for index, sample in pending:
                outcomes[index] = await self._attempt(sample)

        workers = min(max_concurrency, len(batch))
        if workers == 1:
            await work()
        elif workers > 1:
            await asyncio.gather(*(work() for _ in range(workers)))
        return outcomes

    async def _attempt(self, sample: StringThread) -> Grade | GradewireError | Exception:
        """Grade, logging an abstention or error instead of raising it."""
        try:
            grade = await self.grade(sample)
        except Exception as exc:
            if not self.logs_own_failures:
                self.log_failure(exc, sample)
            return exc
        if not isinstance(grade, Grade):
            error = InvalidTypeError(
                f"{type(self).__name__}.grade() returned {type(grade).__name__}; "
                "return Grade(value=..., grader_key=self.grader_key)"
            )
            self._record_error(error, sample)
            return error
        return grade

    def log_failure(self, exc: Exception, sample: object) -> None:
        """Log the abstention (`IgnoreGradeException`) or error ``exc`` of ``sample``.

        `grade_many`, a call of the grader and `CombinedGrader` log what `grade()` raises,
        unless the class sets `logs_own_failures`: its `grade()` calls this itself before
        raising (the judges do, as Adaptive Harmony's), so a direct `grade()` call is
        counted too.
        """
        if isinstance(exc, IgnoreGradeException):
            abstained = {ABSTAINED: exc.reason, **failure_context(sample), **log_fields(exc)}
            self.add_log(cast("LogT", abstained))  # failure records are dicts, whatever LogT
        else:
            self._record_error(exc, sample)

    def _record_error(self, exc: Exception, sample: object) -> None:
        message = f"{type(exc).__name__}: {exc}"
        failed = {ERROR: message, **failure_context(sample), **log_fields(exc)}
        self.add_log(cast("LogT", failed))
        if type(exc) not in self._warned:
            # Once per exception type: a bug in a grader shows up at once, not as a
            # silent error count after a long run.
            self._warned.add(type(exc))
            logger.warning(
                "grader %r failed on a sample (counted in score/error_count): %s",
                self.grader_key,
                message,
                exc_info=exc,
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(grader_key={self.grader_key!r})"


class FunctionGrader(BaseGrader):
    """A grader around a sync or async function returning a float, a Grade, or None."""

    def __init__(
        self,
        grader_key: str,
        fn: GradeFunction,
        *,
        sample_tables: bool = False,
        in_thread: bool = False,
    ) -> None:
        super().__init__(grader_key, sample_tables=sample_tables)
        if not callable(fn):
            raise InvalidTypeError(
                f"from_function needs a function of a sample, not {type(fn).__name__}"
            )
        self.fn = fn
        self._awaits = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
        )
        self.in_thread = in_thread and not self._awaits

    async def grade(self, sample: StringThread) -> Grade:
        """Call the function and turn its result into a logged Grade."""
        result: Any = (
            await asyncio.to_thread(self.fn, sample) if self.in_thread else self.fn(sample)
        )
        if self._awaits or inspect.isawaitable(result):
            result = await result
        key = self.grader_key
        push = self._score_push
        if (
            push is not None
            and type(result) is float
            and result - result == 0.0  # finite: inf - inf and nan - nan are nan
            and type(key) is str
            and key
            and not self.sample_tables
        ):
            # The per-sample path of RL rewards: the score is packed, no dict is built.
            push(result)
            return leaf_grade(result, key)
        return self._logged(self._as_grade(result), sample)

    def _as_grade(self, result: Any) -> Grade:
        kind = type(result)
        if kind is float or kind is int:
            return Grade(result, self.grader_key)
        if isinstance(result, Grade):
            return (
                result
                if result.grader_key == self.grader_key
                else result.replace(grader_key=self.grader_key)
            )
        if result is None:
            raise IgnoreGradeException(f"{_name(self.fn)} returned None")
        if isinstance(result, (str, bytes)) or not hasattr(result, "__float__"):
            raise InvalidTypeError(
                f"{_name(self.fn)} returned {type(result).__name__}; return a float, "
                "a Grade, or None to abstain"
            )
        return Grade(result, self.grader_key)  # bools and numpy numbers

    def _logged(self, grade: Grade, sample: StringThread) -> Grade:
        log: dict[str, Any] = {"score": grade.value}
        if grade.reasoning is not None:
            log["reasoning"] = grade.reasoning
        if self.sample_tables:
            log["prompt"] = sample.last_user_content() or ""
            log["completion"] = sample.completion() or ""
        self.add_log(log)
        return grade


def _name(fn: object) -> str:
    return f"grading function {getattr(fn, '__qualname__', type(fn).__name__)}()"
