"""The rows and graders the Ray Data tests grade, their one-process figures, and node loss.

Graders defined here are pickled by reference: Ray's workers import this module (the
tests folder is on their PYTHONPATH). The wrappers that make a grader stall on a worker
node, or record where each batch ran, are closures, which Ray pickles by value.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradewire as gw
from gradewire_ray._rows import default_row_thread

Fn = Callable[[gw.StringThread], Any]


def correct(sample: gw.StringThread) -> float:
    answer = sample.metadata["answer"]
    return float(sample.completion() == str(answer)) * 0.5 + (answer % 7) / 13.0


def flaky(sample: gw.StringThread) -> gw.Grade | None:
    """Abstains on every 11th row, fails on every 17th; values far from 0 (a hard mean)."""
    answer = sample.metadata["answer"]
    if answer % 11 == 0:
        return None
    if answer % 17 == 0:
        raise ValueError(f"no judgement for {answer}")
    return gw.Grade(math.sin(answer) * 1e3 + 1e6, "flaky", reasoning=f"reason {answer}")


def graders() -> list[gw.BaseGrader]:
    return [
        gw.BaseGrader.from_function("correct", correct),
        gw.BaseGrader.from_function("flaky", flaky),
    ]


def rows(n: int) -> list[dict[str, Any]]:
    return [
        {"id": i, "prompt": f"What is {i}?", "completion": str(i if i % 3 else i + 1), "answer": i}
        for i in range(n)
    ]


def local_logs(
    data: list[dict[str, Any]], chosen: list[gw.BaseGrader] | None = None
) -> dict[str, dict[str, Any]]:
    """The same graders over the same rows in this process: what get_logs() says."""
    here = graders() if chosen is None else chosen

    async def grade() -> None:
        threads = [default_row_thread(row) for row in data]
        for grader in here:
            await grader.grade_many(threads)

    asyncio.run(grade())
    return {g.grader_key: dict(g.get_logs()) for g in here}


def assert_same(expected: dict[str, Any], got: dict[str, Any]) -> None:
    """The same numbers under the same keys: counts equal, the others to 1e-12."""
    numbers = {k: v for k, v in expected.items() if isinstance(v, int | float)}
    assert set(numbers) == {k for k, v in got.items() if isinstance(v, int | float)}
    for key, value in numbers.items():
        if key.endswith("count"):
            assert got[key] == value, key
        else:
            assert math.isclose(got[key], value, rel_tol=1e-12, abs_tol=0.0), (key, got[key], value)


def stalls_on_a_worker_node(fn: Fn, marker: Path, head: str, from_answer: int) -> Fn:
    """``fn``, but the first row at or past ``from_answer`` graded off the head node stalls.

    That call writes ``NODE ANSWER`` (its node's id, its row) to ``marker`` and sleeps
    until the node is removed under it (`NodeRemover`); the rows of its batch graded
    before it are logged in the dead attempt's copy of the grader, and nowhere else.
    """

    def stalling(sample: gw.StringThread) -> Any:
        if sample.metadata["answer"] >= from_answer:
            import ray

            node = ray.get_runtime_context().get_node_id()
            if node != head:
                try:
                    descriptor = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    pass  # another row stalls already
                else:
                    os.write(descriptor, f"{node} {sample.metadata['answer']}".encode())
                    os.close(descriptor)
                    time.sleep(3600)
        return fn(sample)

    return stalling


def records_batches(fn: Fn, log: Path, every: int) -> Fn:
    """``fn``, also appending ``ANSWER NODE`` to ``log`` for rows whose answer is a
    multiple of ``every`` (every row with 1), before grading it: where every attempt ran."""

    def recording(sample: gw.StringThread) -> Any:
        answer = sample.metadata["answer"]
        if answer % every == 0:
            import ray

            line = f"{answer} {ray.get_runtime_context().get_node_id()}\n"
            descriptor = os.open(log, os.O_CREAT | os.O_APPEND | os.O_WRONLY)
            try:
                os.write(descriptor, line.encode())  # one short write: never interleaved
            finally:
                os.close(descriptor)
        return fn(sample)

    return recording


class NodeRemover(threading.Thread):
    """Removes the node whose id a stalled grader writes to ``marker`` (see above)."""

    def __init__(self, cluster: Any, marker: Path, limit: float = 600.0) -> None:
        super().__init__(name="node-remover", daemon=True)
        self.cluster = cluster
        self.marker = marker
        self.limit = limit
        self.removed: str | None = None
        """The id of the node removed."""
        self.row = -1
        """The row whose grading stalled on it."""
        self.stop = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + self.limit
        while not self.stop.is_set() and time.monotonic() < deadline:
            if self.marker.exists() and (written := self.marker.read_text().split()):
                victim = written[0]
                node = next(n for n in self.cluster.worker_nodes if n.node_id == victim)
                self.cluster.remove_node(node, allow_graceful=False)
                self.removed = victim
                self.row = int(written[1])
                return
            time.sleep(0.05)

    def finish(self) -> str:
        """The id of the node removed (the test fails if none was)."""
        self.stop.set()
        self.join()
        assert self.removed is not None, "no grader stalled on a worker node: nothing removed"
        return self.removed
