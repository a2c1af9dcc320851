"""The column store behind `BaseGrader.add_log`: numbers kept as packed float arrays."""

from __future__ import annotations

import math
import numbers
from array import array
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from gradewire.core._log_state import LogState, Stats

__all__ = ["ABSTAINED", "ERROR", "TIMED_OUT", "TRUNCATED", "LogBuffer", "as_logged_number"]

# Reserved record keys: a str under "error" marks a sample that failed, a str under
# "abstained" one the grader declined to score. Both are counted, never averaged. A str
# under "truncated" marks a failure whose model reply was cut at its token limit, counted
# in score/truncated_count (beside the error count, not instead of it) once one is seen. A
# str under "timed_out" marks a failure that was a timeout, counted in score/timeout_count
# the same way.
ERROR = "error"
ABSTAINED = "abstained"
TRUNCATED = "truncated"
TIMED_OUT = "timed_out"
_NOT_A_NUMBER = None


def as_logged_number(value: object) -> float | None:
    """The float a logged value is counted as, or None when it is not a number.

    Every number is counted: Python and numpy bools, ints, floats and complex numbers
    (numpy scalars of every size), fractions and decimals. One that has no finite float
    (an int beyond the float range, a complex number off the real axis, a value whose
    conversion fails) is counted as non-finite, never dropped and never raised.
    """
    if isinstance(value, (str, bytes)):
        return _NOT_A_NUMBER
    if isinstance(value, (bool, np.bool_)):
        return 1.0 if value else 0.0
    if not isinstance(value, numbers.Number):
        return _NOT_A_NUMBER
    try:
        with np.errstate(all="ignore"):
            if isinstance(value, numbers.Integral):
                try:
                    return float(value)
                except OverflowError:
                    return math.inf if int(value) > 0 else -math.inf
            if not isinstance(value, numbers.Real) and isinstance(value, numbers.Complex):
                return float(value.real) if value.imag == 0 else math.nan
            return float(value)  # type: ignore[arg-type]
    except Exception:  # a number type whose conversion fails: counted, as non-finite
        return math.nan


class LogBuffer:
    """Numeric columns mirrored from a list of log records.

    Every number in a record (see `as_logged_number`) is appended to a packed
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
        "timed_out",
        "truncated",
    )

    def __init__(self, records: list[Any]) -> None:
        self.columns: dict[Any, array[float]] = {}
        # Bound `append` of each column: one dict lookup and one call per logged number.
        self._append: dict[Any, Callable[[float], None]] = {}
        self.abstained = 0
        self.errors = 0
        self.truncated = 0
        self.timed_out = 0
        self._records = records
        self._n = 0
        self._last: object = None
        for record in records:
            self.add(record)

    def add(self, record: object) -> None:
        """Take the numbers and event markers of one record; never raises."""
        self._n += 1
        self._last = record
        if type(record) is not dict and not isinstance(record, Mapping):
            return  # kept for the grader's own get_logs(), nothing to count
        try:
            items = list(record.items())
        except Exception:  # a broken Mapping: its record is kept, uncounted
            return
        append = self._append
        for key, value in items:
            kind = type(value)
            if kind is float or kind is bool:
                number: float | None = value
            elif kind is str:
                self._mark(key)
                continue
            elif kind is int:
                number = value
            else:
                number = as_logged_number(value)
                if number is None:
                    if isinstance(value, str):  # a str subclass, such as numpy.str_
                        self._mark(key)
                    continue
            try:
                push = append[key]
            except KeyError:
                push = self._column(key)
            except TypeError:  # an unhashable key in a custom Mapping
                continue
            try:
                push(number)  # type: ignore[arg-type]
            except OverflowError:  # an int beyond the float range
                push(math.inf if number > 0 else -math.inf)  # type: ignore[operator]

    def _mark(self, key: object) -> None:
        """Count an event marker: a str under one of the reserved keys."""
        if key == ERROR:
            self.errors += 1
        elif key == ABSTAINED:
            self.abstained += 1
        elif key == TRUNCATED:
            self.truncated += 1
        elif key == TIMED_OUT:
            self.timed_out += 1

    def _column(self, key: Any) -> Callable[[float], None]:
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

    def state(self, scores: array[float] | None = None) -> LogState:
        """The statistics of every numeric key and the event counts.

        Args:
            scores: ``score`` values logged apart from the records (the fast path of
                function graders), counted with the records' own.
        """
        stats: dict[Any, Stats] = {}
        if scores:
            own = self.columns.get("score")
            values = np.array(scores, dtype=np.float64)
            if own:
                values = np.concatenate((np.array(own, dtype=np.float64), values))
            stats["score"] = Stats.of(values)
        for key, column in self.columns.items():
            if key not in stats:
                stats[key] = Stats.of(np.array(column, dtype=np.float64))
        if self._n == 0 and not scores:
            return LogState(stats, {})
        # Keep "score/count" on dashboards even when every sample failed or abstained.
        stats.setdefault("score", Stats())
        counts = {"score/abstained_count": self.abstained, "score/error_count": self.errors}
        if self.truncated:
            counts["score/truncated_count"] = self.truncated
        if self.timed_out:
            counts["score/timeout_count"] = self.timed_out
        return LogState(stats, counts)
