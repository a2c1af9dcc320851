"""SubScore: HUD's name for a node of a score tree, built as a `Grade`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gradewire.core._errors import InvalidInputError
from gradewire.core._grade import Grade, as_finite_float

__all__ = ["SubScore"]


class SubScore(Grade):
    """A measurement in [0, 1] in a score tree, built with HUD's field names.

    ``SubScore(name="format", value=1.0, weight=0.2)`` is a `Grade` whose ``grader_key`` is
    ``"format"``; everything that takes a Grade takes a SubScore.
    """

    __slots__ = ()

    def __init__(
        self,
        name: str,
        value: float,
        weight: float = 1.0,
        children: Iterable[Grade] | None = None,
        info: Mapping[str, Any] | None = None,
        *,
        reasoning: str | None = None,
    ) -> None:
        """Build a subscore.

        Args:
            name: Name of the component (for a rubric verdict, the requirement checked).
            value: The measurement, between 0 and 1.
            weight: Weight in the parent's combination; negative means penalty.
            children: Subscores this node was combined from.
            info: Grader-specific details.
            reasoning: Optional explanation.
        """
        checked = as_finite_float(value, "SubScore value")
        if not 0.0 <= checked <= 1.0:
            raise InvalidInputError(
                f"SubScore value {checked!r} is outside [0, 1]; a SubScore is a measurement "
                "between 0 and 1 (use a negative weight for a penalty, or Grade for an "
                "unbounded reward)"
            )
        super().__init__(
            checked, name, reasoning, weight=weight, children=children or (), info=info
        )
