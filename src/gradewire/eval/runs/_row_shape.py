"""What a row of eval data is asked to be: the data options, checked, and the data error.

Shared by the readers of data rows (`gradewire.eval.runs._samples` for gradewire's own
shape, `gradewire.eval.runs._evals_rows` for OpenAI Evals' rows) and by everything that
hashes a row: `canonical_json` gives the same text for the same data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from gradewire.core import InvalidInputError, InvalidTypeError

__all__ = ["DataError", "DataOptions", "RowShape", "canonical_json"]


class DataError(InvalidInputError):
    """Eval data that cannot be read; the message names the file, the row and the field."""


class DataOptions(TypedDict, total=False):
    """How the rows of a data set become samples (`load_samples`, `run_eval`, the CLI).

    Attributes:
        completion_key: The field that holds the completion, a string or a list of
            messages ending with the assistant's (default ``completion``;
            ``--completion-key`` on the command line). A dotted path
            (``sample.output_text``) names a field inside an object field. Rows in OpenAI
            Evals' shape (``{"item": ..., "sample": ...}``) are read as they are
            (`is_evals_row`). A field named ``completion`` is
            then ordinary metadata. With ``messages`` that do not end with an assistant
            turn, the completion field is the answer to them.
        prompt_key: The field that holds the prompt, a string or a list of messages
            (default ``prompt``; ``--prompt-key``); a dotted path as for
            ``completion_key``.
        allow_prompt_only: Grade rows that have no completion (for graders of the prompt
            alone; ``--allow-prompt-only``). Without it, a row with no completion (no
            completion field, or messages whose last turn is not the assistant's) is a
            data error, reported before anything is graded.
    """

    completion_key: str
    prompt_key: str
    allow_prompt_only: bool


@dataclass(frozen=True, slots=True)
class RowShape:
    """`DataOptions` checked, with their defaults filled in."""

    completion_key: str = "completion"
    prompt_key: str = "prompt"
    allow_prompt_only: bool = False

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> RowShape:
        """The shape ``options`` ask for.

        Raises:
            InvalidInputError: An unknown option, or keys that are empty, equal, or taken.
        """
        unknown = set(options) - set(DataOptions.__annotations__)
        if unknown:
            raise InvalidTypeError(
                f"unknown data option(s) {', '.join(sorted(unknown))}; the options are "
                f"{', '.join(DataOptions.__annotations__)}"
            )
        shape = cls(**options)
        for name in ("completion_key", "prompt_key"):
            key = getattr(shape, name)
            if not isinstance(key, str) or not key:
                raise InvalidInputError(f"{name} must be a non-empty str, not {key!r}")
            if key in ("id", "metadata") or (name == "completion_key" and key == "messages"):
                raise InvalidInputError(
                    f"{name}={key!r} names a field with a meaning of its own; name the column "
                    "that holds the " + name.split("_")[0]
                )
        if shape.completion_key == shape.prompt_key:
            raise InvalidInputError(
                f"completion_key and prompt_key must differ (both are {shape.prompt_key!r})"
            )
        if not isinstance(shape.allow_prompt_only, bool):
            raise InvalidTypeError(
                f"allow_prompt_only must be a bool, not {shape.allow_prompt_only!r}"
            )
        return shape


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: the same data always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
