"""Settings objects checked field by field, and the checks they share.

A settings object (`DeliverySettings`, `ServerSettings`) is a frozen dataclass: each field
is declared once, with its default and, in its metadata, the check of its value
(``field(default=5.0, metadata=checked_by(check_seconds))``). Its ``__post_init__`` calls
`check_fields`, which runs every check once and keeps the value the check returns (an int
of seconds becomes a float), so a bad value raises when the object is made and names its
field. `resolve_settings` gives a caller's object with its keyword overrides, checked the
same way.

A check is ``check(name, value) -> value``: it raises `InvalidTypeError` for a value of the
wrong type, `InvalidInputError` for one out of bounds, and its message names the field.
"""

from __future__ import annotations

import dataclasses
import math

from gradewire.core._errors import InvalidInputError, InvalidTypeError

TYPE_CHECKING = False  # typing is imported for type checkers only
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeAlias, TypeVar

    from _typeshed import DataclassInstance

    Check: TypeAlias = Callable[[str, Any], object]
    _Settings = TypeVar("_Settings", bound=DataclassInstance)

__all__ = [
    "check_fields",
    "check_finite",
    "check_flag",
    "check_positive_int",
    "check_positive_int_or_none",
    "check_positive_seconds",
    "check_seconds",
    "check_seconds_or_none",
    "check_timeout",
    "checked_by",
    "field_checks",
    "resolve_settings",
]


def checked_by(check: Check) -> dict[str, object]:
    """A field's metadata: the check `check_fields` runs on the field's value."""
    return {"check": check}


def field_checks(kind: type[DataclassInstance]) -> dict[str, Check]:
    """The check of each field of the settings class ``kind``, by field name."""
    return {each.name: each.metadata["check"] for each in dataclasses.fields(kind)}


def check_fields(settings: DataclassInstance) -> None:
    """Run each field's check on its value and keep what the check returns.

    Called from a settings object's ``__post_init__``.
    """
    for each in dataclasses.fields(settings):
        checked = each.metadata["check"](each.name, getattr(settings, each.name))
        object.__setattr__(settings, each.name, checked)  # frozen: set once, here


def resolve_settings(
    kind: type[_Settings], settings: _Settings | None, options: Mapping[str, Any]
) -> _Settings:
    """``settings`` (default: ``kind``'s defaults) with the fields in ``options`` replaced.

    The object given is left as it was; the one returned is checked.

    Raises:
        InvalidTypeError: ``settings`` is not a ``kind``.
    """
    if settings is None:
        return kind(**options)
    if not isinstance(settings, kind):
        raise InvalidTypeError(
            f"settings must be a {kind.__name__}, not {type(settings).__name__}; or pass its "
            "fields as keywords"
        )
    return dataclasses.replace(settings, **options) if options else settings


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _number(name: str, value: object, kind: str) -> float:
    """``value`` as a float (an int past the floats as an infinity), or a type error."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidTypeError(f"{name} must be {kind}, not {_shown(value)}")
    try:
        return float(value)
    except OverflowError:  # an int too large for a float: no finite setting
        return math.inf if value > 0 else -math.inf


def check_finite(name: str, value: object) -> float:
    """``value`` as a finite float."""
    number = _number(name, value, "a number")
    if not math.isfinite(number):
        raise InvalidInputError(f"{name} must be finite, not {_shown(value)}")
    return number


def _seconds(name: str, value: object, *, positive: bool, optional: bool) -> float:
    alternative = " or None" if optional else ""
    seconds = _number(name, value, f"a number of seconds{alternative}")
    if positive:
        wanted, valid = "a positive, finite number of seconds", 0 < seconds < math.inf
    else:
        wanted, valid = "a finite number of seconds >= 0", 0 <= seconds < math.inf
    if not valid:
        raise InvalidInputError(f"{name} must be {wanted}{alternative}, not {_shown(value)}")
    return seconds


def check_seconds(name: str, value: object) -> float:
    """``value`` as a finite number of seconds >= 0, a float."""
    return _seconds(name, value, positive=False, optional=False)


def check_seconds_or_none(name: str, value: object) -> float | None:
    """None, or ``value`` as `check_seconds` takes it."""
    return None if value is None else _seconds(name, value, positive=False, optional=True)


def check_positive_seconds(name: str, value: object) -> float:
    """``value`` as a finite number of seconds > 0 (a timeout of 0 could never be met).

    The one check of every timeout and time bound in gradewire (a grade's ``timeout``, an
    HTTP attempt's ``attempt_timeout``, a server's limits): a bool, a string, 0, a negative
    number, NaN and infinity are refused alike. Infinity is refused, not read as "no
    bound": where a bound is optional, None says that (`check_timeout`).
    """
    return _seconds(name, value, positive=True, optional=False)


def check_timeout(name: str, value: object) -> float | None:
    """None (no bound), or ``value`` as `check_positive_seconds` takes it."""
    return None if value is None else _seconds(name, value, positive=True, optional=True)


def _positive_int(name: str, value: object, *, optional: bool) -> int:
    wanted = "a positive int or None" if optional else "a positive int"
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{name} must be {wanted}, not {_shown(value)}")
    if value < 1:
        raise InvalidInputError(f"{name} must be {wanted}, not {_shown(value)}")
    return value


def check_positive_int(name: str, value: object) -> int:
    """``value`` as an int >= 1 (a bool is refused: it is no count)."""
    return _positive_int(name, value, optional=False)


def check_positive_int_or_none(name: str, value: object) -> int | None:
    """None, or ``value`` as `check_positive_int` takes it."""
    return None if value is None else _positive_int(name, value, optional=True)


def check_flag(name: str, value: object) -> bool:
    """``value``, True or False (a truthy value of another type is refused)."""
    if not isinstance(value, bool):
        raise InvalidTypeError(f"{name} must be True or False, not {_shown(value)}")
    return value
