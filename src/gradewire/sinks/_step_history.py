"""Reading logged steps back by key: shared by MemorySink and JsonlRun."""

from __future__ import annotations

from gradewire.core._histogram import Histogram
from gradewire.core._logging_core import LogValue
from gradewire.core._table import Table

__all__ = ["StepHistory"]


class StepHistory:
    """``metric``, ``table`` and ``histogram`` over a ``steps`` list of ``(step, logs)`` pairs."""

    steps: list[tuple[int, dict[str, LogValue]]]

    def metric(self, key: str) -> list[tuple[int, float]]:
        """Every ``(step, value)`` of a number logged under ``key`` ([] if none)."""
        return [
            (step, value)
            for step, logs in self.steps
            if key in logs and not isinstance(value := logs[key], Table | Histogram)
        ]

    def table(self, key: str) -> list[tuple[int, Table]]:
        """Every ``(step, table)`` logged under ``key`` ([] if none)."""
        return [
            (step, value) for step, logs in self.steps if isinstance(value := logs.get(key), Table)
        ]

    def histogram(self, key: str) -> list[tuple[int, Histogram]]:
        """Every ``(step, histogram)`` logged under ``key`` ([] if none)."""
        return [
            (step, value)
            for step, logs in self.steps
            if isinstance(value := logs.get(key), Histogram)
        ]
