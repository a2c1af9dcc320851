"""The column store behind `BaseGrader.add_log`: numbers kept as packed float arrays."""

from __future__ import annotations

import math
import numbers
from array import array
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from gradewire.core._stats import LogState, Stats

__all__ = ["ABSTAINED", "ERROR", "TRUNCATED", "LogBuffer"]

# Reserved record keys: a str under "error" marks a sample that failed, a str under
# "abstained" one the grader declined to score. Both are counted, never averaged. A str
# under "truncated" marks a failure whose model reply was cut at its token limit, counted
# in score/truncated_count (beside the error count, not instead of it) once one is seen.
ERROR = "error"
ABSTAINED = "abstained"
TRUNCATED = "truncated"
_PLAIN_NUMBERS = frozenset((float, int, bool))


class LogBuffer:
    """Numeric columns mirrored from a list of log records.

    Every int, float, bool and numpy number in a record is appended to a packed
    ``array('d')`` for its key (8 bytes a value), so aggregating a million values is one
    numpy pass instead of a million dict lookups. The records list itself stays the
    caller's: the buffer notices when it was replaced or edited and rebuilds from it.
    """

    __slots__ = (
        "_append",
        "_last",
        "_n",
        "_records",
        "abstained",
        "columns",
        "errors",
        "truncated",
    )

    def __init__(self, records: list[Any]) -> None:
        self.columns: dict[str, array[float]] = {}
        # Bound `append` of each column: one dict lookup and one call per logged number.
        self._append: dict[str, Callable[[float], None]] = {}
        self.abstained = 0
        self.errors = 0
        self.truncated = 0
        self._records = records
        self._n = 0
        self._last: object = None
        for record in records:
            self.add(record)

    def add(self, record: Mapping[str, Any]) -> None:
        """Take the numbers and event markers of one record."""
        self._n += 1
        self._last = record
        append = self._append
        for key, value in record.items():
            kind = type(value)
            if kind in _PLAIN_NUMBERS:
                try:
                    append[key](value)
                except KeyError:
                    self._column(key)(value)
                except OverflowError:  # an int beyond float range
                    append[key](math.inf if value > 0 else -math.inf)
            elif kind is str:
                if key == ERROR:
                    self.errors += 1
                elif key == ABSTAINED:
                    self.abstained += 1
                elif key == TRUNCATED:
                    self.truncated += 1
            elif isinstance(value, numbers.Real):  # numpy scalars, fractions
                try:
                    number = float(value)
                except (OverflowError, ValueError, TypeError):
                    number = math.nan
                (append.get(key) or self._column(key))(number)

    def _column(self, key: str) -> Callable[[float], None]:
        column = self.columns[key] = array("d")
        self._append[key] = column.append
        return column.append

    def in_sync_with(self, records: list[Any]) -> bool:
        """Whether the buffer still mirrors ``records`` (same list, only appended to)."""
        return (
            records is self._records
            and len(records) == self._n
            and (self._n == 0 or records[-1] is self._last)
        )

    def state(self) -> LogState:
        """The statistics of every numeric key, and the event counts."""
        stats = {
            key: Stats.of(np.array(column, dtype=np.float64))
            for key, column in self.columns.items()
        }
        if self._n == 0:
            return LogState(stats, {})
        # Keep "score/count" on dashboards even when every sample failed or abstained.
        stats.setdefault("score", Stats())
        counts = {"score/abstained_count": self.abstained, "score/error_count": self.errors}
        if self.truncated:
            counts["score/truncated_count"] = self.truncated
        return LogState(stats, counts)
