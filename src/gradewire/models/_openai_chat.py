"""OpenAIChatModel: a `ChatModel` for any OpenAI-compatible chat completions server."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.http._endpoint_state import Ticket, declare_limit, endpoint_state
from gradewire.http._fast_http import DEFAULT_MAX_RESPONSE_BYTES, max_response_bytes_setting
from gradewire.http._loop_closer import close_with_loop, forget
from gradewire.http._loop_resources import LoopResources
from gradewire.http._refusal import ParameterRefusedError
from gradewire.http._retry import RetryPolicy
from gradewire.http._senders import HttpxSender, Sender, default_sender
from gradewire.http._settings import check_headers, seconds_setting
from gradewire.models._cache_io import load_facts, store_facts
from gradewire.models._chat_model import ChatCompletion, ChatMessage
from gradewire.models._dialects import StructuredOutput, apply_dialect, structured_output_setting
from gradewire.models._inflight import share_in_flight
from gradewire.models._judge_cache import JudgeCache
from gradewire.models._model_settings import ModelSettings, check_settings
from gradewire.models._negotiation import (
    NegotiatedSettings,
    Negotiator,
    StructuredOutputRefusedError,
    WirePlan,
)
from gradewire.models._openai_config import (
    base_url_setting,
    cache_setting,
    check_public_key,
    concurrency_setting,
    extra_body_setting,
    retry_setting,
)
from gradewire.models._openai_fetch import Target, fetch
from gradewire.models._openai_wire import build_payload, encode_payload

__all__ = ["OpenAIChatModel"]

if TYPE_CHECKING:
    import httpx


class OpenAIChatModel(NegotiatedSettings):
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
    - **Cache**: with ``cache=``, answers persist in sqlite (a hit: ``cached=True``, the
      original usage), also at a temperature above 0: leave it off to sample afresh.
    - **Speed**: a lean HTTP/1.1 client on asyncio (README: Performance); through httpx
      clients when the environment names a proxy for the host, or your ``http_client=``.
    - **Connections** belong to an event loop; they close with it, or at `aclose`.

    Args:
        model: The model name the server serves.
        base_url: The API root (default: ``OPENAI_BASE_URL``, else OpenAI's).
        api_key: Sent as ``Authorization: Bearer ...`` (default: ``OPENAI_API_KEY``; local
            servers need none). OpenAI's public API without a key fails here, at
            construction, not at the first call.
        timeout: Seconds one attempt may take, all of it: connecting, sending and reading
            the whole answer share one deadline.
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
            here. ``timeout`` and ``max_response_bytes`` still apply to each attempt.
        max_response_bytes: The largest answer body accepted, also once decompressed
            (default 64 MiB); a larger one fails at once with `ModelCallError`, unretried.
        **settings: The model's own `ModelSettings` (``temperature``, ``max_tokens``): what
            every call that does not set its own samples with. A judge's unset setting
            leaves the model's in force (see `ModelSettings` for the order).

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
        extra_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        structured_output: StructuredOutput = "auto",
        json_schema: bool | None = None,
        http_client: httpx.AsyncClient | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        **settings: Unpack[ModelSettings],
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError(
                f"model must be a non-empty str (the served name), not {model!r}"
            )
        self.model = model
        self.base_url = base_url_setting(base_url)
        self.url = f"{self.base_url}/chat/completions"
        self.timeout = seconds_setting("timeout", timeout)
        self.max_concurrency = concurrency_setting(max_concurrency)
        self.max_response_bytes = max_response_bytes_setting(max_response_bytes)
        self.retry = retry_setting(retry, max_attempts)
        own = check_settings(settings, ModelSettings, "OpenAIChatModel()")
        self.temperature: float | None = own.get("temperature")
        self.max_tokens: int | None = own.get("max_tokens")
        self.extra_body = extra_body_setting(extra_body)
        setting = structured_output_setting(structured_output)
        if json_schema is not None:  # the older switch: True is "json_schema", False "prompt"
            setting = "json_schema" if json_schema else "prompt"
        if http_client is not None and not _is_httpx_client(http_client):
            raise InvalidTypeError(
                f"http_client must be an httpx.AsyncClient, not {type(http_client).__name__}"
            )
        self._http_client = http_client
        key = os.environ.get("OPENAI_API_KEY") if api_key is None else api_key
        check_public_key(self.base_url, key, base_url_given=base_url is not None)
        # What a pickled copy (a Ray worker, a process pool) is rebuilt from: the settings as
        # resolved here, so the copy does not depend on the other process's environment.
        self._settings: dict[str, Any] = {
            "model": model,
            "base_url": self.base_url,
            "api_key": key or "",
            "timeout": self.timeout,
            "max_concurrency": max_concurrency,
            "retry": self.retry,
            **own,
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
        self._negotiator = Negotiator(self._endpoint_key, setting, what=self._what, url=self.url)
        self._target = Target(
            model,
            self.url,
            self._headers,
            self.timeout,
            self.max_response_bytes,
            self.retry,
            self.cache,
            self._what,
        )
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopResources] = (
            weakref.WeakKeyDictionary()
        )
        # The loop of the last call and its resources: a call on the same loop finds them
        # without the weak-keyed lookup, which makes a weak reference each time.
        self._last: tuple[weakref.ref[asyncio.AbstractEventLoop], LoopResources] | None = None

    def __repr__(self) -> str:
        return f"OpenAIChatModel({self.model!r}, base_url={self.base_url!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Connections, futures and the cache's thread stay behind: the copy opens its own.
        if self._http_client is not None:
            raise InvalidTypeError(
                "an OpenAIChatModel with its own http_client cannot be pickled (an "
                "httpx.AsyncClient cannot cross processes); make the model in the worker, or "
                "leave http_client out"
            )
        settings = dict(self._settings)
        settings["structured_output"] = self.structured_output
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
            temperature: Sampling temperature (default: the model's ``temperature``, else
                the server's).
            max_tokens: Bound on generated tokens (default: the model's ``max_tokens``,
                else the server's).
            response_format: OpenAI's ``response_format``. A JSON-schema one is sent in the
                endpoint's dialect (see ``structured_output``); on a ``"prompt"`` endpoint it
                is left out, as `ChatModel` allows.
            logprobs: Ask for per-token log probabilities with this many alternatives each.

        Raises:
            ParameterRefusedError: The server refused a field by name and nothing is left
                to try without it (an explicit ``structured_output`` it does not take...).
            ModelCallError: The server refused the request, or kept failing through every
                attempt; the message says which and what to do.
        """
        temperature = self.temperature if temperature is None else temperature
        max_tokens = self.max_tokens if max_tokens is None else max_tokens
        loop = asyncio.get_running_loop()
        last = self._last
        if last is not None and last[0]() is loop:
            resources = last[1]
        else:
            found = self._loops.get(loop)
            resources = await self._open_loop(loop) if found is None else found
            self._last = (weakref.ref(loop), resources)
        negotiator = self._negotiator
        state = resources.state
        # Past max_concurrency calls waiting for a slot, a call waits here, before it builds
        # its request (see `EndpointState`).
        staging = state.staging
        if not staging.try_acquire():
            await staging.acquire()
        staged = Ticket(staging)
        try:
            while True:
                plan = negotiator.plan(
                    structured=response_format is not None, logprobs=bool(logprobs)
                )
                body = self._body(
                    plan, messages, temperature, max_tokens, response_format, logprobs
                )
                key = hashlib.sha256(body).hexdigest()
                if key in state.in_flight:
                    staged.release()  # it shares another call's answer: no slot to wait for
                try:
                    completion = await share_in_flight(
                        state.in_flight,
                        key,
                        functools.partial(
                            fetch, self._target, resources, key, body, plan.parameters(), staged
                        ),
                    )
                except StructuredOutputRefusedError:
                    await self._store_facts()
                    raise
                except ParameterRefusedError as refusal:
                    negotiator.learn(plan, refusal)  # raises when nothing is left to change
                    await self._store_facts()
                    continue
                if plan.dialect is not None and negotiator.accepted(plan.dialect):
                    await self._store_facts()  # the first answer in a dialect "auto" tried
                return completion
        finally:
            staged.release()

    def _body(
        self,
        plan: WirePlan,
        messages: Sequence[ChatMessage],
        temperature: float | None,
        max_tokens: int | None,
        response_format: Mapping[str, Any] | None,
        logprobs: int | None,
    ) -> bytes:
        # A method of its own: the payload's dicts are gone before the call waits.
        payload = build_payload(
            self.model,
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            response_format=None,
            logprobs=logprobs if plan.logprobs else None,
            extra_body=self.extra_body,
            max_tokens_field=plan.max_tokens_field,
        )
        if response_format is not None and plan.dialect is not None:
            apply_dialect(payload, plan.dialect, response_format)
        return encode_payload(payload)

    async def _store_facts(self) -> None:
        if self.cache is not None and self.structured_output == "auto":
            await store_facts(self.cache, self._endpoint_key)

    async def _open_loop(self, loop: asyncio.AbstractEventLoop) -> LoopResources:
        state = endpoint_state(loop, self._endpoint_key, self.max_concurrency)
        if self.cache is not None:
            await load_facts(self.cache, self._endpoint_key)
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
        self._last = None
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
