"""Whether a grader spec runs code: one walk over every spec kind, before anything is built.

`build_grader` and `load_graders(trust_code=False)` call `refuse_code` on what they were
given before any grader is built or any module imported. The walk asks each spec what it
runs itself and then goes into every field that holds specs, whatever the spec's kind, so
a container added later (like ``combined`` and ``panel`` today) is walked without a line
here. A native spec type says whether it runs code through `runs_code`, which fails
closed: a type that does not say is taken as code. An OpenAI grader object is validated
(which imports and runs nothing of it) and walked the same way, ``multi``'s sub-graders
in either of its shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from gradewire.core._errors import InvalidInputError
from gradewire.openai._config import OPENAI_CODE_TYPES, is_openai_config, validate
from gradewire.specs._grader_specs import SpecBase

__all__ = ["Code", "code_in", "refuse_code"]


@dataclass(frozen=True)
class Code:
    """One spec in a tree that runs code: its key, its type and what it runs."""

    key: str
    kind: str
    runs: str


def code_in(spec: object) -> list[Code]:
    """Every spec in the tree of ``spec`` that runs code, outermost first.

    ``spec`` is a validated native spec, an OpenAI grader object (a mapping), or a list
    of either.
    """
    found: list[Code] = []
    _walk(spec, found)
    return found


def _walk(node: object, found: list[Code]) -> None:
    if isinstance(node, SpecBase):
        runs = node.runs_code()
        if runs is not None:
            found.append(Code(node.key, str(getattr(node, "type", type(node).__name__)), runs))
        for name in type(node).model_fields:
            _walk_specs(getattr(node, name), found)
    elif is_openai_config(node):
        assert isinstance(node, Mapping)
        checked = validate(node, "grader")  # a bad config is refused here, before any build
        kind = str(checked["type"])
        # Fails closed: a type that does not say it runs no code is taken for code.
        runs = OPENAI_CODE_TYPES.get(kind, f"code of an OpenAI {kind} grader")
        if runs is not None:
            found.append(Code(str(checked["name"]), kind, runs))
        for value in checked.values():
            _walk_openai(value, found)
    elif isinstance(node, (list, tuple)):
        for item in node:
            _walk(item, found)


def _walk_specs(value: object, found: list[Code]) -> None:
    """The specs held by a field of a native spec (a spec, or a list or dict of them)."""
    if isinstance(value, BaseModel):
        if isinstance(value, SpecBase):
            _walk(value, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _walk_specs(item, found)
    elif isinstance(value, Mapping):
        for item in value.values():
            _walk_specs(item, found)


def _walk_openai(value: object, found: list[Code]) -> None:
    """The grader objects inside a validated OpenAI grader object (``multi``'s graders)."""
    if is_openai_config(value):
        _walk(value, found)
    elif isinstance(value, Mapping):
        for item in value.values():
            _walk_openai(item, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _walk_openai(item, found)


def refuse_code(specs: list[Any], where: str) -> None:
    """Refuse specs that run code, for a source the user did not vouch for (`trust_code`).

    Raises:
        InvalidInputError: Some spec in the tree runs code; the message names each one.
    """
    try:
        found = code_in(specs)
    except InvalidInputError as exc:  # an OpenAI grader object that is not valid
        raise type(exc)(f"{where}: {exc}") from None
    if not found:
        return
    listed = "; ".join(f"{code.key!r} ({code.kind}) runs {code.runs}" for code in found)
    raise InvalidInputError(
        f"{where}: {listed}. A grader spec of type custom or command, and an OpenAI grader of "
        "type python, is code (anywhere: in a combined, a panel or a multi too): building "
        "it runs what it names, so it is built only from a spec you trust. If you wrote it, "
        "or it comes from a file you control, pass trust_code=True; never do so for a spec "
        "read back from a tracker, a run folder or a request (rebuild those from your own "
        "grader file with load_graders)"
    )
