"""Math answers checked with Math-Verify, bounded by a timeout that works in any thread.

`math_match` parses the answer and the expected answer with Math-Verify (LaTeX, boxed
answers, plain expressions; extra ``math``) and compares them symbolically. Math-Verify's own
timeout is SIGALRM, which fails outside the main thread; here its alarms are off and every
check runs in a worker process of a small long-lived pool (`gradewire.helpers._math_pool`)
that is killed and replaced when it overruns, so the bound holds in thread pools, event
loops and Ray workers alike.

A wrong answer, an answer that cannot be read and a check that overran are three different
outcomes: 0.0, `MathParseError` and `MathTimeoutError`. A `MathTimeoutError` is a
`GradeTimeoutError`: a grader that lets it through counts a timeout outcome
(``score/timeout_count``), as for any grade that ran out of time. Both errors carry log
fields (``math_parse_error`` / ``math_timeout``), so each is also counted apart
(``math_parse_error/count``, ``math_timeout/count``), beside ``score/error_count``.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any, Literal

from gradewire.core._errors import (
    GradeTimeoutError,
    GradingError,
    InvalidTypeError,
    MissingDependencyError,
)
from gradewire.core._failure_records import attach_log_fields
from gradewire.core._settings import check_positive_seconds
from gradewire.helpers._math_pool import PoolTimeout, WorkerCrashed, WorkerPool

__all__ = ["MathParseError", "MathTimeoutError", "math_check", "math_match", "math_pool"]

# Enough for a thread pool of graders on a small machine; each worker holds sympy (~60 MB).
_POOL_SIZE = max(1, min(4, os.cpu_count() or 1))
_pool: WorkerPool | None = None
_pool_lock = threading.Lock()


class MathParseError(GradingError):
    """Math-Verify found no answer it could read.

    Attributes:
        side: ``"answer"`` (the text graded) or ``"expected"`` (the reference answer).
        text: The text that could not be read, cut to 200 characters.
    """

    def __init__(self, side: Literal["answer", "expected"], text: str) -> None:
        shown = text if len(text) <= 200 else text[:200] + "..."
        fix = (
            "the completion has no final answer Math-Verify can find (a \\boxed{...}, a "
            "$...$ expression or a number); catch MathParseError to score it 0.0"
            if side == "answer"
            else "check the reference answers of the data set"
        )
        super().__init__(f"Math-Verify could not read the {side} {shown!r}: {fix}")
        self.side = side
        self.text = shown
        attach_log_fields(self, {"math_parse_error": 1})

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.side, self.text))


class MathTimeoutError(GradeTimeoutError):
    """The check overran its timeout; the worker process running it was replaced.

    A `GradeTimeoutError` (its ``grader_key`` is ``"math_match"``): a grade that lets it
    through is a timeout outcome, counted in ``score/timeout_count``.

    Attributes:
        timeout: The bound that was exceeded, in seconds (also ``seconds``).
    """

    def __init__(self, timeout: float) -> None:
        super().__init__("math_match", timeout)
        self.args = (
            f"Math-Verify did not finish within {timeout:g} s (an expression sympy cannot "
            "simplify in time); pass a larger timeout= if such answers are expected",
        )
        self.timeout = timeout
        attach_log_fields(self, {"math_timeout": 1})

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.timeout,))


def math_pool() -> WorkerPool:
    """The process-wide pool `math_match` runs in (started workers stay up between calls)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            if importlib.util.find_spec("math_verify") is None:
                raise MissingDependencyError(
                    "math-verify", extra="math", purpose="check math answers (math_match)"
                )
            _pool = WorkerPool(str(Path(__file__).with_name("_math_worker.py")), _POOL_SIZE)
            # Workers would end on their own once this process is gone (their socket
            # closes); stopping them at exit also reaps them.
            atexit.register(_pool.close)
        return _pool


def math_match(answer: object, expected: object, *, timeout: float = 5.0) -> float:
    r"""Score 1.0 if the answer is mathematically equal to `expected`, else 0.0 (Math-Verify).

    Both are read by Math-Verify (``\\boxed{...}``, ``$...$`` LaTeX, plain expressions and
    numbers; the answer's last readable answer wins as in Math-Verify) and compared
    symbolically and numerically, so ``\\frac{1}{2}``, ``0.5`` and ``1/2`` match. The check
    runs in a worker process and is bounded by ``timeout`` wherever it is called from: a
    thread pool, an event loop (call it in a thread there: it blocks while it waits), a Ray
    actor. It is made for graders: ``BaseGrader.from_function("math", lambda s:
    gw.math_match(s.completion() or "", s.metadata["answer"]))``, or `MathGrader`, which
    also scores unreadable answers 0.0 and counts them.

    Args:
        answer: The text to grade (a completion); anything else is converted with `str()`.
        expected: The reference answer: LaTeX with or without ``$`` delimiters, or a number.
        timeout: Seconds the check may take (finite, > 0); a worker that overruns is killed
            and replaced.

    Returns:
        1.0 when they match, 0.0 when they do not.

    Raises:
        MathParseError: No answer could be read from `answer` (or from `expected`).
        MathTimeoutError: The check overran `timeout`.
        MissingDependencyError: Math-Verify is not installed (``pip install 'gradewire[math]'``).
        GradingError: The worker process died during the check, or Math-Verify failed.

    Example:
        >>> math_match("so the answer is $\\\\boxed{\\\\frac{1}{2}}$", "0.5")  # doctest: +SKIP
        1.0
    """
    seconds = check_positive_seconds("timeout", timeout)
    answer_text, expected_text = _texts(answer, expected)
    try:
        outcome, matched = math_pool().call((answer_text, expected_text), seconds)
    except PoolTimeout:
        raise MathTimeoutError(seconds) from None
    except WorkerCrashed:
        raise
    except RuntimeError as exc:
        raise GradingError(f"Math-Verify failed on this answer: {exc}") from None
    return _verdict(outcome, matched, answer_text, expected_text)


async def math_check(answer: str, expected: object, *, timeout: float | None) -> float:
    """`math_match` awaited on the event loop: cancelling it kills the check's worker.

    ``timeout`` (None: no bound of its own) counts from the moment a worker takes the
    check; the grade's own timeout, which cancels this, bounds the rest.
    """
    answer_text, expected_text = _texts(answer, expected)
    try:
        outcome, matched = await math_pool().acall((answer_text, expected_text), timeout)
    except PoolTimeout:
        assert timeout is not None  # only a bound can be overrun
        raise MathTimeoutError(timeout) from None
    except WorkerCrashed:
        raise
    except RuntimeError as exc:
        raise GradingError(f"Math-Verify failed on this answer: {exc}") from None
    return _verdict(outcome, matched, answer_text, expected_text)


def _texts(answer: object, expected: object) -> tuple[str, str]:
    if isinstance(expected, bool) or expected is None:
        raise InvalidTypeError(
            f"expected must be the reference answer as a str or a number, not {expected!r}"
        )
    answer_text = answer if isinstance(answer, str) else str(answer)
    return answer_text, expected if isinstance(expected, str) else str(expected)


def _verdict(outcome: str, matched: bool, answer_text: str, expected_text: str) -> float:
    if outcome == "expected":
        raise MathParseError("expected", expected_text)
    if outcome == "answer":
        raise MathParseError("answer", answer_text)
    return 1.0 if matched else 0.0
