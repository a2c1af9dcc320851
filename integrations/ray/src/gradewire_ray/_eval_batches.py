"""The callable class that grades eval samples in Ray actors, as the local runner does."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from gradewire import BaseGrader, StringThread
from gradewire.eval.grading._outcomes import grade_outcome
from gradewire_ray._ray import unpickle

__all__ = ["EvalBatches"]


class EvalBatches:
    """Grades batches of eval samples: each row's graders run concurrently, as locally.

    A row holds the sample's ``id``, ``input_hash``, ``input`` (the thread as JSON) and
    ``keys`` (the graders it still needs, as JSON); the output row adds ``grades``, the
    outcomes as the run folder stores them. One semaphore per actor bounds the samples
    in flight across the batches Ray runs at once.
    """

    def __init__(
        self,
        graders: bytes,
        hashes: Mapping[str, str],
        concurrency: int,
        timeout: float | None = None,
    ) -> None:
        loaded: list[BaseGrader] = unpickle(graders)
        self._graders = {grader.grader_key: grader for grader in loaded}
        self._hashes = dict(hashes)
        self._concurrency = concurrency
        self._timeout = timeout  # the default for graders that set none
        self._slots: asyncio.Semaphore | None = None

    async def __call__(self, batch: Any) -> Any:
        """The batch with a ``grades`` column."""
        import pyarrow as pa

        if self._slots is None:
            self._slots = asyncio.Semaphore(self._concurrency)
        rows = batch.to_pylist()
        grades = await asyncio.gather(*(self._one(row) for row in rows))
        for grader in self._graders.values():
            grader.clear_logs()  # the run's figures come from the outcomes: keep memory flat
        return batch.append_column("grades", pa.array(grades, pa.string()))

    async def _one(self, row: Mapping[str, Any]) -> str:
        assert self._slots is not None
        thread = StringThread.from_dict(json.loads(row["input"]))
        keys: list[str] = json.loads(row["keys"])
        input_hash: str = row["input_hash"]
        async with self._slots:
            outcomes = await asyncio.gather(
                *(
                    grade_outcome(
                        self._graders[key],
                        thread,
                        self._hashes[key],
                        self._timeout,
                        input_hash=input_hash,
                    )
                    for key in keys
                )
            )
        return json.dumps(
            {key: outcome.to_json() for key, outcome in zip(keys, outcomes, strict=True)},
            ensure_ascii=True,
        )
