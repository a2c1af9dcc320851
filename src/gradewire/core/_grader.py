"""BaseGrader: an async scoring function with a logging core."""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from gradewire.core._errors import (
    GradewireError,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
)
from gradewire.core._failure_records import failure_context, log_fields
from gradewire.core._grade import Grade
from gradewire.core._log_buffer import ABSTAINED, ERROR, LogBuffer
from gradewire.core._sample_tables import sample_tables, split_records
from gradewire.core._stats import LogState
from gradewire.core._table import Table
from gradewire.core._thread import StringThread

__all__ = ["BaseGrader", "GradeFunction", "LogValue"]

logger = logging.getLogger("gradewire")

LogValue = float | Table
"""A value of `BaseGrader.get_logs()`: a number (counts are ints) or a `Table`."""

GradeFunction = Callable[[StringThread], float | Grade | Awaitable[float | Grade | None] | None]
"""What `BaseGrader.from_function` takes: sync or async, returning a float, a Grade or None."""


class BaseGrader(ABC):
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
        self.sample_tables = sample_tables
        self._logs: list[dict[str, Any]] = []
        self._log_buffer = LogBuffer(self._logs)
        self._folded: LogState | None = None
        self._max_log_records: int | None = None
        self.max_log_records = max_log_records
        self._warned: set[type[BaseException]] = set()

    @property
    def max_log_records(self) -> int | None:
        """How many log records the grader keeps; None (the default) keeps them all.

        Past this many, the older half is folded into exact running statistics and
        dropped from ``self._logs``: `get_logs()` numbers still cover every sample since
        the last clear, while tables (and code reading ``self._logs``) see recent records
        only. Set it for long runs that never call ``get_logs(clear=True)``, such as a
        reward server, so memory stays bounded.
        """
        return getattr(self, "_max_log_records", None)

    @max_log_records.setter
    def max_log_records(self, value: int | None) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidTypeError(f"max_log_records must be an int or None, not {value!r}")
        if value is not None and value < 2:
            raise InvalidInputError(
                f"max_log_records must be at least 2, not {value}; None keeps every record"
            )
        self._max_log_records = value
        for grader in self._sub_graders():
            if grader.max_log_records is None:
                grader.max_log_records = value

    def _sub_graders(self) -> Sequence[BaseGrader]:
        """The graders this one runs, which share its bounds (none for a leaf grader)."""
        return ()

    @abstractmethod
    async def grade(self, sample: StringThread) -> Grade:
        """Score one sample.

        Raise `IgnoreGradeException` to abstain; any other exception is an error.
        Through `grade_many()` or a call of the grader itself both are counted in the
        logs (``score/abstained_count``, ``score/error_count``), never scored as 0. An
        exception may carry a ``log_fields`` dict (see `attach_log_fields`): its fields
        are added to the abstention or error record, e.g. what the failed sample cost.
        """

    @classmethod
    def from_function(
        cls,
        grader_key: str,
        fn: GradeFunction,
        *,
        sample_tables: bool = False,
        in_thread: bool = False,
    ) -> BaseGrader:
        """A grader from a plain function of a sample.

        The function may be sync or async and may return a float, a `Grade`, or None to
        abstain. Each score is logged as ``{"score": value}`` (with ``reasoning`` when the
        function returned a Grade that has one).

        Args:
            grader_key: The grader's logical name.
            fn: The scoring function.
            sample_tables: Also log each sample's prompt and add the sample tables to
                `get_logs()`.
            in_thread: Run a sync function in a worker thread (`asyncio.to_thread`), so a
                slow one (a parser, a regex over long text) does not stall the event loop
                and the other samples; by default it runs inline, which is fastest for
                functions that take microseconds.
        """
        from gradewire.core._function_grader import FunctionGrader  # an import cycle otherwise

        return FunctionGrader(grader_key, fn, sample_tables=sample_tables, in_thread=in_thread)

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
        """
        outcomes = await self._attempt_many(samples, max_concurrency)
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
        except IgnoreGradeException as exc:
            self.add_log({ABSTAINED: str(exc), **failure_context(sample), **log_fields(exc)})
            return exc
        except Exception as exc:
            self._record_error(exc, sample)
            return exc
        if not isinstance(grade, Grade):
            error = InvalidTypeError(
                f"{type(self).__name__}.grade() returned {type(grade).__name__}; "
                "return Grade(value=..., grader_key=self.grader_key)"
            )
            self._record_error(error, sample)
            return error
        return grade

    def _record_error(self, exc: Exception, sample: StringThread) -> None:
        message = f"{type(exc).__name__}: {exc}"
        self.add_log({ERROR: message, **failure_context(sample), **log_fields(exc)})
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

    def add_log(self, log: Mapping[str, Any]) -> None:
        """Record one sample's data; numbers are aggregated, the rest kept for tables."""
        try:
            logs, buffer = self._logs, self._log_buffer
        except AttributeError:
            raise GradewireError(
                f"{type(self).__name__}.__init__ must call super().__init__(grader_key) "
                "before the grader can log"
            ) from None
        if type(log) is not dict and not isinstance(log, Mapping):
            raise InvalidTypeError(
                f"add_log takes a dict, not {type(log).__name__}; e.g. add_log({{'score': 1.0}})"
            )
        logs.append(log)  # type: ignore[arg-type]
        buffer.add(log)
        limit = self._max_log_records
        if limit is not None and len(logs) > limit:
            self._fold(limit // 2)

    def _fold(self, keep: int) -> None:
        """Fold all but the ``keep`` newest records into running statistics."""
        logs = self._logs
        cut = len(logs) - keep
        older = LogBuffer(logs[:cut]).state()
        self._folded = older if self._folded is None else self._folded.merge(older)
        # Each fold handles about max_log_records records once every max_log_records / 2
        # calls, so logging stays O(1) per record.
        self._logs = logs[cut:]
        self._log_buffer = LogBuffer(self._logs)

    def log_state(self, *, clear: bool = False) -> LogState:
        """The mergeable statistics of the logged records (for several ranks or workers).

        Example:
            >>> state = grader.log_state(clear=True).to_dict()  # doctest: +SKIP
            >>> # gather the dicts of every rank, then on rank 0:
            >>> LogState.merge_all(map(LogState.from_dict, gathered)).to_logs()  # doctest: +SKIP
        """
        state = self._own_log_state()
        if clear:
            self.clear_logs()
        return state

    def _own_log_state(self) -> LogState:
        if not self._log_buffer.in_sync_with(self._logs):
            # User code replaced or edited self._logs: trust the list, not the mirror.
            self._log_buffer = LogBuffer(self._logs)
        state = self._log_buffer.state()
        folded = getattr(self, "_folded", None)
        return state if folded is None else folded.merge(state)

    def get_logs(self, clear: bool = False) -> dict[str, LogValue]:
        """Aggregate the logged records.

        Returns:
            ``<key>/mean``, ``/std`` (sample, n-1), ``/min``, ``/max``, ``/count`` for every
            numeric key logged (non-finite values are counted in ``<key>/nonfinite_count``
            and left out), ``score/abstained_count`` and ``score/error_count``; the sample
            tables when the grader was built with ``sample_tables=True``; ``{}`` when
            nothing was logged.

        Args:
            clear: Empty the log buffer afterwards, so the next call covers only new samples.
        """
        logs: dict[str, LogValue] = dict(self._own_log_state().to_logs())
        if self.sample_tables and self._logs:
            logs.update(self.get_sample_tables(*split_records(self._logs)))
        if clear:
            self.clear_logs()
        return logs

    def clear_logs(self) -> None:
        """Forget every logged record (and the statistics folded from older ones)."""
        self._logs = []
        self._log_buffer = LogBuffer(self._logs)
        self._folded = None

    def get_sample_tables(
        self,
        successful: Sequence[Mapping[str, Any]],
        failed: Sequence[Mapping[str, Any]],
    ) -> dict[str, LogValue]:
        """Tables of scored and unscored samples.

        When any log of a table carries a ``completion``, that table gets a Completion
        column after Prompt; the other columns are always there, in this order.

        Args:
            successful: Logs like ``{"score": float, "prompt": str, "reasoning": str}``
                (reasoning optional).
            failed: Logs like ``{"error": str, "prompt": str}`` (prompt optional); an
                abstention (``{"abstained": reason}``) is shown as ``abstained: reason``.

        Returns:
            ``score/scored_samples`` (Prompt, Reasoning, Score),
            ``score/unscored_samples`` (Prompt, Error; only when there are failures),
            ``score/scored_samples_count`` and ``score/unscored_samples_count``.
        """
        return sample_tables(successful, failed)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(grader_key={self.grader_key!r})"
