"""OpenAI's JSON-schema ``response_format`` for a pydantic model."""

from __future__ import annotations

import copy
import re
from typing import Any

from pydantic import BaseModel

__all__ = ["json_schema_response_format"]


def json_schema_response_format(schema: type[BaseModel]) -> dict[str, Any] | None:
    """OpenAI's JSON-schema ``response_format`` for ``schema``; None if its root is no object.

    Every object gets ``additionalProperties: false``; ``strict`` is set only when every
    property of every object is required, as strict mode demands.
    """
    raw = copy.deepcopy(schema.model_json_schema())
    if raw.get("type") != "object":
        return None  # OpenAI wants an object at the root: such schemas go in the prompt
    strict = _close_objects(raw)
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64] or "answer"
    return {"type": "json_schema", "json_schema": {"name": name, "schema": raw, "strict": strict}}


def _close_objects(node: Any) -> bool:
    """Close every object schema in ``node``; True if every object requires all properties."""
    all_required = True
    if isinstance(node, dict):
        properties = node.get("properties")
        if node.get("type") == "object" and isinstance(properties, dict):
            node.setdefault("additionalProperties", False)
            if set(node.get("required", ())) != set(properties):
                all_required = False
        for value in node.values():
            all_required = _close_objects(value) and all_required
    elif isinstance(node, list):
        for value in node:
            all_required = _close_objects(value) and all_required
    return all_required
