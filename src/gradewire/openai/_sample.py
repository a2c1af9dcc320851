"""A graded sample as OpenAI's graders see it: the ``sample`` and ``item`` namespaces."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gradewire.core._thread import StringThread
from gradewire.openai._errors import SampleParseError

__all__ = ["MESSAGE_FIELDS", "OpenAISample"]

MESSAGE_FIELDS = "message_fields"
"""The metadata key where eval data rows keep a message's other fields (``tool_calls``)."""

_UNSET: Any = object()


class OpenAISample:
    """The ``sample`` and ``item`` namespaces of one `StringThread`.

    ``item`` is the thread's metadata (the data row), ``sample.output_text`` its completion
    (the last assistant turn, "" when there is none), ``sample.output_json`` that completion
    parsed as JSON (only when a template uses it: a completion that is not JSON is then a
    `SampleParseError`), and ``sample.output_tools`` the tool calls of the last assistant
    message (``[]`` when it made none).
    """

    __slots__ = ("_json", "item", "output_text", "output_tools")

    def __init__(self, thread: StringThread) -> None:
        metadata = dict(thread.metadata)
        extras = metadata.pop(MESSAGE_FIELDS, None)
        self.item: dict[str, Any] = metadata
        self.output_text: str = thread.completion() or ""
        self.output_tools: list[Any] = _tool_calls(thread, extras)
        self._json: Any = _UNSET

    @property
    def output_json(self) -> Any:
        """The completion parsed as JSON; `SampleParseError` when it is not JSON."""
        if self._json is _UNSET:
            try:
                self._json = json.loads(self.output_text)
            except ValueError as exc:
                shown = self.output_text[:80]
                raise SampleParseError(
                    f"sample.output_json: the completion is not JSON ({exc}; it begins "
                    f"{shown!r}); use sample.output_text, or have the model answer in JSON"
                ) from None
        return self._json

    def sample_namespace(self) -> dict[str, Any]:
        """``sample`` as the python grader gets it (``output_json`` None when not JSON)."""
        try:
            parsed = self.output_json
        except SampleParseError:
            parsed = None
        return {
            "output_text": self.output_text,
            "output_json": parsed,
            "output_tools": self.output_tools,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": self.output_text}}
            ],
        }


def _tool_calls(thread: StringThread, extras: object) -> list[Any]:
    if not isinstance(extras, Mapping):
        return []
    turns = thread.turns
    for index in range(len(turns) - 1, -1, -1):
        if turns[index].role == "assistant":
            fields = extras.get(str(index))
            calls = fields.get("tool_calls") if isinstance(fields, Mapping) else None
            return list(calls) if isinstance(calls, list) else []
    return []
