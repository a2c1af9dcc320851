"""AnthropicModel: a `ChatModel` for Anthropic's Messages API, on the client core."""

from __future__ import annotations

from typing import ClassVar

from gradewire.models._anthropic_wire import AnthropicProvider
from gradewire.models._client import ModelClient
from gradewire.models._provider import Provider

__all__ = ["AnthropicModel"]


class AnthropicModel(ModelClient):
    """A judge model behind Anthropic's Messages API (``POST {base_url}/v1/messages``).

    The client core (`ModelClient`: concurrency, retries, in-flight sharing, cache, usage,
    pickling) with the Messages wire format; ``get_model("anthropic/NAME")`` makes one. It
    speaks HTTP itself: the ``anthropic`` package is not needed.

    - Messages in OpenAI's chat format are sent as the Messages API takes them: system turns
      go to ``system``; ``max_tokens`` is always sent (4,096 unless the call, the judge or
      the model sets it: the API requires one). The API takes no sampling temperature
      (``profile.takes``): a judge's is not sent, and ``temperature=`` here is refused
      (``extra_body={"temperature": 0}`` for a compatible server that takes one).
    - A JSON schema (every judge's) is sent by forced tool use (``structured_output=
      "tool_use"``), else Anthropic's JSON output format (``"output_format"``), else as an
      example in the prompt: ``"auto"`` moves on when the API refuses one by name.
    - Logprobs are not asked for (the API has none): ``profile.logprobs`` is False, and a
      range judge uses the score written.
    - 429 (``rate_limit_error``), 5xx and 529 (``overloaded_error``) are retried, honouring
      ``retry-after``; other errors fail at once, naming Anthropic's error type.
    - `usage` records the model each answer reported (a dated snapshot).

    Args:
        model: The model name (``"claude-haiku-4-5"``...).
        base_url: The API root (default: ``ANTHROPIC_BASE_URL``, else
            ``https://api.anthropic.com``); ``/v1/messages`` is appended.
        api_key: Sent as ``x-api-key`` (default: ``ANTHROPIC_API_KEY``). Anthropic's API
            without a key fails here, at construction.

    The client core's other settings (`ModelClient`) are keywords too: ``attempt_timeout``,
    ``max_concurrency``, ``max_attempts``, ``retry``, ``cache``, ``extra_body``
    (``{"top_k": 5}``, ``{"thinking": ...}``), ``headers`` (``anthropic-beta``...),
    ``structured_output``, ``http_client``, ``max_response_bytes``, and the model's own
    ``max_tokens``.

    Example:
        >>> model = AnthropicModel("claude-haiku-4-5")  # doctest: +SKIP
        >>> answer = await model.complete([{"role": "user", "content": "2+2?"}])  # doctest: +SKIP
    """

    provider: ClassVar[Provider] = AnthropicProvider()
