"""``gradewire eval --engine ray``: the eval runner's grading step, on a Ray actor pool.

Everything but the grading is the local runner's: which samples still need which
graders (resumption), the run folder's results file, the statistics and the report.
Results are written as Ray hands them back, so an interrupted run keeps what it graded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gradewire import BaseGrader, InvalidInputError
from gradewire.eval import EvalDisplay, EvalSample, GradeOutcome, GradingReport
from gradewire.eval.grading._grading_loop import _on_sigint, start_grading
from gradewire.eval.runs._folder import ResultsWriter
from gradewire_ray._ray import import_ray, pickle, quiet_ray_data, start_ray

__all__ = ["RayEngine", "ray_engine"]

_DONE = object()


class RayEngine:
    """Grades an eval's samples on Ray actors; the `run_eval` ``engine`` for Ray.

    Attributes:
        address: The Ray cluster to connect to (None: the running instance, else a new
            local one, shut down at the end).
        actors: How many actors grade; ``concurrency`` samples are spread over them.
    """

    def __init__(self, *, address: str | None = None, actors: int = 2) -> None:
        if isinstance(actors, bool) or not isinstance(actors, int) or actors < 1:
            raise InvalidInputError(f"actors must be an int >= 1, not {actors!r}")
        import_ray("grade an eval on Ray")  # a missing extra fails here, before any grading
        self.address = address
        self.actors = actors

    async def __call__(
        self,
        samples: Sequence[EvalSample],
        graders: Sequence[BaseGrader],
        folder: Path,
        *,
        concurrency: int = 32,
        retry_errors: bool = False,
        display: EvalDisplay | None = None,
        timeout: float | None = None,
    ) -> GradingReport:
        """Grade what the folder lacks and append the results, as the local runner does."""
        by_key, hashes, todo, skipped, writer = start_grading(
            samples,
            graders,
            folder,
            concurrency=concurrency,
            retry_errors=retry_errors,
            display=display,
        )
        stop = threading.Event()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        interrupted = False

        def interrupt() -> None:
            # Ctrl-C: keep what was written, abandon the batches Ray has in flight.
            nonlocal interrupted
            interrupted = True
            stop.set()
            queue.put_nowait(_DONE)
            if display is not None:
                display.stopping(0)

        graded = 0
        try:
            if todo:
                with _on_sigint(interrupt):
                    graded = await self._grade(
                        todo,
                        list(by_key.values()),
                        hashes,
                        (concurrency, timeout),
                        writer,
                        display,
                        stop,
                        queue,
                    )
        finally:
            writer.close()
            if display is not None:
                display.stop()
        return GradingReport(graded, skipped, interrupted, 0)

    async def _grade(
        self,
        todo: Sequence[tuple[EvalSample, tuple[str, ...]]],
        graders: Sequence[BaseGrader],
        hashes: dict[str, str],
        limits: tuple[int, float | None],
        writer: ResultsWriter,
        display: EvalDisplay | None,
        stop: threading.Event,
        queue: asyncio.Queue[Any],
    ) -> int:
        ray, started = start_ray(self.address, "grade an eval on Ray")
        quiet_ray_data(ray)
        try:
            dataset = _graded(ray, todo, graders, hashes, limits, self.actors)
            loop = asyncio.get_running_loop()
            # Ray's iterator blocks: it runs in a thread of its own and hands rows over.
            reader = threading.Thread(
                target=_read, args=(dataset, loop, queue, stop), name="gradewire-ray", daemon=True
            )
            reader.start()
            graded = 0
            while not stop.is_set():
                row = await queue.get()
                if row is _DONE:
                    break
                if isinstance(row, BaseException):
                    raise row
                outcomes = {
                    key: GradeOutcome.from_json(value, input_hash=row["input_hash"])
                    for key, value in json.loads(row["grades"]).items()
                }
                writer.write(row["id"], row["input_hash"], json.loads(row["input"]), outcomes)
                graded += 1
                if display is not None:
                    for key, outcome in outcomes.items():
                        display.outcome(key, outcome)
                    display.sample_done()
            return graded
        finally:
            stop.set()
            if started:
                ray.shutdown()


def _graded(
    ray: Any,
    todo: Sequence[tuple[EvalSample, tuple[str, ...]]],
    graders: Sequence[BaseGrader],
    hashes: dict[str, str],
    limits: tuple[int, float | None],
    actors: int,
) -> Any:
    from gradewire_ray._eval_batches import EvalBatches

    concurrency, timeout = limits

    items = [
        {
            "id": sample.id,
            "input_hash": sample.input_hash,
            "input": json.dumps(sample.thread.to_dict(), ensure_ascii=True),
            "keys": json.dumps(keys),
        }
        for sample, keys in todo
    ]
    per_actor = max(1, math.ceil(concurrency / actors))
    return ray.data.from_items(items).map_batches(
        EvalBatches,
        fn_constructor_kwargs={
            "graders": pickle(list(graders)),
            "hashes": hashes,
            "concurrency": per_actor,
            "timeout": timeout,
        },
        batch_size=max(8, 2 * per_actor),
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=0.5,
    )


def _read(
    dataset: Any, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any], stop: threading.Event
) -> None:
    try:
        for batch in dataset.iter_batches(batch_format="pyarrow", batch_size=None):
            for row in batch.to_pylist():
                loop.call_soon_threadsafe(queue.put_nowait, row)
            if stop.is_set():
                break
        item: Any = _DONE
    except BaseException as exc:  # handed to the writer's side, which raises it
        item = exc
    # RuntimeError: the loop is gone, and nobody is waiting any more.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(queue.put_nowait, item)


def ray_engine(*, address: str | None = None, actors: int = 2) -> RayEngine:
    """The Ray engine for `run_eval` (``gradewire eval --engine ray`` builds it)."""
    return RayEngine(address=address, actors=actors)
