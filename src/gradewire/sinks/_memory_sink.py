"""MemorySink: keeps every step in memory, for tests and notebooks."""

from __future__ import annotations

import copy
from typing import Any

from gradewire.core._logging_core import LogValue
from gradewire.core._table import Table
from gradewire.sinks._base_sink import BaseSink
from gradewire.sinks._step_history import StepHistory
from gradewire.sinks._table_policy import TablePolicy

__all__ = ["MemorySink"]


class MemorySink(BaseSink, StepHistory):
    """A sink that keeps what it is given, step by step.

    Tables are copied when they are stored, so changing a table after logging it does not
    change what the sink holds.

    Attributes:
        steps: One ``(step, logs)`` pair per logged call, in order.
        config: Every `log_config` call merged, later keys winning.
        alerts: One ``(title, text, tags)`` per `alert` call, in order.

    Example:
        >>> sink = MemorySink()
        >>> sink.log({"score/mean": 0.5}, step=1)
        >>> sink.metric("score/mean")
        [(1, 0.5)]
    """

    def __init__(self, *, table_policy: TablePolicy | None = None, all_ranks: bool = False) -> None:
        """Create an empty sink.

        Args:
            table_policy: Applied before storing; None stores tables as they are.
            all_ranks: Store on every process, not only on rank 0.
        """
        super().__init__(table_policy=table_policy, all_ranks=all_ranks)
        self.steps: list[tuple[int, dict[str, LogValue]]] = []
        self.config: dict[str, Any] = {}
        self.alerts: list[tuple[str, str, dict[str, str]]] = []

    def _write(self, logs: dict[str, LogValue], step: int) -> None:
        stored = {k: copy.copy(v) if isinstance(v, Table) else v for k, v in logs.items()}
        self.steps.append((step, stored))

    def _write_config(self, config: dict[str, Any]) -> None:
        for key, value in config.items():
            try:
                self.config[key] = copy.deepcopy(value)
            except Exception:
                self.config[key] = value  # not copyable (a lock, a client): keep the object

    def _write_alert(self, title: str, text: str, tags: dict[str, str]) -> None:
        self.alerts.append((title, text, dict(tags)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(steps={len(self.steps)}, closed={self.closed})"
