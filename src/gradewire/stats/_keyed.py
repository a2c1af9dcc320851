"""Labels keyed by sample id: what the statistics read, and what counts as missing.

A source of labels is a mapping from sample id to label (a dict, or anything with
``items()`` such as a pandas Series, read through its index), or a sequence aligned with
``ids=``. None, NaN and pandas' NA are missing labels, as is an id a source does not have.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

from gradewire.core import InvalidInputError, InvalidTypeError
from gradewire.stats._text import format_id

__all__ = [
    "KeyedLabels",
    "Label",
    "LabelSource",
    "is_mapping",
    "read_keyed",
    "read_scores",
]

Label: TypeAlias = str | int | float | bool
"""One label: a category name, a number, or a yes/no."""

LabelSource: TypeAlias = Mapping[Any, Any] | Sequence[Any] | Any
"""Labels keyed by sample id: a mapping (dict, pandas Series), or a sequence with ``ids=``."""

# pandas' missing-value singletons, recognised by name so that pandas is never imported.
_PANDAS_MISSING = frozenset({"NAType", "NaTType"})


@dataclass(frozen=True)
class KeyedLabels:
    """The labels of several sources over the union of their ids.

    Attributes:
        ids: Every id some source has, in the order first seen (the first source's order,
            then ids only later sources have).
        columns: Per source, its label for each of ``ids``: None where it has none.
    """

    ids: tuple[Hashable, ...]
    columns: tuple[tuple[Label | None, ...], ...]


def read_keyed(sources: Sequence[object], names: Sequence[str], ids: object = None) -> KeyedLabels:
    """Read ``sources`` (one per name) into labels over the union of their ids.

    Args:
        sources: Mappings id → label, or sequences aligned with ``ids``.
        names: What to call each source in error messages (``"a"``, ``"labels"``).
        ids: The sample ids of the sequences among ``sources``, in order. None: sequences
            are keyed by position (0, 1, ...) when every source is a sequence.

    Raises:
        InvalidInputError: A source of another shape, a sequence whose length differs from
            ``ids``, duplicate ids, ids that differ only in type (``1`` and ``"1"``), or a
            label that is not a str, number or bool.
    """
    readers = [_reader(source, name) for source, name in zip(sources, names, strict=True)]
    sequences = [name for (kind, _), name in zip(readers, names, strict=True) if kind == "seq"]
    id_list = _id_list(ids, readers, sequences, names)
    keyed: list[dict[Hashable, Label | None]] = []
    for (kind, values), name in zip(readers, names, strict=True):
        if kind == "seq":
            assert id_list is not None
            items: Iterable[tuple[Any, Any]] = zip(id_list, values, strict=True)
        else:
            items = values
        keyed.append(_labels(items, name))
    union: dict[Hashable, None] = {}
    for labels in keyed:
        union.update(dict.fromkeys(labels))
    _refuse_type_twins(union)
    all_ids = tuple(union)
    return KeyedLabels(
        ids=all_ids,
        columns=tuple(tuple(labels.get(i) for i in all_ids) for labels in keyed),
    )


def read_scores(
    sources: Sequence[object], names: Sequence[str], ids: object = None
) -> tuple[tuple[Hashable, ...], list[dict[Hashable, float]]]:
    """Sources of numeric scores as id → float each (missing labels left out).

    Returns:
        Every id some source has, and per source its scores by id.

    Raises:
        InvalidInputError: What `read_keyed` refuses, a label that is not a number or a
            bool, or a number that is not finite.
    """
    keyed = read_keyed(sources, names, ids)
    scores: list[dict[Hashable, float]] = []
    for column, name in zip(keyed.columns, names, strict=True):
        values: dict[Hashable, float] = {}
        for sample_id, label in zip(keyed.ids, column, strict=True):
            if label is None:
                continue
            if isinstance(label, str):
                raise InvalidTypeError(
                    f"{name} must hold numbers or bools; id {format_id(sample_id)} has "
                    f"{format_id(repr(label))}: map the labels to numbers first"
                )
            number = float(label)
            if not math.isfinite(number):
                raise InvalidInputError(
                    f"{name} has {number} for id {format_id(sample_id)}: scores must be "
                    "finite (None, or no entry, for no score)"
                )
            values[sample_id] = number
        scores.append(values)
    return keyed.ids, scores


def is_mapping(source: object) -> bool:
    """Whether ``source`` is keyed by sample id (a mapping, a pandas Series) or a sequence."""
    return isinstance(source, Mapping) or (
        hasattr(source, "index")
        and callable(getattr(source, "items", None))
        and not hasattr(source, "columns")
    )


def _reader(source: object, name: str) -> tuple[str, Any]:
    if isinstance(source, Mapping):
        return "map", source.items()
    if hasattr(source, "columns"):
        raise InvalidTypeError(
            f"{name} is a table ({type(source).__name__}); pass one of its columns (a "
            "Series indexed by sample id)"
        )
    items = getattr(source, "items", None)
    if hasattr(source, "index") and callable(items):
        # A pandas Series (or the like): its index holds the sample ids.
        return "map", items()
    if isinstance(source, str | bytes) or not isinstance(source, Sequence | np.ndarray):
        raise InvalidTypeError(
            f"{name} must be a mapping from sample id to label (a dict, a pandas Series) or "
            f"a sequence of labels aligned with ids=, not {type(source).__name__}"
        )
    if isinstance(source, np.ndarray):
        if source.ndim != 1:
            raise InvalidInputError(f"{name} must be 1-D, not of shape {source.shape}")
        return "seq", source.tolist()  # Python scalars, read without numpy's boxing
    return "seq", source


def _id_list(
    ids: object,
    readers: Sequence[tuple[str, Any]],
    sequences: Sequence[str],
    names: Sequence[str],
) -> list[Hashable] | None:
    if ids is None:
        if not sequences:
            return None
        if len(sequences) != len(names):
            raise InvalidInputError(
                f"{', '.join(sequences)} {'is a sequence' if len(sequences) == 1 else 'are'}"
                f"{'' if len(sequences) == 1 else ' sequences'} and the others are mappings: "
                "pass ids= (the sample id of each position) so they can be paired"
            )
        lengths = {len(values) for _, values in readers}
        if len(lengths) != 1:
            raise InvalidInputError(
                f"the sequences have different lengths ({sorted(lengths)}): pass ids= or "
                "mappings keyed by sample id"
            )
        return list(range(lengths.pop()))
    if not sequences:
        raise InvalidInputError(
            "ids= aligns sequences of labels with sample ids, but every source here is a "
            "mapping already keyed by id: leave ids= out"
        )
    if isinstance(ids, str | bytes) or not isinstance(ids, Sequence | np.ndarray):
        raise InvalidTypeError(f"ids must be a sequence of sample ids, not {type(ids).__name__}")
    id_list = [_plain_id(i) for i in ids]
    seen: set[Hashable] = set()
    for sample_id in id_list:
        if sample_id in seen:
            raise InvalidInputError(f"ids has {format_id(sample_id)} twice: ids must be unique")
        seen.add(sample_id)
    for (kind, values), name in zip(readers, names, strict=True):
        if kind == "seq" and len(values) != len(id_list):
            raise InvalidInputError(
                f"{name} has {len(values)} labels but ids has {len(id_list)}: a sequence "
                "holds one label per id (None where there is none)"
            )
    return id_list


def _labels(items: Iterable[tuple[Any, Any]], name: str) -> dict[Hashable, Label | None]:
    labels: dict[Hashable, Label | None] = {}
    for raw_id, raw in items:
        sample_id = _plain_id(raw_id)
        if sample_id in labels:
            raise InvalidInputError(
                f"{name} has id {format_id(sample_id)} twice: each sample needs one label"
            )
        labels[sample_id] = _plain_label(raw, sample_id, name)
    return labels


def _plain_id(raw: object) -> Hashable:
    if type(raw) is str or type(raw) is int:
        return raw
    value: Hashable = raw.item() if isinstance(raw, np.generic) else raw
    try:
        hash(value)
    except TypeError:
        raise InvalidTypeError(
            f"sample ids must be hashable (str or int), not {type(value).__name__}"
        ) from None
    return value


def _plain_label(raw: object, sample_id: Hashable, name: str) -> Label | None:
    kind = type(raw)
    if kind is str or kind is int or kind is bool:
        return raw  # type: ignore[return-value]
    if kind is float:
        return None if math.isnan(raw) else raw  # type: ignore[arg-type, return-value]
    value = raw.item() if isinstance(raw, np.generic) else raw
    if value is None or type(value).__name__ in _PANDAS_MISSING:
        return None
    if isinstance(value, bool | str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return None if math.isnan(number) else number
    raise InvalidTypeError(
        f"{name} has a {type(value).__name__} for id {format_id(sample_id)}: a label must be "
        "a str, a number or a bool (None or NaN for no label)"
    )


def _refuse_type_twins(ids: Collection[Hashable]) -> None:
    if len({type(i) for i in ids}) <= 1:
        return  # ids of one type cannot be twins
    seen: dict[str, Hashable] = {}
    for sample_id in ids:
        key = str(sample_id)
        other = seen.setdefault(key, sample_id)
        if other is not sample_id and other != sample_id:
            raise InvalidInputError(
                f"ids {format_id(repr(other))} and {format_id(repr(sample_id))} differ only in "
                "type, so they would not pair: key every source by ids of one type (all str "
                "or all int)"
            )
