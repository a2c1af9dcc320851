"""Retry policy for calls to model servers: bounded attempts, full-jitter backoff, Retry-After.

Shared by the judge model client and the reward endpoint grader. An attempt signals a failure
worth retrying by raising `RetryableError` (a 429, a 5xx, a timeout, a dropped connection);
anything else it raises ends the call at once. When the attempts run out, `RetryPolicy.call`
raises `ModelHTTPError`, a `ModelCallError` that names the endpoint, the attempts, the last
failure and what to do about it.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import timezone
from typing import TypeVar

from gradewire.core._errors import GradewireError, InvalidInputError, ModelCallError

__all__ = [
    "ModelHTTPError",
    "RetryPolicy",
    "RetryableError",
    "is_retryable_status",
    "retry_after_seconds",
]

logger = logging.getLogger("gradewire")

_T = TypeVar("_T")

# 501 (not implemented) and 505 (HTTP version) will not change on a retry.
_PERMANENT_5XX = frozenset({501, 505})


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP status is worth retrying: 408, 409, 429 and 5xx (except 501 and 505)."""
    return status in (408, 409, 429) or (500 <= status <= 599 and status not in _PERMANENT_5XX)


def retry_after_seconds(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The wait a server asked for, in seconds, or None when it asked for none.

    Reads ``retry-after-ms`` (OpenAI's milliseconds header) first, then ``Retry-After`` as
    seconds or as an HTTP date. A date in the past means 0; an unreadable value means None.

    Args:
        headers: The response headers (lowercase names work with every sender).
        now: The current Unix time for HTTP dates (default: `time.time()`).
    """
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(value, 0.0)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # HTTP dates are GMT ("-0000" parses as naive)
            when = when.replace(tzinfo=timezone.utc)
        value = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(value):
        return None
    return max(value, 0.0)


class RetryableError(GradewireError):
    """Raised by one attempt of a `RetryPolicy.call` to have it retried.

    Attributes:
        detail: What went wrong, for the final error message (e.g. ``HTTP 503: overloaded``).
        status: The HTTP status, or None for timeouts and connection failures.
        retry_after: Seconds the server asked to wait, if it did.
        advice: What the user can do if the failures persist.
    """

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        advice: str = "",
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.retry_after = retry_after
        self.advice = advice


class ModelHTTPError(ModelCallError):
    """A call to a model server or reward endpoint failed for good.

    Attributes:
        endpoint: The URL that was called.
        status: The last HTTP status, or None when the last failure was not an HTTP answer
            (a timeout, a refused or dropped connection).
        attempts: How many attempts were made.
        server_message: The error message the server sent, when it sent one.
    """

    def __init__(
        self,
        message: str,
        *,
        endpoint: str,
        status: int | None = None,
        attempts: int = 1,
        server_message: str | None = None,
    ) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.status = status
        self.attempts = attempts
        self.server_message = server_message

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild_http_error,
            (str(self), self.endpoint, self.status, self.attempts, self.server_message),
        )


def _rebuild_http_error(
    message: str, endpoint: str, status: int | None, attempts: int, server_message: str | None
) -> ModelHTTPError:
    return ModelHTTPError(
        message,
        endpoint=endpoint,
        status=status,
        attempts=attempts,
        server_message=server_message,
    )


def _check_number(name: str, value: object, *, minimum: float, integer: bool = False) -> None:
    valid = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (isinstance(value, int) or not integer)
        and value >= minimum
    )
    if not valid:
        kind = "an int" if integer else "a number"
        raise InvalidInputError(f"RetryPolicy.{name} must be {kind} >= {minimum}, not {value!r}")


def _uniform() -> float:
    # A module function, not `random.random` itself: a pickled policy (Ray workers...) keeps
    # drawing from its own process's generator instead of a copy of one shared state.
    return random.random()


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a failing model call.

    The wait before attempt ``n + 1`` is drawn uniformly from
    ``[0, min(max_delay, initial_delay * 2 ** (n - 1))]`` (exponential backoff with full
    jitter, so many clients that failed together do not retry together). When the server sent
    ``Retry-After``, that wait is used instead, capped at ``max_retry_after`` and stretched by
    up to 10% at random for the same reason.

    Attributes:
        max_attempts: Attempts in all, the first included (1 means no retry).
        initial_delay: Upper bound of the first backoff, in seconds.
        max_delay: Upper bound of any backoff, in seconds.
        max_retry_after: Cap on a wait the server asks for, in seconds.
        sleep: Awaits a delay; swap it to observe or skip the waits (tests, simulations).
        random: Returns a float in [0, 1) for the jitter.

    Example:
        >>> policy = RetryPolicy(max_attempts=8, max_delay=30.0)
        >>> model = OpenAIChatModel("gpt-4o-mini", retry=policy)  # doctest: +SKIP
    """

    max_attempts: int = 5
    initial_delay: float = 0.5
    max_delay: float = 20.0
    max_retry_after: float = 60.0
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, compare=False)
    random: Callable[[], float] = field(default=_uniform, compare=False)

    def __post_init__(self) -> None:
        _check_number("max_attempts", self.max_attempts, minimum=1, integer=True)
        _check_number("initial_delay", self.initial_delay, minimum=0)
        _check_number("max_delay", self.max_delay, minimum=0)
        _check_number("max_retry_after", self.max_retry_after, minimum=0)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after) * (1.0 + 0.1 * self.random())
        ceiling = min(self.max_delay, self.initial_delay * 2.0 ** min(attempt - 1, 60))
        return ceiling * self.random()

    async def call(
        self,
        attempt: Callable[[], Awaitable[_T]],
        *,
        endpoint: str,
        what: str = "call",
    ) -> _T:
        """Run ``attempt`` until it returns, retrying it while it raises `RetryableError`.

        Args:
            attempt: Makes one attempt; raises `RetryableError` for a failure worth retrying.
                Any other exception ends the call and propagates unchanged.
            endpoint: The URL called, named in the final error.
            what: What is being called, for the final error (e.g. ``"judge model 'gpt-4o'"``).

        Raises:
            ModelHTTPError: Every attempt failed with a `RetryableError`.
        """
        number = 1
        while True:
            try:
                return await attempt()
            except RetryableError as failure:
                if number >= self.max_attempts:
                    raise self._gave_up(failure, endpoint, what, number) from failure
                wait = self.delay(number, failure.retry_after)
                logger.debug(
                    "%s to %s failed (attempt %d of %d: %s); retrying in %.2fs",
                    what,
                    endpoint,
                    number,
                    self.max_attempts,
                    failure.detail,
                    wait,
                )
                await self.sleep(wait)
                number += 1

    def _gave_up(
        self, failure: RetryableError, endpoint: str, what: str, attempts: int
    ) -> ModelHTTPError:
        advice = failure.advice or "check the server"
        plural = "attempt" if attempts == 1 else "attempts"
        message = (
            f"{what} to {endpoint} failed after {attempts} {plural}; last error: "
            f"{failure.detail}. {advice[0].upper()}{advice[1:]}, or allow more attempts "
            f"(max_attempts={attempts} now)"
        )
        return ModelHTTPError(message, endpoint=endpoint, status=failure.status, attempts=attempts)
