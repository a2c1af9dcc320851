"""DeliverySettings: how a `BackgroundSink` queues, batches, retries and spills.

Each setting is declared once, as a field of `DeliverySettings` with its default, its check
and (in the class docstring) its doc. `BackgroundSink` takes the object whole
(``settings=``) or its fields as keywords, typed by `DeliveryOptions`; keywords override the
object's fields.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import field
from pathlib import Path
from typing import Literal

from typing_extensions import TypedDict

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._settings import (
    check_fields,
    check_flag,
    check_positive_int,
    check_positive_int_or_none,
    check_seconds,
    check_seconds_or_none,
    checked_by,
)

__all__ = ["DeliveryOptions", "DeliverySettings", "WhenFull"]

WhenFull = Literal["drop_newest", "raise", "block"]
"""What `BackgroundSink.log` does when memory is full and the spill file cannot be written."""

_WHEN_FULL: tuple[WhenFull, ...] = ("drop_newest", "raise", "block")


def _directory(name: str, value: object) -> Path | None:
    if value is not None and not isinstance(value, str | os.PathLike):
        raise InvalidTypeError(
            f"{name} must be a path (str or pathlib.Path) or None, not {type(value).__name__}"
        )
    return None if value is None else Path(value)


def _when_full(name: str, value: object) -> WhenFull:
    for mode in _WHEN_FULL:
        if value == mode:
            return mode
    raise InvalidInputError(
        f"{name} must be one of {', '.join(map(repr, _WHEN_FULL))}, not {value!r}"
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class DeliverySettings:
    """How a `BackgroundSink` queues, batches, retries and spills (see its docs for the whole).

    Every field is checked when the object is made: a bad value raises at once and names the
    field. ``BackgroundSink(sink, max_queue=1000)`` and
    ``BackgroundSink(sink, settings=DeliverySettings(max_queue=1000))`` are the same sink.

    Attributes:
        max_queue: Most entries held in memory (the batch being delivered included).
        batch_size: Most entries per ``log_many`` call.
        flush_interval: Seconds the worker waits for a batch to fill before sending, and,
            while the sink is down, between two writes to the spill file.
        spill_dir: Directory for spill files (made when needed; may be shared by many sinks
            and processes). A new sink delivers the files a killed or closed sink left
            there for the same run first (see `BackgroundSink`). None: one directory per
            user, ``gradewire-spill-<uid>`` in the system temp directory (which a reboot
            may empty: give a directory beside your checkpoints to keep spills longer).
        initial_retry_delay: Backoff scale in seconds for the first retry (> 0).
        max_retry_delay: Cap on any single backoff wait, in seconds (at least
            ``initial_retry_delay``).
        close_timeout: Seconds `BackgroundSink.close` waits for delivery by default, then at
            most for a call in progress, and then for the wrapped sink's ``close()``.
        exit_timeout: Seconds the `atexit` hook gives `BackgroundSink.close`; None
            registers no hook.
        stall_timeout: Seconds a call may take before the sink counts as down and memory
            goes to disk (the call is not interrupted).
        max_attempts: Failed attempts in a row after which an entry is tried past: if the
            entry after it goes through, it is set aside.
        when_full: What `BackgroundSink.log` does when memory is full and the disk cannot
            be written: ``"drop_newest"`` (counted in the report's ``lost``, with a
            WARNING), ``"raise"`` (`SinkError`) or ``"block"`` (wait for room).
        max_spill_bytes: Most bytes the sink's own spill files hold at once (>= 1); None:
            as much as the disk takes. At the cap the disk counts as full: the entries that
            do not fit stay in memory (up to ``max_queue``), and then ``when_full`` applies,
            so an entry is never dropped without being counted in the report's ``lost``
            (with the reason). Files adopted from an earlier process are not counted.
        deliver_after_close: When `BackgroundSink.close` finds entries it cannot deliver
            in time (the tracker is down), whether the worker goes on delivering them in
            the background while the process lives, and then closes the wrapped sink
            (True); or stops, leaving them and the close on disk for the next
            `BackgroundSink` of the same run or ``gradewire sync`` (False).
    """

    max_queue: int = field(default=10_000, metadata=checked_by(check_positive_int))
    batch_size: int = field(default=100, metadata=checked_by(check_positive_int))
    flush_interval: float = field(default=0.5, metadata=checked_by(check_seconds))
    spill_dir: str | os.PathLike[str] | None = field(default=None, metadata=checked_by(_directory))
    initial_retry_delay: float = field(default=0.5, metadata=checked_by(check_seconds))
    max_retry_delay: float = field(default=30.0, metadata=checked_by(check_seconds))
    close_timeout: float = field(default=30.0, metadata=checked_by(check_seconds))
    exit_timeout: float | None = field(default=5.0, metadata=checked_by(check_seconds_or_none))
    stall_timeout: float = field(default=5.0, metadata=checked_by(check_seconds))
    max_attempts: int = field(default=5, metadata=checked_by(check_positive_int))
    when_full: WhenFull = field(default="drop_newest", metadata=checked_by(_when_full))
    max_spill_bytes: int | None = field(
        default=1 << 30, metadata=checked_by(check_positive_int_or_none)
    )
    deliver_after_close: bool = field(default=True, metadata=checked_by(check_flag))

    def __post_init__(self) -> None:
        check_fields(self)
        if self.initial_retry_delay <= 0 or self.max_retry_delay < self.initial_retry_delay:
            raise InvalidInputError(
                f"need 0 < initial_retry_delay <= max_retry_delay, got "
                f"{self.initial_retry_delay} and {self.max_retry_delay}"
            )


class DeliveryOptions(TypedDict, total=False):
    """`DeliverySettings`' fields as keywords, for type checkers (documented there)."""

    max_queue: int
    batch_size: int
    flush_interval: float
    spill_dir: str | os.PathLike[str] | None
    initial_retry_delay: float
    max_retry_delay: float
    close_timeout: float
    exit_timeout: float | None
    stall_timeout: float
    max_attempts: int
    when_full: WhenFull
    max_spill_bytes: int | None
    deliver_after_close: bool
