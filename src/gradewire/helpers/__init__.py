"""Helpers for writing graders: text, numeric and math matching, and structured model output.

Pure functions of strings (`exact_match`, `numeric_match`, `f1_score`, ...), `math_match` /
`MathGrader` (Math-Verify in worker processes, extra ``math``), `pydantic_parse`, which
finds and repairs the JSON in a model's reply, and `render_schema`, which shows a pydantic
model in a prompt. Imports `core` only; each name is imported when first used.
"""

from typing import TYPE_CHECKING

from gradewire.core._lazy import attach

if TYPE_CHECKING:
    from gradewire.helpers._math import MathParseError, MathTimeoutError, math_match
    from gradewire.helpers._math_grader import MathGrader
    from gradewire.helpers._numeric import numeric_match
    from gradewire.helpers._render_schema import render_schema
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
    "render_schema",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(
        __name__,
        {
            "._math": ["MathParseError", "MathTimeoutError", "math_match"],
            "._math_grader": ["MathGrader"],
            "._numeric": ["numeric_match"],
            "._render_schema": ["render_schema"],
            "._structured": ["pydantic_parse"],
            "._text": [
                "contains",
                "contains_all",
                "contains_any",
                "exact_match",
                "f1_score",
                "normalize",
            ],
        },
    )
