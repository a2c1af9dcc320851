"""The fail-fast bound of the training drivers: stop when a grader fails on too many samples.

A reward that is missing for every sample (a typo in a column name: ``KeyError: 'anwser'``)
gives the trainer nothing to learn from, yet a trainer carries on with zero loss after one
warning. Every driver that hands rewards to a trainer (``trl_reward``, ``RewardLogger``,
``GradewireCallback``, ``openrlhf_reward_func``, ``verl_compute_score``) checks each batch
against this bound and raises `GraderFailingError`, with the grader's first error chained
and its traceback in the message, so the run stops at the first bad step.
"""

from __future__ import annotations

import math
import traceback
from collections import deque
from collections.abc import Sequence

from gradewire.core import (
    GraderFailingError,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
)

__all__ = ["FailFast", "check_error_window", "check_max_error_rate"]

_TRACEBACK_LINES = 60


def check_max_error_rate(value: object) -> float | None:
    """``max_error_rate``: a share in (0, 1], or None for no bound."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidTypeError(f"max_error_rate must be a number or None, not {value!r}")
    if not (math.isfinite(value) and 0.0 < value <= 1.0):
        raise InvalidInputError(
            f"max_error_rate must be above 0 and at most 1, not {value!r}: 1.0 stops on a "
            "window where every sample failed, 0.2 on one where a fifth did, None never"
        )
    return float(value)


def check_error_window(value: object) -> int | None:
    """``error_window``: a count of samples, or None for each batch on its own."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(
            f"error_window must be an int >= 1 (samples) or None (each batch), not {value!r}"
        )
    return value


class FailFast:
    """The bound one driver checks its batches against.

    Args:
        max_error_rate: Stop when at least this share of a window's samples failed (an
            abstention is not a failure); None: never stop.
        window: The window: None, each batch on its own; N, the last N samples of a
            grader, across batches (checked once N samples were seen, and before that
            after each batch of two or more samples, over the samples so far).
        where: How the user turns the bound off, said in the error (e.g.
            ``"trl_reward(...)"``).
    """

    def __init__(self, max_error_rate: float | None, window: int | None, *, where: str) -> None:
        self.max_error_rate = check_max_error_rate(max_error_rate)
        self.window = check_error_window(window)
        self.where = where
        self._recent: dict[str, deque[BaseException | None]] = {}

    def observe(self, grader_key: str, outcomes: Sequence[object]) -> None:
        """Take one batch of outcomes (a failure is an exception that is no abstention).

        Raises:
            GraderFailingError: The window now reaches ``max_error_rate``.
        """
        rate = self.max_error_rate
        if rate is None or not outcomes:
            return
        failures = [
            o if isinstance(o, BaseException) and not isinstance(o, IgnoreGradeException) else None
            for o in outcomes
        ]
        if self.window is None:
            window: Sequence[BaseException | None] = failures
            what = "a batch"
        else:
            recent = self._recent.setdefault(grader_key, deque(maxlen=self.window))
            recent.extend(failures)
            if len(recent) < self.window:
                # Not full yet: a batch of two or more samples is evidence of a rate, so the
                # samples so far are checked after it (TRL stops at its first all-failing
                # step); a single sample (veRL, OpenRLHF: one a call) waits for the window.
                if len(outcomes) < 2:
                    return
                what = "a batch" if len(recent) == len(outcomes) else f"the first {len(recent)}"
            else:
                what = f"the last {self.window}"
            window = recent
        failed = [f for f in window if f is not None]
        if not failed or len(failed) / len(window) < rate:
            return
        first = failed[0]
        raise _failing(grader_key, len(failed), len(window), what, rate, first, self.where)


def _failing(
    key: str,
    failed: int,
    samples: int,
    what: str,
    rate: float,
    first: BaseException,
    where: str,
) -> GraderFailingError:
    lines = traceback.format_exception(type(first), first, first.__traceback__)
    text = "".join(lines)
    shown = text.splitlines()
    if len(shown) > _TRACEBACK_LINES:
        shown = ["...", *shown[-_TRACEBACK_LINES:]]
    share = "every sample" if failed == samples else f"{failed / samples:.0%} of the samples"
    message = (
        f"grader {key!r} failed on {failed} of {samples} samples of {what} ({share}; "
        f"max_error_rate={rate:g} stops training there): the first error is "
        f"{type(first).__name__}: {first}. Rewards that are missing train on nothing: fix "
        "the grader or the data it reads (a column name?), or pass "
        f"failure=FailurePolicy(max_error_rate=None) to {where} to train on regardless "
        "(failures stay counted in score/error_count).\n"
        "The first error's traceback:\n" + "\n".join(shown)
    )
    error = GraderFailingError(
        message,
        grader_key=key,
        failed=failed,
        samples=samples,
        first_error=first,
        first_traceback=text,
    )
    error.__cause__ = first
    return error
