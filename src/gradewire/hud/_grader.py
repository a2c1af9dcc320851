"""HUD's class-method `Grader`: ``await X.grade(weight=..., **params)`` returns a `SubScore`."""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, TypeAlias

from gradewire.core._errors import InvalidTypeError
from gradewire.core._grade import Grade
from gradewire.core._subscore import SubScore

__all__ = ["Grader", "ScoreResult", "json_safe", "reject_unknown"]

ScoreResult: TypeAlias = "SubScore | float | tuple[float, Mapping[str, Any] | None]"
"""What `Grader.compute_score` may return: a `SubScore`, or the legacy float or
``(float, info)``."""

_DEFAULT_NAME = "BaseGrader"


class Grader:
    """The base of HUD-style graders: class methods, no instances.

    Subclass it, set ``name`` and implement the async classmethod `compute_score` (a plain
    classmethod works too); callers use `grade`, which applies their weight and optional
    name and records the parameters.
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
        raise InvalidTypeError(
            f"{cls.__name__} does not implement compute_score; define it as an async "
            "classmethod returning a SubScore"
        )

    @classmethod
    async def grade(cls, weight: float, name: str | None = None, **kwargs: Any) -> SubScore:
        """Run the grader and return its `SubScore`, weighted for a combination.

        Args:
            weight: The subscore's weight in `combine` (negative: a penalty).
            name: The subscore's name; the grader's ``name`` when None or empty.
            **kwargs: Passed to `compute_score`, and recorded (JSON-safe) in the result's
                ``info["_parameters"]``.

        Returns:
            The subscore, with ``weight`` and ``name`` applied.

        Raises:
            InvalidTypeError: `compute_score` returned something that is not a score.
            InvalidInputError: The score is outside [0, 1], or the weight is not finite.
        """
        result: Any = cls.compute_score(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        subscore = _as_subscore(cls, result)
        return subscore.replace(
            name=name or cls.name,
            weight=weight,
            info={**subscore.info, "_parameters": json_safe(kwargs)},
        )


def _as_subscore(cls: type[Grader], result: object) -> SubScore:
    if isinstance(result, SubScore):
        return result
    where = f"{cls.__name__}.compute_score returned"
    if isinstance(result, Grade):
        # A native Grade is a SubScore once its value is checked to be in [0, 1].
        return SubScore(
            result.name,
            result.value,
            result.weight,
            result.children,
            result.info,
            reasoning=result.reasoning,
        )
    if isinstance(result, tuple):
        if len(result) != 2:
            raise InvalidTypeError(
                f"{where} a tuple of {len(result)} items; return a SubScore, a float, or "
                "a (float, info dict) pair"
            )
        score, info = result
        if info is not None and not isinstance(info, Mapping):
            raise InvalidTypeError(
                f"{where} ({score!r}, {type(info).__name__}); the second item of a "
                "(score, info) pair must be a dict"
            )
        return SubScore(cls.name, score, info=info)
    if not isinstance(result, numbers.Real):
        raise InvalidTypeError(
            f"{where} {type(result).__name__}; return a SubScore (or a float between 0 and 1)"
        )
    return SubScore(cls.name, float(result))


def json_safe(value: object, _path: tuple[int, ...] = ()) -> Any:
    """``value`` as JSON data: dicts, lists, str, finite numbers, bools and None.

    Anything else (a path, a model object, a set, bytes, NaN) becomes its ``repr``; tuples
    become lists and dict keys strings, as `json.dumps` would write them.
    """
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return number if math.isfinite(number) else repr(value)
    if id(value) in _path:
        return repr(value)  # a container that holds itself
    if isinstance(value, Mapping):
        inner = (*_path, id(value))
        return {_json_key(k): json_safe(v, inner) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        inner = (*_path, id(value))
        return [json_safe(item, inner) for item in value]
    return repr(value)


def _json_key(key: object) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return repr(key)  # an int or float reads as JSON writes it; anything else as its repr


def reject_unknown(cls: type[Grader], kwargs: Mapping[str, Any], known: Iterable[str]) -> None:
    """Refuse keyword arguments a built-in grader does not take (HUD drops them silently)."""
    if kwargs:
        names = ", ".join(sorted(kwargs))
        raise InvalidTypeError(
            f"{cls.__name__}.grade() got unexpected keyword arguments: {names}; it takes "
            f"weight, name, {', '.join(known)}"
        )
