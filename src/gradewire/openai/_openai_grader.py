"""openai_grader: an OpenAI grader object (Evals, RFT), unchanged, as a gradewire grader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typing_extensions import Unpack

from gradewire.models._chat_model import ChatModel
from gradewire.models._model_settings import check_settings
from gradewire.openai._base import OpenAIGrader
from gradewire.openai._config import Connection, build
from gradewire.openai._settings import OpenAIGraderSettings

__all__ = ["openai_grader"]


def openai_grader(
    config: Mapping[str, Any],
    *,
    model: ChatModel | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    **settings: Unpack[OpenAIGraderSettings],
) -> OpenAIGrader:
    """Build a grader from an OpenAI grader object, exactly as Evals or RFT took it.

    Every type runs: ``string_check``, ``text_similarity``, ``score_model``,
    ``label_model``, ``python`` and ``multi``. The grader's key is the config's ``name``;
    a sample's metadata is OpenAI's ``item`` and its completion ``sample.output_text``.
    The config is validated by the ``openai`` package's own types (``pip install
    'gradewire[openai]'``).

    Args:
        config: The grader object (a dict, as in the JSON OpenAI took).
        model: A `ChatModel` every ``score_model``/``label_model`` calls; None builds an
            `OpenAIChatModel` per configured model at ``base_url``.
        base_url: The OpenAI-compatible API root of the model graders and of ``cosine``'s
            embeddings (default ``OPENAI_BASE_URL``, else OpenAI's).
        api_key: The API key (default ``OPENAI_API_KEY``; local servers need none).
        **settings: The `OpenAIGraderSettings` (``served_model``, ``served_models``,
            ``embedding_model``, ``python_timeout``).

    Returns:
        The grader; ``grader.config`` (and ``grader.spec``) is the config.

    Raises:
        InvalidInputError: The config is not valid; the message names the field.
        MissingDependencyError: The ``openai`` extra (or a metric's library) is missing.

    Example:
        >>> grader = openai_grader({
        ...     "type": "string_check", "name": "exact",
        ...     "input": "{{sample.output_text}}", "reference": "{{item.answer}}",
        ...     "operation": "eq",
        ... })
        >>> thread = StringThread([("user", "2+2?"), ("assistant", "4")], metadata={"answer": "4"})
        >>> run_sync(grader.grade(thread)).value  # doctest: +SKIP
        1.0
    """
    checked = check_settings(settings, OpenAIGraderSettings, "openai_grader()")
    connection = Connection(
        model=model,
        base_url=base_url,
        api_key=api_key,
        settings=OpenAIGraderSettings(**checked),  # type: ignore[typeddict-item]
    )
    return build(config, connection)
