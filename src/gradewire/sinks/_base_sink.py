"""BaseSink: validation, table policy, rank and closing for small sink adapters."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from gradewire.core._errors import InvalidInputError, InvalidTypeError, SinkError
from gradewire.core._logging_core import LogValue
from gradewire.sinks._rank import process_rank
from gradewire.sinks._sink import StepLogs, check_alert, check_config, check_logs, check_step
from gradewire.sinks._table_policy import PolicyState, TablePolicy

__all__ = ["BaseSink", "StepOrderError"]

_SinkT = TypeVar("_SinkT", bound="BaseSink")


class StepOrderError(InvalidInputError):
    """A step lower than one the sink already wrote: refused for its place, not its content."""


class BaseSink(ABC):
    """A sink in four small methods: subclasses implement `_write` (and maybe the others).

    What every BaseSink does for its subclass:

    - Checks input: ``step`` is an int >= 0, ``logs`` a mapping of str keys to numbers
      (bools become ints, numpy scalars plain numbers), `Table` or `Histogram` values;
      anything else raises `InvalidTypeError` naming the key. Nothing is written for a bad call.
    - Steps must not decrease: a step lower than the last one written raises
      `InvalidInputError` (W&B would drop it). The same step again is allowed and adds to
      that step. A write that raises leaves the step position unchanged, so the same
      entries can be retried.
    - Applies the `TablePolicy` (None: tables as they are); a step with nothing left
      after it is not written.
    - Logs only on the main process: unless ``all_ranks=True``, a process whose rank
      (`process_rank`, read once here) is not 0 makes every call a no-op. Subclasses
      should open files or runs lazily, on the first write, so that such ranks touch
      nothing.
    - `close` is idempotent and calls `_close` once; logging after it raises `SinkError`.
    - One lock serialises writes and closing, so a producer thread and a `close()` from
      another thread never interleave inside the subclass.

    Subclasses may override `_write_many` to send several steps in one call
    (`BackgroundSink` uses `log_many`), `_write_config` and `_close`.

    Example:
        >>> class PrintSink(BaseSink):
        ...     def _write(self, logs, step):
        ...         print(step, logs)
    """

    def __init__(self, *, table_policy: TablePolicy | None = None, all_ranks: bool = False) -> None:
        """Set up validation, policy and rank handling.

        Args:
            table_policy: How tables (and the cadence of numbers) are cut down before they
                are written; None sends everything as it is.
            all_ranks: Log from every process, not only from rank 0.
        """
        if table_policy is not None and not isinstance(table_policy, TablePolicy):
            raise InvalidTypeError(
                f"table_policy must be a TablePolicy or None, not {type(table_policy).__name__}"
            )
        self.table_policy = table_policy
        self._policy = PolicyState(table_policy) if table_policy is not None else None
        self._active = True if all_ranks else process_rank() == 0
        self._lock = threading.RLock()
        self._closed = False
        self._last_step: int | None = None

    @property
    def active(self) -> bool:
        """Whether this process writes (False on a non-zero rank without ``all_ranks``)."""
        return self._active

    @property
    def closed(self) -> bool:
        """Whether `close` was called."""
        return self._closed

    @property
    def last_step(self) -> int | None:
        """The highest step written so far (None before the first)."""
        return self._last_step

    def log(self, logs: Mapping[str, LogValue], step: int) -> None:
        """Record the logs of one step.

        Raises:
            InvalidTypeError: A value, key or the step has a type a sink cannot take.
            InvalidInputError: The step is negative or lower than the last one.
            SinkError: The sink is closed.
        """
        if not self._active:
            return
        checked_step = check_step(step)
        checked = check_logs(logs)
        with self._lock:
            self._check_open()
            self._check_order(checked_step, self._last_step)
            if self._policy is not None:
                checked = self._policy.apply(checked, checked_step)
            if checked:
                self._write(checked, checked_step)
            self._last_step = checked_step

    def log_many(self, entries: Sequence[StepLogs]) -> None:
        """Record several steps in order; every entry is checked before any is written.

        Raises:
            InvalidTypeError: An entry is not a ``(step, logs)`` pair, or has bad values.
            InvalidInputError: A step is negative or lower than the one before it.
            SinkError: The sink is closed.
        """
        if not self._active:
            return
        checked = _checked_entries(entries)
        with self._lock:
            self._check_open()
            last = self._last_step
            for i, (step, _) in enumerate(checked):
                try:
                    self._check_order(step, last)
                except InvalidInputError as exc:
                    raise InvalidInputError(f"entries[{i}]: {exc}") from None
                last = step
            if self._policy is not None:
                checked = [(step, self._policy.apply(logs, step)) for step, logs in checked]
            batch = [(step, logs) for step, logs in checked if logs]
            if batch:
                self._write_many(batch)
            self._last_step = last

    late_steps: ClassVar[bool] = False
    """Whether the tracker keeps a step that comes after a higher one (MLflow does; W&B
    drops it). Only `log_late` uses it: `log` and `log_many` refuse a lower step anyway."""

    def log_late(self, entries: Sequence[StepLogs]) -> None:
        """Record steps logged after a higher step, where the tracker keeps them.

        Only where ``late_steps`` is True. For `gradewire.BackgroundSink`: a step whose
        first delivery met the end of an outage while the step after it went through. The
        step position stays the highest.

        Raises:
            StepOrderError: The tracker drops such steps (``late_steps`` is False).
            InvalidTypeError, InvalidInputError, SinkError: As `log_many`.
        """
        if not self.late_steps:
            raise StepOrderError(
                f"{type(self).__name__} does not keep a step logged after a higher one"
            )
        if not self._active:
            return
        checked = _checked_entries(entries)
        with self._lock:
            self._check_open()
            if self._policy is not None:
                checked = [(step, self._policy.apply(logs, step)) for step, logs in checked]
            batch = [(step, logs) for step, logs in checked if logs]
            if batch:
                self._write_many(batch)

    def log_config(self, config: Mapping[str, Any]) -> None:
        """Record the run's configuration; several calls add to it in order.

        Raises:
            InvalidTypeError: ``config`` is not a mapping with str keys.
            SinkError: The sink is closed.
        """
        if not self._active:
            return
        checked = check_config(config)
        with self._lock:
            self._check_open()
            self._write_config(checked)

    def alert(self, title: str, text: str, tags: Mapping[str, str]) -> None:
        """Mark the run: set ``tags`` on it and raise the tracker's own alert, where it has one.

        For the rare events a person should see on the run itself (a reward-health alert),
        beside the metric that counts them. A tracker with run tags sets them (MLflow's
        tags; W&B's summary, with the label ``gradewire-alert``), one with alerts raises
        ``title``/``text`` as one (W&B's ``run.alert``); a sink with neither (a file, the
        console) ignores the call, and `MemorySink` keeps it.

        Raises:
            InvalidTypeError: ``title`` or ``text`` is not a str, or ``tags`` not a mapping
                of str to str.
            SinkError: The sink is closed.
        """
        if not self._active:
            return
        checked = check_alert(title, text, tags)
        with self._lock:
            self._check_open()
            self._write_alert(title, text, checked)

    def close(self) -> None:
        """Deliver what is pending and release resources; later calls do nothing.

        The sink counts as closed even when `_close` raises, so the error is raised once.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._active:
                self._close()

    def __enter__(self: _SinkT) -> _SinkT:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise SinkError(
                f"{type(self).__name__} is closed, so nothing more can be logged to it; "
                "create a new sink (or log before close())"
            )

    def _check_order(self, step: int, last: int | None) -> None:
        if last is not None and step < last:
            raise StepOrderError(
                f"step {step} is lower than step {last}, already logged to "
                f"{type(self).__name__}; steps must not decrease (trackers such as W&B drop "
                "lower steps): log steps in order, or use a new sink for a new run"
            )

    @abstractmethod
    def _write(self, logs: dict[str, LogValue], step: int) -> None:
        """Write one checked step (never empty); called under the sink's lock."""

    def _write_many(self, entries: list[tuple[int, dict[str, LogValue]]]) -> None:
        """Write several checked steps; the default writes them one by one."""
        for step, logs in entries:
            self._write(logs, step)

    def _write_config(self, config: dict[str, Any]) -> None:  # noqa: B027
        """Write a checked configuration; the default ignores it."""

    def _write_alert(self, title: str, text: str, tags: dict[str, str]) -> None:  # noqa: B027
        """Set checked tags and raise the tracker's alert; the default ignores them."""

    def _close(self) -> None:  # noqa: B027
        """Release resources; called once, under the lock."""


def _checked_entries(entries: Sequence[StepLogs]) -> list[tuple[int, dict[str, LogValue]]]:
    """Each ``(step, logs)`` pair checked, or the first bad one named by its index."""
    checked: list[tuple[int, dict[str, LogValue]]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, tuple | list) or len(entry) != 2:
            raise InvalidTypeError(
                f"entries[{i}] must be a (step, logs) pair, not {type(entry).__name__}"
            )
        try:
            checked.append((check_step(entry[0]), check_logs(entry[1])))
        except InvalidInputError as exc:
            raise type(exc)(f"entries[{i}]: {exc}") from None
    return checked
