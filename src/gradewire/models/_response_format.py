"""OpenAI's JSON-schema ``response_format`` for a pydantic model, made once per model class.

A judge asks with the same response model on every call, and pydantic builds its JSON schema
afresh each time it is asked (hundreds of microseconds, the most of a structured call's own
CPU at full fan-out), so the format is built once per class and handed out read-only: every
call, and every `ChatModel` it reaches, sees the same value, and none can change it for the
others.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, NoReturn

from pydantic import BaseModel

__all__ = [
    "ReadOnlyDict",
    "ReadOnlyList",
    "canonical_json",
    "json_schema_response_format",
    "read_only",
]

# Response model classes whose formats are kept; a process seldom has more than a few.
_MEMO_SIZE = 256


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON (sorted keys, no spaces): equal JSON, equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=True)


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(
        "this response_format is shared by every call with the same schema and cannot be "
        "changed: change a copy (copy.deepcopy(response_format))"
    )


class ReadOnlyDict(dict[str, Any]):
    """A JSON object that cannot be changed: a dict to readers and ``json.dumps``.

    Its objects are `ReadOnlyDict`s and its arrays `ReadOnlyList`s, all the way down. A
    copy (``copy.copy``, ``copy.deepcopy``, ``dict(value)``, pickling) is a plain,
    changeable dict. ``canonical`` is its canonical JSON, computed once: as the value cannot
    change, it cannot drift from it.
    """

    __slots__ = ("canonical",)
    canonical: str

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (_thawed(self),))

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return _thawed(self)


class ReadOnlyList(list[Any]):
    """A JSON array that cannot be changed (see `ReadOnlyDict`); copies are plain lists."""

    __slots__ = ()

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (_thawed(self),))

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return _thawed(self)


def read_only(value: Any) -> Any:
    """A read-only copy of a JSON value: `ReadOnlyDict` and `ReadOnlyList` all the way down."""
    if isinstance(value, dict):
        frozen = ReadOnlyDict()
        dict.update(frozen, ((key, read_only(item)) for key, item in value.items()))
        frozen.canonical = canonical_json(frozen)
        return frozen
    if isinstance(value, (list, tuple)):
        return ReadOnlyList(read_only(item) for item in value)
    return value


def _thawed(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _thawed(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thawed(item) for item in value]
    return value


def json_schema_response_format(schema: type[BaseModel]) -> ReadOnlyDict | None:
    """OpenAI's JSON-schema ``response_format`` for ``schema``; None if its root is no object.

    Every object gets ``additionalProperties: false``; ``strict`` is set only when every
    property of every object is required, as strict mode demands. Built once per class and
    returned read-only (`ReadOnlyDict`).
    """
    return _response_format(schema)


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _response_format(schema: type[BaseModel]) -> ReadOnlyDict | None:
    # model_json_schema() returns a new dict each time: changing it here is safe.
    raw = schema.model_json_schema()
    if raw.get("type") != "object":
        return None  # OpenAI wants an object at the root: such schemas go in the prompt
    strict = _close_objects(raw)
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64] or "answer"
    format_ = {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": raw, "strict": strict},
    }
    frozen: ReadOnlyDict = read_only(format_)
    return frozen


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
