"""OpenAIChatModel: a `ChatModel` for any OpenAI-compatible chat completions server."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from gradewire.models._client import ModelClient
from gradewire.models._openai_wire import OpenAIProvider
from gradewire.models._provider import Provider

__all__ = ["OpenAIChatModel"]

if TYPE_CHECKING:
    pass


class OpenAIChatModel(ModelClient):
    """A judge model behind any OpenAI-compatible chat completions server.

    Works with OpenAI, vLLM, Ollama, the llama.cpp server, LiteLLM and other gateways: it
    POSTs to ``{base_url}/chat/completions``.

    The client core (`ModelClient`) with OpenAI's wire format; ``get_model("openai/NAME")``
    makes one.

    - **Concurrency**: calls to one endpoint (``base_url`` + ``model``) share one limit, across
      every `OpenAIChatModel` made for it, so many graders and samples share one budget. When
      models ask for different limits the lowest applies. The limit holds per event loop.
    - **Retries**: 429, 5xx, 408, 409, timeouts and dropped connections are retried with
      exponential backoff and full jitter, honouring ``Retry-After``; other 4xx answers fail at
      once. A call that fails for good raises `ModelCallError` saying why and what to do.
    - **De-duplication**: identical concurrent calls (same model, messages and parameters)
      share one HTTP request; those that shared come back with ``cached=True``. When the
      shared request fails, each caller gets an exception object of its own (a copy of the
      same type, message and attributes, chained from the original), so fields a grader
      attaches to one never show up in another sample's record.
    - **Cache**: with ``cache=``, answers persist in sqlite (a hit: ``cached=True``, the
      original usage), also at a temperature above 0: leave it off to sample afresh.
    - **Speed**: a lean HTTP/1.1 client on asyncio (README: Performance); through httpx
      clients when the environment names a proxy for the host, or your ``http_client=``.
    - **Usage**: `usage` tallies every answer, with the served ``model`` and
      ``system_fingerprint`` each one reported (`ServedModel`).
    - **Connections** belong to an event loop; they close with it, or at `aclose`.

    Args:
        model: The model name the server serves.
        base_url: The API root (default: ``OPENAI_BASE_URL``, else OpenAI's).
        api_key: Sent as ``Authorization: Bearer ...`` (default: ``OPENAI_API_KEY``; local
            servers need none). OpenAI's public API without a key fails here, at
            construction, not at the first call.
        attempt_timeout: Seconds one HTTP attempt may take, all of it: connecting, sending
            and reading the whole answer share one deadline (default 60). A whole grade,
            retries included, is bounded by the grader's ``timeout``.
        max_concurrency: Calls in flight to this endpoint at most.
        max_attempts: Attempts per call, the first included (default: the retry policy's, 5).
        retry: The full `RetryPolicy` (backoff bounds, sleep and jitter sources).
        cache: A `JudgeCache`, or a path to open one at (closed by `aclose`).
        extra_body: More JSON fields for every request (``{"seed": 0}``, vLLM's ``top_k``...).
        headers: More HTTP headers for every request (gateways that want their own).
        structured_output: How a JSON schema is sent: ``"auto"`` (default) tries
            ``"json_schema"`` (OpenAI, vLLM, Ollama), ``"json_object_schema"``
            (llama-cpp-python), ``"guided_json"`` (older vLLM), then ``"prompt"`` (an example
            answer in the prompt), moving on when the server refuses the field by name (a
            4xx, or a 5xx whose body names it: not retried), and remembers the choice for
            the endpoint, in the process and in the ``cache`` file. Logprobs and
            ``max_tokens`` (vs ``max_completion_tokens``) are negotiated the same way. A
            named dialect is never changed: a refusal of it is an error saying what to set.
        json_schema: The older switch: True is ``"json_schema"``, False ``"prompt"``.
        http_client: Your own `httpx.AsyncClient` (proxies, TLS, transports); never closed
            here. ``attempt_timeout`` and ``max_response_bytes`` still apply to each attempt.
        max_response_bytes: The largest answer body accepted, also once decompressed
            (default 64 MiB); a larger one fails at once with `ModelCallError`, unretried.
        timeout: The older name of ``attempt_timeout`` (deprecated, with a warning).
        **settings: The model's own `ModelSettings` (``temperature``, ``max_tokens``): what
            every call that does not set its own samples with. A judge's unset setting
            leaves the model's in force (see `ModelSettings` for the order).

    Example:
        >>> model = OpenAIChatModel("Qwen/Qwen2.5-7B-Instruct", base_url="http://gpu:8000/v1")
        >>> answer = await model.complete([{"role": "user", "content": "2+2?"}])  # doctest: +SKIP
    """

    provider: ClassVar[Provider] = OpenAIProvider()
