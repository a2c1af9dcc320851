"""Helpers for writing graders: text and numeric matching, and parsing model output.

Pure functions of strings (`exact_match`, `numeric_match`, `f1_score`, ...),
`pydantic_parse`, which finds and repairs the JSON in a model's reply, and `math_match` /
`MathGrader` (Math-Verify in worker processes, extra ``math``). Imports `core` only.
"""

from gradewire.helpers._math import MathParseError, MathTimeoutError, math_match
from gradewire.helpers._math_grader import MathGrader
from gradewire.helpers._numeric import numeric_match
from gradewire.helpers._structured import pydantic_parse
from gradewire.helpers._text import (
    contains,
    contains_all,
    contains_any,
    exact_match,
    f1_score,
    normalize,
)

__all__ = [
    "MathGrader",
    "MathParseError",
    "MathTimeoutError",
    "contains",
    "contains_all",
    "contains_any",
    "exact_match",
    "f1_score",
    "math_match",
    "normalize",
    "numeric_match",
    "pydantic_parse",
]
