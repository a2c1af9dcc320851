"""Ledger: which pending entries are settled (delivered, set aside or lost), and how many.

Entries settle in order, so one sequence number says it all: every entry up to `settled`
is done with. Settling also drops the entries from memory and their spill segments once
no longer needed, and wakes whoever waits for progress (`flush()`, a `log()` waiting for
room). Used by the worker thread only, under the shared lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from gradewire.sinks.background._admission import Admission
from gradewire.sinks.background._aside import SetAside
from gradewire.sinks.background._health import describe
from gradewire.sinks.background._spill_format import Entry
from gradewire.sinks.background._spill_store import SpillStore

__all__ = ["Ledger"]

logger = logging.getLogger("gradewire")


class Ledger:
    """The settled prefix of the pending entries, and the counts the report gives.

    Attributes:
        delivered: Entries the wrapped sink accepted.
        settled: Every entry up to this sequence number is delivered, set aside or lost.
        lost: Entries found missing from the spill files, or kept nowhere at the end.
        lost_reason: Why the last of them was lost.
    """

    def __init__(
        self,
        admission: Admission,
        store: SpillStore,
        aside: SetAside,
        label: str,
        unlocked: Callable[[Callable[[], object]], object],
    ) -> None:
        self._adm = admission
        self._store = store
        self._aside = aside
        self._label = label
        self._unlocked = unlocked  # runs file I/O with the lock released
        self.delivered = 0
        self.settled = 0
        self.lost = 0
        self.lost_reason: str | None = None

    def settle(self, seq: int) -> None:
        self.settled = seq
        memory = self._adm.memory
        while memory and memory[0].seq <= seq:
            memory.popleft()
        self._store.discard(seq)
        self._adm.progress.notify_all()

    def accepted(self, *entries: Entry) -> None:
        self.delivered += len(entries)
        self.settle(entries[-1].seq)

    def set_aside(self, entry: Entry, error: Exception) -> None:
        """Keep ``entry`` apart for good: the sink refused it, and retrying cannot help."""
        text = describe(error)
        self._aside.add(entry, text)
        self.settle(entry.seq)
        self._unlocked(self._aside.save)
        logger.error(
            "%s refused %s for good (%s); it is set aside in %s and delivery goes on",
            self._label,
            "a config" if entry.step is None else f"step {entry.step}",
            text,
            self._aside.path,
        )

    def lose(self, count: int, reason: str) -> None:
        """The next ``count`` entries are gone (``reason`` says how); count them, move on."""
        self.lost += count
        self.lost_reason = reason
        logger.error("%s: %s; they are counted as lost", self._label, reason)
        self.settle(self.settled + count)

    def lose_memory(self, spill_error: str | None) -> None:
        """At the end: what is still in memory could not be written anywhere."""
        memory = self._adm.memory
        if not memory:
            return
        count = len(memory)
        self.lost += count
        self.lost_reason = (
            f"{count} entries were still in memory at close() and the spill file in "
            f"{self._store.directory} could not be written ({spill_error})"
        )
        logger.error("%s: %s; they are lost", self._label, self.lost_reason)
        memory.clear()
