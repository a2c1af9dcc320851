r"""Reading numbers the way models write them: `find_numbers`, behind `numeric_match`.

Reading rules (each is also tested):

* Digits: `42`, `.5`, `3.`, `1e-3`, `2.5E+4`. Any Unicode decimal digit counts (`５０` is 50).
* Thousands separators: a comma (or LaTeX `{,}`) followed by exactly three digits, repeated:
  `1,000`, `12,345,678.9`. Anything else splits: `1,2,3` is 1, 2, 3 and `1,2345` is 1, 2345.
* Currency: `$ € £ ¥` are skipped before or after a number; `-$5` and `$-5` are both -5.
* Signs: `-`, `+`, `−` (U+2212), `﹣` (U+FE63), `－` (U+FF0D) and `＋` (U+FF0B). A sign must
  touch the number, and counts only when the character before it is not a word character
  (letter, digit, underscore) or a closing bracket `) ] }`. So `x-5`, `f(x)-5`, `COVID-19`
  and the dashes in `2024-01-05` are hyphens or binary minus, not signs: the last reads
  2024, 1, 5; while `-5`, `= -5`, `(-5)` and `{-5}` are negative.
* Percentages: `50%`, `50 %`, `50\%`, `50％` give value 50 and alternative 0.5; a grader
  accepts either.
* Fractions: `3/4`, `-3/4`, `1 / 8` (integers, spaces or tabs allowed around the slash) and
  LaTeX `\frac{3}{4}`, `\dfrac{3}{4}`, `\tfrac{-3}{4}`, `\cfrac`, shorthand `\frac34`.
  A zero denominator makes it two numbers (`1/0` is 1, 0). A slash chain is never a fraction
  (`1/2/2024` is 1, 2, 2024), nor is a slash whose denominator continues as a decimal,
  thousands group, exponent or percentage (`1/2.5` is 1, 2.5).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Literal

__all__ = ["FoundNumber", "find_numbers"]

_SIGN = r"[+\-\u2212\ufe63\uff0b\uff0d]"
_MINUS_SIGNS = frozenset("-\u2212\ufe63\uff0d")
_CURRENCY = r"[$\u20ac\u00a3\u00a5]"
# Horizontal space only, so a fraction or a percent sign never reaches across a line break.
_HSPACE = r"[ \t\u00a0\u202f]"
_PERCENT = rf"{_HSPACE}?\\?[%\uff05]"

# Every piece below is a bounded choice or a greedy run of one character class followed by
# something that class cannot match, never two runs that could share characters (`\s*x?\s*`
# would be quadratic on long whitespace). So a failed attempt backtracks through at most one
# run, and the whole scan stays linear in the length of the text.
_PREFIX = rf"""
    (?:
        (?<![\w)\]}}]) (?P<sign>{_SIGN}) {_CURRENCY}?
      | {_CURRENCY} (?P<csign>{_SIGN})?
    )?
"""
_LATEX_FRACTION = rf"""
    \\[dtc]?frac
    (?:
        \s*\{{\s*(?:(?P<lnsign>{_SIGN})\s*)?(?P<lnum>\d+)\s*\}}
        \s*\{{\s*(?:(?P<ldsign>{_SIGN})\s*)?(?P<lden>0*[1-9]\d*)\s*\}}
      | (?P<snum>\d)(?P<sden>[1-9])
    )
"""
_SLASH_FRACTION = rf"""
    (?<![\d./]) (?P<fnum>\d+) {_HSPACE}* / {_HSPACE}* (?P<fden>0*[1-9]\d*)
    (?!
        \d | \.\d | (?:,|\{{,\}})\d{{3}}(?!\d) | [eE]{_SIGN}?\d
      | {_HSPACE}*/{_HSPACE}*\d | {_PERCENT}
    )
"""
_DECIMAL = rf"""
    (?P<mant>
        (?<!\d) \d{{1,3}} (?:(?:,|\{{,\}})\d{{3}})+ (?!\d) (?:\.\d*)?
      | (?<!\d) \d+ (?:\.\d*)?
      | (?<![\d.]) \.\d+
    )
    (?: [eE] (?P<esign>{_SIGN})? (?P<exp>\d+) )?
    (?P<pct>{_PERCENT})?
