"""Data rows as threads, and one grader's outcomes as the columns added to a batch."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradewire import Grade, IgnoreGradeException, StringThread
from gradewire.eval.runs._samples import RowShape, sample_from_row

__all__ = ["STATE_COLUMN", "OutcomeColumns", "RowToThread", "column_names", "default_row_thread"]

RowToThread = Callable[[Mapping[str, Any]], StringThread]
"""Turns one data row (a dict of plain Python values) into the thread the graders score."""

STATE_COLUMN = "__gradewire_state__"
"""The column that carries each batch's log states (set on a batch's first row only)."""


def default_row_thread(row: Mapping[str, Any], shape: RowShape | None = None) -> StringThread:
    """A row as `gradewire eval` reads one: ``messages``, or ``prompt`` and ``completion``.

    Every other field becomes metadata (``answer``, ``documents``, ...). Null fields are
    left out: a columnar dataset fills the fields a row lacks with nulls. ``shape`` names
    other prompt and completion fields (`gradewire.eval.DataOptions`); a row with no
    completion raises, unless prompt-only rows were asked for.
    """
    present = {key: value for key, value in row.items() if value is not None}
    _, thread = sample_from_row(present, "a data set row", shape)
    return thread


def column_names(grader_key: str) -> tuple[str, str, str, str]:
    """The value, status, reasoning and error columns of a grader."""
    return (
        f"{grader_key}/value",
        f"{grader_key}/status",
        f"{grader_key}/reasoning",
        f"{grader_key}/error",
    )


@dataclass
class OutcomeColumns:
    """One grader's outcomes on a batch, column by column.

    ``value`` is None where the grader gave no score (NaN stays NaN); ``status`` is ``ok``,
    ``error`` or ``abstained``; ``reasoning`` is the grade's reasoning (the reason, for an
    abstention); ``error`` the error message.
    """

    value: list[float | None]
    status: list[str]
    reasoning: list[str | None]
    error: list[str | None]

    @classmethod
    def of(cls, outcomes: Sequence[Grade | BaseException]) -> OutcomeColumns:
        """The columns of each sample's grade or exception."""
        columns = cls([], [], [], [])
        for outcome in outcomes:
            if isinstance(outcome, Grade):
                columns.value.append(outcome.value)  # NaN and inf too: the logs count them
                columns.status.append("ok")
                columns.reasoning.append(outcome.reasoning)
                columns.error.append(None)
            elif isinstance(outcome, IgnoreGradeException):
                columns.value.append(None)
                columns.status.append("abstained")
                columns.reasoning.append(outcome.reason)
                columns.error.append(None)
            else:
                columns.value.append(None)
                columns.status.append("error")
                columns.reasoning.append(None)
                columns.error.append(f"{type(outcome).__name__}: {outcome}")
        return columns
