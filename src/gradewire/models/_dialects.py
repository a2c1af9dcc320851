"""Structured-output dialects: how a JSON schema travels to each kind of server.

`complete_structured` hands `OpenAIChatModel` OpenAI's JSON-schema ``response_format``; the
endpoint's dialect decides which request fields carry it:

- ``"json_schema"``: ``response_format: {"type": "json_schema", "json_schema": {...}}``
  (OpenAI, vLLM, Ollama 0.5+, llama.cpp's own ``llama-server``). Count and bound keywords
  (``minItems``, ``minimum``...) are left out: OpenAI's strict mode refuses them.
- ``"json_object_schema"``: ``response_format: {"type": "json_object", "schema": S}``
  (llama-cpp-python's server, grammar-constrained), with the count keywords.
- ``"guided_json"``: ``guided_json: S`` (vLLM before 0.12), with the count keywords. Servers
  that ignore unknown fields ignore it silently, so the prompt shows an example answer too.
- ``"prompt"``: no field: the prompt shows one example answer (`answer_example`).

``"auto"`` tries them in that order and keeps the first the server does not refuse.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.models._response_format import ReadOnlyDict, canonical_json, read_only

__all__ = [
    "AUTO_ORDER",
    "OPENAI_DIALECTS",
    "Dialects",
    "apply_dialect",
    "dialect_parameters",
    "next_dialect",
    "strict_response_format",
    "without_keywords",
]

# Strongest first: the order "auto" tries them in.
AUTO_ORDER: tuple[str, ...] = ("json_schema", "json_object_schema", "guided_json", "prompt")

# The request fields a refusal of each dialect names.
_PARAMETERS: dict[str, tuple[str, ...]] = {
    "json_schema": ("response_format", "json_schema"),
    "json_object_schema": ("response_format", "json_object"),
    "guided_json": ("guided_json",),
    "prompt": (),
}
# Distinct schemas whose strict form is kept; a process seldom sends more than a few.
_MEMO_SIZE = 256
# JSON-schema keywords OpenAI's strict mode refuses; grammar engines honour them.
STRICT_REFUSED = frozenset(
    {
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
    }
)


@dataclass(frozen=True)
class Dialects:
    """The structured-output dialects one provider's wire format can speak.

    Attributes:
        order: The dialects, strongest first: the order ``"auto"`` tries them in; the last
            is ``"prompt"`` (no field: an example answer in the prompt).
        parameters: The request fields each dialect sends, as a refusal would name them.
        prompted: The dialects whose prompt shows an example answer too (``"prompt"``, and
            a dialect a server may ignore silently).
    """

    order: tuple[str, ...]
    parameters: Mapping[str, tuple[str, ...]] = field(compare=False)
    prompted: frozenset[str] = frozenset({"prompt"})

    def setting(self, value: object) -> str:
        """``value`` checked as a ``structured_output=`` setting for these dialects."""
        known = ["auto", *self.order]
        if not isinstance(value, str):
            raise InvalidTypeError(f"structured_output must be one of {known}, not {value!r}")
        if value not in known:
            raise InvalidInputError(
                f"structured_output={value!r} is not a dialect this model speaks; use one of "
                f"{known} ('auto' finds the one the server takes)"
            )
        return value

    def following(self, dialect: str) -> str:
        """The dialect "auto" tries after ``dialect`` was refused."""
        index = self.order.index(dialect)
        return self.order[min(index + 1, len(self.order) - 1)]


OPENAI_DIALECTS = Dialects(
    order=AUTO_ORDER,
    parameters=_PARAMETERS,
    # guided_json is ignored silently by servers that do not know it: show the example too.
    prompted=frozenset({"guided_json", "prompt"}),
)
"""The dialects of OpenAI's chat completions format (see the module docstring)."""


def dialect_parameters(dialect: str) -> tuple[str, ...]:
    """The request fields ``dialect`` sends, as a refusal would name them."""
    return _PARAMETERS[dialect]


def next_dialect(dialect: str) -> str:
    """The dialect "auto" tries after ``dialect`` was refused."""
    return OPENAI_DIALECTS.following(dialect)


def apply_dialect(
    payload: dict[str, Any], dialect: str, response_format: Mapping[str, Any]
) -> None:
    """Write ``response_format`` (OpenAI's form) into ``payload`` as ``dialect`` sends it."""
    if response_format.get("type") != "json_schema":
        # Only a JSON-schema format has other dialects; anything else is sent as given.
        if dialect != "prompt":
            payload["response_format"] = response_format
        return
    if dialect == "json_schema":
        payload["response_format"] = strict_response_format(response_format)
        return
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    if dialect == "json_object_schema":
        payload["response_format"] = {"type": "json_object", "schema": schema}
    elif dialect == "guided_json":
        payload["guided_json"] = schema


def strict_response_format(response_format: Mapping[str, Any]) -> Mapping[str, Any]:
    """A JSON-schema ``response_format`` without the keywords strict mode refuses.

    Made once per distinct format, keyed by its canonical JSON: a dict changed between calls
    is a new format, and equal formats in different objects share one result. A
    `ReadOnlyDict` (a response model's format) brings its canonical JSON along, so its key
    costs nothing. The result is shared, so it is a `ReadOnlyDict` too: a request body
    splices in its encoding, made once (`encode_payload`), rather than encoding it afresh.
    """
    key = getattr(response_format, "canonical", None)
    if not isinstance(response_format, ReadOnlyDict) or not isinstance(key, str):
        try:
            key = canonical_json(response_format)
        except (TypeError, ValueError):
            # Not JSON (a set, keys of mixed types...): the request's encoding says so.
            return _strict_format(response_format)
    return _strict_from_json(key)


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _strict_from_json(text: str) -> Mapping[str, Any]:
    strict: ReadOnlyDict = read_only(_strict_format(json.loads(text)))
    return strict


def _strict_format(response_format: Mapping[str, Any]) -> dict[str, Any]:
    spec = response_format.get("json_schema")
    if not isinstance(spec, Mapping):
        raise InvalidTypeError(
            "a response_format of type 'json_schema' needs a 'json_schema' object "
            f"({{'name': ..., 'schema': {{...}}}}), not {spec!r}"
        )
    schema = without_keywords(spec.get("schema"), STRICT_REFUSED)
    return {**response_format, "json_schema": {**spec, "schema": schema}}


def without_keywords(node: Any, keywords: frozenset[str]) -> Any:
    """A copy of a JSON schema without ``keywords`` (in schema positions, at any depth)."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key in keywords and not isinstance(value, (dict, list)):
                continue
            if key == "properties" and isinstance(value, dict):
                # Property names are data, not keywords: a field called "minimum" stays.
                out[key] = {name: without_keywords(sub, keywords) for name, sub in value.items()}
            else:
                out[key] = without_keywords(value, keywords)
        return out
    if isinstance(node, list):
        return [without_keywords(value, keywords) for value in node]
    return copy.copy(node)
