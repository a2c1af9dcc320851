"""ModelClient: the provider-neutral core of the chat model clients gradewire ships.

What every provider shares, written once: connections per event loop (closed with the loop
or by `aclose`), one concurrency limit per endpoint, identical calls in flight sent once,
the sqlite judge cache, retries with backoff, the structured-output dialect found per
endpoint, the usage and served identities of its answers, and pickling (a copy made in
another process opens its own connections). A provider (`Provider`) adds its wire format.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import sys
import warnings
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from typing_extensions import Self, Unpack

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._settings import check_positive_seconds
from gradewire.http._endpoint_state import Ticket, declare_limit, endpoint_state
from gradewire.http._fast_http import DEFAULT_MAX_RESPONSE_BYTES, max_response_bytes_setting
from gradewire.http._loop_resources import LoopResources
from gradewire.http._loop_senders import LoopSenders
from gradewire.http._refusal import ParameterRefusedError
from gradewire.http._retry import RetryPolicy
from gradewire.http._settings import check_headers
from gradewire.models._cache_io import load_facts, store_facts
from gradewire.models._chat_model import ChatCompletion, ChatMessage
from gradewire.models._client_settings import cache_setting, concurrency_setting, retry_setting
from gradewire.models._fetch import Target, fetch
from gradewire.models._inflight import share_in_flight
from gradewire.models._judge_cache import JudgeCache
from gradewire.models._model_settings import ModelSettings, check_settings
from gradewire.models._model_usage import ModelUsage, UsageTally
from gradewire.models._negotiation import (
    NegotiatedSettings,
    Negotiator,
    StructuredOutputRefusedError,
)
from gradewire.models._profile import ModelProfile
from gradewire.models._provider import Provider

__all__ = ["DEFAULT_ATTEMPT_TIMEOUT", "ModelClient", "attempt_timeout_setting"]

if TYPE_CHECKING:
    import httpx

DEFAULT_ATTEMPT_TIMEOUT = 60.0
"""Seconds one HTTP attempt of a model call may take by default, all of it."""


class ModelClient(NegotiatedSettings):
    """The core of a chat model client; a subclass names its `Provider` (wire format).

    - **Concurrency**: calls to one endpoint (``base_url`` + ``model``) share one limit, across
      every client made for it, so many graders and samples share one budget. When clients
      ask for different limits the lowest applies. The limit holds per event loop.
    - **Retries**: 429, 5xx (Anthropic's 529 too), 408, 409, timeouts and dropped connections
      are retried with exponential backoff and full jitter, honouring ``Retry-After``; other
      4xx answers fail at once. A call that fails for good raises `ModelCallError` saying why
      and what to do.
    - **De-duplication**: identical concurrent calls (same model, messages and parameters)
      share one HTTP request; those that shared come back with ``cached=True``. When the
      shared request fails, each caller gets an exception object of its own.
    - **Cache**: with ``cache=``, answers persist in sqlite (a hit: ``cached=True``, the
      original usage), also at a temperature above 0: leave it off to sample afresh.
    - **Usage**: `usage` tallies every answer returned, with the served model name (and
      fingerprint) each reported: who answered is on record, per model object.
    - **Connections** belong to an event loop; they close with it, or at `aclose`. A
      pickled client (a Ray worker, a process pool) opens its own.

    Args:
        model: The model name the server serves.
        base_url: The API root (default: the provider's environment variable, else its
            public API).
        api_key: The API key (default: the provider's environment variable; local servers
            need none). The provider's public API without a key fails here, at
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
        structured_output: How a JSON schema is sent: ``"auto"`` (default) tries the
            provider's dialects, strongest first, moving on when the server refuses one by
            name, and remembers the choice for the endpoint (in the process and in the
            ``cache`` file); or one dialect by name, never changed.
        json_schema: The older switch: True is the provider's strongest dialect (OpenAI's
            ``"json_schema"``), False ``"prompt"``.
        http_client: Your own `httpx.AsyncClient` (proxies, TLS, transports); never closed
            here. ``attempt_timeout`` and ``max_response_bytes`` still apply to each attempt.
        max_response_bytes: The largest answer body accepted, also once decompressed
            (default 64 MiB); a larger one fails at once with `ModelCallError`, unretried.
        timeout: The older name of ``attempt_timeout`` (deprecated: it bounded each attempt,
            and ``timeout`` is the whole grade everywhere else).
        **settings: The model's own `ModelSettings` (``temperature``, ``max_tokens``): what
            every call that does not set its own samples with.
    """

    provider: ClassVar[Provider]
    """The wire format this client speaks."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        attempt_timeout: float | None = None,
        max_concurrency: int = 64,
        max_attempts: int | None = None,
        retry: RetryPolicy | None = None,
        cache: JudgeCache | str | os.PathLike[str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        structured_output: str = "auto",
        json_schema: bool | None = None,
        http_client: httpx.AsyncClient | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        timeout: float | None = None,
        **settings: Unpack[ModelSettings],
    ) -> None:
        name = type(self).__name__
        provider = getattr(type(self), "provider", None)
        if not isinstance(provider, Provider):
            raise InvalidTypeError(
                f"{name} names no provider: a ModelClient subclass sets provider = "
                "SomeProvider(); to make a model, call get_model('provider/name')"
            )
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError(
                f"model must be a non-empty str (the served name), not {model!r}"
            )
        self.model = model
        self.base_url = provider.base_url(base_url)
        self.url = provider.url(self.base_url)
        self.attempt_timeout = attempt_timeout_setting(attempt_timeout, timeout, name)
        self.max_concurrency = concurrency_setting(max_concurrency)
        self.max_response_bytes = max_response_bytes_setting(max_response_bytes)
        self.retry = retry_setting(retry, max_attempts)
        own = check_settings(settings, ModelSettings, f"{name}()")
        refused = sorted(set(own) - provider.takes)
        if refused:
            raise InvalidInputError(
                f"{name}() got {', '.join(refused)}, which {provider.name}'s API does not take "
                f"(it takes {', '.join(sorted(provider.takes))}); leave it out, or send it with "
                f"extra_body= to a server that takes it"
            )
        self.temperature: float | None = own.get("temperature")
        self.max_tokens: int | None = own.get("max_tokens")
        self.extra_body = provider.extra_body(extra_body)
        setting = provider.dialects.setting(structured_output)
        if json_schema is not None:  # the older switch: True is the strongest, False "prompt"
            setting = provider.dialects.order[0] if json_schema else "prompt"
        if http_client is not None and not _is_httpx_client(http_client):
            raise InvalidTypeError(
                f"http_client must be an httpx.AsyncClient, not {type(http_client).__name__}"
            )
        self._http_client = http_client
        key = provider.api_key(api_key)
        provider.check_key(self.base_url, key, base_url_given=base_url is not None)
        # What a pickled copy (a Ray worker, a process pool) is rebuilt from: the settings as
        # resolved here, so the copy does not depend on the other process's environment.
        self._settings: dict[str, Any] = {
            "model": model,
            "base_url": self.base_url,
            "api_key": key or "",
            "attempt_timeout": self.attempt_timeout,
            "max_concurrency": max_concurrency,
            "retry": self.retry,
            **own,
            "extra_body": self.extra_body,
            "headers": dict(headers) if headers else None,
            "max_response_bytes": self.max_response_bytes,
        }
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            **provider.headers,
        }
        if key and key.strip():
            # A key pasted with its newline is the usual cause of "invalid header" errors.
            self._headers.update(provider.auth_headers(key.strip()))
        if headers:
            self._headers.update(headers)
        check_headers(self._headers)
        self._owns_cache = cache is not None and not isinstance(cache, JudgeCache)
        self.cache = cache_setting(cache)
        # The key of what is learnt and shared about the endpoint (its limit, its dialect).
        # OpenAI's keeps its older form: cache files store what was learnt under it.
        suffix = f"|{provider.name}" if provider.cache_namespace else ""
        self._endpoint_key = f"{self.base_url}|{self.model}{suffix}"
        declare_limit(self._endpoint_key, self, max_concurrency)
        self._what = f"judge model {self.model!r}"
        self._negotiator = Negotiator(
            self._endpoint_key, setting, what=self._what, url=self.url, dialects=provider.dialects
        )
        self._target = Target(
            provider,
            model,
            self.url,
            self._headers,
            self.attempt_timeout,
            self.max_response_bytes,
            self.retry,
            self.cache,
            self._what,
        )
        self._tally = UsageTally()
        self._senders = LoopSenders(self.url, self.attempt_timeout, http_client)
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopResources] = (
            weakref.WeakKeyDictionary()
        )
        # The loop of the last call and its resources: a call on the same loop finds them
        # without the weak-keyed lookup, which makes a weak reference each time.
        self._last: tuple[weakref.ref[asyncio.AbstractEventLoop], LoopResources] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self.base_url!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Connections, futures and the cache's thread stay behind: the copy opens its own.
        if self._http_client is not None:
            raise InvalidTypeError(
                f"a {type(self).__name__} with its own http_client cannot be pickled (an "
                "httpx.AsyncClient cannot cross processes); make the model in the worker, or "
                "leave http_client out"
            )
        settings = dict(self._settings)
        settings["structured_output"] = self.structured_output
        settings["cache"] = None if self.cache is None else self.cache.path
        return (_rebuild_model, (type(self), settings))

    @property
    def name(self) -> str:
        """The model as `get_model` names it: ``"provider/model"``."""
        return f"{self.provider.name}/{self.model}"

    @property
    def profile(self) -> ModelProfile:
        """What this model declares: its dialects (and the one found), logprobs, settings."""
        negotiator = self._negotiator
        provider = self.provider
        own = ModelSettings()
        if self.temperature is not None:
            own["temperature"] = self.temperature
        if self.max_tokens is not None:
            own["max_tokens"] = self.max_tokens
        return ModelProfile(
            provider=provider.name,
            dialects=provider.dialects.order,
            dialect=negotiator.dialect(),
            negotiates=True,
            prompted=provider.dialects.prompted,
            logprobs=provider.logprobs and not negotiator.logprobs_refused(),
            settings=own,
            takes=provider.takes,
            defaults=provider.defaults,
        )

    @property
    def json_schema(self) -> bool | None:
        """Whether the endpoint takes the strongest dialect's JSON schema (None: unknown).

        The older form of ``structured_output``: setting True means the strongest dialect
        (OpenAI's ``"json_schema"``), False ``"prompt"`` and None ``"auto"``.
        """
        dialect = self.structured_output_dialect
        return None if dialect is None else dialect == self.provider.dialects.order[0]

    @json_schema.setter
    def json_schema(self, value: bool | None) -> None:
        strongest = self.provider.dialects.order[0]
        self.structured_output = "auto" if value is None else strongest if value else "prompt"

    @property
    def usage(self) -> ModelUsage:
        """Every answer this object returned so far: calls, tokens, who answered."""
        return self._tally.snapshot()

    @property
    def timeout(self) -> float:
        """The older name of `attempt_timeout` (deprecated)."""
        warnings.warn(
            f"{type(self).__name__}.timeout is now named attempt_timeout (it bounds each "
            "attempt); read attempt_timeout",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.attempt_timeout

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
                else the provider's default, else the server's).
            response_format: OpenAI's ``response_format``. A JSON-schema one is sent in the
                endpoint's dialect (see ``structured_output``); on a ``"prompt"`` endpoint it
                is left out, as `ChatModel` allows.
            logprobs: Ask for per-token log probabilities with this many alternatives each
                (left out by a provider that has none: see ``profile.logprobs``).

        Raises:
            ParameterRefusedError: The server refused a field by name and nothing is left
                to try without it (an explicit ``structured_output`` it does not take...).
            ModelCallError: The server refused the request, or kept failing through every
                attempt; the message says which and what to do.
        """
        temperature = self.temperature if temperature is None else temperature
        max_tokens = self.max_tokens if max_tokens is None else max_tokens
        provider = self.provider
        if "temperature" not in provider.takes:
            temperature = None  # a judge's default temperature: the API has none to set
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
                    structured=response_format is not None,
                    logprobs=bool(logprobs) and provider.logprobs,
                )
                body = provider.encode(
                    self.model,
                    messages,
                    plan,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    response_format=response_format,
                    logprobs=logprobs,
                    extra_body=self.extra_body,
                )
                key = hashlib.sha256(provider.cache_namespace + body).hexdigest()
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
                self._tally.record(completion)
                return completion
        finally:
            staged.release()

    async def _store_facts(self) -> None:
        if self.cache is not None and self.structured_output == "auto":
            await store_facts(self.cache, self._endpoint_key)

    async def _open_loop(self, loop: asyncio.AbstractEventLoop) -> LoopResources:
        state = endpoint_state(loop, self._endpoint_key, self.max_concurrency)
        if self.cache is not None:
            await load_facts(self.cache, self._endpoint_key, self.provider.dialects)
        resources = self._loops[loop] = LoopResources(await self._senders.sender(), state)
        return resources

    async def aclose(self) -> None:
        """Close this loop's connections, and the cache if it was opened from a path.

        Connections made on other loops close when those loops shut down.
        """
        self._last = None
        self._loops.pop(asyncio.get_running_loop(), None)
        await self._senders.aclose()
        if self._owns_cache and self.cache is not None:
            self.cache.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def attempt_timeout_setting(attempt_timeout: object, timeout: object, where: str) -> float:
    """``attempt_timeout`` checked, or ``timeout`` (its older name) with a warning."""
    if timeout is not None:
        if attempt_timeout is not None:
            raise InvalidInputError(
                f"{where}() got attempt_timeout= and timeout=; timeout= is the older name of "
                "attempt_timeout=: pass attempt_timeout= only"
            )
        warnings.warn(
            f"{where}(timeout=...) bounds each HTTP attempt and is now named attempt_timeout=; "
            f"pass attempt_timeout={timeout!r} (a whole grade, retries included, is bounded "
            "by the grader's timeout=)",
            DeprecationWarning,
            stacklevel=_outside_gradewire(),
        )
        attempt_timeout = timeout
    if attempt_timeout is None:
        return DEFAULT_ATTEMPT_TIMEOUT
    return check_positive_seconds("attempt_timeout", attempt_timeout)


def _outside_gradewire() -> int:
    """The ``stacklevel`` of the first caller outside gradewire, for a warning."""
    frame = sys._getframe(2)  # the caller of the function that warns
    level = 2
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("gradewire."):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def _rebuild_model(cls: type[ModelClient], settings: dict[str, Any]) -> ModelClient:
    settings = dict(settings)
    return cls(settings.pop("model"), **settings)


def _is_httpx_client(client: object) -> bool:
    import httpx  # only when a client is passed: importing httpx costs ~25 ms

    return isinstance(client, httpx.AsyncClient)
