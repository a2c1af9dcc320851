"""Admission: how a `BackgroundSink` takes entries in, on its callers' threads.

Each step is checked and copied first (`step_entry`), so that the caller may go on changing
what it logged; then it gets the next sequence number and goes into memory, newest last; the worker
delivers the oldest, and while the tracker is down or slow it moves them to disk. Memory
holds at most ``max_queue`` entries. When it is full, `put` waits for the worker to make
room, which takes a disk write, never the network; only when the spill file cannot be
written either (a full disk) does ``when_full`` decide: drop the newest entry (counted and
warned about), raise `SinkError`, or keep waiting. One lock guards all of it and is shared
with the worker and its caller thread; each waits on a condition of its own.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from gradewire.core._errors import InvalidInputError, InvalidTypeError, SinkError
from gradewire.core._logging_core import LogValue
from gradewire.core._table import Table
from gradewire.sinks._sink import StepLogs, check_logs, check_step
from gradewire.sinks.background._settings import DeliverySettings
from gradewire.sinks.background._spill_format import Entry, copy_table

__all__ = ["Admission", "Item", "step_entries", "step_entry"]

logger = logging.getLogger("gradewire")

_RECHECK = 1.0  # seconds: a waiting put() looks again even if no one wakes it

_T = TypeVar("_T")

Item = tuple[int | None, dict[str, LogValue] | None, dict[str, Any] | None]
"""What `Admission.put` takes: (step, logs, None) for a step, (None, None, config) for a config."""


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


class Admission:
    """The producer side of a `BackgroundSink`: memory, sequence numbers, step order.

    Attributes:
        lock: Guards everything here; the worker and the caller thread take it too.
        work: The worker waits on it; `put` wakes it when there is something to do.
        progress: `flush()` and a waiting `put` wait on it; the worker wakes them.
        memory: Pending entries not on disk, oldest first.
        seq: The sequence number of the newest entry (adopted entries take the first ones).
        adopted: Sequence numbers of entries adopted from earlier owners.
        closes: Close entries admitted (1 once `close` found entries still pending).
        dropped: Entries `put` could not keep (``when_full="drop_newest"``).
        drop_reason: Why the last one was dropped.
        spill_error: Set by the worker while the spill file cannot be written.
        waiting: `put` calls waiting for room.
        flush_target: The worker sends partial batches until this entry is settled.
        closed: Whether `close` was called; `put` refuses entries from then on.
        owner: The `BackgroundSink`'s repr, which every message names.
    """

    def __init__(self, settings: DeliverySettings, owner: str, where: str) -> None:
        self.lock = threading.Lock()
        self.work = threading.Condition(self.lock)
        self.progress = threading.Condition(self.lock)
        self.memory: deque[Entry] = deque()
        self.seq = 0
        self.adopted = 0
        self.closes = 0
        self.dropped = 0
        self.drop_reason: str | None = None
        self.spill_error: str | None = None
        self.waiting = 0
        self.flush_target = 0
        self.closed = False
        self.owner = owner
        self._where = where  # the spill directory, for messages
        self._max_queue = settings.max_queue
        self._high_water = max(1, settings.max_queue * 3 // 4)  # the worker spills from here
        self._batch_size = settings.batch_size
        self._when_full = settings.when_full
        self._last_step: int | None = None
        self._dropping = 0  # entries dropped since memory was last below max_queue

    @property
    def logged(self) -> int:
        """Entries `put` accepted (admitted, or dropped after it returned normally), and adopted."""
        return self.seq - self.closes + self.dropped

    def start_after(self, adopted: int) -> None:
        """Number this sink's entries after the ``adopted`` ones (before any is admitted)."""
        self.seq = self.adopted = self.flush_target = adopted

    def add_close(self, record: dict[str, Any]) -> int:
        """Admit the close entry (call with the lock held, after `close`); its number."""
        self.seq += 1
        self.closes += 1
        self.memory.append(Entry(self.seq, None, None, None, time.time(), record))
        self.work.notify()
        return self.seq

    def unlocked(self, action: Callable[[], _T]) -> _T:
        """Run ``action`` (file I/O) with the lock released; called with the lock held."""
        self.lock.release()
        try:
            return action()
        finally:
            self.lock.acquire()

    def close(self) -> bool:
        """Refuse entries from now on; False if that was already so."""
        with self.lock:
            if self.closed:
                return False
            self.closed = True
            self.progress.notify_all()  # a put() waiting for room gives up
            return True

    def check_open(self) -> None:
        if self.closed:
            raise SinkError(
                f"{self.owner} is closed, so nothing more can be logged to it; log before "
                "close(), or wrap the sink in a new BackgroundSink"
            )

    def put(self, items: list[Item]) -> None:
        """Admit ``items`` in order; the step order of all of them is checked before any."""
        with self.lock:
            self.check_open()
            last = self._last_step
            for i, (step, _, _) in enumerate(items):
                if step is not None and last is not None and step < last:
                    where = f"entries[{i}]: " if len(items) > 1 else ""
                    raise InvalidInputError(
                        f"{where}step {step} is lower than step {last}, already logged to "
                        f"{self.owner}; steps must not decrease (trackers such as W&B drop lower "
                        "steps): log steps in order, or use a new sink for a new run"
                    )
                last = step if step is not None else last
            for step, logs, config in items:
                if step is not None:
                    self._last_step = step
                if len(self.memory) >= self._max_queue and not self._make_room(step):
                    continue
                if self._dropping:
                    self._end_dropping()
                self.seq += 1
                self.memory.append(Entry(self.seq, step, logs, config, time.time()))
                size = len(self.memory)
                if size == 1 or size % self._batch_size == 0 or size >= self._high_water:
                    self.work.notify()

    def _make_room(self, step: int | None) -> bool:
        """Wait until memory has room (True), or apply ``when_full`` (False: dropped)."""
        what = "the config" if step is None else f"step {step}"
        while len(self.memory) >= self._max_queue:
            self.check_open()
            if self.spill_error is None or self._when_full == "block":
                self.waiting += 1
                self.work.notify()
                self.progress.wait(_RECHECK)
                self.waiting -= 1
                continue
            reason = (
                f"the queue of {self._max_queue} entries was full and the spill file in "
                f"{self._where} could not be written ({self.spill_error})"
            )
            if self._when_full == "raise":
                raise SinkError(
                    f"{reason}, so {what} was NOT kept: free disk space or pass spill_dir= a "
                    "writable directory; when_full='block' waits instead, 'drop_newest' drops"
                )
            self.dropped += 1
            self.drop_reason = reason
            if not self._dropping:
                logger.warning(
                    "%s: %s, so %s and later ones are dropped until there is room; the "
                    "delivery report counts them (lost)",
                    self.owner,
                    reason,
                    what,
                )
            self._dropping += 1
            return False
        return True

    def _end_dropping(self) -> None:
        logger.warning(
            "%s: room again; %d entries were dropped meanwhile (%d in all)",
            self.owner,
            self._dropping,
            self.dropped,
        )
        self._dropping = 0
