"""Ledger: what became of each pending entry, and of the calls that carried them.

Entries settle in order (delivered, set aside or lost), so one sequence number says it all:
every entry up to `Ledger.settled` is done with. Settling also drops the entries from memory
and wakes whoever waits for progress (`flush()`, a `log()` waiting for room); the worker
then records the watermark and removes the spill segments no longer needed, with the lock
released.

A finished call (`Ledger.record`) settles what went through and tells the sink's health
(`SinkHealth`). An entry refused alone with `InvalidInputError` is set aside at once. One
that fails alone ``max_attempts`` times in a row is tried once more beside the entry after
it (a *suspect* job); if that one goes through, the tracker is up, and if the first then
fails once more it is what the tracker refuses, so it is set aside (an outage that ended
between the calls leaves it delivered instead). Any other failure is an outage: back off,
then probe one entry per call.

Used by the worker thread only, under the shared lock.
"""

from __future__ import annotations

import logging
import random
import time
from pathlib import Path

from gradewire.core._errors import InvalidInputError
from gradewire.sinks.background._admission import Admission
from gradewire.sinks.background._caller import Outcome
from gradewire.sinks.background._report import describe
from gradewire.sinks.background._settings import DeliverySettings
from gradewire.sinks.background._spill_format import Entry
from gradewire.sinks.background._spill_store import SpillStore

__all__ = ["Ledger", "SinkHealth"]

logger = logging.getLogger("gradewire")


class SinkHealth:
    """Failures of the wrapped sink, the backoff between attempts, and the outage notes.

    An outage is logged once as a warning when it starts and once when delivery resumes;
    the attempts in between go to the debug log, so a long outage does not flood it.
    """

    def __init__(self, label: str, initial_delay: float, max_delay: float) -> None:
        self._label = label  # names the sink in log messages
        self._initial_delay = initial_delay
        self._max_delay = max_delay
        self._rng = random.Random()
        self._attempt = 0
        self._outage_logged = False
        self.healthy = True
        self.failed_attempts = 0
        self.last_error: str | None = None
        self.retry_at = 0.0
        """When the next attempt is due (`time.monotonic`)."""
        self.probing = False
        """Send one entry per call: the sink is being tested, or a refused entry sought."""
        self._head_seq = 0  # the entry that last failed in a call of its own
        self.head_failures = 0
        """How often in a row that entry failed alone."""

    def succeeded(self, *, backlog: bool) -> None:
        """A call went through; ``backlog``: entries still wait on disk."""
        self.healthy = True
        self._attempt = 0
        self.retry_at = 0.0
        self.probing = False
        self.head_failures = 0
        if self._outage_logged and not backlog:
            self._outage_logged = False
            logger.info("%s: delivering again; everything kept on disk was replayed", self._label)

    def failed(self, error: Exception) -> None:
        """A call raised ``error``."""
        self.healthy = False
        self.failed_attempts += 1
        self.last_error = describe(error)

    def failed_alone(self, seq: int) -> None:
        """The entry ``seq`` failed in a call of its own (again, if it was the last to)."""
        self.head_failures = self.head_failures + 1 if seq == self._head_seq else 1
        self._head_seq = seq

    def back_off(self, directory: Path) -> None:
        """Wait before the next attempt (jittered, doubling up to the cap) and probe then."""
        delay = min(self._max_delay, self._initial_delay * 2.0 ** min(self._attempt, 60))
        self._attempt += 1
        self.retry_at = time.monotonic() + self._rng.uniform(0.0, delay)
        self.probing = True
        if not self._outage_logged:
            self._outage_logged = True
            logger.warning(
                "%s failed (%s); pending steps are kept in %s and retried in the background "
                "(backoff up to %gs)",
                self._label,
                self.last_error,
                directory,
                self._max_delay,
            )
        else:
            logger.debug("%s failed again: %s", self._label, self.last_error)

    def stalled(self, seconds: float, directory: Path) -> None:
        """A call has not returned for ``seconds``: count the sink as down until it does."""
        self.healthy = False
        if not self._outage_logged:
            self._outage_logged = True
            logger.warning(
                "%s has not answered for %gs; steps logged meanwhile are kept in %s until it does",
                self._label,
                seconds,
                directory,
            )


