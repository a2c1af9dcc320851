"""The delivery worker behind `BackgroundSink`: batches, retries, spills, replays, sets aside.

One daemon thread decides everything; the calls to the wrapped sink run on a second one,
the `Caller`, so the worker never waits on the network. Pending entries, oldest first, are
those in the spill store, then those in memory; a call carries the oldest few, from disk
or from memory, and they stay where they are until they are settled (`Ledger`). Memory
goes to disk (`Spiller`) when a call fails, when one has not returned after
``stall_timeout`` (a tracker stuck in its own retries: the entries it carries go too),
when memory is full, and at the end.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from gradewire.sinks._sink import Sink
from gradewire.sinks.background._admission import Admission
from gradewire.sinks.background._aside import SetAside
from gradewire.sinks.background._caller import Caller, Job
from gradewire.sinks.background._checks import Options
from gradewire.sinks.background._health import SinkHealth, describe
from gradewire.sinks.background._ledger import Ledger
from gradewire.sinks.background._outcomes import apply_outcome
from gradewire.sinks.background._spill_format import Entry
from gradewire.sinks.background._spill_store import SpillStore
from gradewire.sinks.background._spiller import Spiller

__all__ = ["Worker"]

logger = logging.getLogger("gradewire")

_T = TypeVar("_T")

_IDLE_WAKEUP = 1.0  # a safety net: every event that needs the worker also wakes it
_MIN_WAIT = 0.001


class Worker:
    """The delivery thread of one `BackgroundSink` (see the module docs)."""

    def __init__(
        self,
        sink: Sink,
        admission: Admission,
        store: SpillStore,
        aside: SetAside,
        options: Options,
        *,
        name: str,
        label: str,
    ) -> None:
        self._adm = admission
        self._lock = admission.lock
        self._store = store
        self._aside = aside
        self._opts = options
        self._label = label  # names the sink in log messages
        self._health = SinkHealth(label, options.initial_retry_delay, options.max_retry_delay)
        self._caller = Caller(sink, admission.lock, admission.work, name=f"gradewire-{name}")
        self._thread = threading.Thread(
            target=self._run, name=f"gradewire-{name}-spool", daemon=True
        )
        self.ledger = Ledger(admission, store, aside, label, self._unlocked)
        self._spiller = Spiller(admission, store, aside, options, label, self._unlocked)
        self.close_error: Exception | None = None
        self.close_stuck = False
        self.spill_paths: list[Path] = []
        self.rejected_path: Path | None = None
        self.finished = False
        self._job: tuple[Entry, ...] | None = None
        self._stalled = False
        self._unsent_since: float | None = None  # memory holds entries no call carried yet
        self._stop_at: float | None = None
        self._stop_timeout = 0.0

    # -- state and control, from other threads ---------------------------------------------

    @property
    def delivered(self) -> int:
        return self.ledger.delivered

    @property
    def healthy(self) -> bool:
        return self._health.healthy and not self._stalled

    @property
    def failed_attempts(self) -> int:
        return self._health.failed_attempts

    @property
    def last_error(self) -> str | None:
        return self._health.last_error

    @property
    def spill_directory(self) -> Path:
        return self._store.directory

    def start(self) -> None:
        self._caller.start()
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def wait_settled(self, seq: int, timeout: float | None) -> None:
        """Wait until every entry up to ``seq`` is settled, or ``timeout`` (takes the lock)."""
        with self._lock:
            if self.ledger.settled >= seq or self.finished:
                return
            self._adm.flush_target = max(self._adm.flush_target, seq)
            self._adm.work.notify()  # send the batch being gathered without waiting
            self._adm.progress.wait_for(
                lambda: self.ledger.settled >= seq or self.finished, timeout
            )

    def stop(self, timeout: float) -> None:
        """Stop delivering, keep what is left on disk, close the wrapped sink (takes the lock).

        Waits up to ``timeout`` for a call in progress, and then as long again for the
        wrapped sink's close; returns once the worker has written the spill file.
        """
        with self._lock:
            self._stop_timeout = timeout
            self._stop_at = time.monotonic() + timeout
            self._adm.work.notify()
        self._thread.join(2 * timeout + 60.0)  # the extra minute is for the disk alone

    def note_error(self, text: str) -> None:
        self._health.last_error = text

    # -- the thread (holds the lock except while it waits or does I/O) -----------------------

    def _unlocked(self, action: Callable[[], _T]) -> _T:
        self._lock.release()
        try:
            return action()
        finally:
            self._lock.acquire()

    def _run(self) -> None:
        with self._lock:
            while True:
                try:
                    if self._turn(time.monotonic()):
                        break
                except Exception as exc:
                    # Not the sink (the caller catches its errors): the spill files. Keep what
                    # is in memory, and try again later rather than end the thread.
                    self._health.last_error = describe(exc)
                    logger.exception("gradewire delivery thread %s: internal error", self._label)
                    self._adm.work.wait(self._opts.max_retry_delay)
            self._finish()

    def _turn(self, now: float) -> bool:
        """One look at the state; True when it is time to finish."""
        self._take_outcome()
        stopping = self._stop_at is not None
        if stopping and (self._job is None or now >= (self._stop_at or now)):
            return True
        self._watch(now)
        if self._spiller.due(now, outage=self._outage(), stopping=stopping):
            self._spiller.spill()
            return False
        if self._job is None and not stopping and self._send(now):
            return False
        self._adm.work.wait(self._wait_for(now))
        return False

    def _outage(self) -> bool:
        return self._stalled or not self._health.healthy

    def _watch(self, now: float) -> None:
        started = self._caller.busy_since
        if self._job is None or self._stalled or started is None:
            return
        if now - started >= self._opts.stall_timeout:
            self._stalled = True
            self._health.stalled(self._opts.stall_timeout, self._store.directory)

    def _wait_for(self, now: float) -> float:
        """Seconds until the next thing is due, if nothing wakes the worker before."""
        deadlines = [now + _IDLE_WAKEUP, self._spiller.next_due(self._outage()), self._stop_at]
        started = self._caller.busy_since
        if self._job is not None and not self._stalled and started is not None:
            deadlines.append(started + self._opts.stall_timeout)
        if self._job is None and self._adm.memory:
            since = self._unsent_since if self._unsent_since is not None else now
            deadlines.append(since + self._opts.flush_interval)
        if self._job is None and (self._adm.memory or self._store.last_seq > self.ledger.settled):
            deadlines.append(self._health.retry_at)
        due = min(d for d in deadlines if d is not None and d > now)
        return max(_MIN_WAIT, due - now)

    # -- sending --------------------------------------------------------------------------

    def _send(self, now: float) -> bool:
        """Start a call if one is due; True if one started or something was settled."""
        if now < self._health.retry_at:
            return False
        probing = self._health.probing
        suspect = self._health.head_failures >= self._opts.max_attempts
        want = 2 if suspect else (1 if probing else self._opts.batch_size)
        settled = self.ledger.settled
        if self._store.last_seq > settled:
            entries = self._unlocked(lambda: self._store.read(settled, want))
            if not entries:  # the files hold less than was written to them
                self._missing(self._store.last_seq - settled)
                return True
        else:
            memory = self._adm.memory
            if not memory or not self._due(now, probing or suspect):
                return False
            entries = list(itertools.islice(memory, want))
        if entries[0].seq > settled + 1:
            self._missing(entries[0].seq - settled - 1)
        # A call carries consecutive entries only, so that a gap (a line cut from a spill
        # file) is counted as lost when it comes first, never settled as delivered.
        run = 1
        while run < len(entries) and entries[run].seq == entries[run - 1].seq + 1:
            run += 1
        entries = entries[:run]
        if suspect and len(entries) == 2:
            job = Job(tuple(entries), suspect=True)
        else:
            job = Job(tuple(entries[: 1 if probing or suspect else len(entries)]))
        self._job = job.entries
        self._unsent_since = None
        self._caller.submit(job)
        return True

    def _due(self, now: float, single: bool) -> bool:
        """Whether the entries in memory should go now rather than wait for a fuller batch."""
        flush = self._opts.flush_interval
        if (
            single
            or len(self._adm.memory) >= self._opts.batch_size
            or self._adm.flush_target > self.ledger.settled
            or (self._unsent_since is not None and now >= self._unsent_since + flush)
        ):
            return True
        if self._unsent_since is None:
            self._unsent_since = now
        return False

    def _missing(self, count: int) -> None:
        self.ledger.lose(
            count, f"{count} entries were cut from the spill files in {self._store.directory}"
        )

    def _take_outcome(self) -> None:
        outcome, entries = self._caller.outcome, self._job
        if outcome is None or entries is None:
            return
        self._caller.outcome = None
        self._job = None
        self._stalled = False
        apply_outcome(
            outcome,
            entries,
            health=self._health,
            ledger=self.ledger,
            directory=self._store.directory,
            backlog=self._store.last_seq > self.ledger.settled,
        )

    # -- the end --------------------------------------------------------------------------

    def _finish(self) -> None:
        """Keep what is left on disk, close the wrapped sink, merge the spill (lock held)."""
        self._spiller.retry_at = 0.0
        if self._adm.memory:
            self._spiller.spill()  # a stuck call's entries too: it may never return
        self.ledger.lose_memory(self._adm.spill_error)
        stuck = self.close_stuck = self._job is not None
        self._caller.submit(Job(close=True))  # after the stuck call, if there is one
        if stuck:
            self._health.last_error = (
                f"TimeoutError: the wrapped sink did not return from a call within "
                f"{self._stop_timeout}s of close(); what it holds is in the spill file too, "
                "and may be delivered as well if the call returns"
            )
        else:
            self._close_sink()
        settled = self.ledger.settled
        self.spill_paths = self._unlocked(lambda: self._store.close(settled))
        self.rejected_path = self._unlocked(self._aside.close)
        self.ledger.lost += self._aside.lost
        self.finished = True
        self._adm.progress.notify_all()

    def _close_sink(self) -> None:
        self._adm.work.wait_for(lambda: self._caller.outcome is not None, self._stop_timeout)
        outcome, self._caller.outcome = self._caller.outcome, None
        if outcome is None:
            self.close_stuck = True
            self.close_error = TimeoutError(
                f"the wrapped sink's close() did not return within {self._stop_timeout}s"
            )
        elif outcome.error is not None:
            self.close_error = outcome.error
        if self.close_error is not None:
            self._health.last_error = describe(self.close_error)
