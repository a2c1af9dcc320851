"""Admission: how a `BackgroundSink` takes entries in, on its callers' threads.

Each entry gets the next sequence number and goes on the in-memory queue, or, when the queue
is full (``max_queue``), to the spill store's overflow file, written from the caller's thread
so that nothing is dropped and nothing waits on the network. Steps must not decrease. One
lock guards all of it, the closed flag too, and is shared with the worker.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any

from gradewire.core._errors import InvalidInputError, SinkError
from gradewire.core._logging_core import LogValue
from gradewire.sinks.background._spill_format import Entry
from gradewire.sinks.background._spill_store import SpillStore
from gradewire.sinks.background._worker import Worker

__all__ = ["Admission", "Item"]

logger = logging.getLogger("gradewire")


Item = tuple[int | None, dict[str, LogValue] | None, dict[str, Any] | None]
"""What `Admission.put` takes: (step, logs, None) for a step, (None, None, config) for a config."""


class Admission:
    """The producer side of a `BackgroundSink`: its queue, sequence numbers and step order.

    Attributes:
        queue: The worker's queue, bounded by `put` (not by the queue itself).
        lock: Guards everything here and the store's overflow file; the worker takes it too.
        closed: Whether `close` was called; `put` refuses entries from then on.
        seq: Entries admitted so far (the sequence number of the newest).
        owner: The `BackgroundSink`'s repr, which every message names.
    """

    def __init__(self, store: SpillStore, max_queue: int, owner: str) -> None:
        self.queue: queue.Queue[object] = queue.Queue()  # bounded by put()
        self.lock = threading.Lock()
        self.closed = False
        self.seq = 0
        self._last_step: int | None = None
        self._store = store
        self._max_queue = max_queue
        self.owner = owner

    def close(self) -> bool:
        """Refuse entries from now on; False if that was already so."""
        with self.lock:
            if self.closed:
                return False
            self.closed = True
            return True

    def check_open(self) -> None:
        if self.closed:
            raise SinkError(
                f"{self.owner} is closed, so nothing more can be logged to it; log before "
                "close(), or wrap the sink in a new BackgroundSink"
            )

    def put(self, items: list[Item]) -> None:
        """Admit ``items`` in order; the step order of all of them is checked before any."""
        started_overflow = False
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
                entry = Entry(self.seq + 1, step, logs, config)
                # Once anything is in the overflow file, later entries follow it there until the
                # worker adopts the file, so the queue never holds entries newer than the file.
                if self._store.overflow_count == 0 and self.queue.qsize() < self._max_queue:
                    self.queue.put_nowait(entry)
                else:
                    try:
                        self._store.write_overflow(entry)
                    except OSError as exc:
                        raise SinkError(
                            f"the queue of {self._max_queue} entries is full and the spill file "
                            f"in {self._store.directory} cannot be written ({exc}), so step "
                            f"{step} was NOT kept: free disk space or pass spill_dir= a "
                            "writable directory, or a larger max_queue"
                        ) from exc
                    started_overflow = started_overflow or self._store.overflow_count == 1
                self.seq += 1
                if step is not None:
                    self._last_step = step
        if started_overflow:
            self.queue.put_nowait(Worker.WAKE)  # so that the worker adopts the file soon
            logger.warning(
                "%s: the queue of %d entries is full (the tracker is slower than the training "
                "loop); newer entries go to %s until the worker catches up",
                self.owner,
                self._max_queue,
                self._store.directory,
            )
