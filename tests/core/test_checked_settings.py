"""The settings mechanism: fields checked once when made, overrides, and the shared checks."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import field
from typing import Any

import pytest

from gradewire import InvalidInputError, InvalidTypeError
from gradewire.core._settings import (
    check_fields,
    check_finite,
    check_flag,
    check_positive_int,
    check_positive_int_or_none,
    check_positive_seconds,
    check_seconds,
    check_seconds_or_none,
    checked_by,
    field_checks,
    resolve_settings,
)

seen: list[str] = []


def _logged_int(name: str, value: object) -> int:
    seen.append(name)
    return check_positive_int(name, value)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Limits:
    most: int = field(default=3, metadata=checked_by(_logged_int))
    wait: float = field(default=1, metadata=checked_by(check_seconds))
    cap: int | None = field(default=None, metadata=checked_by(check_positive_int_or_none))

    def __post_init__(self) -> None:
        check_fields(self)


# -- the mechanism ---------------------------------------------------------------------------


def test_each_field_is_checked_once_and_keeps_the_checked_value():
    seen.clear()
    limits = Limits(most=5, wait=2)
    assert seen == ["most"]
    assert limits.wait == 2.0
    assert isinstance(limits.wait, float)  # the default and a given int alike
    assert isinstance(Limits().wait, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.most = 1  # type: ignore[misc]


def test_a_bad_value_raises_when_made_naming_its_field():
    with pytest.raises(InvalidInputError, match=r"^most must be a positive int, not 0$"):
        Limits(most=0)
    with pytest.raises(InvalidTypeError, match=r"^wait must be a number of seconds, not '1'$"):
        Limits(wait="1")  # type: ignore[arg-type]


def test_field_checks_are_the_declared_checks_by_name():
    checks = field_checks(Limits)
    assert list(checks) == ["most", "wait", "cap"]
    assert checks["wait"] is check_seconds
    assert checks["cap"]("cap", None) is None


def test_resolve_settings_overrides_fields_and_leaves_the_given_object_alone():
    base = Limits(most=4)
    assert resolve_settings(Limits, None, {}) == Limits()
    assert resolve_settings(Limits, None, {"wait": 0}) == Limits(wait=0)
    assert resolve_settings(Limits, base, {}) is base
    changed = resolve_settings(Limits, base, {"cap": 9})
    assert changed == Limits(most=4, cap=9)
    assert base.cap is None


def test_resolve_settings_checks_the_overrides():
    with pytest.raises(InvalidInputError, match="cap must be a positive int or None, not -2"):
        resolve_settings(Limits, Limits(), {"cap": -2})
    with pytest.raises(InvalidInputError, match="most must be a positive int"):
        resolve_settings(Limits, None, {"most": 0})


def test_resolve_settings_refuses_an_object_of_another_type():
    message = r"^settings must be a Limits, not dict; or pass its fields as keywords$"
    with pytest.raises(InvalidTypeError, match=message):
        resolve_settings(Limits, {"most": 3}, {})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mots"):  # an unknown field, as for any function
        resolve_settings(Limits, None, {"mots": 3})


# -- the shared checks -----------------------------------------------------------------------

HUGE = 10**400  # an int no float holds

GOOD: list[tuple[Any, object, object]] = [
    (check_positive_int, 1, 1),
    (check_positive_int, 2**70, 2**70),
    (check_positive_int_or_none, None, None),
    (check_positive_int_or_none, 7, 7),
    (check_seconds, 0, 0.0),
    (check_seconds, 2.5, 2.5),
    (check_seconds_or_none, None, None),
    (check_seconds_or_none, 3, 3.0),
    (check_positive_seconds, 1e-9, 1e-9),
    (check_positive_seconds, 60, 60.0),
    (check_finite, -1.5, -1.5),
    (check_finite, 0, 0.0),
    (check_flag, True, True),
    (check_flag, False, False),
]


@pytest.mark.parametrize(("check", "value", "expected"), GOOD)
def test_a_good_value_is_kept_normalised(check, value, expected):
    checked = check("x", value)
    assert checked == expected
    assert type(checked) is type(expected)


BAD: list[tuple[Any, object, type[Exception], str]] = [
    (check_positive_int, 0, InvalidInputError, "x must be a positive int, not 0"),
    (check_positive_int, -3, InvalidInputError, "x must be a positive int, not -3"),
    (check_positive_int, 1.0, InvalidTypeError, "x must be a positive int, not 1.0"),
    (check_positive_int, True, InvalidTypeError, "x must be a positive int, not True"),
    (check_positive_int, None, InvalidTypeError, "x must be a positive int, not None"),
    (check_positive_int_or_none, 0, InvalidInputError, "x must be a positive int or None, not 0"),
    (check_positive_int_or_none, "2", InvalidTypeError, "x must be a positive int or None"),
    (check_seconds, -0.5, InvalidInputError, "x must be a finite number of seconds >= 0, not -0.5"),
    (check_seconds, math.inf, InvalidInputError, "x must be a finite number of seconds >= 0"),
    (check_seconds, math.nan, InvalidInputError, "x must be a finite number of seconds >= 0"),
    (check_seconds, HUGE, InvalidInputError, "x must be a finite number of seconds >= 0"),
    (check_seconds, "1", InvalidTypeError, "x must be a number of seconds, not '1'"),
    (check_seconds, False, InvalidTypeError, "x must be a number of seconds, not False"),
    (check_seconds_or_none, -1, InvalidInputError, "x must be a finite number of seconds >= 0 or"),
    (check_seconds_or_none, [], InvalidTypeError, "x must be a number of seconds or None, not []"),
    (check_positive_seconds, 0, InvalidInputError, "x must be a positive, finite number of sec"),
    (check_positive_seconds, math.inf, InvalidInputError, "x must be a positive, finite"),
    (check_positive_seconds, HUGE, InvalidInputError, "x must be a positive, finite"),
    (check_positive_seconds, "5", InvalidTypeError, "x must be a number of seconds, not '5'"),
    (check_finite, math.nan, InvalidInputError, "x must be finite, not nan"),
    (check_finite, -math.inf, InvalidInputError, "x must be finite, not -inf"),
    (check_finite, HUGE, InvalidInputError, "x must be finite, not 1000000000"),
    (check_finite, -HUGE, InvalidInputError, "x must be finite, not -100000000"),
    (check_finite, "0", InvalidTypeError, "x must be a number, not '0'"),
    (check_flag, 1, InvalidTypeError, "x must be True or False, not 1"),
    (check_flag, "yes", InvalidTypeError, "x must be True or False, not 'yes'"),
]


@pytest.mark.parametrize(("check", "value", "error", "message"), BAD)
def test_a_bad_value_is_refused_with_the_one_wording_of_its_check(check, value, error, message):
    with pytest.raises(error) as caught:
        check("x", value)
    assert type(caught.value) is error  # a type error only for a value of the wrong type
    assert str(caught.value).startswith(message)


def test_a_long_value_is_shown_cut():
    with pytest.raises(InvalidInputError) as caught:
        check_finite("x", HUGE)
    assert str(caught.value) == f"x must be finite, not {str(HUGE)[:57]}..."
