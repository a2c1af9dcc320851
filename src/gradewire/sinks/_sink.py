"""The sink contract: where `get_logs()` output goes (trackers, files, memory)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from gradewire.core._logging_core import LogValue

__all__ = ["Logs", "Sink", "StepLogs"]

Logs = Mapping[str, LogValue]
"""What a sink receives: exactly what `BaseGrader.get_logs()` returns."""

StepLogs = tuple[int, Logs]
"""One step's logs, as batching sinks receive them: ``(step, logs)``."""


@runtime_checkable
class Sink(Protocol):
    """Anything that takes grader logs step by step.

    Keys look like ``judge/score/mean``; values are numbers (ints for counts) or `Table`s.
    A sink may also define ``log_many(entries: Sequence[StepLogs])`` to take several steps
    in one call; `BackgroundSink` uses it to send in batches.

    Steps must not decrease: a step lower than the last one raises `InvalidInputError`
    (W&B would drop it with only a warning); logging the same step again adds to it. After
    `close()`, `log` and `log_config` raise `SinkError`. Bad input raises
    `InvalidTypeError` / `InvalidInputError` before anything is written.
    """

    def log(self, logs: Logs, step: int) -> None:
        """Record the logs of one step."""

    def log_config(self, config: Mapping[str, Any]) -> None:
        """Record the run's configuration (grader specs, hyperparameters)."""

    def close(self) -> None:
        """Deliver what is pending and release resources; later calls do nothing."""


class BatchSink(Sink, Protocol):
    """A sink that can take several steps at once."""

    def log_many(self, entries: Sequence[StepLogs]) -> None:
        """Record several steps, in the order given."""
