"""The scored/unscored sample tables built from log records."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gradewire.core._log_buffer import ABSTAINED, ERROR
from gradewire.core._table import Cell, Table

__all__ = ["sample_tables", "split_records"]

_Record = Mapping[str, Any]


def split_records(records: Sequence[_Record]) -> tuple[list[_Record], list[_Record]]:
    """The scored records, and those of samples that failed or abstained."""
    scored = [r for r in records if "score" in r and not _is_event(r, ERROR)]
    unscored = [r for r in records if _is_event(r, ERROR) or _is_event(r, ABSTAINED)]
    return scored, unscored


def sample_tables(
    successful: Sequence[_Record], failed: Sequence[_Record]
) -> dict[str, float | Table]:
    """``score/scored_samples`` and ``score/unscored_samples`` tables, and their counts."""
    scored = _sample_table(
        successful,
        {
            "Reasoning": lambda log: _text(log.get("reasoning")),
            "Score": lambda log: _number(log.get("score")),
        },
    )
    tables: dict[str, float | Table] = {"score/scored_samples": scored}
    if failed:
        tables["score/unscored_samples"] = _sample_table(failed, {"Error": _failure})
    tables["score/scored_samples_count"] = len(successful)
    tables["score/unscored_samples_count"] = len(failed)
    return tables


def _sample_table(
    logs: Sequence[_Record], columns: Mapping[str, Callable[[_Record], Cell]]
) -> Table:
    """Prompt, Completion (when any log has one), then ``columns``, a row per log."""
    cells: dict[str, Callable[[_Record], Cell]] = {"Prompt": lambda log: _text(log.get("prompt"))}
    if any("completion" in log for log in logs):
        cells["Completion"] = lambda log: _text(log.get("completion"))
    cells.update(columns)
    table = Table(initial_headers=list(cells))
    for log in logs:
        table.add_row([cell(log) for cell in cells.values()])
    return table


def _failure(log: _Record) -> str:
    error = log.get(ERROR)
    if error is None and ABSTAINED in log:
        return f"abstained: {log[ABSTAINED]}"
    return _text(error)


def _is_event(log: _Record, key: str) -> bool:
    return isinstance(log.get(key), str)


def _text(value: object) -> str:
    return "" if value is None else value if isinstance(value, str) else str(value)


def _number(value: object) -> float | None:
    try:
        return None if value is None else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
