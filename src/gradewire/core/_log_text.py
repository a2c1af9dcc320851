"""The text a grader keeps for its tables: long values cut when logged, and their size."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["TEXT_VALUE_CHARS", "kept_text", "text_bytes"]

TEXT_VALUE_CHARS = 10_000
"""Characters a bounded grader keeps of one logged text (its head and its tail)."""


def kept_text(record: Mapping[str, Any]) -> tuple[Mapping[str, Any], int]:
    """``record`` with every text over `TEXT_VALUE_CHARS` cut, and its text's size.

    The record is copied only when something is cut; the size is the memory its texts
    take (`sys.getsizeof`, in bytes), numbers and other values left out.
    """
    size = 0
    copy: dict[str, Any] | None = None
    for key, value in record.items():
        if isinstance(value, str):
            if len(value) > TEXT_VALUE_CHARS:
                if copy is None:
                    copy = dict(record)
                value = copy[key] = _cut(value)
            size += sys.getsizeof(value)
    return (record if copy is None else copy), size


def text_bytes(records: Iterable[object]) -> int:
    """The memory the texts of ``records`` take, in bytes (records not dicts count 0)."""
    return sum(
        sys.getsizeof(value)
        for record in records
        if isinstance(record, Mapping)
        for value in record.values()
        if isinstance(value, str)
    )


def _cut(text: str) -> str:
    """The head and the tail of ``text``, marked ``…[N chars cut]…`` in between."""
    keep = TEXT_VALUE_CHARS - len(f"…[{len(text)} chars cut]…")
    head, tail = keep - keep // 2, keep // 2
    return f"{text[:head]}…[{len(text) - head - tail} chars cut]…{text[-tail:]}"
