"""OpenAIChatModel: a `ChatModel` for any OpenAI-compatible chat completions server."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.http._endpoint_state import declare_limit, endpoint_state
from gradewire.http._fast_http import DEFAULT_MAX_RESPONSE_BYTES, max_response_bytes_setting
from gradewire.http._loop_closer import close_with_loop, forget
from gradewire.http._loop_resources import LoopResources
from gradewire.http._retry import RetryPolicy
from gradewire.http._senders import HttpxSender, Sender, default_sender
from gradewire.http._settings import check_headers, seconds_setting
from gradewire.judges._cache_io import cache_get, cache_put
from gradewire.judges._chat_model import ChatCompletion, ChatMessage
from gradewire.judges._inflight import share_in_flight
from gradewire.judges._judge_cache import JudgeCache
from gradewire.judges._openai_config import base_url_setting, cache_setting, extra_body_setting
from gradewire.judges._openai_wire import (
    build_payload,
    encode_payload,
    failure_for_status,
    parse_completion,
)

__all__ = ["OpenAIChatModel"]

if TYPE_CHECKING:
    import httpx


class OpenAIChatModel:
    """A judge model behind any OpenAI-compatible chat completions server.

    Works with OpenAI, vLLM, Ollama, the llama.cpp server, LiteLLM and other gateways: it
    POSTs to ``{base_url}/chat/completions``.

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
    - **Cache**: with ``cache=``, answers persist in sqlite; a hit has ``cached=True`` and the
      usage of the original call. The same request gets the same answer back, also at a
      temperature above 0: leave the cache off to sample afresh.
    - **Speed**: by default sends through a lean HTTP/1.1 client on asyncio (no dependency):
      on 2 cores it keeps ~75% of the ideal rate at 256 calls in flight where one
      `httpx.AsyncClient` keeps ~3%. When the environment names a proxy for the host it sends
      through a pool of single-connection httpx clients instead; pass ``http_client=`` to use
      your own `httpx.AsyncClient` (its limits and transport then set the pace).
    - **Connections** belong to an event loop: they close when the loop shuts down
      (`asyncio.run`, `run_sync`) or at `aclose` / the end of ``async with model:``. Call
      `aclose` yourself if you close loops without ``shutdown_asyncgens()``.

    Args:
        model: The model name the server serves.
        base_url: The API root (default: ``OPENAI_BASE_URL``, else OpenAI's).
        api_key: Sent as ``Authorization: Bearer ...`` (default: ``OPENAI_API_KEY``; local
            servers need none).
        timeout: Seconds one attempt may take, all of it: connecting, sending and reading
            the whole answer share one deadline.
        max_concurrency: Calls in flight to this endpoint at most.
        max_attempts: Attempts per call, the first included (default: the retry policy's, 5).
        retry: The full `RetryPolicy` (backoff bounds, sleep and jitter sources).
        cache: A `JudgeCache`, or a path to open one at (closed by `aclose`).
        temperature: Default sampling temperature (the server's default when None).
        max_tokens: Default bound on generated tokens.
        extra_body: More JSON fields for every request (``{"seed": 0}``, vLLM's ``top_k``...).
        headers: More HTTP headers for every request (gateways that want their own).
        json_schema: Whether the server honours JSON-schema ``response_format``; None means
            unknown (`complete_structured` tries it and sets False if the server refuses).
        http_client: Your own `httpx.AsyncClient` (proxies, TLS, transports); never closed
            here. ``timeout`` and ``max_response_bytes`` still apply to each attempt.
        max_response_bytes: The largest answer body accepted, also once decompressed
            (default 64 MiB); a larger one fails at once with `ModelCallError`, unretried.

    Example:
        >>> model = OpenAIChatModel("Qwen/Qwen2.5-7B-Instruct", base_url="http://gpu:8000/v1")
        >>> answer = await model.complete([{"role": "user", "content": "2+2?"}])  # doctest: +SKIP
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_concurrency: int = 64,
        max_attempts: int | None = None,
        retry: RetryPolicy | None = None,
        cache: JudgeCache | str | os.PathLike[str] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        json_schema: bool | None = None,
        http_client: httpx.AsyncClient | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError(
                f"model must be a non-empty str (the served name), not {model!r}"
            )
        self.model = model
        self.base_url = base_url_setting(base_url)
        self.url = f"{self.base_url}/chat/completions"
        self.timeout = seconds_setting("timeout", timeout)
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
            raise InvalidTypeError(f"max_concurrency must be an int >= 1, not {max_concurrency!r}")
        if max_concurrency < 1:
            raise InvalidInputError(f"max_concurrency must be >= 1, not {max_concurrency}")
        self.max_concurrency = max_concurrency
        self.max_response_bytes = max_response_bytes_setting(max_response_bytes)
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise InvalidTypeError(f"retry must be a RetryPolicy, not {type(retry).__name__}")
        policy = retry or RetryPolicy()
        if max_attempts is not None:
            policy = dataclasses.replace(policy, max_attempts=max_attempts)
        self.retry = policy
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = extra_body_setting(extra_body)
        self.json_schema = json_schema
        if http_client is not None and not _is_httpx_client(http_client):
            raise InvalidTypeError(
                f"http_client must be an httpx.AsyncClient, not {type(http_client).__name__}"
            )
        self._http_client = http_client
        key = os.environ.get("OPENAI_API_KEY") if api_key is None else api_key
        # What a pickled copy (a Ray worker, a process pool) is rebuilt from: the settings as
        # resolved here, so the copy does not depend on the other process's environment.
        self._settings: dict[str, Any] = {
            "model": model,
            "base_url": self.base_url,
            "api_key": key or "",
            "timeout": self.timeout,
            "max_concurrency": max_concurrency,
            "retry": self.retry,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "extra_body": self.extra_body,
            "headers": dict(headers) if headers else None,
            "max_response_bytes": self.max_response_bytes,
        }
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key and key.strip():
            # A key pasted with its newline is the usual cause of "invalid header" errors.
            self._headers["Authorization"] = f"Bearer {key.strip()}"
        if headers:
            self._headers.update(headers)
        check_headers(self._headers)
        self._owns_cache = cache is not None and not isinstance(cache, JudgeCache)
        self.cache = cache_setting(cache)
        self._endpoint_key = f"{self.base_url}|{self.model}"
        declare_limit(self._endpoint_key, self, max_concurrency)
        self._what = f"judge model {self.model!r}"
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopResources] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"OpenAIChatModel({self.model!r}, base_url={self.base_url!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Connections, futures and the cache's thread stay behind: the copy opens its own,
        # and its own JudgeCache on the same file.
        if self._http_client is not None:
            raise InvalidTypeError(
                "an OpenAIChatModel with its own http_client cannot be pickled (an "
                "httpx.AsyncClient cannot cross processes); make the model in the worker, or "
                "leave http_client out"
            )
        settings = dict(self._settings)
        settings["json_schema"] = self.json_schema
        settings["cache"] = None if self.cache is None else self.cache.path
        return (_rebuild_model, (settings,))

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
        logprobs: int | None = None,
    ) -> ChatCompletion:
        """Generate one completion (see `ChatModel.complete`).

        Args:
            messages: The conversation, in OpenAI's chat format.
            temperature: Sampling temperature (default: the model's ``temperature``).
            max_tokens: Bound on generated tokens (default: the model's ``max_tokens``).
            response_format: OpenAI's ``response_format``, sent as given.
            logprobs: Ask for per-token log probabilities with this many alternatives each.

        Raises:
            ModelCallError: The server refused the request, or kept failing through every
                attempt; the message says which and what to do.
        """
        payload = build_payload(
            self.model,
            messages,
            temperature=self.temperature if temperature is None else temperature,
            max_tokens=self.max_tokens if max_tokens is None else max_tokens,
            response_format=response_format,
            logprobs=logprobs,
            extra_body=self.extra_body,
        )
        body = encode_payload(payload)
        key = hashlib.sha256(body).hexdigest()
        loop = asyncio.get_running_loop()
        resources = self._loops.get(loop)
        if resources is None:
            resources = await self._open_loop(loop)
        return await share_in_flight(
            resources.state.in_flight, key, lambda: self._fetch(resources, key, body)
        )

    async def _fetch(self, resources: LoopResources, key: str, body: bytes) -> ChatCompletion:
        cache = self.cache
        if cache is not None:
            hit = await cache_get(cache, key)
            if hit is not None:
                return hit
        sender = resources.sender
        limiter = resources.state.limiter
        attempts = 0

        async def attempt() -> ChatCompletion:
            nonlocal attempts
            attempts += 1
            await limiter.acquire()
            try:
                status, headers, content = await sender.post(
                    self.url, body, self._headers, self.timeout, self.max_response_bytes
                )
            finally:
                limiter.release()
            if 200 <= status < 300:
                return parse_completion(content, self.model, what=self._what, url=self.url)
            raise failure_for_status(
                status, headers, content, what=self._what, url=self.url, attempts=attempts
            )

        result = await self.retry.call(attempt, endpoint=self.url, what=self._what)
        if cache is not None:
            await cache_put(cache, key, result)
        return result

    async def _open_loop(self, loop: asyncio.AbstractEventLoop) -> LoopResources:
        state = endpoint_state(loop, self._endpoint_key, self.max_concurrency)
        if self._http_client is not None:
            sender: Sender = HttpxSender(self._http_client, owned=False)
            resources = self._loops[loop] = LoopResources(sender, state, owned=False)
            return resources
        sender = default_sender(self.url, self.timeout)
        resources = self._loops[loop] = LoopResources(sender, state, owned=True)
        # Closed by aclose(), or else when the loop shuts down (asyncio.run, run_sync...).
        await close_with_loop(sender)
        return resources

    async def aclose(self) -> None:
        """Close this loop's connections, and the cache if it was opened from a path.

        Connections made on other loops close when those loops shut down.
        """
        resources = self._loops.pop(asyncio.get_running_loop(), None)
        if resources is not None and resources.owned:
            forget(resources.sender)
            await resources.sender.aclose()
        if self._owns_cache and self.cache is not None:
            self.cache.close()

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _rebuild_model(settings: dict[str, Any]) -> OpenAIChatModel:
    settings = dict(settings)
    return OpenAIChatModel(settings.pop("model"), **settings)


def _is_httpx_client(client: object) -> bool:
    import httpx  # only when a client is passed: importing httpx costs ~25 ms

    return isinstance(client, httpx.AsyncClient)
