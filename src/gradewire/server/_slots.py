"""The server-wide cap on samples being graded at once; requests wait their turn."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Sequence

from gradewire.core._errors import IgnoreGradeException
from gradewire.core._grader import BaseGrader
from gradewire.core._thread import StringThread
from gradewire.server._protocol import Outcome

__all__ = ["GradingSlots"]


class GradingSlots:
    """At most ``size`` samples are graded at once across every request; the rest queue.

    Each graded sample holds a slot. Slots are handed over first come, first served (a
    released slot goes straight to the sample that has waited longest), so a batch of
    4,096 cannot keep a later single-sample request waiting until it is done: the two
    take turns. Ten batches of 64 to a `CommandGrader` run 64 processes at a time, not 640.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._free = size
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def in_use(self) -> int:
        """Samples being graded now."""
        return self.size - self._free

    @property
    def waiting(self) -> int:
        """Samples waiting for a slot."""
        return sum(not waiter.done() for waiter in self._waiters)

    async def attempt_all(
        self, grader: BaseGrader, samples: Sequence[StringThread]
    ) -> list[Outcome]:
        """Grade every sample, in order, keeping why a sample got no grade.

        `BaseGrader.grade_many`'s own path (each sample through the grader's attempt, which
        logs abstentions and errors), with the reason kept instead of None.
        """
        if len(samples) == 1:  # /v1/grade: no workers to set up
            await self._acquire()
            try:
                return [await grader._attempt(samples[0])]
            finally:
                self._release()
        outcomes: list[Outcome] = [IgnoreGradeException("not graded")] * len(samples)
        pending = iter(enumerate(samples))

        async def work() -> None:
            for index, sample in pending:
                await self._acquire()
                try:
                    outcomes[index] = await grader._attempt(sample)
                finally:
                    self._release()

        workers = min(self.size, len(samples))
        if workers == 1:
            await work()
        elif workers > 1:
            await asyncio.gather(*(work() for _ in range(workers)))
        return outcomes

    async def _acquire(self) -> None:
        if self._free and not self._waiters:
            self._free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed a slot as it was cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):  # a release may have dropped it already
                    self._waiters.remove(waiter)
            raise

    def _release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot changes hands; _free stays as it is
                return
        self._free += 1
