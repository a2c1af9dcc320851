"""The delivery thread behind `BackgroundSink`: batches, retries, spills and replays."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from gradewire.core._errors import InvalidInputError
from gradewire.sinks._sink import Sink, StepLogs
from gradewire.sinks.background._health import SinkHealth, describe
from gradewire.sinks.background._spill_format import Entry
from gradewire.sinks.background._spill_store import SpillStore

__all__ = ["Worker"]

logger = logging.getLogger("gradewire")

# A safety net only: every event that needs the worker (an entry, a flush, a stop, an
# overflow) also puts something on its queue.
_IDLE_WAKEUP = 1.0


def _step_logs(entry: Entry) -> StepLogs:
    assert entry.step is not None
    assert entry.logs is not None
    return entry.step, entry.logs


class Worker:
    """One daemon thread that owns every call to the wrapped sink.

    Pending entries, oldest first: the store's segments, ``_hand`` (taken from the queue,
    being sent), the queue, the store's overflow file. The worker keeps that order by
    sending from ``_hand`` only while nothing is on disk, and otherwise moving the queue to
    the end of the segments and sending from their start.
    """

    WAKE: ClassVar[object] = object()
    """Put on the queue to make the worker look at its state now (flush, stop, overflow)."""

    def __init__(
        self,
        sink: Sink,
        entries: queue.Queue[object],
        store: SpillStore,
        lock: threading.Lock,
        *,
        name: str,
        label: str,
        batch_size: int,
        flush_interval: float,
        initial_retry_delay: float,
        max_retry_delay: float,
    ) -> None:
        self._sink = sink
        self._label = label  # names the sink in log messages
        log_many = getattr(sink, "log_many", None)
        self._log_many: Callable[[Sequence[StepLogs]], Any] | None = (
            log_many if callable(log_many) else None
        )
        self._queue = entries
        self._store = store
        self._lock = lock  # the BackgroundSink's: guards the overflow file and the queue's end
        self._batch_size = batch_size
        self._flush_interval = flush_interval
        self._max_delay = max_retry_delay
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._stop = threading.Event()
        self._progress = threading.Condition()
        self._settled_seq = 0  # every entry up to this seq is delivered or rejected
        self._finished = False
        self._hand: list[Entry] = []
        self.health = SinkHealth(label, initial_retry_delay, max_retry_delay)
        self.delivered = 0
        self.close_error: Exception | None = None
        self.spilled = False

    # -- control, from other threads -------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def wait_settled(self, seq: int, timeout: float | None) -> None:
        """Wait until every entry up to ``seq`` is delivered or rejected, or ``timeout``."""
        with self._progress:
            if self._settled_seq >= seq or self._finished:
                return
        self._queue.put_nowait(self.WAKE)  # send the batch being gathered without waiting
        with self._progress:
            self._progress.wait_for(lambda: self._settled_seq >= seq or self._finished, timeout)

    def stop(self, timeout: float) -> None:
        """Stop delivering, spill what is left, close the wrapped sink; wait ``timeout``."""
        self._stop.set()
        self._queue.put_nowait(self.WAKE)
        self._thread.join(timeout)

    def spill_queue_unless_finished(self) -> None:
        """Move the queue into the overflow file (call under the lock, after `stop`)."""
        if self._finished:
            return
        for entry in self._take_queue():
            self._store.write_overflow(entry)

    def note_error(self, text: str) -> None:
        self.health.last_error = text

    # -- the thread ------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self._hand:
                    self._spill_hand()  # left over from an error below
                elif self._store.backlog:
                    self._work_backlog()
                else:
                    self._work_queue()
            except Exception as exc:
                # Not the sink (_deliver handles its errors): the spill files. Keep what is
                # in memory and try again later rather than end the thread.
                self.health.last_error = describe(exc)
                logger.exception("gradewire delivery thread %s: internal error", self._thread.name)
                self._stop.wait(self._max_delay)
        self._shutdown()

    def _take_queue(self) -> list[Entry]:
        taken: list[Entry] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return taken
            if isinstance(item, Entry):
                taken.append(item)

    def _collect(self) -> list[Entry]:
        """Up to batch_size entries: what arrives within flush_interval of the first."""
        wait = 0.0 if self._store.overflow_count else _IDLE_WAKEUP
        try:
            first = self._queue.get(timeout=wait) if wait else self._queue.get_nowait()
        except queue.Empty:
            return []
        if not isinstance(first, Entry):
            return []
        batch = [first]
        deadline = time.monotonic() + self._flush_interval
        while len(batch) < self._batch_size:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    item = self._queue.get(timeout=remaining)
                except queue.Empty:
                    break
            if not isinstance(item, Entry):
                break  # a flush or a stop: send now
            batch.append(item)
        return batch

    def _adopt_overflow(self) -> None:
        if not self._store.overflow_count:
            return
        with self._lock:
            # Under the lock no producer can add to the queue: if it is empty now, everything
            # older than the overflow file is on disk or delivered, so the file goes last.
            if self._queue.empty():
                self._store.adopt_overflow()

    def _work_queue(self) -> None:
        self._hand = self._collect()
        if not self._hand:
            self._adopt_overflow()
            return
        done, error, call_size = self._deliver(self._hand)
        self._hand = self._hand[done:]
        if error is None:
            self._on_success()
            return
        if self._on_error(self._hand[0], error, call_size):
            self._hand = self._hand[1:]
        self._spill_hand()

    def _spill_hand(self) -> None:
        self._store.append(self._hand)
        self._hand = []

    def _work_backlog(self) -> None:
        # Newer entries queue up behind the backlog on disk, which bounds memory and order.
        taken = self._take_queue()
        for start in range(0, len(taken), self._batch_size):
            self._store.append(taken[start : start + self._batch_size])
        self._adopt_overflow()
        wait = self.health.retry_at - time.monotonic()
        if wait > 0:
            try:
                item = self._queue.get(timeout=min(wait, _IDLE_WAKEUP))
            except queue.Empty:
                return
            if isinstance(item, Entry):
                self._store.append([item])
            return
        entries = self._store.peek(1 if self.health.probing else self._batch_size)
        if not entries:
            # Only possible if a segment file was removed or cut from outside: say so, slowly.
            raise RuntimeError(
                f"{self._store.backlog} spilled entries are missing from {self._store.directory}"
            )
        done, error, call_size = self._deliver(entries)
        self._store.advance(done)
        if error is None:
            self._on_success()
        elif self._on_error(entries[done], error, call_size):
            self._store.advance(1)

    # -- calling the sink ------------------------------------------------------------------

    def _deliver(self, entries: list[Entry]) -> tuple[int, Exception | None, int]:
        """Send ``entries`` in order: (how many were accepted, the error, its call's size)."""
        done = 0
        while done < len(entries):
            entry = entries[done]
            end = done + 1
            try:
                if entry.config is not None:
                    self._sink.log_config(entry.config)
                else:
                    while end < len(entries) and entries[end].config is None:
                        end += 1
                    if self._log_many is not None and end - done > 1:
                        self._log_many([_step_logs(e) for e in entries[done:end]])
                    else:
                        end = done + 1
                        step, logs = _step_logs(entry)
                        self._sink.log(logs, step)
            except Exception as exc:
                return done, exc, end - done
            self.delivered += end - done
            self._settle(entries[end - 1].seq)
            done = end
        return done, None, 0

    def _settle(self, seq: int) -> None:
        with self._progress:
            self._settled_seq = seq
            self._progress.notify_all()

    def _on_success(self) -> None:
        self.health.succeeded(backlog=self._store.backlog)

    def _on_error(self, head: Entry, error: Exception, call_size: int) -> bool:
        """Record a failed call whose first unaccepted entry is ``head``.

        Returns:
            True if ``head`` was set aside for good (the caller drops it from what it holds).
        """
        self.health.failed(error)
        if isinstance(error, InvalidInputError):
            if call_size == 1:
                # The sink refused this entry itself: retrying cannot help, and it would hold
                # back every entry behind it.
                self._store.reject(head)
                self._settle(head.seq)
                logger.error(
                    "%s refused an entry for good (%s); it is kept for the spill file in %s "
                    "and not retried",
                    self._label,
                    self.health.last_error,
                    self._store.directory,
                )
                return True
            self.health.probing = True  # find the refused entry: one entry per call, at once
            return False
        self.health.back_off(self._store.directory)
        return False

    def _shutdown(self) -> None:
        try:
            with self._lock:
                self._store.append(self._hand)
                self._hand = []
                self._store.append(self._take_queue())
                self._store.adopt_overflow()
                self.spilled = self._store.consolidate() is not None
        except Exception as exc:
            self.health.last_error = describe(exc)
            logger.exception(
                "gradewire delivery thread %s: could not write the spill file", self._thread.name
            )
        try:
            self._sink.close()
        except Exception as exc:
            self.close_error = exc
            self.health.last_error = describe(exc)
        finally:
            with self._progress:
                self._finished = True
                self._progress.notify_all()
