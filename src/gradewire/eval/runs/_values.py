"""What a data row may hold, and how each value is stored in the run folder as JSON.

A row is stored in ``results.jsonl`` as the graders saw it, so every value must be one JSON
can hold. Values that JSON lacks are mapped the same way every time (so a resumed run
finds the same input), and the graders see the mapped value, never the original:

======================================  ===================================================
in the data                              stored and graded as
======================================  ===================================================
NaN (float, Decimal), NaT, ``pd.NA``     ``null``: the missing-value marker of pandas/Arrow
``datetime``, ``date``, ``time``         ISO 8601 text (``2024-05-01T12:30:00+00:00``)
``timedelta``                            seconds, as a float
``Decimal``                              its exact digits, as text (``"12.50"``)
``bytes``                                base64 text (standard alphabet, padded)
tuples, NumPy scalars and arrays         lists and plain numbers
======================================  ===================================================

A grade is stored by the same rule (`grade_outcome`): what a grader puts in ``Grade.info``
reaches the results line as the table says, and a value refused below makes that
outcome an error instead of a crash writing the line.

Refused up front, with the row and the field: ``Infinity`` (JSON has no such number, and
no other value would mean the same), integers longer than Python reads back
(`sys.get_int_max_str_digits`), values nested more than `MAX_DEPTH` levels, object keys
that are not text, and any other type (a set, an arbitrary object).
"""

from __future__ import annotations

import base64
import datetime as dt
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from gradewire.core import InvalidInputError

__all__ = ["MAX_DEPTH", "TooLongInteger", "ValueRefused", "field_path", "stored_value"]

MAX_DEPTH = 100
"""How deep lists and objects may nest in a row (serde_json stops at 128, Python near 1,000)."""


class ValueRefused(InvalidInputError):
    """A value no JSON can store faithfully; the message names the field."""


class TooLongInteger:
    """An integer literal too long for `int` (JSON readers hand it over as this)."""

    __slots__ = ("digits",)

    def __init__(self, digits: str) -> None:
        self.digits = digits


def field_path(path: tuple[str | int, ...]) -> str:
    """``'a'['b'][0]``: where a value sits in a row."""
    head, *rest = path
    return repr(head) + "".join(f"[{part!r}]" for part in rest)


def stored_value(value: Any, path: tuple[str | int, ...]) -> Any:
    """``value`` as the run folder stores it (see the module's table).

    Args:
        value: A value of a data row.
        path: Where it sits (the field's name, then keys and indexes), for messages.

    Raises:
        ValueRefused: The value (or one inside it) cannot be stored; the message says
            which and how to fix it.
    """
    return _stored(value, path, 0)


def _stored(value: Any, path: tuple[str | int, ...], depth: int) -> Any:
    kind = type(value)
    if value is None or kind is str or kind is bool:
        return value
    if kind is int:
        return _checked_int(value, path)
    if kind is float:
        return _checked_float(value, path)
    if isinstance(value, (list, tuple, Mapping)):
        if depth >= MAX_DEPTH:
            raise ValueRefused(
                f"field {field_path(path)} is nested more than {MAX_DEPTH} levels deep; "
                "flatten it or store it as text"
            )
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if type(key) is not str:
                    raise ValueRefused(
                        f"field {field_path(path)} has the key {key!r} "
                        f"({type(key).__name__}); JSON object keys are text, so use str keys"
                    )
                out[key] = _stored(item, (*path, key), depth + 1)
            return out
        return [_stored(item, (*path, index), depth + 1) for index, item in enumerate(value)]
    return _other(value, path, depth)


def _other(value: Any, path: tuple[str | int, ...], depth: int) -> Any:
    """Values that are not plain JSON types: subclasses, dates, bytes, NumPy, pandas."""
    if isinstance(value, bool | str):
        return _stored(bool(value) if isinstance(value, bool) else str(value), path, depth)
    if isinstance(value, TooLongInteger):
        raise ValueRefused(_too_long(path, len(value.digits.lstrip("+-"))))
    if isinstance(value, int):
        return _checked_int(int(value), path)
    if isinstance(value, float):
        return _checked_float(float(value), path)
    if isinstance(value, Decimal):
        if value.is_nan():
            return None
        if value.is_infinite():
            raise ValueRefused(_infinite(path, value < 0))
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        # pandas' NaT is a datetime that is not equal to itself: missing, as NaN is.
        return None if value != value else value.isoformat()
    if isinstance(value, dt.timedelta):
        return None if value != value else value.total_seconds()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    module = type(value).__module__.split(".")[0]
    if module == "numpy" and hasattr(value, "tolist"):
        return _stored(value.tolist(), path, depth)  # a scalar's tolist() is a Python number
    if module == "pandas" and type(value).__name__ == "NAType":
        return None
    if isinstance(value, set | frozenset):
        raise ValueRefused(
            f"field {field_path(path)} is a set, which JSON cannot store in a stable order; "
            "use a list"
        )
    raise ValueRefused(
        f"field {field_path(path)} is a {type(value).__name__}, which cannot be stored in the "
        "run folder; use text, numbers, booleans, null, lists and objects"
    )


def _checked_int(value: int, path: tuple[str | int, ...]) -> int:
    if value.bit_length() > 10_000:  # about 3,000 digits: only then can str() refuse
        try:
            str(value)
        except ValueError:
            raise ValueRefused(_too_long(path, _digits(value))) from None
    return value


def _digits(value: int) -> int:
    # Python's limit forbids str() here; the digit count comes from the bit length.
    count = int(abs(value).bit_length() * math.log10(2)) + 1
    return count if abs(value) >= 10 ** (count - 1) else count - 1


def _checked_float(value: float, path: tuple[str | int, ...]) -> float | None:
    if math.isnan(value):
        return None
    if math.isinf(value):
        raise ValueRefused(_infinite(path, value < 0))
    return value


def _infinite(path: tuple[str | int, ...], negative: bool) -> str:
    sign = "-" if negative else ""
    return (
        f"field {field_path(path)} is {sign}Infinity, which JSON cannot store; write it as "
        "a finite number, as text, or as null"
    )


def _too_long(path: tuple[str | int, ...], digits: int) -> str:
    return (
        f"field {field_path(path)} is an integer of {digits} digits, longer than Python "
        "reads back safely; store it as text"
    )
