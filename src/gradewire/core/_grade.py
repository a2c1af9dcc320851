"""Grade: the one immutable result type, a tree of scored nodes."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from gradewire.core._errors import InvalidInputError, InvalidTypeError

__all__ = ["Grade", "as_finite_float", "leaf_grade"]

_G = TypeVar("_G", bound="Grade")
_NO_INFO: Mapping[str, Any] = MappingProxyType({})
_UNSET: Any = object()


def as_finite_float(value: object, what: str) -> float:
    """Coerce an int, float, bool or numpy number to a finite Python float, or raise."""
    if type(value) is float:
        # inf - inf and nan - nan are nan, so this one comparison rejects both.
        if value - value == 0.0:
            return value
    elif isinstance(value, (str, bytes)) or not hasattr(value, "__float__"):
        raise InvalidTypeError(
            f"{what} must be a number, not {type(value).__name__} ({value!r}); "
            "convert it to float first"
        )
    else:
        try:
            value = float(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise InvalidTypeError(f"{what} must be a real number, not {value!r}") from exc
        if math.isfinite(value):
            return value
    raise InvalidInputError(
        f"{what} is {value!r}; it must be finite. Raise IgnoreGradeException to abstain "
        "on a sample you cannot score instead of returning NaN or inf"
    )


class Grade:
    """The score of one sample: a value, the key of the grader that gave it, and why.

    A Grade is also a node of a score tree (the shape of HUD's ``SubScore``, whose own
    pydantic model is `gradewire.hud.SubScore`): it has a ``weight`` in its parent's
    combination, ``children`` it was combined from, and an ``info`` mapping of
    grader-specific details. Grades are immutable; `replace()` returns a changed copy.

    Example:
        >>> Grade(value=0.95, grader_key="my-grader", reasoning="accurate and relevant")
        Grade(value=0.95, grader_key='my-grader', reasoning='accurate and relevant')
    """

    __slots__ = ("_children", "_grader_key", "_info", "_reasoning", "_value", "_weight")

    def __init__(
        self,
        value: float,
        grader_key: str,
        reasoning: str | None = None,
        *,
        weight: float = 1.0,
        children: Iterable[Grade] = (),
        info: Mapping[str, Any] | None = None,
    ) -> None:
        """Build a grade.

        Args:
            value: The score; any finite real number, stored as a Python float.
            grader_key: The logical name of the grader, used as the metric prefix.
            reasoning: Why the sample got this score, for tables and traces.
            weight: Weight of this node in a parent combination; negative means penalty.
            children: The grades this one was combined from.
            info: Grader-specific details (judge output, stdout, parameters); copied.
        """
        # Fast paths first: a grade is built per sample, often a million times a run.
        if type(value) is float and value - value == 0.0:
            self._value = value
        else:
            self._value = as_finite_float(value, "Grade value")
        if type(grader_key) is not str or not grader_key:
            raise InvalidInputError(
                f"grader_key must be a non-empty str, not {grader_key!r}; "
                "it names the grader in logs and dashboards"
            )
        self._grader_key = grader_key
        if reasoning is not None and type(reasoning) is not str:
            raise InvalidTypeError(
                f"reasoning must be a str or None, not {type(reasoning).__name__}"
            )
        self._reasoning = reasoning
        self._weight = (
            weight
            if type(weight) is float and weight - weight == 0.0
            else as_finite_float(weight, "Grade weight")
        )
        self._children = () if children == () else _check_children(children)
        if info is None:
            self._info = _NO_INFO
        elif isinstance(info, Mapping):
            self._info = MappingProxyType(dict(info))
        else:
            raise InvalidTypeError(f"info must be a dict or None, not {type(info).__name__}")

    @property
    def value(self) -> float:
        """The score, a finite Python float."""
        return self._value

    @property
    def grader_key(self) -> str:
        """The key of the grader that produced this grade."""
        return self._grader_key

    @property
    def name(self) -> str:
        """The node's name in a score tree; the same as `grader_key`."""
        return self._grader_key

    @property
    def reasoning(self) -> str | None:
        """Why the sample got this score, if the grader said."""
        return self._reasoning

    @property
    def weight(self) -> float:
        """Weight in a parent combination; negative marks a penalty."""
        return self._weight

    @property
    def children(self) -> tuple[Grade, ...]:
        """The grades this one was combined from (empty for a leaf)."""
        return self._children

    @property
    def info(self) -> Mapping[str, Any]:
        """Grader-specific details, read-only."""
        return self._info

    def replace(
        self: _G,
        *,
        value: float = _UNSET,
        grader_key: str = _UNSET,
        name: str = _UNSET,
        reasoning: str | None = _UNSET,
        weight: float = _UNSET,
        children: Iterable[Grade] = _UNSET,
        info: Mapping[str, Any] | None = _UNSET,
    ) -> _G:
        """A copy with the given fields changed (``name`` is an alias of ``grader_key``)."""
        new = object.__new__(type(self))
        Grade.__init__(
            new,
            self._value if value is _UNSET else value,
            _pick(grader_key, name, self._grader_key),
            self._reasoning if reasoning is _UNSET else reasoning,
            weight=self._weight if weight is _UNSET else weight,
            children=self._children if children is _UNSET else children,
            info=self._info if info is _UNSET else info,
        )
        return new

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict of the whole tree."""
        return {
            "value": self._value,
            "grader_key": self._grader_key,
            "reasoning": self._reasoning,
            "weight": self._weight,
            "children": [child.to_dict() for child in self._children],
            "info": dict(self._info),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Grade:
        """Rebuild a tree written by `to_dict()`."""
        try:
            return Grade(
                data["value"],
                data["grader_key"],
                data.get("reasoning"),
                weight=data.get("weight", 1.0),
                children=[Grade.from_dict(child) for child in data.get("children", ())],
                info=data.get("info"),
            )
        except KeyError as exc:
            raise InvalidInputError(
                f"a grade dict needs {exc.args[0]!r}; pass the output of Grade.to_dict()"
            ) from exc

    def _fields(self) -> tuple[Any, ...]:
        return (
            self._value,
            self._grader_key,
            self._reasoning,
            self._weight,
            self._children,
            self._info,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Grade):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields()[:5])

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), *self._fields()[:5], dict(self._info)))

    def __repr__(self) -> str:
        parts = [f"value={self._value!r}", f"grader_key={self._grader_key!r}"]
        if self._reasoning is not None:
            parts.append(f"reasoning={self._reasoning!r}")
        if self._weight != 1.0:
            parts.append(f"weight={self._weight!r}")
        if self._children:
            parts.append(f"children={list(self._children)!r}")
        if self._info:
            parts.append(f"info={dict(self._info)!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


def _pick(grader_key: str, name: str, current: str) -> str:
    if grader_key is not _UNSET and name is not _UNSET and grader_key != name:
        raise InvalidInputError("pass grader_key or name, not both: they are the same field")
    if grader_key is not _UNSET:
        return grader_key
    return current if name is _UNSET else name


def _check_children(children: Iterable[Grade]) -> tuple[Grade, ...]:
    if children == ():
        return ()
    if isinstance(children, (str, bytes, Mapping)) or not isinstance(children, Iterable):
        raise InvalidTypeError("children must be a list of Grade objects")
    kids = tuple(children)
    for kid in kids:
        if not isinstance(kid, Grade):
            raise InvalidTypeError(
                f"children must be Grade objects, not {type(kid).__name__}; "
                "wrap plain numbers with Grade(value, key)"
            )
    return kids


def _restore(
    cls: type[Grade],
    value: float,
    grader_key: str,
    reasoning: str | None,
    weight: float,
    children: tuple[Grade, ...],
    info: dict[str, Any],
) -> Grade:
    grade = object.__new__(cls)
    Grade.__init__(
        grade, value, grader_key, reasoning, weight=weight, children=children, info=info or None
    )
    return grade


_new = object.__new__


def leaf_grade(value: float, grader_key: str) -> Grade:
    """``Grade(value, grader_key)`` for a value and key the caller has checked.

    ``value`` must be a finite Python float and ``grader_key`` a non-empty str: a grader's
    per-sample path checks both once, so the grade is built without checking them again.
    """
    grade: Grade = _new(Grade)
    grade._value = value
    grade._grader_key = grader_key
    grade._reasoning = None
    grade._weight = 1.0
    grade._children = ()
    grade._info = _NO_INFO
    return grade
