"""OpenAI's grader templates: ``{{ item.path }}`` and ``{{ sample.output_text }}`` substituted.

A path is dotted, with list indices as ``.0`` or ``[0]`` and keys holding dots or spaces
as ``["a key"]``. A variable whose path names nothing, or names a null or NaN in the data
row (a missing value), is a `TemplateVariableError`, never an empty string or the text
"null"; a template that names another namespace, or a ``sample`` variable OpenAI does
not have, is refused when the grader is built.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradewire.core._errors import InvalidInputError
from gradewire.openai._errors import DataVariableError, TemplateVariableError
from gradewire.openai._sample import OpenAISample

__all__ = ["MAX_TEMPLATE_CHARS", "Template", "Variable", "variable_spans"]

MAX_TEMPLATE_CHARS = 1_000_000
"""The longest template taken, in characters: a config may come from anywhere, and one
that big is no prompt."""
_SEGMENT = re.compile(r"""\.?([^.\[\]]+)|\[\s*(-?\d+)\s*\]|\[\s*(["'])(.*?)\3\s*\]""")
_SAMPLE_VARIABLES = ("output_text", "output_json", "output_tools")


@dataclass(frozen=True)
class Variable:
    """One ``{{ ... }}`` of a template: its namespace and path."""

    text: str
    namespace: str
    path: tuple[str | int, ...]

    def resolve(self, sample: OpenAISample) -> Any:
        """The value the variable names in ``sample``; `TemplateVariableError` if none."""
        if self.namespace == "item":
            value: Any = sample.item
            steps = self.path
        else:
            head = self.path[0]
            value = getattr(sample, str(head))
            steps = self.path[1:]
        walked = self.namespace if self.namespace == "item" else f"sample.{self.path[0]}"
        # A null in the data row is a missing value (a reference not given); a null the
        # model answered is its answer, graded as such (a wrong answer, not a lost one).
        data = self.namespace == "item"
        error = DataVariableError if data else TemplateVariableError
        for step in steps:
            if data:
                _refuse_null(value, walked, self.text)
            value = _step(value, step, walked, self.text, error)
            walked += f".{step}"
        if data:
            _refuse_null(value, walked, self.text)
        return value


# pandas' missing-value markers, known by their type's name: pandas is not imported here.
_MISSING_TYPES = ("NAType", "NaTType")


def _is_null(value: Any) -> bool:
    """JSON's null, a NaN (how a data frame stores a missing cell), or pandas' NA/NaT."""
    if value is None or type(value).__name__ in _MISSING_TYPES:
        return True
    try:
        return isinstance(value, numbers.Number) and math.isnan(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return False


def _refuse_null(value: Any, walked: str, text: str) -> None:
    # A null is no value: rendered, it would be the text "null", which a check compares
    # (a completion "null" would pass) and a judge reads as an answer.
    if _is_null(value):
        shown = "null" if value is None else "null (NaN)"
        raise DataVariableError(
            f"template variable {{{{{text}}}}}: {walked} is {shown}, a missing value, as a "
            "missing key is; give every sample a value there, or set missing_variables = "
            '"abstain" (the [openai] table) to have such samples abstain'
        )


def _step(
    value: Any, step: str | int, walked: str, text: str, error: type[TemplateVariableError]
) -> Any:
    if isinstance(value, Mapping):
        key = str(step)
        if key in value:
            return value[key]
        shown = ", ".join(repr(k) for k in list(value)[:10]) or "none"
        raise error(
            f"template variable {{{{{text}}}}}: {walked} has no key {key!r} (its keys: "
            f"{shown}); give every sample that field, or fix the path"
        )
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        index = step if isinstance(step, int) else _index(step)
        if index is not None and -len(value) <= index < len(value):
            return value[index]
        raise error(
            f"template variable {{{{{text}}}}}: {walked} is a list of {len(value)}, which "
            f"has no item {step!r}"
        )
    raise error(
        f"template variable {{{{{text}}}}}: {walked} is a {type(value).__name__}, which has "
        f"no field {step!r}"
    )


def _index(step: str) -> int | None:
    try:
        return int(step)
    except ValueError:
        return None


def _parse(source: str, where: str) -> Variable:
    inner = source.strip()
    # The variable as error messages show it: a long one cut (the config may be hostile).
    text = source if len(source) <= 120 else f"{source[:100]}...({len(source):,} characters)"
    segments: list[str | int] = []
    position = 0
    while position < len(inner):
        match = _SEGMENT.match(inner, position)
        if match is None or match.end() == position:
            raise InvalidInputError(
                f"{where}: the template variable {{{{{text}}}}} is not a path such as "
                "{{ item.answer }} or {{ item.choices[0].text }}"
            )
        name, index, _, quoted = match.groups()
        if name is not None:
            segments.append(name.strip())
        elif index is not None:
            segments.append(int(index))
        else:
            segments.append(quoted)
        position = match.end()
    if not segments or segments[0] not in ("item", "sample"):
        raise InvalidInputError(
            f"{where}: the template variable {{{{{text}}}}} must start with a namespace, "
            "'item' (the data row) or 'sample' (the model's output), e.g. {{ item.answer }}"
        )
    namespace, path = str(segments[0]), tuple(segments[1:])
    if namespace == "sample" and (not path or path[0] not in _SAMPLE_VARIABLES):
        raise InvalidInputError(
            f"{where}: {{{{{text}}}}} names no sample variable; OpenAI's are "
            "sample.output_text, sample.output_json and sample.output_tools"
        )
    if namespace == "sample" and path[0] == "output_text" and len(path) > 1:
        raise InvalidInputError(
            f"{where}: {{{{{text}}}}}: sample.output_text is a string, it has no fields; "
            "use sample.output_json.<field> for a JSON answer"
        )
    return Variable(inner, namespace, path)


def variable_spans(source: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each ``{{ ... }}`` in ``source``, in one pass.

    Each variable runs from a ``{{`` to the first ``}}`` after it. Once a ``{{`` has no
    ``}}`` after it, none later has: the scan stops there, so it reads each character
    once (a regex searching again from every unclosed ``{{`` took quadratic time).
    """
    spans: list[tuple[int, int]] = []
    position = 0
    while True:
        start = source.find("{{", position)
        if start < 0:
            return spans
        close = source.find("}}", start + 2)
        if close < 0:
            return spans
        spans.append((start, close + 2))
        position = close + 2


class Template:
    """A template string, parsed once; `render` fills it in for one sample."""

    __slots__ = ("_parts", "source", "variables")

    def __init__(self, source: str, where: str) -> None:
        """Parse ``source``; ``where`` names the field in error messages."""
        if len(source) > MAX_TEMPLATE_CHARS:
            raise InvalidInputError(
                f"{where}: the template has {len(source):,} characters, more than the "
                f"{MAX_TEMPLATE_CHARS:,} a template may have; put long material in the "
                "data row and name it with a variable ({{ item.document }})"
            )
        self.source = source
        parts: list[str | Variable] = []
        position = 0
        for start, end in variable_spans(source):
            parts.append(source[position:start])
            parts.append(_parse(source[start + 2 : end - 2], where))
            position = end
        parts.append(source[position:])
        self._parts = tuple(part for part in parts if part != "")
        self.variables = tuple(part for part in self._parts if isinstance(part, Variable))

    def render(self, sample: OpenAISample) -> str:
        """The template with every variable replaced (strings as they are, the rest as JSON)."""
        if not self.variables:
            return self.source
        return "".join(
            part if isinstance(part, str) else _as_text(part.resolve(sample))
            for part in self._parts
        )

    def uses(self, namespace: str, name: str | None = None) -> bool:
        """Whether a variable of ``namespace`` (and, for ``sample``, of ``name``) appears."""
        return any(
            v.namespace == namespace and (name is None or (v.path and v.path[0] == name))
            for v in self.variables
        )


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
