"""MemorySink: keeps every step in memory, for tests and notebooks."""

from __future__ import annotations

import copy
import html
from typing import Any

from gradewire.core._logging_core import LogValue
from gradewire.core._table import Table
from gradewire.sinks._base_sink import BaseSink
from gradewire.sinks._console_sink import format_value
from gradewire.sinks._step_history import StepHistory
from gradewire.sinks._table_policy import TablePolicy

__all__ = ["MemorySink"]

_HTML_CELL_CHARS = 500


class MemorySink(BaseSink, StepHistory):
    """A sink that keeps what it is given, step by step.

    Tables are copied when they are stored, so changing a table after logging it does not
    change what the sink holds.

    Attributes:
        steps: One ``(step, logs)`` pair per logged call, in order.
        config: Every `log_config` call merged, later keys winning.

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

    def _write(self, logs: dict[str, LogValue], step: int) -> None:
        stored = {k: copy.copy(v) if isinstance(v, Table) else v for k, v in logs.items()}
        self.steps.append((step, stored))

    def _write_config(self, config: dict[str, Any]) -> None:
        for key, value in config.items():
            try:
                self.config[key] = copy.deepcopy(value)
            except Exception:
                self.config[key] = value  # not copyable (a lock, a client): keep the object

    def _repr_html_(self) -> str:
        if not self.steps:
            return f"<p>{html.escape(type(self).__name__)}: nothing logged yet</p>"
        step, logs = self.steps[-1]
        parts = [
            f"<p><b>{html.escape(type(self).__name__)}</b>: {len(self.steps)} logged, "
            f"last step {step}</p>",
            '<table style="border-collapse: collapse; font-family: sans-serif; font-size: 13px">',
        ]
        for key, value in logs.items():
            if not isinstance(value, Table):
                parts.append(
                    f'<tr><td style="padding: 2px 8px">{html.escape(key)}</td>'
                    f'<td style="padding: 2px 8px; text-align: right">'
                    f"{html.escape(format_value(value))}</td></tr>"
                )
        parts.append("</table>")
        for key, value in logs.items():
            if isinstance(value, Table):
                parts.append(f"<p><b>{html.escape(key)}</b> ({len(value)} rows)</p>")
                parts.append(value.to_html(max_cell_chars=_HTML_CELL_CHARS))
        return "\n".join(parts)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(steps={len(self.steps)}, closed={self.closed})"
