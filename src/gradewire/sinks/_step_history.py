"""Reading logged steps back by key: shared by MemorySink and JsonlRun."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gradewire.core._errors import InvalidInputError, MissingDependencyError
from gradewire.core._histogram import Histogram
from gradewire.core._logging_core import LogValue
from gradewire.core._table import Table
from gradewire.sinks._history_view import render_history

if TYPE_CHECKING:
    import pandas as pd

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

    def to_pandas(self, table: str | None = None) -> pd.DataFrame:
        """The logged numbers as a DataFrame, one row per logged step; or one table's rows.

        Args:
            table: None: a ``step`` column and one column per number key (empty where a
                step did not log it). A table key (such as ``"score/scored_samples"``):
                the rows of every table logged under it, stacked, after a ``step``
                column; the sample tables carry ``Prompt``, ``Completion``,
                ``Reasoning`` and ``Score``.

        Raises:
            InvalidInputError: No table was logged under ``table`` (the message lists
                the table keys), or the tables of that key have different headers.
            MissingDependencyError: pandas is not installed (the message has the pip command).
        """
        try:
            import pandas
        except ImportError:
            raise MissingDependencyError(
                "pandas", extra="pandas", purpose="turn logged steps into a DataFrame"
            ) from None
        if table is None:
            rows = [
                {
                    "step": step,
                    **{k: v for k, v in logs.items() if not isinstance(v, Table | Histogram)},
                }
                for step, logs in self.steps
            ]
            numbers: pd.DataFrame = pandas.DataFrame(rows, columns=self._number_keys())
            return numbers
        found = self.table(table)
        if not found:
            keys = sorted(
                {k for _, logs in self.steps for k, v in logs.items() if isinstance(v, Table)}
            )
            raise InvalidInputError(
                f"no table was logged under {table!r}; the table keys are {keys}"
            )
        headers = found[0][1].headers
        for step, logged in found:
            if logged.headers != headers:
                raise InvalidInputError(
                    f"the {table!r} tables have different headers ({headers} at step "
                    f"{found[0][0]}, {logged.headers} at step {step}); read them one at a "
                    "time with table()"
                )
        if "step" in headers:
            raise InvalidInputError(
                f"the {table!r} tables have a column named 'step' already; read them with table()"
            )
        stacked: pd.DataFrame = pandas.DataFrame(
            [[step, *row] for step, logged in found for row in logged.rows],
            columns=["step", *headers],
        )
        return stacked

    def _number_keys(self) -> list[str]:
        keys: dict[str, None] = {"step": None}
        for _, logs in self.steps:
            keys.update((k, None) for k, v in logs.items() if not isinstance(v, Table | Histogram))
        return list(keys)

    def _repr_html_(self) -> str:
        return render_history(type(self).__name__, self.steps)
