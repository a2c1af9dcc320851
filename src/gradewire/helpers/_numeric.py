"""Numeric answer matching: HUD's `numeric_match`, reading numbers as models write them.

It keeps the signature and meaning of HUD's grader of the same name; the number reader it
uses, `find_numbers`, and its reading rules are in `gradewire.helpers._numbers`.
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from typing import Literal

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.helpers._numbers import FoundNumber, find_numbers

__all__ = ["FoundNumber", "find_numbers", "numeric_match"]


def numeric_match(
    answer: object,
    expected: float | str,
    *,
    tolerance: float = 0.0,
    rel_tolerance: float = 0.0,
    which: Literal["first", "last"] = "first",
) -> float:
    """Score 1.0 if a number in the answer equals `expected` within tolerance, else 0.0.

    The first number in the answer is used (the last with `which="last"`, handy for
    chain-of-thought answers that end with the result). It matches when
    `abs(found - expected) <= max(tolerance, rel_tolerance * abs(expected))`. A percentage
    matches either reading: `"50%"` is right for expected 50 and for expected 0.5. An answer
    with no number scores 0.0. See this module's docstring for how numbers are read:
    thousands separators, currency, signs, exponents, percentages and fractions.

    Args:
        answer: The text to grade; anything else is converted with `str()`.
        expected: The right number, or a str holding it; a str is read by the same rules and
            its first number used, a percentage as a fraction of one (`"50%"` means 0.5).
        tolerance: Largest absolute difference accepted (finite, >= 0).
        rel_tolerance: Largest difference accepted, as a fraction of `abs(expected)`
            (finite, >= 0).
        which: `"first"` or `"last"`: which number of the answer to compare.

    Returns:
        1.0 on a match, 0.0 otherwise.

    Raises:
        InvalidTypeError: `expected` or a tolerance is a bool or not a number.
        InvalidInputError: `expected` is not finite or is a str without a number, a tolerance
            is negative or not finite, or `which` is not `"first"` or `"last"`.

    Example:
        >>> numeric_match("The total is $1,234.50.", 1234.5)
        1.0
        >>> numeric_match("About 3.14159", 3.14, tolerance=0.01)
        1.0
        >>> numeric_match("Step 1: 6*7. Answer: 42", "42", which="last")
        1.0
    """
    target = _expected_value(expected)
    allowed = max(
        _check_tolerance("tolerance", tolerance),
        _check_tolerance("rel_tolerance", rel_tolerance) * abs(target),
    )
    if which not in ("first", "last"):
        raise InvalidInputError(
            f"which must be 'first' or 'last', got {which!r}; "
            "use which='last' to grade the final number of the answer"
        )
    found = find_numbers(answer)
    if not found:
        return 0.0
    number = found[0] if which == "first" else found[-1]
    for candidate in number.candidates:
        # An overflowed reading (`1e999`) is no evidence of any finite answer.
        if math.isfinite(candidate) and abs(candidate - target) <= allowed:
            return 1.0
    return 0.0


def _expected_value(expected: object) -> float:
    if isinstance(expected, bool):
        raise InvalidTypeError(
            f"expected is the bool {expected!r}, not a number; "
            "pass the number itself, e.g. expected=1 or expected=0.5"
        )
    if isinstance(expected, str):
        found = find_numbers(expected)
        if not found:
            raise InvalidInputError(
                f"expected={expected!r} holds no number; "
                "pass a number or a str with one, e.g. 42, '42', '3/4' or '50%'"
            )
        first = found[0]
        value = first.alternative if first.alternative is not None else first.value
    elif isinstance(expected, (numbers.Real, Decimal)):
        try:
            value = float(expected)
        except OverflowError:
            value = math.inf
    else:
        raise InvalidTypeError(
            f"expected must be a number or a str holding one, got {type(expected).__name__}; "
            "pass e.g. 42, 0.5 or '3/4'"
        )
    if not math.isfinite(value):
        raise InvalidInputError(
            f"expected must be a finite number, got {expected!r}; "
            "no answer can match nan or infinity, so pass the finite value you want"
        )
    return value


def _check_tolerance(name: str, tolerance: object) -> float:
    if isinstance(tolerance, bool) or not isinstance(tolerance, (numbers.Real, Decimal)):
        raise InvalidTypeError(
            f"{name} must be a number, got {type(tolerance).__name__}; pass e.g. {name}=0.01"
        )
    try:
        value = float(tolerance)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value) or value < 0:
        raise InvalidInputError(
            f"{name} must be a finite number >= 0, got {tolerance!r}; "
            f"pass e.g. {name}=0.01, or 0 for an exact match"
        )
    return value
