"""Checking what a `BackgroundSink` is given: its options, and each entry before it is queued."""

from __future__ import annotations

import math
import os
from typing import Literal, NamedTuple

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.sinks._fanout_sink import FanOutSink
from gradewire.sinks._sink import Sink

__all__ = ["Options", "WhenFull", "check_options", "check_seconds"]

WhenFull = Literal["drop_newest", "raise", "block"]
"""What `BackgroundSink.log` does when memory is full and the spill file cannot be written."""


class Options(NamedTuple):
    """`BackgroundSink`'s numeric options, checked (see its ``__init__`` for their meaning)."""

    max_queue: int
    batch_size: int
    flush_interval: float
    initial_retry_delay: float
    max_retry_delay: float
    close_timeout: float
    exit_timeout: float | None
    stall_timeout: float
    max_attempts: int
    when_full: WhenFull


_WHEN_FULL: tuple[WhenFull, ...] = ("drop_newest", "raise", "block")


def check_options(
    sink: object,
    spill_dir: object,
    *,
    max_queue: object,
    batch_size: object,
    flush_interval: object,
    initial_retry_delay: object,
    max_retry_delay: object,
    close_timeout: object,
    exit_timeout: object,
    stall_timeout: object,
    max_attempts: object,
    when_full: object,
) -> Options:
    """Check `BackgroundSink`'s arguments, the sink first; return its numeric options."""
    if not isinstance(sink, Sink):
        raise InvalidTypeError(
            f"BackgroundSink wraps a sink with log(), log_config() and close(), not "
            f"{type(sink).__name__}"
        )
    if isinstance(sink, FanOutSink):
        # FanOutSink logs and swallows its sinks' errors, so nothing would ever be
        # retried or spilled: the delivery guarantee would silently not hold.
        raise InvalidInputError(
            "BackgroundSink(FanOutSink(...)) cannot retry a failing tracker: FanOutSink "
            "swallows its sinks' errors. Wrap each tracker instead: "
            "FanOutSink(BackgroundSink(a), BackgroundSink(b))"
        )
    if spill_dir is not None and not isinstance(spill_dir, str | os.PathLike):
        raise InvalidTypeError(
            f"spill_dir must be a path (str or pathlib.Path) or None, not "
            f"{type(spill_dir).__name__}"
        )
    queue_size = _check_count("max_queue", max_queue)
    batch = _check_count("batch_size", batch_size)
    interval = check_seconds("flush_interval", flush_interval)
    retry = check_seconds("initial_retry_delay", initial_retry_delay)
    cap = check_seconds("max_retry_delay", max_retry_delay)
    if retry <= 0 or cap < retry:
        raise InvalidInputError(
            f"need 0 < initial_retry_delay <= max_retry_delay, got {retry} and {cap}"
        )
    close_seconds = check_seconds("close_timeout", close_timeout)
    exit_seconds = None if exit_timeout is None else check_seconds("exit_timeout", exit_timeout)
    stall = check_seconds("stall_timeout", stall_timeout)
    attempts = _check_count("max_attempts", max_attempts)
    if when_full not in _WHEN_FULL:
        raise InvalidInputError(
            f"when_full must be one of {', '.join(map(repr, _WHEN_FULL))}, not {when_full!r}"
        )
    mode: WhenFull = when_full  # narrowed by the check above
    return Options(
        queue_size, batch, interval, retry, cap, close_seconds, exit_seconds, stall, attempts, mode
    )


def check_seconds(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidTypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not value >= 0 or math.isinf(value):
        raise InvalidInputError(f"{name} must be a finite number of seconds >= 0, not {value}")
    return float(value)


def _check_count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 1:
        raise InvalidInputError(f"{name} must be at least 1, not {value}")
    return value
