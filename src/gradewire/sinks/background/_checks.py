"""Checking what a `BackgroundSink` is given: its options, and each entry before it is queued."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import NamedTuple

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._table import Table
from gradewire.sinks._base_sink import check_logs, check_step
from gradewire.sinks._fanout_sink import FanOutSink
from gradewire.sinks._sink import Sink, StepLogs
from gradewire.sinks.background._admission import Item
from gradewire.sinks.background._spill_format import copy_table

__all__ = ["Options", "check_options", "check_seconds", "step_entries", "step_entry"]


class Options(NamedTuple):
    """`BackgroundSink`'s numeric options, checked (see its ``__init__`` for their meaning)."""

    max_queue: int
    batch_size: int
    flush_interval: float
    initial_retry_delay: float
    max_retry_delay: float
    close_timeout: float
    exit_timeout: float | None


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
    return Options(queue_size, batch, interval, retry, cap, close_seconds, exit_seconds)


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


def step_entry(step: object, logs: object) -> Item:
    """One step checked and snapshotted for the queue (`BackgroundSink.log`)."""
    checked = check_logs(logs)
    for key, value in checked.items():
        if isinstance(value, Table):
            checked[key] = copy_table(value)  # so that the caller may keep changing it
    return check_step(step), checked, None


def step_entries(entries: Sequence[StepLogs]) -> list[Item]:
    """Every step of `BackgroundSink.log_many`, checked before any is queued."""
    checked: list[Item] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, tuple | list) or len(entry) != 2:
            raise InvalidTypeError(
                f"entries[{i}] must be a (step, logs) pair, not {type(entry).__name__}"
            )
        try:
            checked.append(step_entry(entry[0], entry[1]))
        except InvalidInputError as exc:
            raise type(exc)(f"entries[{i}]: {exc}") from None
    return checked
