"""HUD's class-method `Grader`: ``await X.grade(weight=..., **params)`` returns a `SubScore`."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, TypeAlias

import pydantic_core

from gradewire.core import Grade, InvalidTypeError
from gradewire.hud._results import SubScore

__all__ = ["Grader", "ScoreResult", "json_safe_dict", "json_safe_value", "reject_unknown"]

ScoreResult: TypeAlias = "SubScore | Grade | float | tuple[float, Mapping[str, Any] | None]"
"""What `Grader.compute_score` may return: a `SubScore` (or a native `Grade`), or the
legacy float or ``(float, info)``."""

_DEFAULT_NAME = "BaseGrader"


def _not_serializable(value: Any) -> str:
    return f"<{type(value).__name__}: not serializable>"


def json_safe_value(value: Any) -> Any:
    """``value`` as JSON data, as HUD records grader parameters.

    Scalars stay as they are; anything else goes through pydantic's JSON encoder (paths
    and dates become strings, sets and tuples lists, models dicts), and what it cannot
    encode becomes ``"<TypeName: not serializable>"``.
    """
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    try:
        return json.loads(pydantic_core.to_json(value, fallback=_not_serializable))
    except Exception:
        return _not_serializable(value)


def json_safe_dict(values: Mapping[str, Any]) -> dict[str, Any]:
    """Every value of ``values`` made JSON data by `json_safe_value`."""
    return {key: json_safe_value(value) for key, value in values.items()}


class Grader:
    """The base of HUD-style graders: class methods, no instances.

    Subclass it, set ``name`` and implement the async classmethod `compute_score` (a plain
    classmethod works too); callers use `grade`, which applies their weight and optional
    name and records the parameters in ``info["_parameters"]``, as HUD does.
    A subclass that sets no ``name`` (and inherits none from a parent other than `Grader`)
    is named after its class (HUD names it ``"BaseGrader"``).

    Example:
        >>> class LengthGrader(Grader):
        ...     name = "length"
        ...
        ...     @classmethod
        ...     async def compute_score(cls, answer: str = "", target: int = 100, **kwargs):
        ...         return SubScore(name=cls.name, value=1.0 if len(answer) >= target else 0.0)
        >>> result = await LengthGrader.grade(weight=1.0, answer="hi", target=2)  # doctest: +SKIP
    """

    name: ClassVar[str] = _DEFAULT_NAME
    """The grader's name: the default name of the subscores it returns."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__ and cls.name == _DEFAULT_NAME:
            # Two unnamed custom graders in one combine() stay told apart in the trace.
            cls.name = cls.__name__
        if not isinstance(cls.name, str) or not cls.name.strip():
            raise InvalidTypeError(
                f"{cls.__name__}.name must be a non-empty str, not {cls.name!r}; it names "
                "the subscores the grader returns"
            )

    @classmethod
    async def compute_score(cls, *args: Any, **kwargs: Any) -> ScoreResult:
        """Compute a score between 0.0 and 1.0; subclasses implement this.

        Returns:
            A `SubScore` (``info`` for grader details, ``children`` for nested results), or,
            for code written for older HUD versions, a float or ``(float, info)``.
        """
        raise NotImplementedError("Subclasses must implement compute_score")

    @classmethod
    async def grade(cls, weight: float, name: str | None = None, **kwargs: Any) -> SubScore:
        """Run the grader and return its `SubScore`, weighted for a combination.

        As in HUD, the name and weight are applied with ``model_copy`` (so they are not
        validated), and ``info`` gains ``_parameters``, the call's keyword arguments as
        JSON data.

        Args:
            weight: The subscore's weight in `combine` (negative: a penalty).
            name: The subscore's name; the grader's ``name`` when None or empty.
            **kwargs: Passed to `compute_score`, and recorded in ``info["_parameters"]``.

        Raises:
            pydantic.ValidationError: A float score is outside [0, 1].
        """
        result: Any = cls.compute_score(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, Grade):
            result = SubScore.from_grade(result)
        elif isinstance(result, tuple):
            score, info = result
            result = SubScore(name=cls.name, value=float(score), info=info)
        elif not isinstance(result, SubScore):
            result = SubScore(name=cls.name, value=float(result))
        graded: SubScore = result.model_copy(
            update={
                "name": name or cls.name,
                "weight": weight,
                "info": {**(result.info or {}), "_parameters": json_safe_dict(kwargs)},
            }
        )
        return graded


def reject_unknown(cls: type[Grader], kwargs: Mapping[str, Any], known: Iterable[str]) -> None:
    """Refuse keyword arguments a built-in grader does not take (HUD drops them silently)."""
    if kwargs:
        names = ", ".join(sorted(kwargs))
        raise InvalidTypeError(
            f"{cls.__name__}.grade() got unexpected keyword arguments: {names}; it takes "
            f"weight, name, {', '.join(known)}"
        )
