"""get_model: one factory for every provider's chat model, named ``"provider/model"``."""

from __future__ import annotations

import importlib
from typing import Any

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.models._client import ModelClient

__all__ = ["PROVIDERS", "get_model", "qualified_model_name"]

PROVIDERS: dict[str, str] = {
    "openai": "gradewire.models._openai_chat:OpenAIChatModel",
    "anthropic": "gradewire.models._anthropic:AnthropicModel",
}
"""Provider name -> the `ModelClient` class that speaks its API (imported when first named)."""


def get_model(
    model: str, *, base_url: str | None = None, api_key: str | None = None, **options: Any
) -> ModelClient:
    """The chat model ``"provider/model"``: a judge model, from any provider, by name.

    The provider is the part before the first ``/``; the rest is the model's name as the
    server knows it, slashes included (``"openai/Qwen/Qwen2.5-7B-Instruct"`` is that model
    behind an OpenAI-compatible server). Providers:

    - ``openai``: any OpenAI-compatible chat completions server (OpenAI, vLLM, Ollama,
      llama.cpp, LiteLLM...): `OpenAIChatModel`.
    - ``anthropic``: Anthropic's Messages API: `AnthropicModel`.

    A served name that itself starts with a provider's name keeps it after the prefix:
    ``"openai/openai/gpt-oss-20b"`` on a vLLM server, ``"openai/anthropic/claude-..."``
    through an OpenAI-compatible gateway.

    Args:
        model: ``"provider/model"``.
        base_url: The API root (default: the provider's environment variable, else its
            public API).
        api_key: The API key (default: the provider's environment variable).
        **options: The client's other settings (`ModelClient`: ``attempt_timeout``,
            ``max_concurrency``, ``cache``, ``structured_output``...) and the model's own
            `ModelSettings` (``temperature``, ``max_tokens``).

    Raises:
        InvalidInputError: The name has no provider, or one gradewire does not know.

    Example:
        >>> judge = get_model("anthropic/claude-haiku-4-5", temperature=0.0)  # doctest: +SKIP
        >>> url = "http://127.0.0.1:8000/v1"
        >>> local = get_model("openai/qwen2.5", base_url=url)  # doctest: +SKIP
    """
    provider, name = _split(model)
    return _client_class(provider)(name, base_url=base_url, api_key=api_key, **options)


def qualified_model_name(model: str, default: str = "openai") -> str:
    """``model`` as ``"provider/model"``: as it is when it names a provider, else ``default``'s.

    For names written before providers had to be named (a grader file's ``"gpt-4o-mini"``
    or ``"Qwen/Qwen2.5-7B-Instruct"``: an OpenAI-compatible server's model).
    """
    prefix, sep, _ = model.partition("/") if isinstance(model, str) else ("", "", "")
    return model if sep and prefix in PROVIDERS else f"{default}/{model}"


def _split(model: object) -> tuple[str, str]:
    if not isinstance(model, str):
        raise InvalidTypeError(
            f"get_model() takes a 'provider/model' str, not {type(model).__name__}"
        )
    provider, sep, name = model.partition("/")
    known = ", ".join(sorted(PROVIDERS))
    if not sep:
        raise InvalidInputError(
            f"get_model({model!r}): name the provider and the model, 'provider/model' "
            f"(providers: {known}); e.g. 'openai/{model or 'gpt-4o-mini'}' for an "
            "OpenAI-compatible server"
        )
    if provider not in PROVIDERS:
        raise InvalidInputError(
            f"get_model({model!r}): unknown provider {provider!r} (providers: {known}); for "
            f"a model an OpenAI-compatible server serves as {model!r}, write "
            f"'openai/{model}'"
        )
    return provider, name  # an empty name is refused by the client, saying what it must be


def _client_class(provider: str) -> type[ModelClient]:
    module, _, attribute = PROVIDERS[provider].partition(":")
    cls: type[ModelClient] = getattr(importlib.import_module(module), attribute)
    return cls
