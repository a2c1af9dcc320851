"""HUD's combinators on HUD's models: `combine`, `combine_any`, `combine_all`."""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Awaitable, Sequence
from typing import Any

from gradewire.core import Grade, InvalidInputError
from gradewire.core._gather import gather_all
from gradewire.core._weights import penalty_weights, weighted_sum
from gradewire.hud._results import EvaluationResult, SubScore

__all__ = ["_combine_subscores", "combine", "combine_all", "combine_any"]


def _dedupe_subscore_names(subscores: Sequence[SubScore]) -> list[str]:
    """Stable, unique names: a repeated name gets ``-1``, ``-2``, ... (never a taken one)."""
    counts: dict[str, int] = {}
    for item in subscores:
        counts[item.name] = counts.get(item.name, 0) + 1
    reserved = {item.name for item in subscores}
    usage: dict[str, int] = {}
    used: set[str] = set()
    names: list[str] = []
    for item in subscores:
        if counts[item.name] == 1 and item.name not in used:
            final = item.name
        else:
            suffix = usage.get(item.name, 0)
            while True:
                suffix += 1
                candidate = f"{item.name}-{suffix}"
                if candidate not in used and candidate not in reserved:
                    break
            usage[item.name] = suffix
            final = candidate
        used.add(final)
        names.append(final)
    return names


def _combine_subscores(subscores: list[SubScore]) -> EvaluationResult:
    """Combine resolved subscores into a weighted `EvaluationResult`, as HUD does.

    Positive weights are normalised to sum to 1.0 (with a warning when they did not
    already, since the effective weights then differ from the written ones); negative
    weights are kept as penalties.

    Raises:
        ValueError: No subscores, or none with a positive weight; a weight that is not
            finite, or a reward beyond the float range (`InvalidInputError`, a ValueError).
    """
    if not subscores:
        raise ValueError("subscores must not be empty")
    raw = [item.weight for item in subscores]
    if not all(math.isfinite(weight) for weight in raw):
        raise InvalidInputError(f"subscore weights must be finite numbers, not {raw}")
    if not any(weight > 0 for weight in raw):
        raise ValueError("subscores must include at least one positive weight")
    positive = sum(weight for weight in raw if weight > 0)  # inf past the float range
    if abs(positive - 1.0) > 0.01:
        warnings.warn(
            f"grader weights sum to {positive:.4f}, not 1.0; "
            f"normalizing, but the effective weights differ from what you set. "
            f"Make the positive weights sum to 1.0 to silence this.",
            stacklevel=3,
        )
    weights = penalty_weights(raw)
    normalised = [
        item.model_copy(update={"name": name, "weight": weight})
        for item, name, weight in zip(
            subscores, _dedupe_subscore_names(subscores), weights, strict=True
        )
    ]
    reward = weighted_sum([item.value for item in subscores], weights)
    if not math.isfinite(reward):
        raise InvalidInputError(
            f"the reward of values {[item.value for item in subscores]} with weights {raw} is "
            "beyond the float range; use smaller penalty weights"
        )
    return EvaluationResult(reward=reward, done=True, subscores=normalised)


def _as_subscore(item: object) -> SubScore:
    if isinstance(item, SubScore):
        return item
    if isinstance(item, Grade):  # a native grade: its SubScore form
        return SubScore.from_grade(item)
    raise TypeError(f"Expected SubScore or Awaitable[SubScore], got {type(item).__name__}")


async def combine(*items: SubScore | Grade | Awaitable[SubScore | Grade]) -> EvaluationResult:
    """Resolve subscores and grader calls concurrently, then combine them by weight.

    Takes `SubScore` objects and awaitables of them (``BashGrader.grade(...)``); a native
    `gradewire.Grade` (or an awaitable of one, such as a native grader's ``grade()``) is
    taken in its `SubScore.from_grade` form. Positive weights are normalised to sum to
    1.0; negative weights are penalties. When one awaitable raises, the others are
    cancelled (HUD leaves them running) and the error propagates.

    Example:
        >>> await combine(  # doctest: +SKIP
        ...     BashGrader.grade(weight=0.3, command="pytest -q"),
        ...     SubScore(name="answer", value=exact_match(answer, "42"), weight=0.7),
        ... )
    """
    resolved: list[Any] = []
    pending: list[tuple[int, Awaitable[Any]]] = []
    for item in items:
        if isinstance(item, (SubScore, Grade)):
            resolved.append(item)
        elif inspect.isawaitable(item):
            pending.append((len(resolved), item))
            resolved.append(None)
        else:
            raise TypeError(f"Expected SubScore or Awaitable[SubScore], got {type(item).__name__}")
    if pending:
        results = await gather_all([awaitable for _, awaitable in pending])
        for (slot, _), result in zip(pending, results, strict=True):
            resolved[slot] = result
    return _combine_subscores([_as_subscore(item) for item in resolved])


def _boolean_subscore(
    name: str, weight: float, subscores: Sequence[SubScore], value: float
) -> SubScore:
    children = [
        subscore.model_copy(update={"name": unique})
        for unique, subscore in zip(_dedupe_subscore_names(subscores), subscores, strict=True)
    ]
    return SubScore(name=name, value=value, weight=weight, children=children)


def combine_any(weight: float, subscores: list[SubScore], *, name: str = "any") -> SubScore:
    """A subscore that passes if any input passes (the maximum); inputs kept as children."""
    if not subscores:
        raise ValueError("subscores must not be empty")
    return _boolean_subscore(name, weight, subscores, max(s.value for s in subscores))


def combine_all(weight: float, subscores: list[SubScore], *, name: str = "all") -> SubScore:
    """A subscore that passes only if every input passes (the minimum); inputs kept."""
    if not subscores:
        raise ValueError("subscores must not be empty")
    return _boolean_subscore(name, weight, subscores, min(s.value for s in subscores))
