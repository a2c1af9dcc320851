"""Training processes that are killed, and what they leave: for the adoption and sync tests."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, ClassVar

from mlflow import MlflowClient

from gradewire.sinks import read_spill
from mlflow_support import RunContents
from mlflow_trainer import TABLE_EVERY, logs
from support.processes import SpillChild, child_env

TRAINER = Path(__file__).with_name("mlflow_trainer.py")


class Trainer(SpillChild):
    """A `mlflow_trainer.py` process; any left alive is killed after each test (conftest)."""

    alive: ClassVar[list[Trainer]] = []

    def __init__(self, spill: Path, url: str, *options: str) -> None:
        Trainer.alive.append(self)
        command = [sys.executable, str(TRAINER), str(spill), url, *options]
        super().__init__(command, child_env(TRAINER.parent), "trainer")

    def log(self, first: int, stop: int) -> None:
        self.send(f"log {first} {stop}")
        assert self.line() == "logged"

    def report(self, command: str) -> dict[str, Any]:
        self.send(command)
        word, _, text = self.line().partition(" ")
        assert word in ("flushed", "closed"), word
        result: dict[str, Any] = json.loads(text)
        return result

    def kill(self) -> None:
        if self in Trainer.alive:
            Trainer.alive.remove(self)
        super().kill()


def on_disk(spill: Path) -> set[int]:
    logging.disable(logging.WARNING)  # a line cut by a kill is skipped with a warning
    try:
        return {s for path in spill.glob("*.jsonl") for s, _ in read_spill(path)}
    finally:
        logging.disable(logging.NOTSET)


def in_mlflow(client: MlflowClient, run_id: str) -> set[int]:
    return {int(p.step) for p in client.get_metric_history(run_id, "reward/count")}


def check_exactly_once(run: RunContents, steps: set[int]) -> None:
    """Each step once in every metric and in the table; the values those steps logged."""
    assert sorted(run.history) == ["loss", "reward/count", "reward/mean"]
    for key, points in run.history.items():
        assert [p.step for p in points] == sorted(steps), key
    assert [p.value for p in run.history["reward/count"]] == sorted(steps)
    table_steps = sorted(s for s in steps if s % TABLE_EVERY == 0)
    rows = run.tables.get("reward/samples", [])
    assert [step for step, _ in rows] == [s for s in table_steps for _ in range(2)]
    tables = run.tables_by_step()
    for step in table_steps:
        expected = logs(step)["reward/samples"]
        assert tables[("reward/samples", step)] == expected, step
    pages = sorted(path for path in run.html if path.startswith("tables/reward/samples/"))
    assert pages == [f"tables/reward/samples/step_{s:08d}.html" for s in table_steps]
