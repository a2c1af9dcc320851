"""The delivery worker behind `BackgroundSink`: batches, retries, spills, replays, sets aside.

One daemon thread decides everything; the calls to the wrapped sink run on a second one,
the `Caller`, so the worker never waits on the network. Pending entries, oldest first, are
those in the spill store, then those in memory; a call carries the oldest few, from disk
or from memory, and they stay where they are until they are settled (`Ledger`). After each
call the worker records the watermark and removes what is no longer needed from disk,
with the lock released.

Memory goes to disk whole (`Spiller`; it holds the newest pending entries, and disk the
oldest): while the sink is down or a call hangs (at most every ``flush_interval``, so that
a hard kill loses little; a call that has not returned after ``stall_timeout`` counts as
down, and the entries it carries go too), when memory is three quarters full or a `log()`
waits for room, and at the end. A write that fails (a full disk) leaves the entries in
memory and is retried with backoff, while `log()` applies ``when_full`` once memory is full.
The writing itself runs with the lock released.

**The end.** `stop` adds a close entry after the last one logged: the wrapped sink is
closed in order, once everything before it is delivered. If that does not happen within
the close timeout (the tracker is down, a call hangs), the close is *deferred*: what is
left goes to disk, ending with the close entry, `stop` returns, and the worker goes on
delivering in the background while the process lives, then closes the wrapped sink (which
ends an MLflow run with the status it would have had). A process that ends first leaves
the files to the next `BackgroundSink` of the same run, or to ``gradewire sync``.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gradewire.sinks._sink import Sink
from gradewire.sinks.background._admission import Admission
from gradewire.sinks.background._caller import Caller, Job
from gradewire.sinks.background._ledger import Ledger
from gradewire.sinks.background._report import DeliveryReport, describe
from gradewire.sinks.background._settings import DeliverySettings
from gradewire.sinks.background._spill_format import Entry
from gradewire.sinks.background._spill_store import SpillStore

__all__ = ["Spiller", "Worker"]

logger = logging.getLogger("gradewire")

_IDLE_WAKEUP = 1.0  # a safety net: every event that needs the worker also wakes it
_MIN_WAIT = 0.001


class Worker:
    """The delivery thread of one `BackgroundSink` (see the module docs)."""

    def __init__(
        self,
        sink: Sink,
        admission: Admission,
        store: SpillStore,
        settings: DeliverySettings,
        *,
        name: str,
        target: Mapping[str, Any] | None = None,
    ) -> None:
        """Make the threads ``gradewire-<name>`` (calls the sink) and ``gradewire-<name>-spool``.

        `start` starts them. ``target``: the wrapped sink's delivery target, if known.
        """
        self._adm = admission
        self._lock = admission.lock
        self._store = store
        self._aside = store.aside
        self._settings = settings
        self._label = label = f"{type(sink).__name__} behind {admission.owner}"  # for logs
        self._caller = Caller(
            sink, admission.lock, admission.work, name=f"gradewire-{name}", stem=store.stem
        )
        self._thread = threading.Thread(
            target=self._run, name=f"gradewire-{name}-spool", daemon=True
        )
        self.ledger = Ledger(admission, store, settings, label)
        self._health = self.ledger.health
        self._spiller = Spiller(admission, store, settings, label)
        self.close_stuck = False
        self.spill_paths: list[Path] = []
        self.rejected_path: Path | None = None
        self.finished = False
        self.deferred = False
        self._job: tuple[Entry, ...] | None = None
        self._stalled = False
        self._unsent_since: float | None = None  # memory holds entries no call carried yet
        self._stop_at: float | None = None
        self._stop_timeout = 0.0
        self._closing = 0  # the close entry's number, once stop() added it
        self._target = dict(target) if target is not None else None
        store.set_target(self._target)  # nothing on disk yet: the owner file starts with it
        self._target_saved = self._target
        self._discarded = 0  # the watermark the store last recorded
        self._commit_failed = False

    # -- state and control, from other threads ---------------------------------------------

    @property
    def delivered(self) -> int:
        """Entries the wrapped sink accepted."""
        return self.ledger.delivered

    @property
    def close_error(self) -> Exception | None:
        """What the wrapped sink's ``close()`` raised, for good (None: it did not)."""
        return self.ledger.close_error

    @property
    def healthy(self) -> bool:
        return self._health.healthy and not self._stalled

    def start(self) -> None:
        if self._store.adopted:
            logger.info(
                "%s: delivering first %d entries left in %s by earlier processes of this run",
                self._label,
                self._store.adopted,
                self._store.directory,
            )
        self._caller.start()
        self._thread.start()

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

    def wait_finished(self, timeout: float | None) -> None:
        """After a deferred close: wait until the background delivery is done (takes the lock)."""
        with self._lock:
            self._adm.progress.wait_for(lambda: self.finished, timeout)

    def stop(self, timeout: float) -> DeliveryReport:
        """Close the wrapped sink once everything logged is delivered, or defer it.

        Adds the close entry (the admission must be closed already), then waits up to
        ``timeout`` for it to be delivered: for a call in progress, and for the wrapped
        sink's ``close()``. Past that, or at once while the tracker is down, what is left
        goes to disk and the worker goes on in the background (`deferred`). Returns the
        report of that moment.
        """
        with self._lock:
            self._closing = self._adm.add_close({"owner": self._store.stem, "target": self._target})
            self._adm.flush_target = self._closing
            self._stop_timeout = timeout
            self._stop_at = time.monotonic() + timeout
            self._adm.work.notify()
            # The extra minute is for the disk alone.
            going_on = self._settings.deliver_after_close
            done = self._adm.progress.wait_for(
                lambda: self.finished or (self.deferred and going_on), 2 * timeout + 60.0
            )
            if not done:  # only if the disk itself hangs
                self._health.last_error = (
                    f"TimeoutError: the delivery thread did not finish writing the spill file "
                    f"in {self._store.directory} after close()"
                )
        return self.report(final=True)

    def report(self, *, final: bool = False) -> DeliveryReport:
        """The delivery state now (``final``: after `stop`, with the spill files)."""
        adm, ledger, aside = self._adm, self.ledger, self._aside
        # One read: the worker may deliver between two, and the report must add up.
        done = ledger.delivered
        logged = adm.logged - ledger.adopted_closes
        reasons = [adm.drop_reason, ledger.lost_reason]
        left = final and self.deferred and ledger.settled < self._closing
        deferred = left and not self.finished
        paths = tuple(self.spill_paths) if left else ()
        close_ok = not final or (ledger.close_error is None and not left)
        return DeliveryReport(
            delivered=done,
            pending=logged - done,
            rejected=aside.count,
            spill_path=paths[0] if paths else None,
            last_error=self._health.last_error,
            failed_attempts=self._health.failed_attempts,
            ok=logged == done and close_ok,
            lost=adm.dropped + ledger.lost,
            lost_reason="; ".join(r for r in reasons if r) or None,
            rejected_path=self.rejected_path if final else None,
            rejections=tuple(aside.listed),
            spill_paths=paths,
            adopted=adm.adopted,
            deferred_close=deferred,
        )

    # -- the thread (holds the lock except while it waits or does I/O) -----------------------

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
                    self._adm.work.wait(self._settings.max_retry_delay)
            self._finish()

    def _turn(self, now: float) -> bool:
        """One look at the state; True when it is time to finish."""
        self._take_outcome()
        self._commit()
        if self._closing and self.ledger.settled >= self._closing:
            return True
        if self._due_to_defer(now):
            self._defer()
            return not self._settings.deliver_after_close
        self._watch(now)
        if self._spiller.due(now, outage=self._outage(), stopping=self.deferred):
            self._spiller.spill()
            return False
        if self._job is None and self._send(now):
            return False
        self._adm.work.wait(self._wait_for(now))
        return False

    def _due_to_defer(self, now: float) -> bool:
        """Whether close() has waited long enough, or the tracker is down, so it is no use."""
        if self._stop_at is None or self.deferred:
            return False
        return now >= self._stop_at or (self._job is None and self._outage())

    def _commit(self) -> None:
        """Record on disk what changed (target, watermark) and drop settled segments (I/O)."""
        target, settled = self._target, self.ledger.settled
        if target == self._target_saved and settled <= self._discarded:
            return
        store = self._store

        def write() -> None:
            if target != self._target_saved:
                store.set_target(target)
            store.discard(settled)

        try:
            self._adm.unlocked(write)
        except OSError as exc:
            # The entries were delivered; only their record on disk lags, so a process
            # killed now would send them again (at least once). Try again next time.
            if not self._commit_failed:
                logger.warning("%s: cannot update the spill files: %s", self._label, exc)
            self._commit_failed = True
            return
        self._commit_failed = False
        self._target_saved = target
        self._discarded = settled

    def _outage(self) -> bool:
        return self._stalled or not self._health.healthy

    def _watch(self, now: float) -> None:
        started = self._caller.busy_since
        if self._job is None or self._stalled or started is None:
            return
        if now - started >= self._settings.stall_timeout:
            self._stalled = True
            self._health.stalled(self._settings.stall_timeout, self._store.directory)

    def _wait_for(self, now: float) -> float:
        """Seconds until the next thing is due, if nothing wakes the worker before."""
        stop_at = None if self.deferred else self._stop_at
        deadlines = [now + _IDLE_WAKEUP, self._spiller.next_due(self._outage()), stop_at]
        started = self._caller.busy_since
        if self._job is not None and not self._stalled and started is not None:
            deadlines.append(started + self._settings.stall_timeout)
        if self._job is None and self._adm.memory:
            since = self._unsent_since if self._unsent_since is not None else now
            deadlines.append(since + self._settings.flush_interval)
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
        suspect = self._health.head_failures >= self._settings.max_attempts
        want = 2 if suspect else (1 if probing else self._settings.batch_size)
        settled = self.ledger.settled
        if self._store.last_seq > settled:
            entries = self._adm.unlocked(lambda: self._store.read(settled, want))
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
        # A close entry is never the second of a suspect job: it must follow every entry,
        # and the wrapped sink's close may succeed while the tracker is down, which would
        # set the head aside as refused when it only met the outage.
        if suspect and len(entries) == 2 and entries[1].close is None:
            job = Job(tuple(entries), suspect=True)
        else:
            job = Job(tuple(entries[: 1 if probing or suspect else len(entries)]))
        self._job = job.entries
        self._unsent_since = None
        self._caller.submit(job)
        return True

    def _due(self, now: float, single: bool) -> bool:
        """Whether the entries in memory should go now rather than wait for a fuller batch."""
        flush = self._settings.flush_interval
        if (
            single
            or len(self._adm.memory) >= self._settings.batch_size
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
        if outcome.target is not None:
            self._target = outcome.target
        self.ledger.record(outcome, entries)

    # -- the end --------------------------------------------------------------------------

    def _defer(self) -> None:
        """Close time, and the close entry is not delivered: keep what is left on disk."""
        self._spiller.retry_at = 0.0
        if self._adm.memory:
            self._spiller.spill()  # a stuck call's entries too: it may never return
        self.ledger.lose_memory(self._adm.spill_error)
        self.close_stuck = self._job is not None
        if self.close_stuck:
            self._health.last_error = (
                f"TimeoutError: the wrapped sink did not return from a call within "
                f"{self._stop_timeout}s of close(); what it holds is in the spill file too, "
                "and is delivered once, after it, when the call returns"
            )
        settled = self.ledger.settled
        store = self._store

        def keep() -> list[Path]:
            store.mark_closed()
            return store.merge(settled)

        self.spill_paths = self._adm.unlocked(keep)
        if self._aside.unsaved:
            self._adm.unlocked(self._aside.save)
        if self._aside.count:
            self.rejected_path = self._aside.path
        self.deferred = True
        self._adm.progress.notify_all()

    def _finish(self) -> None:
        """End the threads, and let go of the files.

        Everything is settled, the close entry too (our files go), or the close was
        deferred and ``deliver_after_close`` is off (they stay, for the next owner).
        """
        self._caller.submit(Job(stop=True))
        self._commit()
        settled = self.ledger.settled
        self._adm.unlocked(lambda: self._store.release(settled))
        self.rejected_path = self._adm.unlocked(self._aside.close)
        self.ledger.lost += self._aside.lost
        done = bool(self._closing) and settled >= self._closing
        if done:
            self.spill_paths = []
        self.finished = True
        if self.deferred and done:
            logger.warning(
                "%s: the tracker is back; what was pending at close() is delivered and the "
                "sink closed (%d entries delivered in all)",
                self._label,
                self.ledger.delivered,
            )
        self._adm.progress.notify_all()


class Spiller:
    """Moves memory to the spill store; remembers when it last did and whether it failed."""

    def __init__(
        self, admission: Admission, store: SpillStore, settings: DeliverySettings, label: str
    ) -> None:
        self._adm = admission
        self._store = store
        self._aside = store.aside
        self._settings = settings
        self._label = label
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
        high = max(1, self._settings.max_queue * 3 // 4)
        if stopping or self._adm.waiting or len(memory) >= high:
            return True
        if not outage:
            return False
        return (
            len(memory) >= self._settings.batch_size
            or now >= self._last + self._settings.flush_interval
        )

    def next_due(self, outage: bool) -> float | None:
        """When memory is next due to go to disk while the sink is down (None: not then)."""
        if not (outage and self._adm.memory):
            return None
        return max(self._last + self._settings.flush_interval, self.retry_at)

    def spill(self) -> None:
        """Move all of memory to disk, or, if the write fails, keep it there and say so.

        At the spill cap, the oldest entries that fit go, and the rest stay.
        """
        memory = self._adm.memory
        entries = list(memory)
        error: OSError | None = None
        stored = 0
        try:
            stored = self._adm.unlocked(lambda: self._store.append(entries))
        except OSError as exc:
            error = exc
        self._last = time.monotonic()
        for _ in range(stored):  # only the worker takes from the left, so these are the ones
            memory.popleft()
        self._adm.progress.notify_all()
        if stored < len(entries):
            self._failed(error or self._store.cap_error(), len(entries) - stored)
            return
        if self._aside.unsaved:
            self._adm.unlocked(self._aside.save)
        if self._adm.spill_error is not None:
            logger.warning("%s: the spill file can be written again", self._label)
        self._adm.spill_error = None
        self._failures = 0
        self.retry_at = 0.0

    def _failed(self, error: OSError, count: int) -> None:
        delay = self._settings.initial_retry_delay * 2.0 ** min(self._failures, 60)
        self._failures += 1
        self.retry_at = time.monotonic() + min(self._settings.max_retry_delay, delay)
        if self._adm.spill_error is None:
            logger.error(
                "%s: cannot write the spill file in %s (%s); %d entries stay in memory, "
                "up to max_queue=%d, and then when_full=%r applies",
                self._label,
                self._store.directory,
                error,
                count,
                self._settings.max_queue,
                self._settings.when_full,
            )
        self._adm.spill_error = describe(error)
