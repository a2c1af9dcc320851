"""How a grader stores its log records: score-only records packed, the rest as given."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any, Generic

from typing_extensions import TypeVar

from gradewire.core._log_buffer import LogBuffer

__all__ = ["CompactRecords", "LogT", "ScoreRun"]

LogT = TypeVar("LogT", default=dict[str, Any])
"""The type of a grader's log records (``BaseGrader[MyRecord]``); a dict by default."""


class ScoreRun:
    """Where a run of score-only records ends in the packed scores (a compact record)."""

    __slots__ = ("end",)

    def __init__(self, end: int) -> None:
        self.end = end


class CompactRecords(Generic[LogT]):
    """The record store under `LoggingCore`: packed scores until ``self._logs`` is read.

    A function grader's ``{"score": value}`` records cost 8 bytes each and nothing to free
    on clear; reading ``self._logs`` turns the store into the plain list it gives out.
    A grader with a bound (records or bytes) keeps the plain list from the start.
    """

    _max_log_records: int | None
    _max_log_bytes: int | None

    def _reset_records(self) -> None:
        # Compact mode: _records holds the logged records and ScoreRun marks, never shown;
        # _scores the score-only records, packed. Listed mode: _records is the list that
        # ``self._logs`` gave out (or that user code assigned), mirrored by _log_buffer.
        records: list[Any] = []
        self._records = records
        self._listed = False
        self._scores: array[float] = array("d")
        self._marked = 0
        self._log_buffer = LogBuffer(records)
        # The packed append of a score-only record, or None when records must be dicts.
        self._score_push: Callable[[float], None] | None = (
            self._scores.append if not self._bounded() else None
        )

    def _bounded(self) -> bool:
        return self._max_log_records is not None or self._max_log_bytes is not None

    def __getstate__(self) -> dict[str, Any]:
        # The packed append is a bound method of the array: rebound on the copy's own array
        # (deepcopy would keep the original's).
        state = dict(self.__dict__)
        state.pop("_score_push", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        packed = not self._listed and not self._bounded()
        self._score_push = self._scores.append if packed else None

    @property
    def _logs(self) -> list[LogT]:
        """The logged records, in order (score-only records as ``{"score": value}``)."""
        if not self._listed:
            self._list_records()
        return self._records

    @_logs.setter
    def _logs(self, records: list[LogT]) -> None:
        self._records = records
        self._listed = True
        self._scores = array("d")
        self._marked = 0
        self._score_push = None
        # Rebuilt from the list when the statistics are next asked for.

    def _list_records(self) -> None:
        """Turn the compact records into the plain list ``self._logs`` gives out."""
        scores = self._scores
        records = self._records
        if scores:
            listed: list[Any] = []
            start = 0
            for record in records:
                if type(record) is ScoreRun:
                    listed.extend([{"score": value} for value in scores[start : record.end]])
                    start = record.end
                else:
                    listed.append(record)
            listed.extend([{"score": value} for value in scores[start:]])
            self._log_buffer = LogBuffer(listed)
            records = listed
        self._records = records
        self._listed = True
        self._scores = array("d")
        self._marked = 0
        self._score_push = None
