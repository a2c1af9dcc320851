"""What a table cell may hold: plain scalars, checked and normalised as they come in."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping, Set
from typing import TypeAlias

from gradewire.core._errors import InvalidTypeError

__all__ = ["Cell", "as_list", "same_cell", "to_cell", "type_name"]

Cell: TypeAlias = str | int | float | bool | None
"""A table cell: a plain scalar, so that every sink can store it as it is."""


def type_name(value: object) -> str:
    cls = type(value)
    module = "" if cls.__module__ == "builtins" else f"{cls.__module__}."
    return module + cls.__qualname__


def to_cell(value: object, column: str) -> Cell:
    original = value
    # numpy scalars only exist once numpy is imported, so a lookup avoids importing it here.
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.generic):
        value = value.item()
    # Subclasses (np.float64, IntEnum, str enums) become the exact builtin so that equality, JSON
    # encoding and sinks only ever see plain values.
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    raise InvalidTypeError(
        f"column {column!r} got a value of type {type_name(original)}; cells must be str, int, "
        "float, bool or None: convert it first, e.g. with str(value) or json.dumps(value)"
    )


def as_list(values: object, what: str, example: str) -> list[object]:
    # A str is iterable but never meant as one value per character; a mapping or a set would
    # silently give its keys or an arbitrary order.
    unordered = isinstance(values, str | bytes | bytearray | Mapping | Set)
    if unordered or not isinstance(values, Iterable):
        raise InvalidTypeError(
            f"{what} must be a list or another ordered sequence, got {type_name(values)}; "
            f"for example {example}"
        )
    return list(values)


def same_cell(a: Cell, b: Cell) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    # Types must match too, so True != 1 != 1.0 and a round trip is checked exactly.
    return type(a) is type(b) and a == b
