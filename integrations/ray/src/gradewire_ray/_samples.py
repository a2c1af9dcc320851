"""A bounded sample of graded rows for the tables: best, worst and a spread between.

Each block keeps at most ``k`` scored rows (the best, the worst and an even spread over
its rows sorted by score, as `TablePolicy` samples a table) and ``k`` unscored ones; two
samples merge by pooling and choosing again. The best and worst rows of the whole data
set are always kept; the rows between spread over the scores seen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from gradewire.sinks._table_policy import cut_text, spread_positions

__all__ = ["Failed", "Scored", "choose_failed", "choose_scored", "cut"]

Scored = tuple[float, str, str, str]
"""A scored row: value, prompt, completion, reasoning."""

Failed = tuple[str, str, str, str]
"""An unscored row: status (``error`` or ``abstained``), message, prompt, completion."""


def cut(text: str | None, limit: int | None) -> str:
    """``text`` ("" for None) cut to the table cell limit, so samples stay small."""
    value = "" if text is None else text
    return value if limit is None else cut_text(value, limit)


def _score_order(row: Sequence[Any]) -> tuple[bool, float, str, str, str]:
    value = float(row[0])
    # NaN sorts last, as in TablePolicy; ties break on the text, so the choice is stable.
    return (math.isnan(value), 0.0 if math.isnan(value) else value, row[1], row[2], row[3])


def choose_scored(rows: Sequence[Sequence[Any]], k: int) -> list[Scored]:
    """At most ``k`` rows: the lowest, the highest and an even spread between."""
    ordered = sorted(rows, key=_score_order)
    return [_scored(ordered[i]) for i in spread_positions(len(ordered), k)] if ordered else []


def choose_failed(rows: Sequence[Sequence[Any]], k: int) -> list[Failed]:
    """At most ``k`` unscored rows, spread over them in a stable order."""
    ordered = sorted(tuple(str(c) for c in row) for row in rows)
    return [_failed(ordered[i]) for i in spread_positions(len(ordered), k)] if ordered else []


def _scored(row: Sequence[Any]) -> Scored:
    return (float(row[0]), str(row[1]), str(row[2]), str(row[3]))


def _failed(row: Sequence[Any]) -> Failed:
    return (str(row[0]), str(row[1]), str(row[2]), str(row[3]))
