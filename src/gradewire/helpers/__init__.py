"""Helpers for writing graders: text and numeric matching, and parsing model output.

Pure functions of strings (`exact_match`, `numeric_match`, `f1_score`, ...) and
`pydantic_parse`, which finds and repairs the JSON in a model's reply. Imports `core` only.
"""

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
    "contains",
    "contains_all",
    "contains_any",
    "exact_match",
    "f1_score",
    "normalize",
    "numeric_match",
    "pydantic_parse",
]
