"""string_check: compare the templated input with the templated reference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from gradewire.core._grade import Grade
from gradewire.core._thread import StringThread
from gradewire.openai._base import OpenAIGrader
from gradewire.openai._errors import ErrorKind
from gradewire.openai._sample import OpenAISample
from gradewire.openai._template import Template

__all__ = ["StringCheck"]

Operation = Literal["eq", "ne", "like", "ilike"]


def _holds(operation: Operation, text: str, reference: str) -> bool:
    if operation == "eq":
        return text == reference
    if operation == "ne":
        return text != reference
    if operation == "like":
        return reference in text
    return reference.casefold() in text.casefold()


class StringCheck(OpenAIGrader):
    """OpenAI's ``string_check``: 1.0 when the check holds, else 0.0 (a pass is a 1.0).

    ``eq``: input equals reference; ``ne``: they differ; ``like``: the input contains the
    reference (case-sensitive); ``ilike``: the same, ignoring case (Unicode case folding).
    """

    error_kinds: ClassVar[tuple[ErrorKind, ...]] = (
        "invalid_variable_error",
        "sample_parse_error",
        "other_error",
    )

    def __init__(self, grader_key: str, config: Mapping[str, Any], *, where: str) -> None:
        super().__init__(grader_key, config)
        self.operation: Operation = config["operation"]
        self.input = Template(config["input"], f"{where}.input")
        self.reference = Template(config["reference"], f"{where}.reference")

    def passed(self, value: float) -> bool | None:
        """A string check passes when it holds."""
        return value == 1.0

    async def grade(self, sample: StringThread) -> Grade:
        """Render both templates and apply the operation."""
        seen = OpenAISample(sample)
        text = self.input.render(seen)
        reference = self.reference.render(seen)
        value = 1.0 if _holds(self.operation, text, reference) else 0.0
        reasoning = f"{self.operation}: input {text[:200]!r}, reference {reference[:200]!r}"
        return self.scored(
            value, sample, reasoning=reasoning, info={"input": text, "reference": reference}
        )
