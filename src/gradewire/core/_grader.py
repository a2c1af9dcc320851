"""BaseGrader, an async scoring function with a logging core, and the function grader."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, ClassVar, cast

from typing_extensions import Never

from gradewire.core._batch import thread_batch
from gradewire.core._errors import (
    GradeTimeoutError,
    GradewireError,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
)
from gradewire.core._failure_records import failure_context, log_fields
from gradewire.core._grade import Grade, leaf_grade
from gradewire.core._log_buffer import ABSTAINED, ERROR, TIMED_OUT
from gradewire.core._log_state import LogState
from gradewire.core._logging_core import LoggingCore, LogT, LogValue
from gradewire.core._settings import check_timeout
from gradewire.core._thread import StringThread
from gradewire.core._trainer_calls import wrong_call
from gradewire.core._worker_threads import call_in_thread

__all__ = ["BaseGrader", "FunctionGrader", "GradeFunction", "LogValue", "timeout_setting"]

logger = logging.getLogger("gradewire")

GradeFunction = Callable[[StringThread], float | Grade | Awaitable[float | Grade | None] | None]
"""What `BaseGrader.from_function` takes: sync or async, returning a float, a Grade or None."""

# The measured rule of `from_function(threads=None)`: a sync function's first _PROBE_CALLS
# calls run in threads; if at least _PROBE_FAST of them took under _FAST_SECONDS (less than a
# thread hop costs) it then runs inline, each call timed, until _SLOW_CALLS inline calls
# within _SLOW_WINDOW calls take more than _SLOW_INLINE_SECONDS: then threads for good. The
# calls are timed by the wall clock, which a garbage collection or a busy machine can stretch
# now and then; a few strays decide nothing.
_PROBE_CALLS = 8
_PROBE_FAST = 6
_FAST_SECONDS = 50e-6
_SLOW_INLINE_SECONDS = 1e-3
_SLOW_CALLS = 3
_SLOW_WINDOW = 100
_clock = time.perf_counter


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
    score_range: tuple[float, float] | None = None
    """The closed range ``(low, high)`` every score of this grader lies in, when known.

    The eval statistics keep a mean's interval inside it (`gradewire eval` records it in
    the run's config). OpenAI graders, range judges and score_model set it; a grader of
    your own may set it as a class or instance attribute. None: unknown (0/1 scores are
    still found from the values)."""
    # Class defaults, so a subclass that sets up its own state before calling
    # super().__init__() (or skips it) still grades.
    _timeout: float | None = None
    _timeout_applied = False

    def __init__(
        self,
        grader_key: str,
        *,
        sample_tables: bool = False,
        max_log_records: int | None = None,
        timeout: float | None = None,
    ) -> None:
        """Set up the grader.

        Args:
            grader_key: The grader's logical name: the metric prefix in dashboards.
            sample_tables: Add the scored/unscored sample tables (`get_sample_tables`)
                to the default `get_logs()` output.
            max_log_records: Bound on the records kept (see the `max_log_records`
                property); None keeps every record until the logs are cleared.
            timeout: Seconds one grade may take (see the `timeout` property); None: no
                bound of its own.
        """
        if not isinstance(grader_key, str) or not grader_key.strip():
            raise InvalidInputError(
                f"grader_key must be a non-empty str, not {grader_key!r}; "
                "it names the grader in logs and dashboards"
            )
        self.grader_key = grader_key
        super().__init__(sample_tables=sample_tables, max_log_records=max_log_records)
        self._warned: set[type[BaseException]] = set()
        self.timeout = timeout

    @property
    def timeout(self) -> float | None:
        """Seconds one grade may take; None (the default): no bound of its own.

        A grade that takes longer is given up (cancelled) and the sample counts as an
        error of its own kind: `GradeTimeoutError`, in ``score/error_count`` and apart in
        ``score/timeout_count``; grading goes on with the next sample. A sync function
        that is still running in its worker thread cannot be stopped: it is abandoned and
        runs on until it returns (see `BaseGrader.from_function`).

        Precedence: the grader's own timeout always applies. A timeout passed where the
        grader is used (``grade_many(timeout=...)``, ``trl_reward(..., timeout=...)``,
        ``run_eval(timeout=...)``, ``gradewire eval --timeout``) is the default for graders
        that set none. Each sub-grader of a `CombinedGrader` keeps its own, inside the
        combination's. The word means this on every grader: a bound on a part of a grade
        has a name of its own (``attempt_timeout``, each HTTP attempt of `EndpointGrader`),
        and graders that can stop their work end it at the timeout (`CommandGrader` its
        command's processes, `MathGrader` its check's worker process).
        """
        return self._timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self._timeout = timeout_setting(value, "timeout")

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
        threads: bool | None = None,
        timeout: float | None = None,
    ) -> BaseGrader[dict[str, Any]]:
        """A grader from a plain function of a sample.

        The function may be sync or async and may return a float, a `Grade`, or None to
        abstain. Each score is logged as ``{"score": value}`` (with ``reasoning`` when the
        function returned a Grade that has one).

        A sync function runs in worker threads, so calls run concurrently, up to the
        concurrency the caller asks for (``grade_many(max_concurrency=...)``, eval's
        ``--concurrency``), and a slow one (a parser, a sync HTTP call, a regex over long
        text) never stalls the event loop, its timeout or Ctrl-C. With ``threads=None``
        (the default) a function measured fast is then called inline, where a thread hop
        would cost more than the call: its first 8 calls run in threads, and if at least 6
        of them took under 50 microseconds it runs on the event loop, each call timed; 3
        inline calls of more than 1 ms within 100 send it back to threads for good (a
        single one may be a garbage collection). While a timeout is in effect it always
        runs in a thread, so the timeout can interrupt it. ``threads=True`` always uses
        threads; ``threads=False`` never does, for a function that is not thread-safe (one
        call at a time, on the event loop, where neither a timeout nor Ctrl-C can
        interrupt it).

        Args:
            grader_key: The grader's logical name.
            fn: The scoring function.
            async_fn: Adaptive Harmony's name for ``fn``; pass one of the two.
            sample_tables: Also log each sample's prompt and add the sample tables to
                `get_logs()`.
            threads: Where a sync function runs: None (measured, see above), True (worker
                threads) or False (inline, one at a time). Ignored for async functions.
            timeout: Seconds one grade may take (see `BaseGrader.timeout`).
        """
        if (fn is None) == (async_fn is None):
            raise InvalidTypeError(
                "from_function takes the scoring function once: as fn (or async_fn, "
                "Adaptive Harmony's name), e.g. BaseGrader.from_function('key', score)"
            )
        function = cast("GradeFunction", fn if fn is not None else async_fn)
        return FunctionGrader(
            grader_key, function, sample_tables=sample_tables, threads=threads, timeout=timeout
        )

    async def __call__(
        self, sample: StringThread | None = None, *more: Never, **keywords: Never
    ) -> Grade | None:
        """Grade one sample without raising: None when it abstained or failed (and logged).

        Raises:
            InvalidTypeError: Called as a trainer calls a reward function (TRL's
                ``prompts=``, ``completions=``...; veRL's ``solution_str=``...; OpenRLHF's
                three lists): the message names the adapter to wrap the grader in.
        """
        if more or keywords or sample is None:
            raise wrong_call(self, more, keywords)
        outcome = await self._attempt(sample)
        return outcome if isinstance(outcome, Grade) else None

    async def grade_many(
        self,
        samples: Iterable[StringThread],
        *,
        max_concurrency: int = 64,
        timeout: float | None = None,
    ) -> list[Grade | None]:
        """Grade a batch concurrently, in order; one bad sample never fails the batch.

        A sample that abstains, fails or times out gets None in its slot and is counted in
        the logs.

        Args:
            samples: The samples to grade.
            max_concurrency: How many `grade()` calls may be in flight at once (and so
                how many sync function calls run in threads at once).
            timeout: Seconds one grade may take, for a grader that sets no `timeout` of
                its own.

        Raises:
            InvalidTypeError: A sample is not a `StringThread` (checked before any is graded).
        """
        outcomes = await self._attempt_many(thread_batch(samples), max_concurrency, timeout)
        return [o if isinstance(o, Grade) else None for o in outcomes]

    async def _attempt_many(
        self,
        samples: Iterable[StringThread],
        max_concurrency: int,
        timeout: float | None = None,
    ) -> list[Grade | Exception]:
        """`_attempt` over a batch, in order, at most ``max_concurrency`` at a time."""
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise InvalidInputError(
                f"max_concurrency must be a positive int, not {max_concurrency!r}"
            )
        default = timeout_setting(timeout, "timeout")
        batch = list(samples)
        outcomes: list[Grade | Exception] = [IgnoreGradeException("not graded")] * len(batch)
        pending = iter(enumerate(batch))

        async def work() -> None:
            # Workers share one iterator, so at most max_concurrency grades run at once
            # and memory stays flat however long the batch is.
            for index, sample in pending:
                outcomes[index] = await self._attempt(sample, default)

        workers = min(max_concurrency, len(batch))
        if workers == 1:
            await work()
        elif workers > 1:
            await asyncio.gather(*(work() for _ in range(workers)))
        return outcomes

    async def _attempt(
        self, sample: StringThread, timeout: float | None = None
    ) -> Grade | GradewireError | Exception:
        """Grade, logging an abstention or error instead of raising it.

        ``timeout`` is the default for a grader that sets none (see `timeout`).
        """
        limit = self._timeout
        if limit is None:
            limit = timeout
        try:
            if limit is None:
                grade = await self.grade(sample)
            else:
                grade = await self._grade_within(sample, limit)
        except Exception as exc:
            # A grade cut short by the timeout never reached a grade() that logs its own
            # failures: it is logged here, whoever logs the rest.
            cut = isinstance(exc, GradeTimeoutError) and exc.grader_key == self.grader_key
            if not self.logs_own_failures or (cut and limit is not None):
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

    async def _grade_within(self, sample: StringThread, seconds: float) -> Grade:
        """`grade`, given up after ``seconds`` with `GradeTimeoutError`.

        The grade runs as a task of its own, so a `TimeoutError` raised inside it (an HTTP
        client's) stays that grade's error and is never taken for this timeout.
        """
        self._timeout_applied = True
        task = asyncio.ensure_future(self._interruptible_grade(sample))
        try:
            done, _ = await asyncio.wait((task,), timeout=seconds)
        except BaseException:  # cancelled from outside (Ctrl-C, a trainer stopping)
            task.cancel()
            raise
        if done:
            return task.result()
        task.cancel()
        task.add_done_callback(_retrieve)
        raise GradeTimeoutError(self.grader_key, seconds)

    def _interruptible_grade(self, sample: StringThread) -> Awaitable[Grade]:
        """`grade` as a timeout can interrupt it (function graders run in a thread)."""
        return self.grade(sample)

    def _own_log_state(self) -> LogState:
        # Once a timeout bounded this grader, its timeouts are counted on every window,
        # 0 included, so a missing point never reads as "not measured".
        state = super()._own_log_state()
        if self._timeout_applied and state.counts and "score/timeout_count" not in state.counts:
            state = LogState(state.stats, {**state.counts, "score/timeout_count": 0})
        return state

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
        if isinstance(exc, GradeTimeoutError):
            failed[TIMED_OUT] = f"after {exc.seconds:g} s"
        self.add_log(cast("LogT", failed))
        if type(exc) not in self._warned:
            # Once per exception type: a bug in a grader shows up at once, not as a
            # silent error count after a long run.
            self._warned.add(type(exc))
            logger.warning(
                "grader %r failed on a sample (counted in score/error_count): %s",
                self.grader_key,
                message,
                # A timeout's traceback shows only where the wait was given up.
                exc_info=None if isinstance(exc, GradeTimeoutError) else exc,
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(grader_key={self.grader_key!r})"


class FunctionGrader(BaseGrader):
    """A grader around a sync or async function returning a float, a Grade, or None.

    See `BaseGrader.from_function` for where a sync function runs (``threads``).
    """

    def __init__(
        self,
        grader_key: str,
        fn: GradeFunction,
        *,
        sample_tables: bool = False,
        threads: bool | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__(grader_key, sample_tables=sample_tables, timeout=timeout)
        if not callable(fn):
            raise InvalidTypeError(
                f"from_function needs a function of a sample, not {type(fn).__name__}"
            )
        if threads is not None and not isinstance(threads, bool):
            raise InvalidTypeError(
                f"threads must be True, False or None (measured), not {threads!r}"
            )
        self.fn = fn
        self._awaits = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
        )
        self.threads = threads
        # Where the next sync call runs and, with threads=None, what was measured so far.
        self._inline = threads is False
        self._probing = threads is None  # thread calls are timed probes
        self._timed = False  # inline calls are timed (measured and inline)
        self._probes = self._fast_probes = 0
        self._inline_calls = self._window_start = self._slow_calls = 0

    async def grade(self, sample: StringThread) -> Grade:
        """Call the function and turn its result into a logged Grade."""
        if self._awaits:
            result: Any = self.fn(sample)
        elif self._inline:
            if self._timed:
                start = _clock()
                result = self.fn(sample)
                self._inline_calls += 1
                if _clock() - start > _SLOW_INLINE_SECONDS:
                    self._slow_inline_call()
            else:
                result = self.fn(sample)
        else:
            result = await self._threaded(sample)
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

    async def _threaded(self, sample: StringThread) -> Any:
        """The sync function in a worker thread; with ``threads=None``, measured."""
        result, seconds = await call_in_thread(self.fn, sample)
        if self._probing:
            self._probes += 1
            self._fast_probes += seconds < _FAST_SECONDS
            if self._probes >= _PROBE_CALLS:
                self._probing = False
                if self._fast_probes >= _PROBE_FAST:
                    self._inline = self._timed = True  # fast: inline, each call timed
        return result

    def _slow_inline_call(self) -> None:
        """An inline call took long: after a few within a window, threads for good."""
        if self._inline_calls - self._window_start > _SLOW_WINDOW:
            self._window_start, self._slow_calls = self._inline_calls, 0
        self._slow_calls += 1
        if self._slow_calls >= _SLOW_CALLS:
            self._inline = self._timed = False

    async def _interruptible_grade(self, sample: StringThread) -> Grade:
        if self._awaits or self.threads is False or not self._inline:
            return await self.grade(sample)
        # Measured fast, so inline; under a timeout this call goes to a thread, where the
        # timeout can give up on it.
        result = await self._threaded(sample)
        if inspect.isawaitable(result):
            result = await result
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


def timeout_setting(value: object, what: str) -> float | None:
    """A timeout setting: a positive, finite number of seconds as a float, or None."""
    return check_timeout(what, value)


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a given-up grade's outcome as read, so asyncio logs nothing about it."""
    if not task.cancelled():
        task.exception()
