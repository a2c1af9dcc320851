"""ModelSettings: the settings of a model call, declared once, with who decides them.

The declarations are `TypedDict`s: callers pass them as typed keyword arguments (PEP 692's
``**settings: Unpack[ModelSettings]``), and the grader specs in `gradewire.specs` build
their fields from the same annotations, so a setting, its type, its bounds and its doc are
written in one place. pydantic checks the values against those annotations.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from gradewire.core._errors import InvalidInputError, InvalidTypeError

__all__ = [
    "ModelSettings",
    "StructuredSettings",
    "check_settings",
]


@with_config(ConfigDict(extra="forbid"))
class ModelSettings(TypedDict, total=False):
    """What a model call samples with: its temperature and the bound on its reply.

    Every key may be left out, and None is the same as leaving it out: "not set here".
    Three levels can set each one, and the nearest to the call wins:

    1. the call's: ``ChatModel.complete(temperature=...)``, or a judge's own setting
       (``BinaryJudgeGrader(..., temperature=0.3)``), which it passes with every call;
    2. the model's: ``OpenAIChatModel(..., temperature=0.3)``, for every call it makes (a
       model declares them in its ``profile``: `ModelProfile.settings`);
    3. the caller's default: a structured call (`complete_structured`, hence every judge)
       uses temperature 0.0 (repeatable verdicts) and max_tokens 1,024
       (`DEFAULT_MAX_TOKENS`: a looping model stops); a plain ``complete`` call sends
       neither, and the server's defaults apply.

    So a judge never overrides a model's own setting with a default of its own.

    Attributes:
        temperature: Sampling temperature, a finite number >= 0.
        max_tokens: The most tokens a reply may have, >= 1. Reasoning models that think
            before they answer need more than the 1,024 of a structured call.
    """

    temperature: Annotated[float | None, Field(ge=0, allow_inf_nan=False, strict=True)]
    max_tokens: Annotated[int | None, Field(ge=1, strict=True)]


@with_config(ConfigDict(extra="forbid"))
class StructuredSettings(ModelSettings, total=False):
    """The settings of a structured call (`complete_structured`): `ModelSettings`, and more.

    Attributes:
        truncation: What a reply cut at the token limit is: ``"error"`` (the default), a
            `TruncatedOutputError` (for a grader: an error counted in
            ``score/error_count`` and ``score/truncated_count``, never a repaired guess);
            ``"parse"``: parsed (and repaired) like any other reply.
    """

    truncation: Literal["error", "parse"] | None


@functools.cache
def _adapter(settings: type) -> TypeAdapter[Any]:
    return TypeAdapter(settings)


def check_settings(settings: Mapping[str, Any], declared: type, where: str) -> dict[str, Any]:
    """``settings`` checked against the `TypedDict` ``declared``, without the unset (None) keys.

    Raises:
        InvalidTypeError: A key ``declared`` does not have, or a value of the wrong type.
        InvalidInputError: A value out of its bounds.
    """
    try:
        checked: dict[str, Any] = _adapter(declared).validate_python(dict(settings))
    except ValidationError as exc:
        raise _settings_error(exc, declared, where) from None
    return {name: value for name, value in checked.items() if value is not None}


def _settings_error(exc: ValidationError, declared: type, where: str) -> InvalidInputError:
    error = exc.errors()[0]
    name = ".".join(str(part) for part in error["loc"]) or "settings"
    known = sorted(declared.__annotations__)
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return InvalidTypeError(
            f"{where} got an unexpected keyword argument {name!r}{hint}; its settings are "
            f"{', '.join(known)}"
        )
    message = str(error["msg"]).removeprefix("Value error, ")
    kind = InvalidTypeError if error["type"].endswith("_type") else InvalidInputError
    shown = repr(error["input"])
    shown = shown if len(shown) <= 60 else f"{shown[:57]}..."
    return kind(f"{where}: {name} is {shown}: {message[0].lower()}{message[1:]}")
