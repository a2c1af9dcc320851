"""OpenAIGraderSettings: how gradewire runs OpenAI grader configs, declared once."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

__all__ = ["DEFAULT_EMBEDDING_MODEL", "DEFAULT_PYTHON_TIMEOUT", "OpenAIGraderSettings"]

DEFAULT_EMBEDDING_MODEL = "text-embedding-3-large"
"""The embedding model of ``cosine``, as OpenAI's graders guide names it."""

DEFAULT_PYTHON_TIMEOUT = 120.0
"""Seconds a python grader may run on one sample before it is ended."""


@with_config(ConfigDict(extra="forbid"))
class OpenAIGraderSettings(TypedDict, total=False):
    """What an OpenAI grader config does not say and a local run needs (all optional).

    The configs stay as they are; these settings go beside them: as keyword arguments of
    `gradewire.openai_grader`, or as the ``[openai]`` table of a grader file.

    Attributes:
        served_model: The served model every ``score_model`` and ``label_model`` calls,
            instead of the one its config names (a local server seldom serves ``gpt-4o``).
        served_models: Served model names by configured name (``{"gpt-4o-2024-08-06":
            "Qwen/Qwen2.5-7B-Instruct"}``); a name not listed is sent as configured.
        embedding_model: The model of the embeddings endpoint ``cosine`` calls
            (default ``text-embedding-3-large``, OpenAI's).
        python_timeout: Seconds a ``python`` grader may take on one sample (default
            120); past it, its processes are ended and the sample is an
            ``unresponsive_reward_error``.
        missing_variables: What an ``item`` variable (the data row) that names nothing,
            or a null or NaN there (a missing reference), makes of the sample:
            ``"error"`` (the default: an ``invalid_variable_error``, counted in
            ``score/error_count``) or ``"abstain"`` (``score/abstained_count``: rows
            without a reference are left out, never graded against the text "null"). A
            ``sample`` variable the model's output lacks is an error either way.
    """

    served_model: Annotated[str | None, Field(min_length=1, strict=True)]
    served_models: dict[str, Annotated[str, Field(min_length=1)]] | None
    embedding_model: Annotated[str | None, Field(min_length=1, strict=True)]
    python_timeout: Annotated[float | None, Field(gt=0, allow_inf_nan=False)]
    missing_variables: Literal["error", "abstain"] | None