class Ledger:
    """The settled prefix of the pending entries, the counts the report gives, the health.

    Attributes:
        delivered: Entries the wrapped sink accepted (close entries aside).
        adopted_closes: Close entries of adopted owners done with.
        close_error: The wrapped sink's ``close()`` raised this, for good.
        settled: Every entry up to this sequence number is delivered, set aside or lost.
        lost: Entries found missing from the spill files, or kept nowhere at the end.
        lost_reason: Why the last of them was lost.
        health: How the wrapped sink fares: failures, backoff, probing.
    """

    def __init__(
        self, admission: Admission, store: SpillStore, settings: DeliverySettings, label: str
    ) -> None:
        self._adm = admission
        self._store = store
        self._aside = store.aside
        self._label = label
        self.health = SinkHealth(label, settings.initial_retry_delay, settings.max_retry_delay)
        self.delivered = 0
        self.adopted_closes = 0
        self.close_error: Exception | None = None
        self.settled = 0
        self.lost = 0
        self.lost_reason: str | None = None
        self._counted: list[tuple[int, int]] = []  # lost ranges counted before they settled

    def settle(self, seq: int) -> None:
        self.settled = seq
        memory = self._adm.memory
        while memory and memory[0].seq <= seq:
            memory.popleft()
        self._adm.progress.notify_all()

    def accepted(self, *entries: Entry) -> None:
        for entry in entries:
            if entry.close is None:
                self.delivered += 1
                if any(lo <= entry.seq <= hi for lo, hi in self._counted):
                    self.lost -= 1  # a call stuck at close() got it through after all
            elif entry.seq <= self._adm.adopted:
                self.adopted_closes += 1
        self.settle(entries[-1].seq)

    def set_aside(self, entry: Entry, error: Exception) -> None:
        """Keep ``entry`` apart for good: the sink refused it, and retrying cannot help."""
        text = describe(error)
        self._aside.add(entry, text)
        self.settle(entry.seq)
        self._adm.unlocked(self._aside.save)
        logger.error(
            "%s refused %s for good (%s); it is set aside in %s and delivery goes on",
            self._label,
            "a config" if entry.step is None else f"step {entry.step}",
            text,
            self._aside.path,
        )

    def lose(self, count: int, reason: str) -> None:
        """The next ``count`` entries are gone (``reason`` says how); count them, move on.

        Entries `lose_memory` counted already are not counted again.
        """
        first, last = self.settled + 1, self.settled + count
        known = sum(max(0, min(last, hi) - max(first, lo) + 1) for lo, hi in self._counted)
        if count > known:
            self.lost += count - known
            self.lost_reason = reason
            logger.error("%s: %s; they are counted as lost", self._label, reason)
        self._counted = [(lo, hi) for lo, hi in self._counted if hi > last]
        self.settle(last)

    def lose_memory(self, spill_error: str | None) -> None:
        """At close: the entries in memory could not be written to disk; count them lost.

        The close entry stays (the sink is closed after the rest all the same); when
        delivery reaches the gap they leave, it is not counted twice.
        """
        memory = self._adm.memory
        gone = [entry for entry in memory if entry.close is None]
        if not gone:
            return
        self.lost += len(gone)
        self.lost_reason = (
            f"{len(gone)} entries were still in memory at close() and the spill file in "
            f"{self._store.directory} could not be written ({spill_error})"
        )
        logger.error("%s: %s; they are lost", self._label, self.lost_reason)
        self._counted.append((gone[0].seq, gone[-1].seq))
        kept = [entry for entry in memory if entry.close is not None]
        memory.clear()
        memory.extend(kept)

    def record(self, outcome: Outcome, entries: tuple[Entry, ...]) -> None:
        """Settle what the call that carried ``entries`` delivered, and note how it went."""
        health = self.health
        backlog = self._store.last_seq > self.settled  # more waits on disk
        if outcome.close_error is not None:
            self.close_error = outcome.close_error
            health.last_error = describe(outcome.close_error)
        if outcome.refused is not None:
            head, after = entries
            health.failed(outcome.refused)
            self.set_aside(head, outcome.refused)
            self.accepted(after)
            health.succeeded(backlog=backlog)
            return
        if outcome.done:
            self.accepted(*entries[: outcome.done])
        if outcome.error is None:
            health.succeeded(backlog=backlog)
            return
        head = entries[outcome.done]
        for _ in range(outcome.failed_calls):
            health.failed(outcome.error)
        if isinstance(outcome.error, InvalidInputError):  # InvalidTypeError too
            if outcome.call_size == 1:
                # The sink refused this entry itself: retrying cannot help, and it would hold
                # back every entry behind it.
                health.head_failures = 0
                self.set_aside(head, outcome.error)
                return
            health.probing = True  # find the refused entry: one per call, at once
            health.retry_at = 0.0
            return
        if outcome.call_size == 1:
            health.failed_alone(head.seq)
        health.back_off(self._store.directory)
