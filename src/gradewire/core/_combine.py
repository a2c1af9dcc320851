"""combine / combine_any / combine_all: HUD's score-tree combinators."""

from __future__ import annotations

import inspect
import math
from collections import Counter
from collections.abc import Awaitable, Sequence
from typing import Any

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._evaluation_result import EvaluationResult
from gradewire.core._gather import gather_all
from gradewire.core._grade import Grade
from gradewire.core._subscore import SubScore
from gradewire.core._weights import penalty_weights, weighted_sum

__all__ = ["combine", "combine_all", "combine_any"]


async def combine(*items: Grade | Awaitable[Grade]) -> EvaluationResult:
    """Resolve grades and grader coroutines concurrently and combine them by weight.

    Positive weights are normalised to sum to 1; a negative weight is kept as a penalty
    (a value of 1.0 on it subtracts its weight). The reward is ``sum(value * weight)``
    over the normalised subscores, which are kept on the result.

    If an awaitable raises, the others are cancelled and the error propagates: a reward
    that could not be computed is never reported as a number.

    Example:
        >>> await combine(  # doctest: +SKIP
        ...     SubScore(name="tests", value=1.0, weight=0.7),
        ...     SubScore(name="format", value=0.0, weight=0.3),
        ... )
    """
    if not items:
        raise InvalidInputError("combine() needs at least one subscore or grader call")
    slots: list[Grade | None] = []
    pending: dict[int, Awaitable[Grade]] = {}
    for index, item in enumerate(items):
        if isinstance(item, Grade):
            slots.append(item)
        elif inspect.isawaitable(item):
            slots.append(None)
            pending[index] = item
        else:
            raise InvalidTypeError(
                f"combine() item {index} is {type(item).__name__}; pass SubScore/Grade "
                "objects or grader calls that return one (wrap a float with "
                "SubScore(name=..., value=...))"
            )
    if pending:
        resolved = await gather_all(list(pending.values()))
        for index, result in zip(pending, resolved, strict=True):
            if not isinstance(result, Grade):
                raise InvalidTypeError(
                    f"combine() item {index} resolved to {type(result).__name__}, "
                    "not a SubScore/Grade"
                )
            slots[index] = result
    grades = [grade for grade in slots if grade is not None]
    if not any(g.weight > 0 for g in grades):
        raise InvalidInputError(
            "combine() needs at least one positive weight; negative weights are penalties "
            "applied on top of the positive ones"
        )
    weights = penalty_weights([g.weight for g in grades])
    normalised = [
        g.replace(name=name, weight=weight)
        for g, name, weight in zip(grades, _unique_names(grades), weights, strict=True)
    ]
    reward = weighted_sum([g.value for g in normalised], weights)
    if not math.isfinite(reward):
        raise InvalidInputError(
            f"combine(): the reward of values {[g.value for g in grades]} with weights "
            f"{[g.weight for g in grades]} is beyond the float range; use smaller penalty "
            "weights"
        )
    return EvaluationResult(reward=reward, done=True, subscores=normalised)


def combine_any(weight: float, subscores: Sequence[Grade], *, name: str = "any") -> SubScore:
    """A subscore that passes if any input passes (the maximum); inputs kept as children."""
    return _fold(weight, subscores, name, max)


def combine_all(weight: float, subscores: Sequence[Grade], *, name: str = "all") -> SubScore:
    """A subscore that passes only if every input passes (the minimum); inputs kept."""
    return _fold(weight, subscores, name, min)


def _fold(weight: float, subscores: Sequence[Grade], name: str, pick: Any) -> SubScore:
    grades = list(subscores)
    if not grades:
        raise InvalidInputError(f"combine_{name}() needs at least one subscore")
    for grade in grades:
        if not isinstance(grade, Grade):
            raise InvalidTypeError(
                f"subscores must be SubScore/Grade objects, not {type(grade).__name__}"
            )
    children = [g.replace(name=n) for g, n in zip(grades, _unique_names(grades), strict=True)]
    return SubScore(
        name=name, value=pick(g.value for g in grades), weight=weight, children=children
    )


def _unique_names(grades: Sequence[Grade]) -> list[str]:
    """Names made unique for the trace: repeated names get ``-1``, ``-2``, ... suffixes."""
    totals = Counter(g.name for g in grades)
    taken = {name for name, count in totals.items() if count == 1}
    next_suffix: Counter[str] = Counter()
    names: list[str] = []
    for grade in grades:
        name = grade.name
        if totals[name] > 1:
            while True:
                next_suffix[name] += 1
                candidate = f"{name}-{next_suffix[name]}"
                if candidate not in taken and candidate not in totals:
                    break
            name = candidate
        taken.add(name)
        names.append(name)
    return names
