"""Turn a pydantic ValidationError of a grader spec into one message that says what to fix."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from gradewire.core._errors import InvalidInputError
from gradewire.specs._grader_specs import SPEC_ALIASES, SPEC_TYPES, JudgeDefaults, JudgeModelSpec

__all__ = ["spec_error"]

_SECRET_FIELDS = {
    "token": "token_env",
    "api_key": "api_key_env",
    "password": None,
    "secret": None,
}


def spec_error(exc: ValidationError, where: str) -> InvalidInputError:
    """One `InvalidInputError` listing every problem, each with its field path and a fix."""
    problems = [_explain(error) for error in exc.errors()]
    head = f"{where} is not a valid grader spec" if where else "invalid grader spec"
    if len(problems) == 1:
        return InvalidInputError(f"{head}: {problems[0]}")
    listed = "\n".join(f"  - {problem}" for problem in problems)
    return InvalidInputError(f"{head} ({len(problems)} problems):\n{listed}")


def _explain(error: Any) -> str:
    loc = error["loc"]
    kind_name, path = _path(loc)
    parent, _, field = path.rpartition(".") if "." in path else ("", "", path)
    if field.endswith("]"):  # the problem is a whole list item, not one field of it
        parent, field = path, ""
    at = f" at {parent}" if parent else ""
    owner = f"the {kind_name} spec{at}" if kind_name else (parent or "the file")
    code = error["type"]
    if code == "extra_forbidden":
        return _unknown_field(field, kind_name, owner, loc)
    if code == "missing":
        return f"{owner}: field {field!r} is required"
    if code == "union_tag_invalid":
        return (
            f"{path or 'the spec'}: unknown grader type {error['ctx']['tag']!r}; "
            f"use one of {', '.join(SPEC_TYPES)}"
        )
    if code == "union_tag_not_found":
        return f"{path or 'the spec'} needs a 'type' field: one of {', '.join(SPEC_TYPES)}"
    # Pydantic's messages say what was expected; the value itself is not repeated, as a
    # misplaced secret could be it.
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{owner}: field {field!r}: {message}" if field else f"{owner}: {message}"


def _path(loc: Sequence[Any]) -> tuple[str | None, str]:
    """The innermost spec type in ``loc`` and the field path, e.g. ``graders[0].criteria``."""
    kind_name: str | None = None
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part in SPEC_TYPES or part in SPEC_ALIASES:
            # Pydantic puts the matched type's tag in the path (no field has such a name).
            kind_name = SPEC_ALIASES.get(str(part), str(part))
        else:
            text = f"{text}.{part}" if text else str(part)
    return kind_name, text


def _unknown_field(field: str, kind_name: str | None, owner: str, loc: Sequence[Any]) -> str:
    allowed = _allowed_fields(kind_name, loc)
    text = f"unknown field {field!r} in {owner}"
    if field.lower() in _SECRET_FIELDS:
        instead = _SECRET_FIELDS[field.lower()]
        fix = f" and name that variable in {instead!r}" if instead else ""
        return (
            f"{text}: secrets never go in a grader file (it is logged as run config); "
            f"export the secret in an environment variable{fix}"
        )
    close = difflib.get_close_matches(field, allowed, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{text}{hint}; it takes: {', '.join(allowed)}" if allowed else f"{text}{hint}"


def _allowed_fields(kind_name: str | None, loc: Sequence[Any]) -> list[str]:
    model: type[BaseModel] | None = SPEC_TYPES.get(kind_name) if kind_name else None
    if len(loc) >= 2 and loc[-2] == "judge_model":
        model = JudgeModelSpec
    elif loc and loc[0] == "judge":
        model = JudgeDefaults
    if model is None:
        return []
    return [name for name in model.model_fields if name != "type"]
