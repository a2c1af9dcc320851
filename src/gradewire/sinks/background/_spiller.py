"""Spiller: when and how the worker moves the entries in memory to the spill store.

Memory goes to disk whole (it holds the newest pending entries, and disk the oldest): while
the sink is down or a call hangs (at most every ``flush_interval``, so that a hard kill
loses little), when memory is three quarters full or a `log()` waits for room, and at the
end. A write
that fails (a full disk) leaves the entries in memory and is retried with backoff, while
`log()` applies ``when_full`` once memory is full. Used by the worker thread only, under
the shared lock; the writing itself runs with the lock released.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from gradewire.sinks.background._admission import Admission
from gradewire.sinks.background._aside import SetAside
from gradewire.sinks.background._checks import Options
from gradewire.sinks.background._health import describe
from gradewire.sinks.background._spill_store import SpillStore

__all__ = ["Spiller"]

logger = logging.getLogger("gradewire")


class Spiller:
    """Moves memory to the spill store; remembers when it last did and whether it failed."""

    def __init__(
        self,
        admission: Admission,
        store: SpillStore,
        aside: SetAside,
        options: Options,
        label: str,
        unlocked: Callable[[Callable[[], object]], object],
    ) -> None:
        self._adm = admission
        self._store = store
        self._aside = aside
        self._opts = options
        self._label = label
        self._unlocked = unlocked  # runs file I/O with the lock released
        self._last = 0.0
        self._failures = 0
        self.retry_at = 0.0

    def due(self, now: float, *, outage: bool, stopping: bool) -> bool:
        """Whether memory should go to disk now."""
        memory = self._adm.memory
        if not memory or now < self.retry_at:
            return False
        # Three quarters full: spill before log() has to wait for room (it keeps adding to
        # memory while the write runs).
        high = max(1, self._opts.max_queue * 3 // 4)
        if stopping or self._adm.waiting or len(memory) >= high:
            return True
        if not outage:
            return False
        return len(memory) >= self._opts.batch_size or now >= self._last + self._opts.flush_interval

    def next_due(self, outage: bool) -> float | None:
        """When memory is next due to go to disk while the sink is down (None: not then)."""
        if not (outage and self._adm.memory):
            return None
        return max(self._last + self._opts.flush_interval, self.retry_at)

    def spill(self) -> None:
        """Move all of memory to disk, or, if the write fails, keep it there and say so."""
        memory = self._adm.memory
        entries = list(memory)
        error: OSError | None = None
        try:
            self._unlocked(lambda: self._store.append(entries))
        except OSError as exc:
            error = exc
        self._last = time.monotonic()
        self._adm.progress.notify_all()
        if error is not None:
            self._failed(error, len(entries))
            return
        for _ in entries:  # only the worker takes from the left, so these are the ones
            memory.popleft()
        if self._aside.unsaved:
            self._unlocked(self._aside.save)
        if self._adm.spill_error is not None:
            logger.warning("%s: the spill file can be written again", self._label)
        self._adm.spill_error = None
        self._failures = 0
        self.retry_at = 0.0

    def _failed(self, error: OSError, count: int) -> None:
        delay = self._opts.initial_retry_delay * 2.0 ** min(self._failures, 60)
        self._failures += 1
        self.retry_at = time.monotonic() + min(self._opts.max_retry_delay, delay)
        if self._adm.spill_error is None:
            logger.error(
                "%s: cannot write the spill file in %s (%s); %d entries stay in memory, "
                "up to max_queue=%d, and then when_full=%r applies",
                self._label,
                self._store.directory,
                error,
                count,
                self._opts.max_queue,
                self._opts.when_full,
            )
        self._adm.spill_error = describe(error)
