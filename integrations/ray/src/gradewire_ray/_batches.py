"""The callable class Ray Data runs in each actor: grade a batch, add its columns and logs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from gradewire import BaseGrader, Grade, StringThread
from gradewire_ray._ray import unpickle
from gradewire_ray._rows import STATE_COLUMN, OutcomeColumns, RowToThread, column_names

__all__ = ["GradeBatches"]


class GradeBatches:
    """Grades Ray Data batches (pyarrow tables) with copies of the graders.

    Ray Data awaits an async ``__call__`` only on a callable class, and runs several
    batches of one actor at once on the actor's event loop. Each batch in flight gets a
    copy of the graders of its own (unpickled from the same bytes), so the log state it
    returns holds its own samples and no other batch's: that state travels in the batch's
    output rows, so a batch that Ray runs again after a worker died replaces the lost
    attempt instead of adding to it. One semaphore per actor bounds the samples in flight
    across its batches.
    """

    def __init__(self, graders: bytes, to_thread: bytes, concurrency: int) -> None:
        self._payload = graders
        self._to_thread: RowToThread = unpickle(to_thread)
        self._concurrency = concurrency
        self._free: list[list[BaseGrader]] = []
        self._slots: asyncio.Semaphore | None = None

    def _graders(self) -> list[BaseGrader]:
        if self._free:
            return self._free.pop()
        graders: list[BaseGrader] = unpickle(self._payload)
        return graders

    async def __call__(self, batch: Any) -> Any:
        """The batch with each grader's columns and the batch's log states added."""
        import pyarrow as pa

        if self._slots is None:
            self._slots = asyncio.Semaphore(self._concurrency)  # on the actor's own loop
        graders = self._graders()
        try:
            for grader in graders:
                grader.clear_logs()
            rows = batch.to_pylist()
            threads = [self._thread(row, graders) for row in rows]
            outcomes = await asyncio.gather(*(self._grade(graders, t) for t in threads))
            states = {g.grader_key: g.log_state(clear=True).to_dict() for g in graders}
        finally:
            self._free.append(graders)
        table = batch
        for index, grader in enumerate(graders):
            columns = OutcomeColumns.of([o[index] for o in outcomes])
            value, status, reasoning, error = column_names(grader.grader_key)
            table = table.append_column(value, pa.array(columns.value, pa.float64()))
            table = table.append_column(status, pa.array(columns.status, pa.string()))
            table = table.append_column(reasoning, pa.array(columns.reasoning, pa.string()))
            table = table.append_column(error, pa.array(columns.error, pa.string()))
        state: list[str | None] = [None] * len(rows)
        if rows:
            state[0] = json.dumps(states)
        return table.append_column(STATE_COLUMN, pa.array(state, pa.string()))

    def _thread(
        self, row: dict[str, Any], graders: Sequence[BaseGrader]
    ) -> StringThread | Exception:
        try:
            return self._to_thread(row)
        except Exception as exc:
            # A row that is no sample is a failure of every grader, counted as one.
            message = f"{type(exc).__name__}: {exc}"
            for grader in graders:
                grader.add_log({"error": message})
            return exc

    async def _grade(
        self, graders: Sequence[BaseGrader], thread: StringThread | Exception
    ) -> list[Grade | BaseException]:
        if isinstance(thread, Exception):
            return [thread] * len(graders)
        assert self._slots is not None
        async with self._slots:
            # The one attempt method every grader shares: it logs and returns, never raises.
            results = await asyncio.gather(*(g._attempt(thread) for g in graders))
        return list(results)
