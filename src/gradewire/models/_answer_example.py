"""One example instance of a JSON schema: what the prompt mode shows a model instead of the schema.

Small models asked to follow a JSON schema tend to copy the schema back or discuss it; shown
one instance of the answer (``{"reasoning": "...", "verdict": "PASS"}``) and the values each
enum field may take, they write an answer of that shape.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["answer_example", "enum_notes"]

_MAX_DEPTH = 8


def answer_example(schema: dict[str, Any]) -> str:
    """The compact JSON of one instance of ``schema`` (a pydantic JSON schema)."""
    return json.dumps(_instance(schema, schema.get("$defs", {}), 0), ensure_ascii=False)


def enum_notes(schema: dict[str, Any]) -> list[str]:
    """``'verdict' is one of "PASS", "FAIL", "NA"`` for every enum field, in order."""
    notes: list[str] = []
    _collect_enums(schema, schema.get("$defs", {}), notes, 0)
    return notes


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        found = defs.get(ref.rsplit("/", 1)[1])
        if isinstance(found, dict):
            return found
    for key in ("anyOf", "oneOf", "allOf"):
        options = node.get(key)
        if isinstance(options, list):
            for option in options:
                if isinstance(option, dict) and option.get("type") != "null":
                    return _resolve(option, defs)
    return node


def _instance(node: Any, defs: dict[str, Any], depth: int) -> Any:
    if not isinstance(node, dict) or depth > _MAX_DEPTH:
        return None
    node = _resolve(node, defs)
    if "const" in node:
        return node["const"]
    if isinstance(node.get("enum"), list) and node["enum"]:
        return node["enum"][0]
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object" or "properties" in node:
        properties = node.get("properties") or {}
        return {name: _instance(sub, defs, depth + 1) for name, sub in properties.items()}
    if kind == "array":
        count = max(1, int(node.get("minItems", 1) or 1))
        return [_instance(node.get("items", {}), defs, depth + 1) for _ in range(min(count, 3))]
    if kind == "integer":
        return int(node.get("minimum", 0))
    if kind == "number":
        return float(node.get("minimum", 0.0))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "..."


def _collect_enums(node: Any, defs: dict[str, Any], notes: list[str], depth: int) -> None:
    if not isinstance(node, dict) or depth > _MAX_DEPTH:
        return
    node = _resolve(node, defs)
    for name, sub in (node.get("properties") or {}).items():
        resolved = _resolve(sub, defs) if isinstance(sub, dict) else {}
        values = resolved.get("enum")
        if isinstance(values, list) and len(values) > 1:
            shown = ", ".join(json.dumps(v, ensure_ascii=False) for v in values)
            notes.append(f'"{name}" is one of {shown}')
        elif resolved.get("type") == "array":
            _collect_enums(resolved.get("items"), defs, notes, depth + 1)
        else:
            _collect_enums(resolved, defs, notes, depth + 1)