"""
_NUMBER_RE = re.compile(
    rf"{_PREFIX} (?: {_LATEX_FRACTION} | {_SLASH_FRACTION} | {_DECIMAL} )", re.VERBOSE
)
# Used where a slash fraction turns out to continue a chain: read the numerator on its own.
_NO_SLASH_RE = re.compile(rf"{_PREFIX} (?: {_LATEX_FRACTION} | {_DECIMAL} )", re.VERBOSE)
_SPACE_BEFORE_SLASH = frozenset(" \t\u00a0\u202f")
# Enough digits that rounding the quotient to a float is not affected by the decimal rounding.
_DECIMAL_PRECISION = 40


@dataclass(frozen=True, slots=True)
class FoundNumber:
    """A number read from text by `find_numbers`.

    Attributes:
        value: The number as written, sign included: 50.0 for `50%`, 0.75 for `3/4`,
            -1234.5 for `-$1,234.5`. Infinite when the digits overflow a float (`1e999`).
        alternative: For a percentage, the value as a fraction of one (0.5 for `50%`);
            None for anything else.
        kind: `"number"`, `"percent"` or `"fraction"`.
        text: The matched text, including any sign and leading currency symbol.
        start: Index of the first character of `text` in the string that was read.
        end: Index just past the last character of `text`.
    """

    value: float
    alternative: float | None
    kind: Literal["number", "percent", "fraction"]
    text: str
    start: int
    end: int

    @property
    def candidates(self) -> tuple[float, ...]:
        """Every value the number may stand for: `(value,)`, or `(value, alternative)`."""
        if self.alternative is None:
            return (self.value,)
        return (self.value, self.alternative)


def find_numbers(text: object) -> list[FoundNumber]:
    """Read every number in `text`, left to right.

    The rules (signs, separators, currency, percentages, fractions) are in this module's
    docstring. Matching is linear in the length of the text.

    Args:
        text: The text to read; anything else is converted with `str()`.

    Returns:
        The numbers in order of appearance; empty if there are none.

    Example:
        >>> [n.value for n in find_numbers("Paid -$1,234.50 for 3/4 of it, 2024-01-05")]
        [-1234.5, 0.75, 2024.0, 1.0, 5.0]
        >>> find_numbers("50%")[0].candidates
        (50.0, 0.5)
    """
    source = text if isinstance(text, str) else str(text)
    found: list[FoundNumber] = []
    pos = 0
    while (match := _NUMBER_RE.search(source, pos)) is not None:
        if match.group("fnum") is not None and _follows_slash(source, match.start()):
            # `1 / 2 / 3`: the regex lookbehind only sees a slash right before the numerator;
            # a spaced one is caught here, and the numerator then stands alone.
            retry = _NO_SLASH_RE.match(source, match.start())
            if retry is None:  # pragma: no cover - the numerator's digits always match
                pos = match.start() + 1
                continue
            match = retry
        found.append(_build(match))
        pos = match.end()
    return found


def _follows_slash(text: str, start: int) -> bool:
    index = start - 1
    while index >= 0 and text[index] in _SPACE_BEFORE_SLASH:
        index -= 1
    return index >= 0 and text[index] == "/"


def _build(match: re.Match[str]) -> FoundNumber:
    # groupdict, not group(): the retry pattern has no slash-fraction groups at all.
    groups: dict[str, str | None] = match.groupdict()
    sign = groups.get("sign") or groups.get("csign")
    negative = sign is not None and sign in _MINUS_SIGNS
    kind: Literal["number", "percent", "fraction"]
    alternative: float | None = None

    # At most one fraction form matched, and a matched group is never empty.
    numerator = groups.get("lnum") or groups.get("snum") or groups.get("fnum")
    denominator = groups.get("lden") or groups.get("sden") or groups.get("fden")
    if numerator is not None and denominator is not None:
        kind = "fraction"
        value = _ratio(numerator, denominator)
        for inner in (groups.get("lnsign"), groups.get("ldsign")):
            if inner is not None and inner in _MINUS_SIGNS:
                negative = not negative
    else:
        digits = (groups["mant"] or "").replace("{,}", "").replace(",", "")
        if (exponent := groups["exp"]) is not None:
            esign = groups["esign"]
            digits += ("e-" if esign is not None and esign in _MINUS_SIGNS else "e") + exponent
        value = float(digits)
        if groups["pct"] is None:
            kind = "number"
        else:
            kind = "percent"
            alternative = _hundredth(digits, value)

    if negative:
        value = -value
        if alternative is not None:
            alternative = -alternative
    return FoundNumber(value, alternative, kind, match.group(), match.start(), match.end())


def _ratio(numerator: str, denominator: str) -> float:
    # Decimal, not int: int() refuses digit strings past sys.int_max_str_digits, and float
    # division would turn two overflowing operands into nan.
    with localcontext() as context:
        context.prec = _DECIMAL_PRECISION
        return float(Decimal(numerator) / Decimal(denominator))


def _hundredth(digits: str, value: float) -> float:
    # Shifting the decimal exponent keeps `0.7%` at 0.007 exactly, where 0.7 / 100 is not.
    try:
        with localcontext() as context:
            context.prec = _DECIMAL_PRECISION
            return float(Decimal(digits).scaleb(-2))
    except ArithmeticError:  # an exponent beyond what Decimal can hold
        return value / 100
