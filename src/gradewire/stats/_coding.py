"""Labels coded for a level of measurement: categories in their order, or numbers.

Nominal and ordinal labels become the positions of their categories (in the order given,
else sorted); interval labels become numbers. Labels that would compare wrongly are refused
here, before any statistic: strings mixed with numbers, bools mixed with numbers on a
categorical scale (``True == 1`` would merge two categories), strings on an ordinal scale
with no order given (sorting would put ``"bad" < "excellent" < "good"``).

Numbers are compared at float32's precision: a judge's scores often come as float32
(numpy, torch) and the same values as float64 from JSON, and ``float32(0.1)`` is
0.10000000149011612, not 0.1. So a number that is not an integer becomes the shortest
decimal that names its float32 (`normal_number`): ``np.float32(0.1)`` and ``0.1`` are both
0.1, and two labels closer than float32 can tell apart (about 7 significant digits) are
one label. Integers, and numbers beyond float32's normal range, are compared exactly.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from gradewire.core import InvalidInputError, InvalidTypeError
from gradewire.stats._keyed import KeyedLabels, Label
from gradewire.stats._text import format_id

__all__ = ["SCALES", "CodedItems", "Scale", "code_items", "normal_number"]

Scale: TypeAlias = Literal["nominal", "ordinal", "interval"]
"""The level of measurement: unordered categories, ordered categories, or numbers."""

SCALES: tuple[Scale, ...] = ("nominal", "ordinal", "interval")

_KINDS = {bool: "bool", str: "str"}
_FLOAT32 = np.finfo(np.float32)
_FLOAT32_RANGE = (float(_FLOAT32.tiny), float(_FLOAT32.max))


def normal_number(number: float) -> float:
    """``number`` as labels are compared: at float32's precision, integers exactly.

    The shortest decimal that names ``number``'s float32 (``0.1`` for both ``0.1`` and
    ``np.float32(0.1)``); an integer, or a number outside float32's normal range (which a
    float32 cannot hold), is kept as it is.
    """
    if number.is_integer() or not _FLOAT32_RANGE[0] <= abs(number) <= _FLOAT32_RANGE[1]:
        return number
    return float(str(np.float32(number)))


@dataclass(frozen=True)
class CodedItems:
    """The items that at least two sources labelled, coded for one scale.

    Attributes:
        scale: The level of measurement.
        ids: The sample id of each item.
        codes: One row per item, one column per source: an index into ``values``, -1 where
            the source gave no label.
        values: The number each code stands for: the distinct numbers, sorted (interval),
            or the category positions 0, 1, ... (nominal, ordinal).
        categories: The categories in their order (nominal, ordinal); None for interval.
        n_left_out: Ids with fewer than two labels: nothing to compare them with.
    """

    scale: Scale
    ids: tuple[Hashable, ...]
    codes: npt.NDArray[np.int64]
    values: npt.NDArray[np.float64]
    categories: tuple[Label, ...] | None
    n_left_out: int


def code_items(
    keyed: KeyedLabels, scale: Scale, categories: Sequence[Label] | None = None
) -> CodedItems:
    """Code the labels of ``keyed`` for ``scale``.

    Args:
        keyed: The labels of every source over their ids.
        scale: ``"nominal"``, ``"ordinal"`` or ``"interval"``.
        categories: The categories in order (nominal, ordinal). None: the labels seen on
            the compared items, sorted (numbers by value; refused for ordinal strings).

    Raises:
        InvalidInputError: A label or category the scale cannot order or compare, as the
            module docstring lists, or a label outside ``categories``.
    """
    if scale not in SCALES:
        raise InvalidInputError(f"scale must be one of {', '.join(SCALES)}, not {scale!r}")
    kinds = _kinds(keyed)
    counts = np.zeros(len(keyed.ids), dtype=np.int64)
    for column in keyed.columns:
        counts += np.fromiter((v is not None for v in column), dtype=bool, count=len(column))
    kept: list[int] = np.flatnonzero(counts >= 2).tolist()
    ids = tuple(keyed.ids[i] for i in kept)
    rows = [[column[i] for column in keyed.columns] for i in kept]
    if scale == "interval":
        if categories is not None:
            raise InvalidInputError(
                "categories= orders the labels of a nominal or ordinal scale; an interval "
                "scale compares numbers: leave it out"
            )
        if "str" in kinds:
            raise InvalidTypeError(
                f"the interval scale compares numbers, but {kinds['str']}: use "
                "scale='nominal' or 'ordinal', or map the labels to numbers"
            )
        numbers = [
            [None if v is None else normal_number(_finite(v, keyed, i)) for v in row]
            for i, row in zip(kept, rows, strict=True)
        ]
        present = sorted({v for row in numbers for v in row if v is not None})
        values = np.asarray(present, dtype=np.float64)
        index = {v: k for k, v in enumerate(present)}
        codes = np.asarray(
            [[-1 if v is None else index[v] for v in row] for row in numbers], dtype=np.int64
        ).reshape(len(ids), len(keyed.columns))
        return CodedItems(scale, ids, codes, values, None, len(keyed.ids) - len(ids))
    order = _categories(keyed, kept, rows, scale, kinds, categories)
    lookup = {_key(c): k for k, c in enumerate(order)}
    coded = []
    for i, row in zip(kept, rows, strict=True):
        line = []
        for label in row:
            if label is None:
                line.append(-1)
                continue
            code = lookup.get(_key(label))
            if code is None:
                raise InvalidInputError(
                    f"id {format_id(keyed.ids[i])} has the label {format_id(repr(label))}, which "
                    "is not one of categories=: list every label the raters used"
                )
            line.append(code)
        coded.append(line)
    codes = np.asarray(coded, dtype=np.int64).reshape(len(ids), len(keyed.columns))
    values = np.arange(len(order), dtype=np.float64)
    return CodedItems(scale, ids, codes, values, tuple(order), len(keyed.ids) - len(ids))


def _kinds(keyed: KeyedLabels) -> dict[str, str]:
    """Each kind of label present (str, bool, number), with an example to show."""
    kinds: dict[str, str] = {}
    for column in keyed.columns:
        for sample_id, label in zip(keyed.ids, column, strict=True):
            if label is not None:
                kind = _KINDS.get(type(label), "number")
                if kind not in kinds:
                    kinds[kind] = f"id {format_id(sample_id)} has {format_id(repr(label))}"
    if "str" in kinds and len(kinds) > 1:
        other = kinds.get("number", kinds.get("bool"))
        raise InvalidTypeError(
            f"the labels mix strings and numbers ({kinds['str']}, {other}): map them to one "
            "type, so equal labels compare equal"
        )
    return kinds


def _categories(
    keyed: KeyedLabels,
    kept: list[int],
    rows: list[list[Label | None]],
    scale: Scale,
    kinds: dict[str, str],
    categories: Sequence[Label] | None,
) -> list[Label]:
    if categories is not None:
        if isinstance(categories, str | bytes) or not isinstance(categories, Sequence):
            raise InvalidTypeError(
                "categories must be a sequence of labels in order, e.g. ['bad', 'ok', 'good']"
            )
        order = list(categories)
        for category in order:
            if category is None or not isinstance(category, str | int | float | bool):
                raise InvalidTypeError(
                    f"categories must be labels (str, number or bool), not {category!r}"
                )
        keys = [_key(c) for c in order]
        if len(set(keys)) != len(keys):
            raise InvalidInputError(f"categories must be distinct: {order!r} repeats one")
        return order
    if "bool" in kinds and "number" in kinds:
        raise InvalidTypeError(
            f"the labels mix bools and numbers ({kinds['bool']}, {kinds['number']}): True "
            "and 1 would be one category; map them to one type"
        )
    if scale == "ordinal" and "str" in kinds:
        raise InvalidInputError(
            f"ordinal labels that are strings ({kinds['str']}) need their order: pass "
            "categories=['worst', ..., 'best'] (sorting would put 'bad' < 'excellent' < 'good')"
        )
    present: dict[tuple[str, object], Label] = {}
    for i, row in zip(kept, rows, strict=True):
        for label in row:
            if label is not None:
                if isinstance(label, float):
                    label = normal_number(_finite(label, keyed, i))
                present.setdefault(_key(label), label)
    labels = sorted(present.values())
    if labels and all(isinstance(v, int | float) and not isinstance(v, bool) for v in labels):
        if all(float(v).is_integer() for v in labels):
            return [int(v) for v in labels]
        return [float(v) for v in labels]
    return labels


def _key(label: Label) -> tuple[str, object]:
    """Labels equal as the scale sees them share a key: 1 and 1.0 do, True and 1 do not.

    Numbers at float32's precision (`normal_number`): 0.1 and ``np.float32(0.1)`` do too.
    """
    if isinstance(label, bool):
        return ("bool", label)
    if isinstance(label, str):
        return ("str", label)
    if isinstance(label, int):
        return ("number", float(label) if abs(label) < 2**53 else label)
    return ("number", normal_number(float(label)))


def _finite(label: Label, keyed: KeyedLabels, index: int) -> float:
    number = float(label)
    if not math.isfinite(number):
        raise InvalidInputError(
            f"id {format_id(keyed.ids[index])} has the label {number}: labels must be finite "
            "(None or NaN for no label)"
        )
    return number
