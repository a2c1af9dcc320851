"""Helpers for writing graders: text, numeric and math matching, and structured model output.

Pure functions of strings (`exact_match`, `numeric_match`, `f1_score`, ...), `math_match` /
`MathGrader` (Math-Verify in worker processes, extra ``math``), `pydantic_parse`, which
finds and repairs the JSON in a model's reply, and `render_schema`, which shows a pydantic
model in a prompt. Imports `core` only; each name is imported when first used.
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.helpers._math import MathParseError as MathParseError
    from gradewire.helpers._math import MathTimeoutError as MathTimeoutError
    from gradewire.helpers._math import math_match as math_match
    from gradewire.helpers._math_grader import MathGrader as MathGrader
    from gradewire.helpers._numeric import numeric_match as numeric_match
    from gradewire.helpers._render_schema import render_schema as render_schema
    from gradewire.helpers._structured import pydantic_parse as pydantic_parse
    from gradewire.helpers._text import contains as contains
    from gradewire.helpers._text import contains_all as contains_all
    from gradewire.helpers._text import contains_any as contains_any
    from gradewire.helpers._text import exact_match as exact_match
    from gradewire.helpers._text import f1_score as f1_score
    from gradewire.helpers._text import normalize as normalize

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
